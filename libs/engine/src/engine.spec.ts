/**
 * TurnEngine: the tool-call loop of SPEC §5 and the provider retry/fallback policy of SPEC §7,
 * driven by an in-memory fake provider, a real ToolRegistry and a recording TurnCheckpoints.
 */
import { getEventListeners } from 'node:events';
import { z } from 'zod';
import { EventData, isEventType, type EventType } from '@switchboard/contracts';
import {
  ProviderError,
  ProviderRegistry,
  type ChatMessage,
  type ModelProvider,
  type ModelRequest,
  type ModelResponse,
  type ToolCallRequest,
  type Usage,
} from '@switchboard/providers';
import {
  defineTool,
  ToolRegistry,
  wordCount,
  type ToolContext,
  type ToolDefinition,
} from '@switchboard/tools';
import { TurnEngine, type EngineOptions } from './engine';
import {
  DEFAULT_BUDGET,
  type ProviderAttempt,
  type RoundRecord,
  type ToolCallMeta,
  type ToolOutcome,
  type TurnCheckpoints,
  type TurnInput,
} from './types';

// ---------------------------------------------------------------------------------------------
// Fakes
// ---------------------------------------------------------------------------------------------

type Step = ModelResponse | ProviderError | Error | ((request: ModelRequest) => Promise<ModelResponse>);

/** Plays a queue of steps, one per `complete` call, and records every request. */
class FakeProvider implements ModelProvider {
  readonly requests: ModelRequest[] = [];
  private readonly steps: Step[];

  constructor(
    steps: Step[],
    readonly name = 'fake',
  ) {
    this.steps = [...steps];
  }

  get models(): string[] {
    return this.requests.map((r) => r.model);
  }

  async complete(request: ModelRequest): Promise<ModelResponse> {
    this.requests.push(request);
    const step = this.steps.shift();
    if (step === undefined) throw new Error(`fake provider script exhausted at call ${this.requests.length}`);
    if (step instanceof Error) throw step;
    if (typeof step === 'function') return step(request);
    return step;
  }
}

/** Keeps everything the engine commits, in order. */
class RecordingCheckpoints implements TurnCheckpoints {
  readonly rounds: RoundRecord[] = [];
  readonly started: ToolCallMeta[] = [];
  readonly results: { meta: ToolCallMeta; outcome: ToolOutcome; durationMs: number }[] = [];
  readonly failedAttempts: ProviderAttempt[][] = [];
  readonly events: { type: string; data: Record<string, unknown> }[] = [];
  readonly deltas: string[] = [];

  async recordRound(round: RoundRecord): Promise<void> {
    this.rounds.push(round);
  }
  async toolStarted(meta: ToolCallMeta): Promise<void> {
    this.started.push(meta);
  }
  async recordToolResult(meta: ToolCallMeta, outcome: ToolOutcome, durationMs: number): Promise<void> {
    this.results.push({ meta, outcome, durationMs });
  }
  async recordReflection(): Promise<void> {}
  async recordCompaction(): Promise<void> {}
  async recordFailedAttempts(attempts: ProviderAttempt[]): Promise<void> {
    this.failedAttempts.push(attempts);
  }
  async emit(type: string, data: Record<string, unknown>): Promise<void> {
    this.events.push({ type, data });
  }
  textDelta(delta: string): void {
    this.deltas.push(delta);
  }

  get eventTypes(): string[] {
    return this.events.map((e) => e.type);
  }
  outcomeFor(callId: string): ToolOutcome {
    const hit = this.results.find((r) => r.meta.call.id === callId);
    if (!hit) throw new Error(`no tool result recorded for ${callId}`);
    return hit.outcome;
  }
}

// ---------------------------------------------------------------------------------------------
// Builders
// ---------------------------------------------------------------------------------------------

const USAGE: Usage = { inputTokens: 100, outputTokens: 20, cachedTokens: 0 };

function reply(text: string, extra: Partial<ModelResponse> = {}): ModelResponse {
  return { text, toolCalls: [], usage: USAGE, finishReason: 'stop', ...extra };
}

function callTools(calls: ToolCallRequest[], text = '', extra: Partial<ModelResponse> = {}): ModelResponse {
  return { text, toolCalls: calls, usage: USAGE, finishReason: 'tool_calls', ...extra };
}

function call(id: string, name: string, args: unknown = {}): ToolCallRequest {
  return { id, name, arguments: typeof args === 'string' ? args : JSON.stringify(args) };
}

/** Tools the tests register next to the built-in word_count. */
const executed: { name: string; args: unknown; ctx: ToolContext }[] = [];

const echo = defineTool({
  name: 'echo',
  description: 'Echoes its input.',
  schema: z.strictObject({ value: z.string() }),
  sideEffect: 'read_only',
  timeoutMs: 1_000,
  needsApproval: false,
  async execute(args, ctx) {
    executed.push({ name: 'echo', args, ctx });
    return { echoed: args.value };
  },
});

