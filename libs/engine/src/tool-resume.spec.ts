/**
 * A call an earlier run started but never recorded (ADR 0004 "outcome unknown"), and the per-call
 * signal a tool sees: its own timeout, or the turn stopping.
 */
import { z } from 'zod';
import {
  ProviderRegistry,
  type ChatMessage,
  type ModelProvider,
  type ModelRequest,
  type ModelResponse,
} from '@switchboard/providers';
import { defineTool, ToolRegistry, type ToolContext, type ToolDefinition } from '@switchboard/tools';
import { TurnEngine } from './engine';
import { classifyToolFailure } from './failures';
import { checkpoints, turnInput } from './test-support';
import type { ToolCallMeta, ToolOutcome } from './types';

const USAGE = { inputTokens: 1, outputTokens: 1, cachedTokens: 0 };

/** Answers every round with a final text; records the tool results it was shown. */
class Finisher implements ModelProvider {
  readonly name = 'fake';
  readonly seen: ChatMessage[][] = [];
  async complete(request: ModelRequest): Promise<ModelResponse> {
    this.seen.push(request.messages);
    return { text: 'done', toolCalls: [], usage: USAGE, finishReason: 'stop' };
  }
}

const runs: { tool: string; ctx: ToolContext }[] = [];

const sideEffect = (name: string, extra: Partial<ToolDefinition> = {}): ToolDefinition =>
  defineTool<z.ZodType>({
    name,
    description: name,
    schema: z.strictObject({}),
    sideEffect: 'network',
    timeoutMs: 1_000,
    needsApproval: false,
    async execute(_args, ctx) {
      runs.push({ tool: name, ctx });
      return { done: true };
    },
    ...extra,
  });

const send = sideEffect('send_email');
const charge = sideEffect('charge_card', { honoursIdempotencyKey: true });
const lookup = sideEffect('lookup', { sideEffect: 'read_only' });

/** A turn whose last persisted step is the model asking for `calls`. */
function resumedTurn(calls: string[]): ChatMessage[] {
  return [
    { role: 'user', content: 'go' },
    {
      role: 'assistant',
      content: '',
      toolCalls: calls.map((name, i) => ({ id: `c${i}`, name, arguments: '{}' })),
    },
  ];
}

async function run(tools: ToolDefinition[], calls: string[], startedCalls: string[]) {
  const provider = new Finisher();
  const engine = new TurnEngine({
    providers: new ProviderRegistry({}, [provider]),
    tools: new ToolRegistry(tools),
  });
  const results: { meta: ToolCallMeta; outcome: ToolOutcome; content: string }[] = [];
  const outcome = await engine.run(
    turnInput({
      turnId: 'turn-9',
      tools: tools.map((t) => t.name),
      turnMessages: resumedTurn(calls),
      startedCalls,
    }),
    checkpoints({
      recordToolResult: async (meta, o, _ms, content) => void results.push({ meta, outcome: o, content }),
    }),
    new AbortController().signal,
  );
  return { outcome, results, provider };
}

beforeEach(() => {
  runs.length = 0;
});

describe('a call an earlier run started but never recorded', () => {
  it('is answered outcome_unknown, without running, when its side-effecting tool ignores the key', async () => {
    const { outcome, results, provider } = await run([send], ['send_email'], ['c0']);

    expect(runs).toEqual([]);
    expect(results).toHaveLength(1);
    const result = results[0].outcome;
    expect(result).toMatchObject({
      ok: false,
      kind: 'outcome_unknown',
      retryable: false,
      tool_name: 'send_email',
      details: { idempotencyKey: 'turn-9:c0' },
    });
    expect(result.ok === false && result.hint).toMatch(/verify/);
    expect(result.ok === false && classifyToolFailure(result)).toMatchObject({
      class: 'OutcomeUnknown',
      recoverable: false,
    });
    // The model is told, and the turn goes on.
    const shown = provider.seen[0].find((m) => m.role === 'tool');
    expect(JSON.parse(shown!.content)).toMatchObject({ kind: 'outcome_unknown' });
    expect(outcome).toMatchObject({ status: 'completed', finalText: 'done' });
  });

  it('runs again with the same idempotency key when its tool honours the key', async () => {
    const { results } = await run([charge], ['charge_card'], ['c0']);

    expect(runs.map((r) => [r.tool, r.ctx.idempotencyKey, r.ctx.resumed])).toEqual([
      ['charge_card', 'turn-9:c0', true],
    ]);
    expect(results[0].outcome).toEqual({ ok: true, result: { done: true } });
  });

  it('runs again when its tool is read-only', async () => {
    await run([lookup], ['lookup'], ['c0']);
    expect(runs.map((r) => [r.tool, r.ctx.resumed])).toEqual([['lookup', true]]);
  });

  it('leaves calls no earlier run started alone: they run as usual', async () => {
    const { results } = await run([send], ['send_email'], []);
    expect(runs.map((r) => [r.tool, r.ctx.resumed])).toEqual([['send_email', false]]);
    expect(results[0].outcome.ok).toBe(true);
  });
});

describe('the signal a tool sees', () => {
  it('is aborted when the call times out, so the tool can stop', async () => {
    let observed: { aborted: boolean; reason: unknown } | undefined;
    const slow = defineTool({
      name: 'slow',
      description: 'Waits for its signal.',
      schema: z.strictObject({}),
      sideEffect: 'read_only',
      timeoutMs: 30,
      needsApproval: false,
      execute: (_args, ctx) =>
        new Promise((_resolve, reject) => {
          ctx.signal.addEventListener('abort', () => {
            observed = { aborted: ctx.signal.aborted, reason: ctx.signal.reason };
            reject(new Error('stopped'));
          });
        }),
    }) as ToolDefinition;
    const { results } = await run([slow], ['slow'], []);

    expect(results[0].outcome).toMatchObject({ ok: false, kind: 'timeout', retryable: true });
    expect(observed?.aborted).toBe(true);
    expect((observed?.reason as DOMException).name).toBe('TimeoutError');
  });

  it('is aborted when the turn stops', async () => {
    const turn = new AbortController();
    let seen: AbortSignal | undefined;
    const waits = defineTool({
      name: 'waits',
      description: 'Stops the turn, then waits.',
      schema: z.strictObject({}),
      sideEffect: 'read_only',
      timeoutMs: 5_000,
      needsApproval: false,
      execute: (_args, ctx) => {
        seen = ctx.signal;
        expect(ctx.signal).not.toBe(turn.signal);
        turn.abort('cancelled');
        return new Promise(() => undefined);
      },
    }) as ToolDefinition;
    const engine = new TurnEngine({
      providers: new ProviderRegistry({}, [new Finisher()]),
      tools: new ToolRegistry([waits]),
    });
    const outcome = await engine.run(
      turnInput({ tools: ['waits'], turnMessages: resumedTurn(['waits']) }),
      checkpoints(),
      turn.signal,
    );
    expect(seen?.aborted).toBe(true);
    expect(outcome.status).toBe('cancelled');
  });
});
