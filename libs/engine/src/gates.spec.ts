import { checkpoints, turnInput } from './test-support';
import { z } from 'zod';
import {
  ProviderRegistry,
  type ModelProvider,
  type ModelRequest,
  type ModelResponse,
  type ToolCallRequest,
} from '@switchboard/providers';
import { defineTool, ToolRegistry, type SideEffect, type ToolDefinition } from '@switchboard/tools';
import { TurnEngine } from './engine';
import type { ToolGates } from './gates';
import { type ToolOutcome, type TurnCheckpoints } from './types';

/** A model that asks for the given rounds of calls, then answers. */
class Script implements ModelProvider {
  readonly name = 'fake';
  private i = 0;
  constructor(private readonly rounds: ToolCallRequest[][]) {}
  async complete(_r: ModelRequest): Promise<ModelResponse> {
    const calls = this.rounds[this.i++] ?? [];
    return {
      text: calls.length ? '' : 'done',
      toolCalls: calls,
      usage: { inputTokens: 1, outputTokens: 1, cachedTokens: 0 },
      finishReason: calls.length ? 'tool_calls' : 'stop',
    };
  }
}

const runs: string[] = [];
const make = (name: string, sideEffect: SideEffect, needsApproval = false): ToolDefinition =>
  defineTool({
    name,
    description: name,
    schema: z.strictObject({ n: z.int() }),
    sideEffect,
    timeoutMs: 1000,
    needsApproval,
    execute: async (args) => (runs.push(`${name}:${args.n}`), args.n * 2),
  });

const tools = new ToolRegistry([
  make('read', 'read_only'),
  make('send', 'network'),
  make('pay', 'destructive', true),
]);
const c = (id: string, name: string, n: unknown) => ({ id, name, arguments: JSON.stringify({ n }) });

async function run(rounds: ToolCallRequest[][], gates?: ToolGates) {
  runs.length = 0;
  const outcomes = new Map<string, ToolOutcome>();
  const events: { type: string; data: Record<string, unknown> }[] = [];
  const cp: TurnCheckpoints = checkpoints({
    recordToolResult: async (m, o) => void outcomes.set(m.call.id, o),
    emit: async (type, data) => void events.push({ type, data }),
  });
  const engine = new TurnEngine({ providers: new ProviderRegistry({}, [new Script(rounds)]), tools, gates });
  const outcome = await engine.run(
    turnInput({ tools: ['read', 'send', 'pay'] }),
    cp,
    new AbortController().signal,
  );
  return { outcome, outcomes, events };
}

describe('per-call gates', () => {
  it('never executes an identical side-effecting call twice in a turn, and replays its result', async () => {
    const { outcomes } = await run([[c('a', 'send', 1)], [c('b', 'send', 1)], [c('c', 'send', 2)]]);
    expect(runs).toEqual(['send:1', 'send:2']);
    expect(outcomes.get('b')).toEqual({ ok: true, result: 2 });
  });

  it('replays an identical read-only call within a round only', async () => {
    await run([[c('a', 'read', 1), c('w', 'send', 9), c('b', 'read', 1)], [c('c', 'read', 1)]]);
    // a and b are split by the write into two waves of one round: b is replayed; the next round reads again.
    expect(runs).toEqual(['read:1', 'send:9', 'read:1']);
  });

  it('applies blocked, then the pre-hook, before validating arguments', async () => {
    const order: string[] = [];
    const gates: ToolGates = {
      blocked: ({ call }) => (
        order.push(`blocked:${call.id}`),
        call.name === 'send' ? 'sending is off for this tenant' : null
      ),
      before: ({ call }, args) => {
        order.push(`before:${call.id}`);
        return (args as { n?: unknown }).n === 13 ? 'unlucky' : undefined;
      },
    };
    const { outcomes } = await run(
      [[c('s', 'send', 1)], [c('r', 'read', 13)], [c('v', 'read', 'not a number')]],
      gates,
    );
    expect(outcomes.get('s')).toMatchObject({
      ok: false,
      kind: 'blocked',
      message: 'sending is off for this tenant',
    });
    expect(outcomes.get('r')).toMatchObject({ ok: false, kind: 'blocked', message: 'unlucky' });
    expect(outcomes.get('v')).toMatchObject({ ok: false, kind: 'invalid_arguments' });
    expect(order).toEqual(['blocked:s', 'blocked:r', 'before:r', 'blocked:v', 'before:v']);
    expect(runs).toEqual([]);
  });

  it('runs the post-hook with the outcome and ignores its failure', async () => {
    const seen: ToolOutcome[] = [];
    const gates: ToolGates = {
      after: (_ctx, o) => {
        seen.push(o);
        throw new Error('audit sink down');
      },
    };
    const { outcome, outcomes } = await run([[c('a', 'read', 2)]], gates);
    expect(seen).toEqual([{ ok: true, result: 4 }]);
    expect(outcomes.get('a')).toEqual({ ok: true, result: 4 });
    expect(outcome.status).toBe('completed');
  });
});