const search = defineTool({
  name: 'search',
  description: 'Searches with a nested filter.',
  schema: z.strictObject({
    query: z.string().min(1),
    filter: z.strictObject({ limit: z.int().min(1).max(10) }),
  }),
  sideEffect: 'read_only',
  timeoutMs: 1_000,
  needsApproval: false,
  async execute(args, ctx) {
    executed.push({ name: 'search', args, ctx });
    return { hits: [] };
  },
});

const ping = defineTool({
  name: 'ping',
  description: 'Takes no arguments.',
  schema: z.strictObject({}),
  sideEffect: 'read_only',
  timeoutMs: 1_000,
  needsApproval: false,
  async execute(args, ctx) {
    executed.push({ name: 'ping', args, ctx });
    return 'pong';
  },
});

const writeNote = defineTool({
  name: 'write_note',
  description: 'A side-effecting tool.',
  schema: z.strictObject({ note: z.string() }),
  sideEffect: 'local_write',
  timeoutMs: 1_000,
  needsApproval: false,
  async execute(args, ctx) {
    executed.push({ name: 'write_note', args, ctx });
    return { saved: true };
  },
});

const explode = defineTool({
  name: 'explode',
  description: 'Always throws.',
  schema: z.strictObject({}),
  sideEffect: 'read_only',
  timeoutMs: 1_000,
  needsApproval: false,
  async execute() {
    throw new Error('kaput');
  },
});

const hang = defineTool({
  name: 'hang',
  description: 'Never answers.',
  schema: z.strictObject({}),
  sideEffect: 'read_only',
  timeoutMs: 20,
  needsApproval: false,
  execute: () => new Promise<never>(() => undefined),
});

const TEST_TOOLS = [echo, search, ping, writeNote, explode, hang] as ToolDefinition[];
const AGENT_TOOLS = TEST_TOOLS.map((t) => t.name);

function turnInput(overrides: Partial<TurnInput> = {}): TurnInput {
  return {
    turnId: 'turn-1',
    tenantId: 'tenant-1',
    sessionId: 'session-1',
    systemPrompt: 'You are a test agent.',
    history: [],
    turnMessages: [{ role: 'user', content: 'hello' }],
    model: 'fake/m1',
    fallbackModels: [],
    tools: AGENT_TOOLS,
    budget: { ...DEFAULT_BUDGET },
    ...overrides,
  };
}

interface Harness {
  engine: TurnEngine;
  provider: FakeProvider;
  cp: RecordingCheckpoints;
  sleeps: number[];
  run(input?: Partial<TurnInput>, signal?: AbortSignal): ReturnType<TurnEngine['run']>;
}

function harness(
  steps: Step[],
  options: Partial<Omit<EngineOptions, 'providers' | 'tools'>> & {
    extraTools?: ToolDefinition[];
    providers?: ModelProvider[];
  } = {},
): Harness {
  const provider = new FakeProvider(steps);
  const { extraTools = [], providers = [], ...engineOptions } = options;
  const sleeps: number[] = [];
  const engine = new TurnEngine({
    providers: new ProviderRegistry({}, [provider, ...providers]),
    tools: new ToolRegistry([wordCount, ...TEST_TOOLS, ...extraTools]),
    sleep: async (ms) => {
      sleeps.push(ms);
    },
    ...engineOptions,
  });
  const cp = new RecordingCheckpoints();
  return {
    engine,
    provider,
    cp,
    sleeps,
    run: (input = {}, signal = new AbortController().signal) => engine.run(turnInput(input), cp, signal),
  };
}

function toolMessages(messages: ChatMessage[]): Extract<ChatMessage, { role: 'tool' }>[] {
  return messages.filter((m): m is Extract<ChatMessage, { role: 'tool' }> => m.role === 'tool');
}

function parsedContent(m: ChatMessage): ToolOutcome {
  return JSON.parse(m.content) as ToolOutcome;
}

beforeEach(() => {
  executed.length = 0;
});

// ---------------------------------------------------------------------------------------------
// Tests
// ---------------------------------------------------------------------------------------------

