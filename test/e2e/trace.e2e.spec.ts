import { context, propagation, trace } from '@opentelemetry/api';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import { W3CTraceContextPropagator } from '@opentelemetry/core';
import {
  BasicTracerProvider,
  InMemorySpanExporter,
  SimpleSpanProcessor,
  type ReadableSpan,
} from '@opentelemetry/sdk-trace-base';
import type { Metrics } from '@switchboard/observability';
import { METRICS } from '@switchboard/platform';
import { createTestEnv, waitFor, type TestEnv } from '@switchboard/testing';
import { newTenant, type Api } from '../support/api';
import { FIXTURES, startStack } from '../support/stack';

/**
 * One trace covers admit → queue → turn (a span per provider call and per tool
 * call) → post-turn hook, carried across BullMQ in job data.
 */
/** Every terminal turn gets one post-turn job, running every hook (docs/adr/0039). */
const HOOKS = 1;

describe('tracing', () => {
  const exporter = new InMemorySpanExporter();
  const provider = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] });
  let env: TestEnv;
  let stack: Awaited<ReturnType<typeof startStack>>;
  let api: Api;

  beforeAll(async () => {
    context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());
    propagation.setGlobalPropagator(new W3CTraceContextPropagator());
    trace.setGlobalTracerProvider(provider);
    env = await createTestEnv();
    stack = await startStack(env.config({ SCRIPTED_FIXTURES_DIR: FIXTURES }));
    ({ api } = await newTenant(stack.url, 'test-admin-token-0123456789'));
    // The archivist's summarization call answers with no facts (the default, scripted/demo, calls a tool).
    const routed = await api.patch('/v1/settings', {
      modelRoutes: { summarization: 'scripted/archivist-none' },
      // One distillation per turn, at once (the default defers to the session's, docs/adr/0032).
      archivist: { mode: 'every_turn' },
    });
    expect(routed.status).toBe(200);
  });

  afterAll(async () => {
    await stack?.close();
    await env?.cleanup();
    await provider.shutdown();
    trace.disable();
    context.disable();
    propagation.disable();
  });

  it('puts every hop of a message in one trace with the right parents', async () => {
    const agent = await api.post('/v1/agents', { name: 'traced', tools: ['word_count'] });
    const session = await api.post('/v1/sessions', { agentId: agent.body.id });
    exporter.reset();
    const admitted = await api.post(`/v1/sessions/${session.body.id}/messages`, {
      content: 'trace me please',
    });
    const turnId = admitted.body.turnId as string;

    const spans = await waitFor(
      () => {
        const all = exporter.getFinishedSpans();
        // The turn's one post-turn job.
        return all.filter((s) => s.name === 'post-turn process').length === HOOKS ? all : undefined;
      },
      { what: 'the post-turn hook spans' },
    );

    const byName = (name: string) => spans.filter((s) => s.name === name);
    const one = (name: string): ReadableSpan => {
      const found = byName(name);
      expect(found.map((s) => s.name)).toEqual([name]);
      return found[0];
    };
    const parentOf = (s: ReadableSpan) => s.parentSpanContext?.spanId;
    const id = (s: ReadableSpan) => s.spanContext().spanId;

    const admit = one('admit message');
    const publishTurn = one('turns publish');
    const consumeTurn = one('turns process');
    const turn = one('invoke_agent traced');
    const chats = byName('chat demo');
    const tool = one('execute_tool word_count');
    const publishHooks = byName('post-turn publish');
    const consumeHooks = byName('post-turn process');

    const traceId = admit.spanContext().traceId;
    const inTrace = spans.filter((s) => s.spanContext().traceId === traceId);
    expect(inTrace.map((s) => s.name).sort()).toEqual(
      [
        'admit message',
        'turns publish',
        'turns process',
        'invoke_agent traced',
        'chat demo',
        'chat demo',
        'execute_tool word_count',
        'hook archivist',
        'chat archivist-none',
        'hook episodic-index',
        'hook scoring',
        ...Array<string>(HOOKS).fill('post-turn publish'),
        ...Array<string>(HOOKS).fill('post-turn process'),
      ].sort(),
    );

    expect(parentOf(publishTurn)).toBe(id(admit));
    expect(parentOf(consumeTurn)).toBe(id(publishTurn));
    expect(parentOf(turn)).toBe(id(consumeTurn));
    expect(chats).toHaveLength(2);
    for (const c of chats) {
      expect(parentOf(c)).toBe(id(turn));
      expect(c.attributes['gen_ai.operation.name']).toBe('chat');
      expect(c.attributes['gen_ai.request.model']).toBe('demo');
    }
    expect(parentOf(tool)).toBe(id(turn));
    // The hooks that read the turn or call a model have their own spans inside the job's.
    const archivist = one('hook archivist');
    expect(consumeHooks.map(id)).toContain(parentOf(archivist));
    expect(parentOf(one('chat archivist-none'))).toBe(id(archivist));
    expect(consumeHooks.map(id)).toContain(parentOf(one('hook episodic-index')));
    // The scoring hook (docs/adr/0062) reads the turn for its scorers, even when it has none.
    expect(consumeHooks.map(id)).toContain(parentOf(one('hook scoring')));
    expect(tool.attributes['gen_ai.tool.name']).toBe('word_count');
    for (const p of publishHooks) expect(parentOf(p)).toBe(id(turn));
    expect(consumeHooks.map(parentOf).sort()).toEqual(publishHooks.map(id).sort());
    expect(turn.attributes['switchboard.turn.id']).toBe(turnId);
    // The GenAI semantic conventions: the agent span, the conversation on every GenAI span.
    expect(turn.attributes).toMatchObject({
      'gen_ai.operation.name': 'invoke_agent',
      'gen_ai.agent.id': agent.body.id,
      'gen_ai.agent.name': 'traced',
      'gen_ai.conversation.id': session.body.id,
    });
    for (const span of [...chats, tool]) {
      expect(span.attributes['gen_ai.conversation.id']).toBe(session.body.id);
      expect(span.attributes['gen_ai.agent.id']).toBe(agent.body.id);
    }
    for (const c of chats) {
      expect(c.attributes['gen_ai.provider.name']).toBe('scripted');
      expect(c.attributes).not.toHaveProperty('gen_ai.system');
      expect(typeof c.attributes['gen_ai.usage.input_tokens']).toBe('number');
    }
    expect(consumeTurn.attributes['messaging.message.id']).toBe(turnId);

    // The tool ran between the two model rounds.
    const [firstChat, secondChat] = [...chats].sort(
      (a, b) => a.startTime[0] - b.startTime[0] || a.startTime[1] - b.startTime[1],
    );
    const t = (hr: [number, number]) => hr[0] * 1e9 + hr[1];
    expect(t(tool.startTime)).toBeGreaterThanOrEqual(t(firstChat.endTime));
    expect(t(secondChat.startTime)).toBeGreaterThanOrEqual(t(tool.endTime));

    // The turn's duration links to this trace: an exemplar naming the agent span (ADR 0040).
    const harnessMetrics = stack.harness.app.get<Metrics>(METRICS);
    const { body } = await harnessMetrics.expose('application/openmetrics-text');
    expect(body).toMatch(
      new RegExp(
        `^switchboard_turn_duration_seconds_bucket\\{[^}]*status="completed"\\} \\d+ # ` +
          `\\{trace_id="${traceId}",span_id="${turn.spanContext().spanId}"\\}`,
        'm',
      ),
    );
  });
});
