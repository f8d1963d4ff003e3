import { checkpoints, turnInput } from './test-support';
import { z } from 'zod';
import {
  ProviderRegistry,
  type ChatMessage,
  type ModelProvider,
  type ModelRequest,
  type ModelResponse,
} from '@switchboard/providers';
import { defineTool, ToolRegistry, type ToolDefinition } from '@switchboard/tools';
import { TurnEngine } from './engine';
import { fingerprint, NoProgressTracker } from './no-progress';
import { type ToolOutcome, type TurnCheckpoints } from './types';

const call = (args: string, name = 'flaky') => ({ id: 'c', name, arguments: args });
const fail = (retryable: boolean): ToolOutcome => ({
  ok: false,
  kind: 'execution_failed',
  message: 'boom',
  retryable,
});

describe('NoProgressTracker', () => {
  it('escalates identical permanent failures: continue, nudge, halt', () => {
    const t = new NoProgressTracker();
    expect(t.record(call('{"a":1}'), fail(false)).action).toBe('continue');
    expect(t.record(call('{"a":1}'), fail(false))).toMatchObject({
      action: 'nudge',
      hint: expect.stringContaining('2 times'),
    });
    expect(t.record(call('{"a":1}'), fail(false))).toMatchObject({
      action: 'halt',
      summary: expect.stringContaining('flaky failed 3 times'),
    });
  });

  it('gives recoverable failures more headroom', () => {
    const t = new NoProgressTracker();
    const verdicts = [1, 2, 3, 4, 5].map(() => t.record(call('{}'), fail(true)).action);
    expect(verdicts).toEqual(['continue', 'continue', 'continue', 'nudge', 'halt']);
  });

  it('counts only identical calls, and a success clears the count', () => {
    const t = new NoProgressTracker();
    t.record(call('{"a":1,"b":2}'), fail(false));
    expect(t.record(call('{"b":2,"a":1}'), fail(false)).action).toBe('nudge');
    expect(t.record(call('{"a":2}'), fail(false)).action).toBe('continue');
    t.record(call('{"a":1,"b":2}'), { ok: true, result: 1 });
    expect(t.record(call('{"a":1,"b":2}'), fail(false)).action).toBe('continue');
  });

  it('fingerprints by name and canonical arguments', () => {
    expect(fingerprint(call('{"x":[1,{"b":1,"a":2}]}'))).toBe(
      fingerprint(call('{ "x": [1, {"a":2,"b":1}] }')),
    );
    expect(fingerprint(call('{"x":1}'))).not.toBe(fingerprint(call('{"x":1}', 'other')));
    expect(fingerprint(call('{broken'))).toBe('flaky:{broken');
  });
});

describe('the breaker in a turn', () => {
  const flaky = defineTool({
    name: 'flaky',
    description: 'always fails',
    schema: z.strictObject({ q: z.string() }),
    sideEffect: 'read_only',
    timeoutMs: 1000,
    needsApproval: false,
    execute: async () => {
      throw new Error('backend says no');
    },
  }) as ToolDefinition;

  class Stubborn implements ModelProvider {
    readonly name = 'fake';
    requests: ChatMessage[][] = [];
    async complete(req: ModelRequest): Promise<ModelResponse> {
      this.requests.push(req.messages);
      return {
        text: '',
        toolCalls: [{ id: `c${this.requests.length}`, name: 'flaky', arguments: '{"q":"same"}' }],
        usage: { inputTokens: 1, outputTokens: 1, cachedTokens: 0 },
        finishReason: 'tool_calls',
      };
    }
  }

  const run = async (turnMessages: ChatMessage[]) => {
    const provider = new Stubborn();
    const engine = new TurnEngine({
      providers: new ProviderRegistry({}, [provider]),
      tools: new ToolRegistry([flaky]),
    });
    const contents: string[] = [];
    const cp: TurnCheckpoints = checkpoints({
      recordToolResult: async (_m, _o, _d, content) => void contents.push(content),
    });
    const outcome = await engine.run(
      turnInput({ turnMessages, tools: ['flaky'] }),
      cp,
      new AbortController().signal,
    );
    return { outcome, provider, contents };
  };

  it('nudges on the second identical failure and halts on the third with a root-cause summary', async () => {
    const { outcome, provider, contents } = await run([{ role: 'user', content: 'go' }]);
    expect(provider.requests).toHaveLength(3);
    expect(JSON.parse(contents[0])).not.toHaveProperty('hint');
    expect(JSON.parse(contents[1]).hint).toContain('Do not repeat it');
    expect(outcome).toMatchObject({
      status: 'failed',
      stopReason: 'no_progress',
      iterations: 3,
      failure: { kind: 'no_progress', brief: expect.stringContaining('backend says no') },
    });
  });

  it('a resumed turn remembers the failures already in its transcript', async () => {
    const failed = JSON.stringify(fail(false));
    const { outcome, provider } = await run([
      { role: 'user', content: 'go' },
      { role: 'assistant', content: '', toolCalls: [{ id: 'a', name: 'flaky', arguments: '{"q":"same"}' }] },
      { role: 'tool', toolCallId: 'a', name: 'flaky', content: failed },
      { role: 'assistant', content: '', toolCalls: [{ id: 'b', name: 'flaky', arguments: '{"q":"same"}' }] },
      { role: 'tool', toolCallId: 'b', name: 'flaky', content: failed },
    ]);
    expect(provider.requests).toHaveLength(1);
    expect(outcome).toMatchObject({ status: 'failed', stopReason: 'no_progress' });
  });
});