describe('TurnEngine tool-call loop', () => {
  it('runs a tool call, sends its result back to the provider and completes with the final answer', async () => {
    const h = harness([callTools([call('c1', 'echo', { value: 'hi' })], 'let me echo'), reply('done: hi')]);
    const history: ChatMessage[] = [
      { role: 'user', content: 'earlier question' },
      { role: 'assistant', content: 'earlier answer', toolCalls: [] },
    ];

    const outcome = await h.run({ history });

    expect(outcome).toEqual({
      status: 'completed',
      stopReason: 'final_answer',
      finalText: 'done: hi',
      iterations: 2,
      toolCalls: 1,
      strategy: 'tool_assisted',
    });
    expect(h.provider.requests).toHaveLength(2);
    expect(h.provider.requests[0].messages).toEqual([
      { role: 'system', content: 'You are a test agent.' },
      ...history,
      { role: 'user', content: 'hello' },
    ]);
    expect(h.provider.requests[1].messages).toEqual([
      { role: 'system', content: 'You are a test agent.' },
      ...history,
      { role: 'user', content: 'hello' },
      { role: 'assistant', content: 'let me echo', toolCalls: [call('c1', 'echo', { value: 'hi' })] },
      {
        role: 'tool',
        toolCallId: 'c1',
        name: 'echo',
        content: JSON.stringify({ ok: true, result: { echoed: 'hi' } }),
      },
    ]);
    expect(executed.map((e) => e.args)).toEqual([{ value: 'hi' }]);
  });

  it('asks the provider with the model name without prefix and the specs of the agent tools only', async () => {
    const h = harness([reply('hi')]);
    await h.run({ tools: ['ping', 'echo'] });

    expect(h.provider.requests[0].model).toBe('m1');
    expect(h.provider.requests[0].tools.map((t) => t.name)).toEqual(['ping', 'echo']);
    expect(h.provider.requests[0].tools[1].parameters).toMatchObject({
      type: 'object',
      properties: { value: { type: 'string' } },
    });
  });

  it('passes the tool its context, with an idempotency key of turn id + call id', async () => {
    const h = harness([callTools([call('c7', 'write_note', { note: 'x' })]), reply('ok')]);
    await h.run();

    expect(executed).toHaveLength(1);
    expect(executed[0].ctx).toMatchObject({
      tenantId: 'tenant-1',
      sessionId: 'session-1',
      turnId: 'turn-1',
      callId: 'c7',
      idempotencyKey: 'turn-1:c7',
    });
    expect(h.cp.started).toEqual([
      {
        call: call('c7', 'write_note', { note: 'x' }),
        sideEffect: 'local_write',
        arguments: { note: 'x' },
        idempotencyKey: 'turn-1:c7',
      },
    ]);
  });

  it('gives every tool call of a round exactly one tool result, answering its id, in call order', async () => {
    const calls = [
      call('a', 'echo', { value: '1' }),
      call('b', 'nope'),
      call('c', 'explode'),
      call('d', 'echo', '{oops'),
      call('e', 'ping'),
    ];
    const h = harness([callTools(calls), reply('fin')]);
    const outcome = await h.run();

    const results = toolMessages(h.provider.requests[1].messages);
    expect(results.map((r) => r.toolCallId)).toEqual(['a', 'b', 'c', 'd', 'e']);
    expect(results.map((r) => r.name)).toEqual(['echo', 'nope', 'explode', 'echo', 'ping']);
    expect(h.cp.results.map((r) => r.meta.call.id)).toEqual(['a', 'b', 'c', 'd', 'e']);
    expect(outcome.toolCalls).toBe(5);
    expect(outcome.status).toBe('completed');
  });

  it('treats an empty argument string as an empty object', async () => {
    const h = harness([callTools([call('p', 'ping', '  ')]), reply('ok')]);
    await h.run();

    expect(h.cp.outcomeFor('p')).toEqual({ ok: true, result: 'pong' });
    expect(executed.map((e) => e.args)).toEqual([{}]);
  });

  it('forwards streamed text deltas to the checkpoints', async () => {
    const h = harness([
      async (req) => {
        req.onTextDelta?.('Hel');
        req.onTextDelta?.('lo');
        return reply('Hello');
      },
    ]);
    await h.run();
    expect(h.cp.deltas).toEqual(['Hel', 'lo']);
  });
});

