import { turnInput } from './test-support';
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
import { type TurnCheckpoints } from './types';
import { planWaves } from './waves';

const tool = (
  name: string,
  sideEffect: SideEffect,
  execute: () => Promise<unknown> = async () => 'ok',
): ToolDefinition =>
  defineTool({
    name,
    description: name,
    schema: z.strictObject({ key: z.string().optional() }),
    sideEffect,
    resourceKeys: (args) => (args.key ? [args.key] : []),
    timeoutMs: 500,
    needsApproval: false,
    execute,
  });

const call = (id: string, name: string, args: unknown = {}): ToolCallRequest => ({
  id,
  name,
  arguments: typeof args === 'string' ? args : JSON.stringify(args),
});

const registry = new ToolRegistry([
  tool('read', 'read_only'),
  tool('write', 'local_write'),
  tool('fetch', 'network'),
]);
const ALL = ['read', 'write', 'fetch'];
const ids = (waves: ToolCallRequest[][]) => waves.map((w) => w.map((c) => c.id));

describe('planWaves', () => {
  it('runs read-only calls with disjoint keys together', () => {
    expect(
      ids(
        planWaves(
          [call('a', 'read', { key: 'x' }), call('b', 'read', { key: 'y' }), call('c', 'read')],
          registry,
          ALL,
        ),
      ),
    ).toEqual([['a', 'b', 'c']]);
  });

  it('splits read-only calls whose keys overlap', () => {
    expect(
      ids(
        planWaves(
          [call('a', 'read', { key: 'x' }), call('b', 'read', { key: 'y' }), call('c', 'read', { key: 'x' })],
          registry,
          ALL,
        ),
      ),
    ).toEqual([['a', 'b'], ['c']]);
  });

  it('runs every write, network or destructive call alone, keeping order', () => {
    expect(
      ids(
        planWaves(
          [call('a', 'read'), call('b', 'write'), call('c', 'read'), call('d', 'fetch'), call('e', 'read')],
          registry,
          ALL,
        ),
      ),
    ).toEqual([['a'], ['b'], ['c'], ['d'], ['e']]);
  });

  it('runs a call whose effect cannot be known alone: unknown tool, tool not allowed, bad arguments', () => {
    expect(
      ids(
        planWaves(
          [
            call('a', 'read'),
            call('b', 'nope'),
            call('c', 'read'),
            call('d', 'read', '{oops'),
            call('e', 'read', { bad: 1 }),
            call('f', 'write'),
          ],
          registry,
          ['read'],
        ),
      ),
    ).toEqual([['a'], ['b'], ['c'], ['d'], ['e'], ['f']]);
  });
});

describe('the engine runs a wave in parallel', () => {
  class TwoRounds implements ModelProvider {
    readonly name = 'fake';
    round = 0;
    constructor(private readonly calls: ToolCallRequest[]) {}
    async complete(_req: ModelRequest): Promise<ModelResponse> {
      const first = this.round++ === 0;
      return {
        text: first ? '' : 'done',
        toolCalls: first ? this.calls : [],
        usage: { inputTokens: 1, outputTokens: 1, cachedTokens: 0 },
        finishReason: first ? 'tool_calls' : 'stop',
      };
    }
  }
  const checkpoints = (): TurnCheckpoints & { results: string[] } => {
    const results: string[] = [];
    return {
      results,
      recordRound: async () => undefined,
      toolStarted: async () => undefined,
      recordToolResult: async (meta) => void results.push(meta.call.id),
      recordFailedAttempts: async () => undefined,
      recordReflection: async () => undefined,
      recordCompaction: async () => undefined,
      emit: async () => undefined,
      textDelta: () => undefined,
    };
  };
  const input = (tools: string[]) => turnInput({ tools });

  it('starts both read-only calls before either finishes', async () => {
    // Each call waits until both have started: run one after the other they would time out.
    let started = 0;
    let release!: () => void;
    const bothStarted = new Promise<void>((r) => (release = r));
    const gate = async () => {
      if (++started === 2) release();
      await bothStarted;
      return 'ok';
    };
    const tools = new ToolRegistry([tool('r1', 'read_only', gate), tool('r2', 'read_only', gate)]);
    const engine = new TurnEngine({
      providers: new ProviderRegistry({}, [new TwoRounds([call('a', 'r1'), call('b', 'r2')])]),
      tools,
    });
    const cp = checkpoints();
    const outcome = await engine.run(input(['r1', 'r2']), cp, new AbortController().signal);
    expect(outcome.status).toBe('completed');
    expect(cp.results.sort()).toEqual(['a', 'b']);
    expect(outcome.toolCalls).toBe(2);
  });

  it('answers every call of a wave before a persistence failure of one propagates', async () => {
    const tools = new ToolRegistry([tool('r1', 'read_only'), tool('r2', 'read_only')]);
    const engine = new TurnEngine({
      providers: new ProviderRegistry({}, [new TwoRounds([call('a', 'r1'), call('b', 'r2')])]),
      tools,
    });
    const cp = checkpoints();
    cp.recordToolResult = async (meta) => {
      if (meta.call.id === 'a') throw new Error('database went away');
      cp.results.push(meta.call.id);
    };
    await expect(engine.run(input(['r1', 'r2']), cp, new AbortController().signal)).rejects.toThrow(
      'database went away',
    );
    expect(cp.results).toEqual(['b']);
  });
});
