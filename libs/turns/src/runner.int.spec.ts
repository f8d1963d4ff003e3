import type { Queue } from 'bullmq';
import { z } from 'zod';
import { COMPACTION_PROMPT, SUMMARIZER_PROMPT, TurnEngine } from '@switchboard/engine';
import { Metrics } from '@switchboard/observability';
import {
  ProviderError,
  ProviderRegistry,
  type ModelProvider,
  type ModelRequest,
  type ModelResponse,
} from '@switchboard/providers';
import { defineTool, ToolRegistry, type ToolDefinition } from '@switchboard/tools';
import {
  operatorPrompt,
  seedTenantSession,
  startHarness,
  type HarnessFixture,
  type TestEnv,
} from '@switchboard/testing';
import type { FinalisationStep } from './runner-options';
import { TurnRunner } from './runner';

/**
 * The harness's TurnRunner against real Postgres and a real BullMQ queue, with
 * an in-process model: tenant model routes, the summarizer's persistence and
 * self-healing across turns, reflections in the transcript, and isolated
 * finalisation steps.
 */
jest.setTimeout(120_000);

const USAGE = { inputTokens: 120, outputTokens: 12, cachedTokens: 0 };
const reply = (text: string, toolCalls: ModelResponse['toolCalls'] = []): ModelResponse => ({
  text,
  toolCalls,
  usage: USAGE,
  finishReason: toolCalls.length > 0 ? 'tool_calls' : 'stop',
});

/** Answers the agent's rounds and the summarizer from separate FIFO scripts; records every request. */
class Model implements ModelProvider {
  // Registered over the built-in provider of that name: tenant routes only name real providers.
  readonly name = 'openai-chat';
  readonly requests: ModelRequest[] = [];
  rounds: (ModelResponse | Error)[] = [];
  summaries: (ModelResponse | Error)[] = [];

  async complete(request: ModelRequest): Promise<ModelResponse> {
    this.requests.push(request);
    const system = request.messages[0]?.content;
    const queue = system === SUMMARIZER_PROMPT || system === COMPACTION_PROMPT ? this.summaries : this.rounds;
    const step = queue.shift() ?? reply('fallback answer');
    if (step instanceof Error) throw step;
    return step;
  }

  get summarizerCalls(): number {
    return this.requests.filter((r) => r.messages[0]?.content === SUMMARIZER_PROMPT).length;
  }
}

const tool = (name: string, execute: () => Promise<unknown>) =>
  defineTool({
    name,
    description: name,
    schema: z.strictObject({}),
    sideEffect: 'read_only',
    timeoutMs: 2_000,
    needsApproval: false,
    execute,
  }) as ToolDefinition;

const BIG = Array.from({ length: 500 }, (_, i) => ({ id: `inv-${i}`, note: 'n'.repeat(50) }));