describe('TurnEngine recoverable tool failures', () => {
  it('answers an unknown tool with a recoverable unknown_tool envelope and keeps looping', async () => {
    const h = harness([callTools([call('u1', 'teleport', { to: 'mars' })]), reply('sorry')], {});
    const outcome = await h.run({ tools: ['echo', 'ping'] });

    const result = h.cp.outcomeFor('u1');
    expect(result).toMatchObject({ ok: false, kind: 'unknown_tool', retryable: true });
    expect(result.ok === false && result.message).toContain('teleport');
    expect(result.ok === false && result.hint).toContain('echo, ping');
    expect(parsedContent(toolMessages(h.provider.requests[1].messages)[0])).toEqual(result);
    expect(outcome).toMatchObject({ status: 'completed', stopReason: 'final_answer', finalText: 'sorry' });
  });

  it('treats a registered tool that is not in the agent tool list as unknown and never runs it', async () => {
    const h = harness([
      callTools([call('w', 'word_count', { text: 'a b' }), call('e', 'echo', { value: 'v' })]),
      reply('ok'),
    ]);
    await h.run({ tools: ['echo'] });

    expect(h.cp.outcomeFor('w')).toMatchObject({ ok: false, kind: 'unknown_tool' });
    expect(h.cp.outcomeFor('e')).toEqual({ ok: true, result: { echoed: 'v' } });
    expect(h.provider.requests[0].tools.map((t) => t.name)).toEqual(['echo']);
  });

  it('answers malformed JSON arguments with invalid_arguments and does not run the tool', async () => {
    const h = harness([callTools([call('m', 'echo', '{"value": "x"')]), reply('ok')]);
    const outcome = await h.run();

    const result = h.cp.outcomeFor('m');
    expect(result).toMatchObject({ ok: false, kind: 'invalid_arguments', retryable: true });
    expect(result.ok === false && result.message).toMatch(/not valid JSON/);
    // Never started (it never ran); its result records the raw arguments.
    expect(h.cp.started).toEqual([]);
    expect(h.cp.results[0].meta.arguments).toEqual({ _raw: '{"value": "x"' });
    expect(executed).toHaveLength(0);
    expect(outcome.status).toBe('completed');
  });

  it('answers arguments failing the schema with invalid_arguments naming each failing path', async () => {
    const h = harness([
      callTools([
        call('s1', 'search', { query: 'q', filter: { limit: 0 } }),
        call('s2', 'search', { query: 'q', filter: { limit: 1 }, extra: true }),
        call('s3', 'echo', [1, 2]),
      ]),
      reply('ok'),
    ]);
    await h.run();

    const nested = h.cp.outcomeFor('s1');
    expect(nested).toMatchObject({
      ok: false,
      tool_name: 'search',
      kind: 'invalid_arguments',
      field: 'filter.limit',
      retryable: true,
    });
    expect(nested.ok === false && nested.message).toMatch(/^filter\.limit: /);
    const strict = h.cp.outcomeFor('s2');
    expect(strict).toMatchObject({ ok: false, kind: 'invalid_arguments' });
    expect(strict.ok === false && strict.message).toContain('extra');
    const root = h.cp.outcomeFor('s3');
    expect(root.ok === false && root.message).toMatch(/^\(root\): /);
    expect(executed).toHaveLength(0);
  });

  it('answers a throwing tool with a non-retryable execution_failed envelope and still completes', async () => {
    const h = harness([callTools([call('x', 'explode')]), reply('it broke')]);
    const outcome = await h.run();

    expect(h.cp.outcomeFor('x')).toEqual({
      ok: false,
      tool_name: 'explode',
      kind: 'execution_failed',
      message: 'kaput',
      retryable: false,
    });
    expect(h.cp.events.find((e) => e.type === 'tool_call_completed')?.data).toMatchObject({
      callId: 'x',
      ok: false,
      failure: { kind: 'execution_failed', retryable: false },
    });
    expect(outcome).toMatchObject({ status: 'completed', finalText: 'it broke' });
  });

  it('answers a tool exceeding its timeoutMs with a retryable timeout envelope', async () => {
    const h = harness([callTools([call('t', 'hang')]), reply('too slow')]);
    const outcome = await h.run();

    const result = h.cp.outcomeFor('t');
    expect(result).toMatchObject({ ok: false, kind: 'timeout', retryable: true });
    expect(result.ok === false && result.message).toContain('20 ms');
    expect(outcome).toMatchObject({ status: 'completed', finalText: 'too slow' });
  });

  it('answers a tool that throws a non-Error value (undefined) with execution_failed', async () => {
    const throwsUndefined = defineTool({
      name: 'throws_undefined',
      description: 'Rejects with undefined.',
      schema: z.strictObject({}),
      sideEffect: 'read_only',
      timeoutMs: 1_000,
      needsApproval: false,
      // eslint-disable-next-line @typescript-eslint/prefer-promise-reject-errors -- the point of the test
      execute: () => Promise.reject(undefined),
    });
    const h = harness([callTools([call('u', 'throws_undefined')]), reply('ok')], {
      extraTools: [throwsUndefined],
    });
    const outcome = await h.run({ tools: ['throws_undefined'] });

    expect(h.cp.outcomeFor('u')).toMatchObject({ ok: false, kind: 'execution_failed', retryable: false });
    expect(outcome.status).toBe('completed');
  });

  it('still answers the call and completes when a tool returns a non-serialisable value', async () => {
    const bigint = defineTool({
      name: 'bigint',
      description: 'Returns a BigInt.',
      schema: z.strictObject({}),
      sideEffect: 'read_only',
      timeoutMs: 1_000,
      needsApproval: false,
      execute: async () => ({ n: BigInt(1) }),
    });
    const h = harness([callTools([call('b', 'bigint')]), reply('ok')], {
      extraTools: [bigint],
    });
    const outcome = await h.run({ tools: ['bigint'] });

    expect(outcome.status).toBe('completed');
    expect(toolMessages(h.provider.requests[1].messages).map((m) => m.toolCallId)).toEqual(['b']);
  });

  it('does not leave abort listeners on the turn signal after its tool calls', async () => {
    const calls = ['1', '2', '3'].map((id) => call(id, 'ping'));
    const h = harness([callTools(calls), reply('ok')]);
    const controller = new AbortController();
    await h.run({}, controller.signal);

    expect(getEventListeners(controller.signal, 'abort')).toHaveLength(0);
  });
});

