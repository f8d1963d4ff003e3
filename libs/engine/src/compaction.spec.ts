import { checkpoints, turnInput } from './test-support';
import {
  ProviderRegistry,
  type ChatMessage,
  type ModelProvider,
  type ModelRequest,
  type ModelResponse,
} from '@switchboard/providers';
import { ToolRegistry } from '@switchboard/tools';
import { compactHistory, estimateTokens } from './context';
import { TurnEngine } from './engine';
import { type TurnCheckpoints } from './types';

/** n turns of history, each a user question, a tool round and an answer, ~size characters each. */
function conversation(n: number, size = 400): ChatMessage[] {
  const out: ChatMessage[] = [];
  for (let i = 0; i < n; i++) {
    out.push({ role: 'user', content: `q${i} ${'x'.repeat(size)}` });
    out.push({ role: 'assistant', content: '', toolCalls: [{ id: `c${i}`, name: 't', arguments: '{}' }] });
    out.push({ role: 'tool', toolCallId: `c${i}`, name: 't', content: 'r'.repeat(size) });
    out.push({ role: 'assistant', content: `a${i}`, toolCalls: [] });
  }
  return out;
}

describe('compactHistory', () => {
  it('does nothing under the target', () => {
    expect(compactHistory(conversation(3), 100_000)).toBeNull();
  });

  it('keeps the first exchange and the most recent turns whole, and fits the target', () => {
    const history = conversation(40);
    const c = compactHistory(history, 2_000)!;
    expect(c.afterTokens).toBeLessThanOrEqual(2_000);
    expect(c.beforeTokens).toBe(estimateTokens(history));
    expect(c.history.slice(0, 4)).toEqual(history.slice(0, 4));
    expect(c.history[4].content).toMatch(/^\[Context compacted: \d+ earlier messages/);
    expect(c.history.at(-1)).toEqual(history.at(-1));
    // Cut on turn boundaries: every tool call still has its result.
    const calls = c.history.flatMap((m) => (m.role === 'assistant' ? m.toolCalls.map((t) => t.id) : []));
    const results = c.history.flatMap((m) => (m.role === 'tool' ? [m.toolCallId] : []));
    expect(results).toEqual(calls);
    expect(c.droppedMessages + c.history.length - 2).toBe(history.length);
  });
});

describe('the context guard in a turn', () => {
  it('compacts once when the history nears the window, keeps the system prompt, and journals it', async () => {
    const seen: ChatMessage[][] = [];
    const provider: ModelProvider = {
      name: 'fake',
      complete: async (r: ModelRequest): Promise<ModelResponse> => {
        seen.push(r.messages);
        return {
          text: 'ok',
          toolCalls: [],
          usage: { inputTokens: 1, outputTokens: 1, cachedTokens: 0 },
          finishReason: 'stop',
        };
      },
    };
    const events: { type: string; data: Record<string, unknown> }[] = [];
    const cp: TurnCheckpoints = checkpoints({ emit: async (type, data) => void events.push({ type, data }) });
    const history = conversation(60);
    const engine = new TurnEngine({
      providers: new ProviderRegistry({}, [provider]),
      tools: new ToolRegistry([]),
    });
    await engine.run(
      turnInput({
        systemPrompt: 'SYSTEM',
        history,
        turnMessages: [{ role: 'user', content: 'now' }],
        contextWindowTokens: 8_000,
      }),
      cp,
      new AbortController().signal,
    );
    expect(seen[0][0]).toEqual({ role: 'system', content: 'SYSTEM' });
    expect(seen[0].at(-1)).toEqual({ role: 'user', content: 'now' });
    expect(estimateTokens(seen[0])).toBeLessThan(8_000 * 0.8);
    const compaction = events.find((e) => e.type === 'context_compacted');
    expect(compaction?.data).toMatchObject({
      droppedMessages: expect.any(Number),
      beforeTokens: estimateTokens(history),
    });
  });
});
