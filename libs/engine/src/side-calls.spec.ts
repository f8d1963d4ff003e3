/**
 * The engine's model calls outside its rounds: the summarizer detour for
 * oversized tool results (seed 000), reflection (seed 001 4h) and the written
 * compaction summary — each bounded, each failing soft.
 */
import { z } from 'zod';
import {
  ProviderError,
  ProviderRegistry,
  type ChatMessage,
  type ModelProvider,
  type ModelRequest,
  type ModelResponse,
} from '@switchboard/providers';
import { defineTool, ToolError, ToolRegistry, type ToolDefinition } from '@switchboard/tools';
import { TurnEngine, TOOL_ERROR_DETAILS_MAX_BYTES, type EngineOptions } from './engine';
import { COMPACTION_PROMPT, REFLECTION_PROMPT, SUMMARIZER_PROMPT } from './side-calls';
import { checkpoints, turnInput } from './test-support';
import {
  DEFAULT_BUDGET,
  type CompactionRecord,
  type SideCallRecord,
  type SummaryRecord,
  type ToolOutcome,
  type TurnInput,
} from './types';

const USAGE = { inputTokens: 100, outputTokens: 10, cachedTokens: 0 };
const answer = (text: string, toolCalls: ModelResponse['toolCalls'] = []): ModelResponse => ({
  text,
  toolCalls,
  usage: USAGE,
  finishReason: toolCalls.length > 0 ? 'tool_calls' : 'stop',
});

type Handler = ModelResponse | Error | ((r: ModelRequest) => ModelResponse);

/**
 * A provider that tells the agent's rounds from side calls by their system
 * prompt: `rounds` answers the agent, `side` answers summarizer, reflection and
 * compaction calls, each a FIFO script.
 */
class RoutingProvider implements ModelProvider {
  readonly name = 'fake';
  readonly rounds: ModelRequest[] = [];
  readonly side: { purpose: string; request: ModelRequest }[] = [];

  constructor(private readonly script: { rounds: Handler[]; side?: Handler[] }) {}

  async complete(request: ModelRequest): Promise<ModelResponse> {
    const system = request.messages[0]?.content ?? '';
    const purpose =
      system === SUMMARIZER_PROMPT
        ? 'summarize'
        : system === REFLECTION_PROMPT
          ? 'reflect'
          : system === COMPACTION_PROMPT
            ? 'compact'
            : undefined;
    const queue = purpose ? (this.script.side ?? []) : this.script.rounds;
    if (purpose) this.side.push({ purpose, request });
    else this.rounds.push(request);
    const step = queue.shift();
    if (step === undefined) throw new Error(`script exhausted (${purpose ?? 'round'})`);
    if (step instanceof Error) throw step;
    return typeof step === 'function' ? step(request) : step;
  }
}

const tool = (name: string, execute: (args: { n?: number }) => Promise<unknown>) =>
  defineTool({
    name,
    description: name,
    schema: z.strictObject({ n: z.number().optional() }),
    sideEffect: 'read_only',
    timeoutMs: 1_000,
    needsApproval: false,
    execute,
  }) as ToolDefinition;

const BIG = { rows: Array.from({ length: 400 }, (_, i) => ({ id: `row-${i}`, value: 'x'.repeat(40) })) };
const big = tool('big', async () => BIG);

function setup(
  script: ConstructorParameters<typeof RoutingProvider>[0],
  options: Partial<EngineOptions> = {},
  tools: ToolDefinition[] = [big],
) {
  const provider = new RoutingProvider(script);
  const engine = new TurnEngine({
    providers: new ProviderRegistry({}, [provider]),
    tools: new ToolRegistry(tools),
    toolResultMaxBytes: 2_000,
    ...options,
  });
  const events: { type: string; data: Record<string, unknown> }[] = [];
  const results: { outcome: ToolOutcome; content: string; summary?: SummaryRecord }[] = [];
  const reflections: { index: number; note: string | null; call: SideCallRecord }[] = [];
  const compactions: { compaction: CompactionRecord; call?: SideCallRecord }[] = [];
  const cp = checkpoints({
    emit: async (type, data) => void events.push({ type, data }),
    recordToolResult: async (_m, outcome, _d, content, summary) =>
      void results.push({ outcome, content, summary }),
    recordReflection: async (index, note, call) => void reflections.push({ index, note, call }),
    recordCompaction: async (compaction, call) => void compactions.push({ compaction, call }),
  });
  const run = (input: Partial<TurnInput>) =>
    engine.run(
      turnInput({ model: 'fake/m', tools: tools.map((t) => t.name), ...input }),
      cp,
      new AbortController().signal,
    );
  return { provider, run, events, results, reflections, compactions };
}