describe('TurnEngine budgets', () => {
  it('stops with max_iterations once the iteration budget is spent, keeping the last assistant text', async () => {
    const h = harness([
      callTools([call('1', 'ping')], 'step 1'),
      callTools([call('2', 'ping')], 'step 2'),
      callTools([call('3', 'ping')], 'step 3'),
    ]);
    const outcome = await h.run({ budget: { ...DEFAULT_BUDGET, maxIterations: 2 } });

    expect(outcome).toEqual({
      status: 'completed',
      stopReason: 'max_iterations',
      finalText: 'step 2',
      iterations: 2,
      toolCalls: 2,
      strategy: 'tool_assisted',
    });
    expect(h.provider.requests).toHaveLength(2);
  });

  it('stops with max_tool_calls once the tool-call budget is spent', async () => {
    const h = harness([
      callTools([call('1', 'ping'), call('2', 'ping')], 'two'),
      callTools([call('3', 'ping')], 'three'),
      reply('never'),
    ]);
    const outcome = await h.run({ budget: { ...DEFAULT_BUDGET, maxToolCalls: 2 } });

    expect(outcome).toMatchObject({ status: 'completed', stopReason: 'max_tool_calls', toolCalls: 2 });
    expect(outcome.finalText).toBe('two');
    expect(h.provider.requests).toHaveLength(1);
  });

  it('stops calling the provider once the spend reaches budget.maxUsd', async () => {
    const h = harness([
      callTools([call('1', 'ping')], 'pricey', { reportedCostUsd: 0.05 }),
      callTools([call('2', 'ping')], 'pricier', { reportedCostUsd: 0.05 }),
      reply('done', { reportedCostUsd: 0.05 }),
    ]);
    const outcome = await h.run({
      budget: { ...DEFAULT_BUDGET, maxUsd: 0.01 },
      prices: { 'fake/m1': { input: 1, output: 1 } },
    });

    expect(h.provider.models).toEqual(['m1']);
    expect(outcome.status).not.toBe('failed');
  });
});

describe('TurnEngine cancellation', () => {
  it('returns cancelled without calling the provider when the signal is already aborted', async () => {
    const h = harness([reply('never')]);
    const controller = new AbortController();
    controller.abort();
    const outcome = await h.run({}, controller.signal);

    expect(outcome).toMatchObject({ status: 'cancelled', stopReason: 'cancelled', iterations: 0 });
    expect(h.provider.requests).toHaveLength(0);
    expect(h.cp.events).toHaveLength(0);
  });

  it('stops running the remaining tool calls of a round once the turn is aborted', async () => {
    const controller = new AbortController();
    const abortNow = defineTool({
      name: 'abort_now',
      description: 'Aborts the turn.',
      schema: z.strictObject({}),
      sideEffect: 'read_only',
      timeoutMs: 1_000,
      needsApproval: false,
      async execute() {
        controller.abort();
        return 'aborted';
      },
    });
    // A write runs in a wave of its own, after the read-only wave that aborts.
    const h = harness(
      [callTools([call('a', 'abort_now'), call('b', 'write_note')], 'working'), reply('never')],
      {
        extraTools: [abortNow],
      },
    );
    const outcome = await h.run({ tools: ['abort_now', 'write_note'] }, controller.signal);

    expect(outcome).toMatchObject({
      status: 'cancelled',
      stopReason: 'cancelled',
      finalText: 'working',
      toolCalls: 2,
    });
    // The write never ran, but it still gets its one result: cancelled, safe to make again later.
    expect(executed).toHaveLength(0);
    expect(h.cp.started.map((m) => m.call.id)).toEqual(['a', 'b']);
    expect(h.cp.outcomeFor('b')).toEqual({
      ok: false,
      kind: 'cancelled',
      message: 'the turn was stopped before this call ran',
      hint: 'the call may be made again in a later turn',
      retryable: true,
      tool_name: 'write_note',
    });
    expect(h.provider.requests).toHaveLength(1);
  });

  it('returns cancelled, not failed, and tries no fallback when aborted during a provider call', async () => {
    const controller = new AbortController();
    const h = harness([
      async () => {
        controller.abort();
        throw new ProviderError('cancelled', 'request aborted');
      },
      reply('fallback must not be called'),
    ]);
    const outcome = await h.run({ fallbackModels: ['fake/m2'] }, controller.signal);

    expect(outcome.status).toBe('cancelled');
    expect(outcome.failure).toBeUndefined();
    expect(h.provider.models).toEqual(['m1']);
  });

  it('does not call the provider again when the turn is cancelled during a retry backoff', async () => {
    const controller = new AbortController();
    const h = harness([new ProviderError('server', 'boom', { status: 503 }), reply('paid for nothing')], {
      sleep: async () => controller.abort(),
    });
    const outcome = await h.run({}, controller.signal);

    expect(outcome.status).toBe('cancelled');
    expect(h.provider.requests).toHaveLength(1);
  });
});