describe('TurnRunner', () => {
  let h: HarnessFixture;
  let env: TestEnv;
  let postTurn: Queue;
  const model = new Model();
  const finalisers: FinalisationStep[] = [];
  let metrics = new Metrics('runner');

  const runner = () =>
    new TurnRunner({
      ...h.runnerDeps({ turnsQueue: undefined, metrics }),
      engine: new TurnEngine({
        providers: new ProviderRegistry({}, [model]),
        tools: new ToolRegistry([tool('big', async () => BIG), tool('other', async () => 'fine')]),
        toolResultMaxBytes: 4_000,
        // Retries in these tests need no real backoff.
        maxBackoffMs: 1,
      }),
      tools: new ToolRegistry([tool('big', async () => BIG), tool('other', async () => 'fine')]),
      defaultModel: 'openai-chat/default',
      finalisationSteps: finalisers,
      // A small window for one model, so a few turns reach the context guard.
      contextWindows: { 'openai-chat/small-window': 1_000 },
    });

  beforeAll(async () => {
    h = await startHarness();
    ({ env, postTurnQueue: postTurn } = h);
  });

  beforeEach(() => {
    metrics = new Metrics('runner');
  });

  afterEach(() => {
    model.rounds = [];
    model.summaries = [];
    model.requests.length = 0;
    finalisers.length = 0;
  });

  afterAll(() => h?.close());

  async function tenant(
    agent: { model: string; tools?: string[]; fallbackModels?: string[] },
    settings = {},
  ) {
    return seedTenantSession(env.db, 'runner', agent, { settings });
  }

  async function turn(ids: { tenantId: string; sessionId: string }, text = 'go') {
    const { turnId } = await h.admission.admit(operatorPrompt(ids, text));
    expect(
      await runner().handle({ turnId, sessionId: ids.sessionId, tenantId: ids.tenantId, trace: {} }),
    ).toBe('done');
    return env.db.turn.findUniqueOrThrow({ where: { id: turnId } });
  }

  const eventTypes = async (turnId: string) =>
    (await env.db.event.findMany({ where: { turnId }, orderBy: { seq: 'asc' } })).map((e) => e.type);

  describe('model routes by hint', () => {
    it('resolves the agent’s hint and fallbacks through the tenant’s routes', async () => {
      const ids = await tenant(
        { model: 'hint:coding', fallbackModels: ['hint:reasoning'] },
        { modelRoutes: { coding: 'openai-chat/coder', reasoning: 'openai-chat/thinker' } },
      );
      model.rounds = [new ProviderError('auth', 'bad key'), reply('from the fallback')];
      const t = await turn(ids);
      expect(t.status).toBe('completed');
      expect(model.requests.map((r) => r.model)).toEqual(['coder', 'thinker']);
      // The turn names the model that answered; its unknown model has no price.
      expect(t.model).toBe('openai-chat/thinker');
      expect(t.costStatus).toBe('unpriced');
      expect((t.attempts as { model: string }[]).map((a) => a.model)).toEqual([
        'openai-chat/coder',
        'openai-chat/thinker',
      ]);
      const started = await env.db.event.findFirstOrThrow({ where: { turnId: t.id, type: 'turn_started' } });
      expect(started.data).toMatchObject({ model: 'openai-chat/coder', route: 'hint:coding' });
    });

    it('sends a hint the tenant has not routed to the deployment default', async () => {
      const ids = await tenant({ model: 'hint:burst' });
      model.rounds = [reply('ok')];
      const t = await turn(ids);
      expect(t.status).toBe('completed');
      expect(model.requests.map((r) => r.model)).toEqual(['default']);
    });

    it('emits tool schemas strict when the tenant asks, relaxed otherwise', async () => {
      const relaxed = await tenant({ model: 'openai-chat/m', tools: ['other'] });
      model.rounds = [reply('hi')];
      await turn(relaxed);
      expect(model.requests[0].tools.map((t) => t.strict)).toEqual([false]);

      const strict = await tenant({ model: 'openai-chat/m', tools: ['other'] }, { toolSchemaMode: 'strict' });
      model.rounds = [reply('hi')];
      await turn(strict);
      expect(model.requests[1].tools.map((t) => t.strict)).toEqual([true]);
    });

    it('refuses the tenant’s blocked tools', async () => {
      const ids = await tenant({ model: 'openai-chat/m', tools: ['other'] }, { blockedTools: ['other'] });
      model.rounds = [reply('', [{ id: 'c1', name: 'other', arguments: '{}' }]), reply('could not')];
      const t = await turn(ids);
      const call = await env.db.toolCall.findFirstOrThrow({ where: { turnId: t.id } });
      expect(call.status).toBe('failed');
      expect(call.error).toMatchObject({ kind: 'blocked' });
    });
  });

  describe('the summarizer', () => {
    it('commits the summary, its ledger entry and the subagent events with the tool result', async () => {
      const ids = await tenant(
        { model: 'openai-chat/m', tools: ['big'] },
        { modelRoutes: { summarization: 'openai-chat/small' } },
      );
      model.rounds = [reply('', [{ id: 'c1', name: 'big', arguments: '{}' }]), reply('500 invoices')];
      model.summaries = [reply('500 invoices inv-0 … inv-499')];
      const t = await turn(ids);
      expect(t.status).toBe('completed');
      expect(model.requests.find((r) => r.messages[0].content === SUMMARIZER_PROMPT)?.model).toBe('small');

      const toolMessage = await env.db.message.findFirstOrThrow({ where: { turnId: t.id, role: 'tool' } });
      expect(JSON.parse((toolMessage.body as { text: string }).text)).toMatchObject({
        summarized: true,
        summary: '500 invoices inv-0 … inv-499',
      });
      // The whole result stays on the tool call row.
      const call = await env.db.toolCall.findFirstOrThrow({ where: { turnId: t.id } });
      expect(call.result).toEqual(BIG);

      const ledger = await env.db.ledgerEntry.findMany({ where: { turnId: t.id }, orderBy: { key: 'asc' } });
      expect(ledger.map((l) => l.key)).toEqual([
        `${t.id}:round:0`,
        `${t.id}:round:1`,
        `${t.id}:summarize:c1`,
      ]);
      expect(ledger[2]).toMatchObject({ model: 'openai-chat/small', inputTokens: 120 });
      // The turn's totals include the summarizer.
      expect(t.inputTokens).toBe(360);
      expect(await eventTypes(t.id)).toEqual(
        expect.arrayContaining(['summarizer_started', 'summarizer_completed', 'tool_call_completed']),
      );
    });

    it('is disabled for the session after three consecutive failures, across turns', async () => {
      const ids = await tenant({ model: 'openai-chat/m', tools: ['big'] });
      for (let i = 0; i < 4; i++) {
        model.rounds = [reply('', [{ id: `c${i}`, name: 'big', arguments: '{}' }]), reply(`answer ${i}`)];
        model.summaries = [new ProviderError('server', 'summarizer down')];
        const t = await turn(ids, `turn ${i}`);
        expect(t.status).toBe('completed');
        const toolMessage = await env.db.message.findFirstOrThrow({ where: { turnId: t.id, role: 'tool' } });
        expect((toolMessage.body as { text: string }).text).toContain('[truncated:');
      }
      expect(model.summarizerCalls).toBe(3);
      const session = await env.db.session.findUniqueOrThrow({ where: { id: ids.sessionId } });
      expect(session.summarizerFailures).toBe(3);
    });
  });

  describe('metrics', () => {
    const values = async (name: string): Promise<Record<string, string | number>[]> =>
      (await metrics.registry.getSingleMetric(name)!.get()).values.map((v) => ({
        ...(v.labels as Record<string, string | number>),
        value: v.value,
      }));

    it('counts provider attempts by outcome, tool calls by outcome, and side calls', async () => {
      const ids = await tenant({ model: 'openai-chat/m', tools: ['big', 'other'] });
      model.rounds = [
        new ProviderError('server', 'busy', { provider: 'openai-chat' }),
        reply('', [
          { id: 'c1', name: 'big', arguments: '{}' },
          { id: 'c2', name: 'nope', arguments: '{}' },
        ]),
        reply('done'),
      ];
      model.summaries = [reply('500 invoices')];
      const t = await turn(ids);
      expect(t.status).toBe('completed');

      const calls = await values('switchboard_provider_call_duration_seconds');
      const count = (outcome: string) =>
        calls.find((c) => c.outcome === outcome && String(c.le) === '+Inf' && c.model === 'openai-chat/m')
          ?.value;
      expect(count('ok')).toBe(2);
      expect(count('server')).toBe(1);
      expect(await values('switchboard_tool_calls_total')).toEqual(
        expect.arrayContaining([
          expect.objectContaining({ tool: 'big', outcome: 'ok', value: 1 }),
          expect.objectContaining({ tool: 'nope', outcome: 'unknown_tool', value: 1 }),
        ]),
      );
      expect(await values('switchboard_side_calls_total')).toEqual([
        expect.objectContaining({ purpose: 'summarize', outcome: 'ok', value: 1 }),
      ]);
    });
  });

  describe('compaction across turns', () => {
    it('stores the cut and the summary on the session; later turns load only what is kept, and roll it on', async () => {
      const ids = await tenant(
        { model: 'openai-chat/small-window' },
        { modelRoutes: { summarization: 'openai-chat/small' } },
      );
      const input = (i: number) => `turn-${i} ${'x'.repeat(900)}`;
      model.summaries = [reply('S1: turn 2 asked about x.'), reply('S2: turns 2 and 3 asked about x.')];
      for (let i = 1; i <= 5; i++) {
        model.rounds = [reply(`answer ${i}`)];
        const t = await turn(ids, input(i));
        expect(t.status).toBe('completed');
      }
      const summarizerInputs = model.requests
        .filter((r) => r.messages[0].content === COMPACTION_PROMPT)
        .map((r) => r.messages[1].content);
      const rounds = model.requests.filter((r) => r.messages[0].content !== COMPACTION_PROMPT);
      const sent = (n: number) => rounds[n - 1].messages.map((m) => m.content).join('\n');

      // Turn 4 is the first over 80% of the window: turn 2 (the middle) is summarized.
      expect(summarizerInputs).toHaveLength(2);
      expect(summarizerInputs[0]).toContain('turn-2');
      expect(summarizerInputs[0]).not.toContain('turn-3');
      expect(sent(4)).toContain('S1: turn 2 asked about x.');
      expect(sent(4)).not.toContain('turn-2 ');
      // Turn 5 starts from the stored cut: turn 2 is never loaded again. Still too long, it rolls
      // the summary on: the old summary and turn 3 go into the new one.
      expect(summarizerInputs[1]).toContain('S1: turn 2 asked about x.');
      expect(summarizerInputs[1]).toContain('turn-3');
      expect(summarizerInputs[1]).not.toContain('turn-2 ');
      expect(sent(5)).toContain('turn-1 ');
      expect(sent(5)).toContain('S2: turns 2 and 3 asked about x.');
      expect(sent(5)).not.toContain('turn-3 ');
      expect(sent(5)).toContain('turn-4 ');
      const session = await env.db.session.findUniqueOrThrow({ where: { id: ids.sessionId } });
      expect(session.compaction).toEqual({
        headThroughSeq: 1,
        keepFromSeq: 4,
        // The old note and its acknowledgement, and turn 3's two messages.
        droppedMessages: 4,
        summary: 'S2: turns 2 and 3 asked about x.',
      });
      // Both summaries were booked; the journal says where compaction happened.
      const keys = (await env.db.ledgerEntry.findMany({ where: { sessionId: ids.sessionId } })).map(
        (l) => l.key,
      );
      expect(keys.filter((k) => k.includes(':compact:'))).toHaveLength(2);
      const compacted = await env.db.event.findMany({
        where: { sessionId: ids.sessionId, type: 'context_compacted' },
      });
      expect(compacted.map((e) => (e.data as { summarized: boolean }).summarized)).toEqual([true, true]);
    });
  });

  describe('reflection', () => {
    it('persists the note in the transcript and books its cost when the budget allows', async () => {
      const ids = await tenant({ model: 'openai-chat/m', tools: ['other'] });
      await env.db.agent.updateMany({
        where: { tenantId: ids.tenantId },
        data: { budgets: { maxReflections: 1 } },
      });
      model.rounds = [
        reply('', [{ id: 'c1', name: 'nope', arguments: '{}' }]),
        reply('Try again later, with the other tool.'),
        reply('done'),
      ];
      const t = await turn(ids);
      expect(t.status).toBe('completed');
      const messages = await env.db.message.findMany({
        where: { turnId: t.id },
        orderBy: { position: 'asc' },
      });
      expect(messages.map((m) => m.role)).toEqual(['user', 'assistant', 'tool', 'user', 'assistant']);
      expect(messages[3]).toMatchObject({
        authorityClass: 'runtime_instruction',
        metadata: { reflection: 0 },
      });
      expect((messages[3].body as { text: string }).text).toMatch(/^<reflection>\nTry again later/);
      const keys = (await env.db.ledgerEntry.findMany({ where: { turnId: t.id } })).map((l) => l.key);
      expect(keys).toContain(`${t.id}:reflect:0`);
      expect(await eventTypes(t.id)).toContain('reflection_completed');
    });
  });

  describe('finalisation', () => {
    it('records the decision, and a failing step is logged and recorded while the result survives', async () => {
      const ids = await tenant({ model: 'openai-chat/m', tools: ['other'] });
      const ran: string[] = [];
      finalisers.push(
        {
          name: 'broken_callback',
          run: async () => {
            throw new Error('callback exploded');
          },
        },
        { name: 'later_callback', run: async (t) => void ran.push(t.id) },
      );
      model.rounds = [reply('', [{ id: 'c1', name: 'other', arguments: '{}' }]), reply('all good')];
      const t = await turn(ids);
      expect(t).toMatchObject({ status: 'completed', finalText: 'all good' });
      expect(t.decision).toEqual({
        strategy: 'tool_assisted',
        model: 'openai-chat/m',
        tools: ['other'],
        iterations: 2,
        toolCalls: 1,
        stopReason: 'final_answer',
      });
      expect(t.finalisationErrors).toEqual([
        { step: 'broken_callback', message: 'callback exploded', at: expect.any(String) },
      ]);
      // Steps after the failing one still ran, and the post-turn hooks were enqueued.
      expect(ran).toEqual([t.id]);
      const hooks = await postTurn.getJobs(['waiting', 'delayed', 'active', 'completed', 'prioritized']);
      expect(hooks.some((j) => (j.data as { turnId: string }).turnId === t.id)).toBe(true);
      expect(await eventTypes(t.id)).toContain('turn_completed');
    });

    it('a direct answer is recorded as such', async () => {
      const ids = await tenant({ model: 'openai-chat/m' });
      model.rounds = [reply('hello')];
      const t = await turn(ids);
      expect(t.decision).toMatchObject({ strategy: 'direct_answer', tools: [], toolCalls: 0 });
      expect(t.finalisationErrors).toEqual([]);
    });
  });

  describe('fair share (docs/adr/0029)', () => {
    it('gives the session back as soon as a turn ends while another tenant’s turn waits, not one turn later', async () => {
      const a = await tenant({ model: 'openai-chat/default', tools: ['admit_other'] });
      const b = await tenant({ model: 'openai-chat/default' });
      let bTurn = '';
      // A's first turn admits B's turn while it runs: its claim saw no other tenant waiting.
      const admitOther = tool('admit_other', async () => {
        bTurn = (await h.admission.admit(operatorPrompt(b, 'b'))).turnId;
        return 'admitted';
      });
      const admitted: string[] = [];
      for (const text of ['a1', 'a2', 'a3'])
        admitted.push((await h.admission.admit(operatorPrompt(a, text))).turnId);
      model.rounds = [reply('', [{ id: 'c1', name: 'admit_other', arguments: '{}' }]), reply('one')];
      const tools = new ToolRegistry([admitOther]);
      const fair = new TurnRunner({
        ...h.runnerDeps({ turnsQueue: undefined, metrics }),
        engine: new TurnEngine({ providers: new ProviderRegistry({}, [model]), tools, maxBackoffMs: 1 }),
        tools,
        defaultModel: 'openai-chat/default',
      });
      expect(
        await fair.handle({ turnId: admitted[0], sessionId: a.sessionId, tenantId: a.tenantId, trace: {} }),
      ).toBe('done');
      const started = async (id: string) =>
        (await env.db.turn.findUniqueOrThrow({ where: { id } })).startedAt!.getTime();
      // B's turn ran next (the smaller backlog), before A's second turn, which the holder would have
      // claimed straight away had it looked for contention only at its claim.
      expect(bTurn).not.toBe('');
      expect(await started(bTurn)).toBeLessThan(await started(admitted[1]));
      expect(await started(admitted[0])).toBeLessThan(await started(bTurn));
      for (const id of [...admitted, bTurn]) {
        expect((await env.db.turn.findUniqueOrThrow({ where: { id } })).status).toBe('completed');
      }
    });
  });
});
