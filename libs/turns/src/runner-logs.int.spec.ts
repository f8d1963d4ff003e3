import { Writable } from 'node:stream';
import { context, trace } from '@opentelemetry/api';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import {
  BasicTracerProvider,
  InMemorySpanExporter,
  SimpleSpanProcessor,
} from '@opentelemetry/sdk-trace-base';
import { z } from 'zod';
import { TurnEngine } from '@switchboard/engine';
import { createLogger, Metrics } from '@switchboard/observability';
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
import { TurnRunner } from './runner';

/**
 * What the harness logs about a turn that did not go smoothly: failed provider attempts
 * (retried, fallen back), a tool that timed out, a failed turn. Each line names the turn
 * and carries the turn's trace id.
 */
jest.setTimeout(120_000);

const reply = (text: string, toolCalls: ModelResponse['toolCalls'] = []): ModelResponse => ({
  text,
  toolCalls,
  usage: { inputTokens: 10, outputTokens: 2, cachedTokens: 0 },
  finishReason: toolCalls.length > 0 ? 'tool_calls' : 'stop',
});

class Model implements ModelProvider {
  readonly name = 'openai-chat';
  rounds: (ModelResponse | Error)[] = [];
  async complete(_request: ModelRequest): Promise<ModelResponse> {
    const step = this.rounds.shift() ?? reply('done');
    if (step instanceof Error) throw step;
    return step;
  }
}

/** A tool that never answers within its 50 ms. */
const hang = defineTool({
  name: 'hang',
  description: 'hangs',
  schema: z.strictObject({}),
  sideEffect: 'read_only',
  timeoutMs: 50,
  needsApproval: false,
  execute: (_args, ctx) =>
    new Promise((_resolve, reject) =>
      ctx.signal.addEventListener('abort', () => reject(new Error('aborted'))),
    ),
}) as ToolDefinition;

type Line = Record<string, unknown> & { msg: string };

describe('harness logs for a turn', () => {
  const exporter = new InMemorySpanExporter();
  const provider = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] });
  let h: HarnessFixture;
  let env: TestEnv;
  const model = new Model();
  const lines: Line[] = [];

  beforeAll(async () => {
    context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());
    trace.setGlobalTracerProvider(provider);
    h = await startHarness();
    env = h.env;
  });

  afterAll(async () => {
    await h?.close();
    await provider.shutdown();
    trace.disable();
    context.disable();
  });

  async function run(agent: { model: string; fallbackModels?: string[]; tools?: string[] }) {
    const { tenantId, sessionId } = await seedTenantSession(env.db, 'logs', agent);
    const { turnId } = await h.admission.admit(operatorPrompt({ tenantId, sessionId }, 'go'));
    lines.length = 0;
    exporter.reset();
    const tools = new ToolRegistry([hang]);
    const runner = new TurnRunner({
      ...h.runnerDeps({
        turnsQueue: undefined,
        // The processes' logger (trace ids mixed in), writing to this test.
        logger: createLogger({ service: 'test', level: 'info', destination: sink(lines) }),
        metrics: new Metrics('logs'),
      }),
      engine: new TurnEngine({ providers: new ProviderRegistry({}, [model]), tools, maxBackoffMs: 1 }),
      tools,
      defaultModel: 'openai-chat/default',
    });
    await runner.handle({ turnId, sessionId, tenantId, trace: {} });
    const turnSpan = exporter.getFinishedSpans().find((s) => s.name.startsWith('invoke_agent '));
    expect(turnSpan).toBeDefined();
    return { turnId, traceId: turnSpan!.spanContext().traceId };
  }

  it('logs each failed provider attempt, retried then fallen back, with the turn and trace ids', async () => {
    model.rounds = [
      new ProviderError('server', 'busy'),
      new ProviderError('server', 'busy'),
      new ProviderError('server', 'still busy'),
      reply('from the fallback'),
    ];
    const { turnId, traceId } = await run({
      model: 'openai-chat/primary',
      fallbackModels: ['openai-chat/backup'],
    });
    const failed = lines.filter((l) => l.msg.startsWith('provider attempt failed'));
    expect(failed.map((l) => [l.msg, l.model, l.attempt, l.failureKind])).toEqual([
      ['provider attempt failed; retrying', 'openai-chat/primary', 1, 'server'],
      ['provider attempt failed; retrying', 'openai-chat/primary', 2, 'server'],
      ['provider attempt failed; falling back', 'openai-chat/primary', 3, 'server'],
    ]);
    for (const l of failed) expect(l).toMatchObject({ turnId, trace_id: traceId });
    expect(lines.some((l) => l.msg === 'turn failed')).toBe(false);
  });

  it('logs a tool call that timed out', async () => {
    model.rounds = [reply('', [{ id: 'c1', name: 'hang', arguments: '{}' }]), reply('gave up on it')];
    const { turnId, traceId } = await run({ model: 'openai-chat/m', tools: ['hang'] });
    expect(lines.filter((l) => l.msg === 'tool call timed out')).toEqual([
      expect.objectContaining({ turnId, trace_id: traceId, tool: 'hang', callId: 'c1' }),
    ]);
  });

  it('logs a failed turn with its stop reason and failure kind', async () => {
    model.rounds = [new ProviderError('auth', 'bad key')];
    const { turnId, traceId } = await run({ model: 'openai-chat/m' });
    expect(lines.filter((l) => l.msg === 'turn failed')).toEqual([
      expect.objectContaining({
        turnId,
        trace_id: traceId,
        stopReason: expect.any(String),
        failure: 'provider_error',
        failureKind: 'auth',
      }),
    ]);
    expect(lines.find((l) => l.msg === 'provider attempt failed; giving up')).toMatchObject({ turnId });
  });
});

/** A pino destination that parses every line into `into`. */
function sink(into: Line[]): Writable {
  return new Writable({
    write(chunk: Buffer, _enc, done) {
      into.push(JSON.parse(chunk.toString()) as Line);
      done();
    },
  });
}