describe('TurnEngine resume', () => {
  it('runs only the unanswered tool call of a partly persisted round and calls the provider once more', async () => {
    const first = call('c1', 'echo', { value: 'one' });
    const second = call('c2', 'echo', { value: 'two' });
    const firstResult: ChatMessage = {
      role: 'tool',
      toolCallId: 'c1',
      name: 'echo',
      content: JSON.stringify({ ok: true, result: { echoed: 'one' } }),
    };
    const h = harness([reply('both done')]);
    const outcome = await h.run({
      turnMessages: [
        { role: 'user', content: 'do two things' },
        { role: 'assistant', content: '', toolCalls: [first, second] },
        firstResult,
      ],
    });

    expect(h.cp.started.map((m) => m.call.id)).toEqual(['c2']);
    expect(executed.map((e) => e.args)).toEqual([{ value: 'two' }]);
    expect(h.provider.requests).toHaveLength(1);
    const results = toolMessages(h.provider.requests[0].messages);
    expect(results.map((r) => r.toolCallId)).toEqual(['c1', 'c2']);
    expect(results[0]).toEqual(firstResult);
    expect(outcome).toEqual({
      status: 'completed',
      stopReason: 'final_answer',
      finalText: 'both done',
      iterations: 2,
      toolCalls: 2,
      strategy: 'tool_assisted',
    });
  });

  it('completes without calling the provider when the persisted turn already ends in a final answer', async () => {
    const h = harness([reply('never')]);
    const outcome = await h.run({
      turnMessages: [
        { role: 'user', content: 'hi' },
        { role: 'assistant', content: 'already answered', toolCalls: [] },
      ],
    });

    expect(outcome).toMatchObject({
      status: 'completed',
      stopReason: 'final_answer',
      finalText: 'already answered',
    });
    expect(h.provider.requests).toHaveLength(0);
  });
});