const callBig = answer('', [{ id: 'c1', name: 'big', arguments: '{}' }]);

describe('the summarizer detour', () => {
  it('compresses an oversized result before the model sees it, and books its cost', async () => {
    const h = setup({ rounds: [callBig, answer('done')], side: [answer('400 rows, ids row-0 … row-399.')] });
    const outcome = await h.run({ summarizer: { model: 'fake/small', consecutiveFailures: 0 } });

    expect(outcome.status).toBe('completed');
    expect(h.provider.side).toHaveLength(1);
    const [req] = h.provider.side;
    expect(req.request.model).toBe('small');
    expect(req.request.tools).toEqual([]);
    // The payload travels as evidence, with the extraction contract as the system prompt.
    expect(req.request.messages[1].content).toContain('<evidence kind="tool_result">');
    expect(req.request.messages[1].content).toContain('row-399');

    const seen = h.provider.rounds[1].messages.find((m) => m.role === 'tool') as ChatMessage;
    expect(JSON.parse(seen.content)).toEqual({
      ok: true,
      summarized: true,
      original_bytes: Buffer.byteLength(JSON.stringify({ ok: true, result: BIG })),
      summary: '400 rows, ids row-0 … row-399.',
    });
    // The whole outcome is still recorded; the summary is what the model saw.
    expect(h.results[0].outcome).toEqual({ ok: true, result: BIG });
    expect(h.results[0].content).toBe(seen.content);
    expect(h.results[0].summary).toEqual({
      call: expect.objectContaining({ purpose: 'summarize', ok: true, model: 'fake/small', usage: USAGE }),
      consecutiveFailures: 0,
    });
    const types = h.events.map((e) => e.type);
    expect(types.indexOf('summarizer_started')).toBeLessThan(types.indexOf('summarizer_completed'));
    expect(h.events.find((e) => e.type === 'summarizer_started')?.data).toMatchObject({
      agent: 'summarizer',
      callId: 'c1',
      tool: 'big',
    });
    expect(h.events.find((e) => e.type === 'summarizer_completed')?.data).toMatchObject({
      agent: 'summarizer',
      ok: true,
    });
  });

  it('leaves results under the threshold, and absurdly large ones, to the byte budget', async () => {
    const small = setup({ rounds: [callBig, answer('done')], side: [] }, { summarizeAboveBytes: 1_000_000 });
    await small.run({ summarizer: { model: 'fake/small', consecutiveFailures: 0 } });
    expect(small.provider.side).toHaveLength(0);
    expect(small.results[0].content).toContain('[truncated: showing the first 2000 of');

    const absurd = setup({ rounds: [callBig, answer('done')], side: [] }, { summarizeMaxBytes: 5_000 });
    await absurd.run({ summarizer: { model: 'fake/small', consecutiveFailures: 0 } });
    expect(absurd.provider.side).toHaveLength(0);
    expect(absurd.results[0].content).toContain('[truncated:');
  });

  it('falls back to truncation when the summarizer fails, and counts the failure', async () => {
    const h = setup({ rounds: [callBig, answer('done')], side: [new ProviderError('server', 'boom')] });
    const outcome = await h.run({ summarizer: { model: 'fake/small', consecutiveFailures: 1 } });
    expect(outcome.status).toBe('completed');
    expect(h.results[0].content).toContain('[truncated:');
    expect(h.results[0].summary).toEqual({
      call: expect.objectContaining({ ok: false, error: expect.stringContaining('boom') }),
      consecutiveFailures: 2,
    });
    expect(h.events.find((e) => e.type === 'summarizer_completed')?.data).toMatchObject({ ok: false });
  });

  it('treats a summary no smaller than the payload as a failure', async () => {
    const h = setup({ rounds: [callBig, answer('done')], side: [answer('y'.repeat(40_000))] });
    await h.run({ summarizer: { model: 'fake/small', consecutiveFailures: 0 } });
    expect(h.results[0].summary?.consecutiveFailures).toBe(1);
    // Paid for, so still booked.
    expect(h.results[0].summary?.call).toMatchObject({ ok: false, usage: USAGE });
    expect(h.results[0].content).toContain('[truncated:');
  });

  it('turns itself off after three consecutive failures in the session', async () => {
    const calls = [1, 2, 3, 4].map((i) => ({ id: `c${i}`, name: 'big', arguments: `{"n":${i}}` }));
    const h = setup({
      rounds: [
        answer('', calls.slice(0, 1)),
        answer('', calls.slice(1, 2)),
        answer('', calls.slice(2)),
        answer('ok'),
      ],
      side: [new ProviderError('server', 'down'), new ProviderError('server', 'down')],
    });
    await h.run({ summarizer: { model: 'fake/small', consecutiveFailures: 1 } });
    // Two more failures reach three; the remaining calls are not sent to the summarizer.
    expect(h.provider.side).toHaveLength(2);
    expect(h.results.map((r) => r.summary?.consecutiveFailures)).toEqual([2, 3, undefined, undefined]);
    expect(h.events.filter((e) => e.type === 'summarizer_completed').pop()?.data).toMatchObject({
      disabled: true,
    });
    expect(h.results.every((r) => r.content.includes('[truncated:'))).toBe(true);
  });

  it('does not count a summary cut short by cancelling the turn as a failure', async () => {
    const controller = new AbortController();
    const provider = new RoutingProvider({
      rounds: [callBig],
      side: [
        () => {
          controller.abort();
          throw new ProviderError('cancelled', 'request aborted');
        },
      ],
    });
    const engine = new TurnEngine({
      providers: new ProviderRegistry({}, [provider]),
      tools: new ToolRegistry([big]),
      toolResultMaxBytes: 2_000,
    });
    const results: (SummaryRecord | undefined)[] = [];
    const outcome = await engine.run(
      turnInput({
        model: 'fake/m',
        tools: ['big'],
        summarizer: { model: 'fake/small', consecutiveFailures: 2 },
      }),
      checkpoints({ recordToolResult: async (_m, _o, _d, _c, summary) => void results.push(summary) }),
      controller.signal,
    );
    expect(outcome.status).toBe('cancelled');
    expect(provider.side).toHaveLength(1);
    expect(results).toEqual([undefined]);
  });

  it('resets the failure streak on success', async () => {
    const h = setup({ rounds: [callBig, answer('done')], side: [answer('short')] });
    await h.run({ summarizer: { model: 'fake/small', consecutiveFailures: 2 } });
    expect(h.results[0].summary?.consecutiveFailures).toBe(0);
  });

  it('is skipped entirely when the session already disabled it', async () => {
    const h = setup({ rounds: [callBig, answer('done')], side: [] });
    await h.run({ summarizer: { model: 'fake/small', consecutiveFailures: 3 } });
    expect(h.provider.side).toHaveLength(0);
    expect(h.results[0].summary).toBeUndefined();
  });

  it('never summarizes a failure', async () => {
    const failing = tool('big', async () => {
      throw new Error('x'.repeat(10_000));
    });
    const h = setup({ rounds: [callBig, answer('done')], side: [] }, {}, [failing]);
    await h.run({ summarizer: { model: 'fake/small', consecutiveFailures: 0 } });
    expect(h.provider.side).toHaveLength(0);
  });
});

