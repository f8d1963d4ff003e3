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
import { checkpoints, turnInput } from './test-support';
import type { ToolOutcome } from './types';

/** The loop's safe points (docs/adr/0014): where a cancel stops the turn and an interjection joins it. */
const USAGE = { inputTokens: 1, outputTokens: 1, cachedTokens: 0 };

const echo = defineTool({
  name: 'echo',
  description: 'echoes',
  schema: z.strictObject({ n: z.int() }),
  sideEffect: 'local_write',
  timeoutMs: 1_000,
  needsApproval: false,
  execute: async ({ n }) => ({ n }),
}) as ToolDefinition;

/** Two calls (two waves) in the first round, then an answer. */
function recording(): ModelProvider & { requests: ChatMessage[][] } {
  const requests: ChatMessage[][] = [];
  return {
    name: 'fake',
    requests,
    complete: async (r: ModelRequest): Promise<ModelResponse> => {
      requests.push(r.messages);
      const first = requests.length === 1;
      return {
        text: first ? '' : 'done',
        toolCalls: first
          ? [
              { id: 'a', name: 'echo', arguments: '{"n":1}' },
              { id: 'b', name: 'echo', arguments: '{"n":2}' },
            ]
          : [],
        usage: USAGE,
        finishReason: first ? 'tool_calls' : 'stop',
      };
    },
  };
}

const engineFor = (provider: ModelProvider) =>
  new TurnEngine({ providers: new ProviderRegistry({}, [provider]), tools: new ToolRegistry([echo]) });

describe('safe points', () => {
  it('adds what was interjected to the next provider call, after the tool results', async () => {
    const provider = recording();
    let asked = 0;
    const cp = checkpoints({
      interjections: async () =>
        ++asked === 2 ? [{ role: 'user', content: 'steer: be brief' } satisfies ChatMessage] : [],
    });
    const outcome = await engineFor(provider).run(
      turnInput({ tools: ['echo'] }),
      cp,
      new AbortController().signal,
    );
    expect(outcome).toMatchObject({ status: 'completed', finalText: 'done' });
    // Asked before each provider call.
    expect(asked).toBe(2);
    expect(provider.requests[1].slice(-3).map((m) => m.role)).toEqual(['tool', 'tool', 'user']);
    expect(provider.requests[1].at(-1)).toEqual({ role: 'user', content: 'steer: be brief' });
  });

  it('stops before the next wave when cancelled during a tool: the unrun call is answered cancelled', async () => {
    const provider = recording();
    const controller = new AbortController();
    const outcomes: [string, ToolOutcome][] = [];
    const cp = checkpoints({
      recordToolResult: async (meta, o) => {
        outcomes.push([meta.call.id, o]);
        // The cancel arrives while the first wave is being recorded.
        controller.abort('cancelled');
      },
    });
    const outcome = await engineFor(provider).run(turnInput({ tools: ['echo'] }), cp, controller.signal);
    expect(outcome).toMatchObject({ status: 'cancelled', stopReason: 'cancelled', toolCalls: 2 });
    expect(outcomes.map(([id, o]) => [id, o.ok ? 'ok' : o.kind])).toEqual([
      ['a', 'ok'],
      ['b', 'cancelled'],
    ]);
    expect(provider.requests).toHaveLength(1);
  });

  it('never calls the provider for a turn cancelled before it began', async () => {
    const provider = recording();
    const controller = new AbortController();
    controller.abort('cancelled');
    let asked = 0;
    const cp = checkpoints({ interjections: async () => (asked++, []) });
    const outcome = await engineFor(provider).run(turnInput({ tools: ['echo'] }), cp, controller.signal);
    expect(outcome).toMatchObject({ status: 'cancelled', iterations: 0, toolCalls: 0 });
    expect(provider.requests).toHaveLength(0);
    expect(asked).toBe(0);
  });
});