describe('TurnEngine provider retries and fallback', () => {
  const rateLimited = () =>
    new ProviderError('rate_limited', 'slow down', { status: 429, retryAfterMs: 1234 });

  it('retries a rate-limited call honouring retry-after, records every attempt and the cost once', async () => {
    const h = harness([rateLimited(), rateLimited(), reply('finally', { reportedCostUsd: 0.25 })]);
    const outcome = await h.run();

    expect(outcome).toMatchObject({ status: 'completed', finalText: 'finally' });
    expect(h.sleeps).toEqual([1234, 1234]);
    expect(h.cp.rounds).toHaveLength(1);
    const round = h.cp.rounds[0];
    expect(round).toMatchObject({ round: 0, model: 'fake/m1', provider: 'fake', costUsd: 0.25 });
    expect(round.costSource).toBe('provider');
    expect(round.attempts.map((a) => [a.model, a.attempt, a.failureKind ?? 'ok', a.backoffMs])).toEqual([
      ['fake/m1', 1, 'rate_limited', 1234],
      ['fake/m1', 2, 'rate_limited', 1234],
      ['fake/m1', 3, 'ok', undefined],
    ]);
    expect(round.attempts[0]).toMatchObject({ status: 429, message: 'slow down' });
    expect(round.attempts[2].usage).toEqual(USAGE);
    const completed = h.cp.events.filter((e) => e.type === 'provider_round_completed');
    expect(completed).toHaveLength(1);
    expect(completed[0].data).toMatchObject({ costUsd: 0.25, attempts: round.attempts });
    expect(h.cp.failedAttempts).toHaveLength(0);
  });

  it('caps a retry-after backoff at maxBackoffMs', async () => {
    const h = harness([rateLimited(), rateLimited(), reply('ok')], { maxBackoffMs: 1000 });
    await h.run();

    expect(h.sleeps).toEqual([1000, 1000]);
    expect(h.cp.rounds[0].attempts.map((a) => a.backoffMs)).toEqual([1000, 1000, undefined]);
  });

  it('backs off exponentially without retry-after and falls back after 2 retries', async () => {
    const server = () => new ProviderError('server', 'bad gateway', { status: 502 });
    const h = harness([server(), server(), server(), reply('from backup')]);
    const outcome = await h.run({ fallbackModels: ['fake/m2'] });

    expect(outcome).toMatchObject({ status: 'completed', finalText: 'from backup' });
    expect(h.sleeps).toEqual([500, 1000]);
    expect(h.provider.models).toEqual(['m1', 'm1', 'm1', 'm2']);
    expect(h.cp.rounds[0].attempts.map((a) => [a.model, a.attempt, a.failureKind ?? 'ok'])).toEqual([
      ['fake/m1', 1, 'server'],
      ['fake/m1', 2, 'server'],
      ['fake/m1', 3, 'server'],
      ['fake/m2', 1, 'ok'],
    ]);
    expect(h.cp.rounds[0].model).toBe('fake/m2');
  });

  it('honours the maxRetries option', async () => {
    const h = harness([new ProviderError('timeout', 't'), reply('backup')], { maxRetries: 0 });
    await h.run({ fallbackModels: ['fake/m2'] });

    expect(h.provider.models).toEqual(['m1', 'm2']);
    expect(h.sleeps).toEqual([]);
  });

  it('fails fast on auth errors and falls back to the next model', async () => {
    const h = harness([new ProviderError('auth', 'bad key', { status: 401 }), reply('from m2')]);
    const outcome = await h.run({ fallbackModels: ['fake/m2'] });

    expect(outcome).toMatchObject({ status: 'completed', finalText: 'from m2' });
    expect(h.sleeps).toEqual([]);
    expect(h.provider.models).toEqual(['m1', 'm2']);
    expect(h.cp.rounds[0].attempts.map((a) => [a.model, a.attempt, a.failureKind ?? 'ok', a.status])).toEqual(
      [
        ['fake/m1', 1, 'auth', 401],
        ['fake/m2', 1, 'ok', undefined],
      ],
    );
  });

  it('does not retry a non-ProviderError thrown by a provider; it counts as an invalid response', async () => {
    const h = harness([new TypeError('cannot read x of undefined'), reply('m2')]);
    await h.run({ fallbackModels: ['fake/m2'] });

    expect(h.provider.models).toEqual(['m1', 'm2']);
    expect(h.cp.rounds[0].attempts[0]).toMatchObject({
      failureKind: 'invalid_response',
      outcome: 'fail_fast_aborted',
    });
    expect(h.cp.rounds[0].attempts[0].message).toContain('cannot read x of undefined');
  });

  it('records a fallback model no provider serves as a failed attempt and moves on', async () => {
    const h = harness([new ProviderError('auth', 'no'), reply('m3')]);
    const outcome = await h.run({ fallbackModels: ['nowhere/m2', 'fake/m3'] });

    expect(outcome.status).toBe('completed');
    expect(h.cp.rounds[0].attempts.map((a) => [a.model, a.failureKind ?? 'ok'])).toEqual([
      ['fake/m1', 'auth'],
      ['nowhere/m2', 'bad_request'],
      ['fake/m3', 'ok'],
    ]);
  });

  it('fails the turn with provider_error and a brief when every model fails', async () => {
    const h = harness([
      new ProviderError('auth', 'bad key', { status: 401 }),
      new ProviderError('bad_request', 'nope'),
    ]);
    const outcome = await h.run({ fallbackModels: ['fake/m2'] });

    expect(outcome.status).toBe('failed');
    expect(outcome.stopReason).toBe('provider_error');
    expect(outcome.finalText).toBe('');
    expect(outcome.failure).toMatchObject({
      kind: 'provider_error',
      category: 'protocol',
      failureKind: 'bad_request',
      message: 'nope',
    });
    expect(outcome.failure?.brief).toContain('fake/m1');
    expect(outcome.failure?.brief).toContain('fake/m2');
    expect(outcome.failure?.brief).toContain('nope');
    expect(h.cp.rounds).toHaveLength(0);
    expect(h.cp.failedAttempts).toHaveLength(1);
    expect(h.cp.failedAttempts[0].map((a) => [a.model, a.failureKind ?? 'ok'])).toEqual([
      ['fake/m1', 'auth'],
      ['fake/m2', 'bad_request'],
    ]);
    expect(h.cp.eventTypes).not.toContain('provider_round_completed');
  });

  it('fails the turn with context_length_exceeded without retrying or falling back', async () => {
    const h = harness([
      new ProviderError('context_length', 'prompt is too long', { status: 400 }),
      reply('never'),
    ]);
    const outcome = await h.run({ fallbackModels: ['fake/m2'] });

    expect(outcome.status).toBe('failed');
    expect(outcome.stopReason).toBe('context_length_exceeded');
    expect(outcome.failure).toMatchObject({ kind: 'context_length_exceeded', model: 'fake/m1' });
    expect(outcome.failure?.brief).toContain('fake/m1');
    expect(h.provider.models).toEqual(['m1']);
    expect(h.sleeps).toEqual([]);
    expect(h.cp.failedAttempts).toEqual([
      [
        expect.objectContaining({
          failureKind: 'context_length',
          outcome: 'fail_fast_aborted',
          disposition: 'terminal',
          status: 400,
        }),
      ],
    ]);
  });
});