describe('reflection (seed 001 4h)', () => {
  const failing = tool('flaky', async () => {
    throw new Error('upstream said no');
  });
  const callFlaky = (id: string) => answer('', [{ id, name: 'flaky', arguments: '{}' }]);

  it('is off by default: no reflection call even after a failing tool', async () => {
    const h = setup({ rounds: [callFlaky('c1'), answer('done')] }, {}, [failing]);
    const outcome = await h.run({});
    expect(outcome.status).toBe('completed');
    expect(h.provider.side).toHaveLength(0);
    expect(h.reflections).toHaveLength(0);
  });

  it('after a failing round, writes a note the model reads before its next round', async () => {
    const h = setup(
      {
        rounds: [callFlaky('c1'), answer('done')],
        side: [answer('The upstream refused; answer without it.')],
      },
      {},
      [failing],
    );
    const outcome = await h.run({ budget: { ...DEFAULT_BUDGET, maxReflections: 2 } });
    expect(outcome.status).toBe('completed');
    expect(h.provider.side.map((s) => s.purpose)).toEqual(['reflect']);
    expect(h.provider.side[0].request.messages[1].content).toContain('upstream said no');
    const next = h.provider.rounds[1].messages;
    const note = next[next.length - 1];
    expect(note.role).toBe('user');
    expect(note.content).toMatch(/^<reflection>\nThe upstream refused; answer without it.\n<\/reflection>/);
    expect(h.reflections).toEqual([
      { index: 0, note: note.content, call: expect.objectContaining({ purpose: 'reflect', ok: true }) },
    ]);
    expect(h.events.find((e) => e.type === 'reflection_completed')?.data).toMatchObject({
      index: 0,
      ok: true,
    });
  });

  it('is bounded by maxReflections, counting the ones a resumed turn already has', async () => {
    const h = setup(
      { rounds: [callFlaky('c2'), callFlaky('c3'), answer('done')], side: [answer('one more')] },
      {},
      [failing],
    );
    await h.run({
      budget: { ...DEFAULT_BUDGET, maxReflections: 2 },
      turnMessages: [
        { role: 'user', content: 'go' },
        { role: 'assistant', content: '', toolCalls: [{ id: 'c0', name: 'flaky', arguments: '{}' }] },
        { role: 'tool', toolCallId: 'c0', name: 'flaky', content: '{"ok":false,"kind":"execution_failed"}' },
        { role: 'user', content: '<reflection>\nearlier\n</reflection>' },
      ],
    });
    expect(h.provider.side).toHaveLength(1);
    expect(h.reflections.map((r) => r.index)).toEqual([1]);
  });

  it('a failing reflection is a stub and the loop goes on', async () => {
    const h = setup(
      { rounds: [callFlaky('c1'), answer('done')], side: [new ProviderError('server', 'nope')] },
      {},
      [failing],
    );
    const outcome = await h.run({ budget: { ...DEFAULT_BUDGET, maxReflections: 1 } });
    expect(outcome).toMatchObject({ status: 'completed', finalText: 'done' });
    expect(h.reflections).toEqual([
      {
        index: 0,
        note: null,
        call: expect.objectContaining({ ok: false, error: expect.stringContaining('nope') }),
      },
    ]);
    expect(h.provider.rounds[1].messages.some((m) => m.content.startsWith('<reflection>'))).toBe(false);
  });

  it('makes no call once the USD budget is spent', async () => {
    const h = setup({ rounds: [callFlaky('c1'), answer('done')], side: [] }, {}, [failing]);
    await h.run({ budget: { ...DEFAULT_BUDGET, maxReflections: 1, maxUsd: 1 }, spentUsd: 5 });
    expect(h.provider.side).toHaveLength(0);
  });
});