describe('TurnEngine cost', () => {
  const MILLION: Usage = { inputTokens: 1_000_000, outputTokens: 1_000_000, cachedTokens: 0 };

  it('uses the provider-reported cost over the rate table', async () => {
    const openai = new FakeProvider([reply('a', { usage: MILLION, reportedCostUsd: 0.42 })], 'openai');
    const h = harness([], { providers: [openai] });
    await h.run({ model: 'openai/gpt-4o' });

    expect(h.cp.rounds[0]).toMatchObject({ provider: 'openai', costUsd: 0.42, costSource: 'provider' });
  });

  it('prices from the rate table when the provider reports no cost', async () => {
    const openai = new FakeProvider([reply('a', { usage: MILLION })], 'openai');
    const h = harness([], { providers: [openai] });
    await h.run({ model: 'openai/gpt-4o' });

    expect(h.cp.rounds[0].costSource).toBe('rate_table');
    expect(h.cp.rounds[0].costUsd).toBeCloseTo(12.5, 10);
  });

  it('records an unknown model as unpriced at zero', async () => {
    const h = harness([reply('a')]);
    await h.run();

    expect(h.cp.rounds[0]).toMatchObject({ costUsd: 0, costSource: 'unpriced' });
  });
});

describe('TurnEngine events', () => {
  it('emits round, tool and iteration events in order', async () => {
    // Two read-only calls form one wave: both start before either completes.
    const h = harness([callTools([call('c1', 'ping'), call('c2', 'explode')]), reply('bye')]);
    await h.run();

    expect(h.cp.eventTypes).toEqual([
      'provider_round_started',
      'provider_round_completed',
      'tool_call_started',
      'tool_call_started',
      'tool_call_completed',
      'tool_call_completed',
      'iteration_completed',
      'provider_round_started',
      'provider_round_completed',
    ]);
    const [roundStarted, roundCompleted, started1, , , , iteration, round2] = h.cp.events;
    const completed = (id: string) =>
      h.cp.events.find((e) => e.type === 'tool_call_completed' && e.data.callId === id)!;
    expect(roundStarted.data).toEqual({ round: 0, model: 'fake/m1' });
    expect(roundCompleted.data).toMatchObject({ round: 0, model: 'fake/m1', usage: USAGE, toolCalls: 2 });
    expect(started1.data).toEqual({ callId: 'c1', name: 'ping' });
    expect(completed('c1').data).toMatchObject({ callId: 'c1', name: 'ping', ok: true });
    expect(completed('c1').data).not.toHaveProperty('failure');
    expect(completed('c2').data).toMatchObject({
      callId: 'c2',
      ok: false,
      failure: {
        kind: 'execution_failed',
        class: 'ToolError',
        category: 'recoverable',
        causePlain: expect.any(String),
      },
    });
    expect(iteration.data).toEqual({ iteration: 1, costUsd: expect.any(Number) });
    expect(round2.data).toEqual({ round: 1, model: 'fake/m1' });
  });

  it("emits data every event's schema in the union accepts (libs/contracts events.ts)", async () => {
    const h = harness([callTools([call('c1', 'ping'), call('c2', 'explode')]), reply('bye')]);
    await h.run();
    expect(h.cp.events.length).toBeGreaterThan(5);
    for (const e of h.cp.events) {
      expect(isEventType(e.type)).toBe(true);
      const parsed = EventData[e.type as EventType].safeParse(e.data);
      expect({ type: e.type, issues: parsed.error?.issues }).toEqual({ type: e.type, issues: undefined });
    }
  });

  // Events are buffered by the checkpoints and committed with the next state change, so each is
  // emitted just before the checkpoint that makes it durable; the tool start is durable before it runs.
  it('emits each event before the checkpoint that commits it, and commits the tool start before running the tool', async () => {
    const order: string[] = [];
    const cp = new RecordingCheckpoints();
    const tracked: TurnCheckpoints = {
      recordRound: async (r) => (order.push('recordRound'), cp.recordRound(r)),
      toolStarted: async (m) => (order.push('toolStarted'), cp.toolStarted(m)),
      recordToolResult: async (m, o, d) => (order.push('recordToolResult'), cp.recordToolResult(m, o, d)),
      recordFailedAttempts: async (a) => cp.recordFailedAttempts(a),
      recordReflection: async () => undefined,
      recordCompaction: async () => undefined,
      emit: async (type, data) => (order.push(type), cp.emit(type, data)),
      textDelta: (d) => cp.textDelta(d),
    };
    const probe = defineTool({
      name: 'probe',
      description: 'Records when it runs.',
      schema: z.strictObject({}),
      sideEffect: 'read_only',
      timeoutMs: 1_000,
      needsApproval: false,
      execute: async () => order.push('execute'),
    });
    const provider = new FakeProvider([callTools([call('p', 'probe')]), reply('ok')]);
    const engine = new TurnEngine({
      providers: new ProviderRegistry({}, [provider]),
      tools: new ToolRegistry([probe]),
      sleep: async () => undefined,
    });
    await engine.run(turnInput({ tools: ['probe'] }), tracked, new AbortController().signal);

    expect(order.slice(0, 8)).toEqual([
      'provider_round_started',
      'provider_round_completed',
      'recordRound',
      'tool_call_started',
      'toolStarted',
      'execute',
      'tool_call_completed',
      'recordToolResult',
    ]);
  });
});