describe('the written compaction summary', () => {
  const turnOf = (i: number): ChatMessage[] => [
    { role: 'user', content: `question ${i} ${'q'.repeat(400)}` },
    { role: 'assistant', content: `answer ${i} ${'a'.repeat(400)}`, toolCalls: [] },
  ];
  const history = Array.from({ length: 10 }, (_, i) => turnOf(i)).flat();

  it('replaces the omitted middle by the model’s summary of it', async () => {
    const h = setup({ rounds: [answer('done')], side: [answer('They discussed questions 1 to 8.')] });
    await h.run({
      history,
      contextWindowTokens: 1_000,
      summarizer: { model: 'fake/small', consecutiveFailures: 0 },
    });
    expect(h.provider.side.map((s) => s.purpose)).toEqual(['compact']);
    expect(h.provider.side[0].request.messages[1].content).toContain('question 1 ');
    const sent = h.provider.rounds[0].messages;
    expect(sent[0].role).toBe('system');
    expect(sent[1].content).toContain('question 0');
    expect(sent[3].content).toContain('<summary>\nThey discussed questions 1 to 8.\n</summary>');
    expect(sent.some((m) => m.content.startsWith('question 9'))).toBe(true);
    // The cut and the summary go to the checkpoints, so later turns can start from them.
    expect(h.compactions).toEqual([
      {
        compaction: {
          headEnd: 2,
          tailStart: expect.any(Number),
          droppedMessages: expect.any(Number),
          summary: 'They discussed questions 1 to 8.',
        },
        call: expect.objectContaining({ purpose: 'compact', ok: true }),
      },
    ]);
    const { headEnd, tailStart, droppedMessages } = h.compactions[0].compaction;
    expect(droppedMessages).toBe(tailStart - headEnd);
    expect(history[tailStart].content).toMatch(/^question \d/);
    expect(h.events.find((e) => e.type === 'context_compacted')?.data).toMatchObject({ summarized: true });
  });

  it('falls back to the plain note when the summary call fails', async () => {
    const h = setup({ rounds: [answer('done')], side: [new ProviderError('timeout', 'slow')] });
    const outcome = await h.run({
      history,
      contextWindowTokens: 1_000,
      summarizer: { model: 'fake/small', consecutiveFailures: 0 },
    });
    expect(outcome.status).toBe('completed');
    expect(h.provider.rounds[0].messages[3].content).toMatch(/^\[Context compacted: \d+ earlier messages/);
    expect(h.events.find((e) => e.type === 'context_compacted')?.data).toMatchObject({ summarized: false });
    expect(h.compactions[0]).toMatchObject({ compaction: { summary: null }, call: { ok: false } });
  });
});

describe('tool errors in the envelope of seed 002', () => {
  it('carries a ToolError’s kind, hint, field, retryable and details', async () => {
    const t = tool('lookup', async () => {
      throw new ToolError('not_found', 'no such customer', {
        details: { field: 'customer_id', tried: ['c-1'] },
        recoveryHint: 'list customers first',
        retryable: true,
      });
    });
    const h = setup(
      { rounds: [answer('', [{ id: 'c1', name: 'lookup', arguments: '{}' }]), answer('ok')] },
      {},
      [t],
    );
    await h.run({});
    const envelope = {
      ok: false,
      kind: 'not_found',
      message: 'no such customer',
      hint: 'list customers first',
      field: 'customer_id',
      retryable: true,
      details: { field: 'customer_id', tried: ['c-1'] },
      tool_name: 'lookup',
    };
    expect(h.results[0].outcome).toEqual(envelope);
    expect(JSON.parse(h.results[0].content)).toEqual(envelope);
    expect(h.events.find((e) => e.type === 'tool_call_completed')?.data).toMatchObject({
      tool_error: envelope,
      error: 'not_found: no such customer',
    });
  });

  it('replaces oversized details by a preview and a digest', async () => {
    const huge = { log: 'z'.repeat(TOOL_ERROR_DETAILS_MAX_BYTES * 4) };
    const t = tool('lookup', async () => {
      throw new ToolError('upstream_failed', 'the upstream failed', { details: huge });
    });
    const h = setup(
      { rounds: [answer('', [{ id: 'c1', name: 'lookup', arguments: '{}' }]), answer('ok')] },
      {},
      [t],
    );
    await h.run({});
    const failure = h.results[0].outcome as Extract<ToolOutcome, { ok: false }>;
    expect(failure.retryable).toBe(false);
    expect(failure.details).toEqual({
      preview: JSON.stringify(huge).slice(0, 256),
      digest: expect.stringMatching(/^sha256:[0-9a-f]{64}$/),
      bytes: Buffer.byteLength(JSON.stringify(huge)),
    });
  });
});

describe('tenant-blocked tools', () => {
  it('refuses a blocked tool at the blocked-tool gate without running it', async () => {
    let ran = false;
    const t = tool('lookup', async () => {
      ran = true;
      return 1;
    });
    const h = setup(
      { rounds: [answer('', [{ id: 'c1', name: 'lookup', arguments: '{}' }]), answer('ok')] },
      {},
      [t],
    );
    await h.run({ blockedTools: ['lookup'] });
    expect(ran).toBe(false);
    expect(h.results[0].outcome).toMatchObject({ ok: false, kind: 'blocked', retryable: false });
  });
});
