/**
 * Structured output in the engine's loop (docs/adr/0048): the format goes to the provider with every
 * round, only the final answer is validated, a mismatch gets one repair round (a round like any other:
 * recorded, counted), a second one fails the turn, and a resumed run rebuilds the repair it owes.
 */
import type { ResponseFormat } from '@switchboard/contracts';
import {
  ProviderRegistry,
  type ChatMessage,
  type ModelProvider,
  type ModelRequest,
  type ModelResponse,
} from '@switchboard/providers';
import { ToolRegistry, wordCount } from '@switchboard/tools';
import { TurnEngine } from './engine';
import { checkpoints, turnInput } from './test-support';
import { DEFAULT_BUDGET, type RoundRecord } from './types';

const format: ResponseFormat = {
  type: 'json_schema',
  name: 'count',
  schema: { type: 'object', properties: { words: { type: 'integer' } }, required: ['words'] },
};

const usage = { inputTokens: 10, outputTokens: 5, cachedTokens: 0 };
const say = (text: string): ModelResponse => ({ text, toolCalls: [], usage, finishReason: 'stop' });
const countWords: ModelResponse = {
  text: 'Counting first.',
  toolCalls: [{ id: 'c1', name: 'word_count', arguments: '{"text":"a b c"}' }],
  usage,
  finishReason: 'tool_calls',
};

/** Plays its replies in order and keeps every request. */
class Scripted implements ModelProvider {
  readonly name = 'fake';
  readonly requests: ModelRequest[] = [];
  constructor(private readonly replies: ModelResponse[]) {}
  async complete(request: ModelRequest): Promise<ModelResponse> {
    this.requests.push({ ...request, messages: [...request.messages] });
    const next = this.replies.shift();
    if (!next) throw new Error('script exhausted');
    return next;
  }
}

async function run(replies: ModelResponse[], overrides: Parameters<typeof turnInput>[0] = {}) {
  const provider = new Scripted(replies);
  const engine = new TurnEngine({
    providers: new ProviderRegistry({}, [provider]),
    tools: new ToolRegistry([wordCount]),
    sleep: async () => undefined,
  });
  const rounds: RoundRecord[] = [];
  const outcome = await engine.run(
    turnInput({ tools: ['word_count'], responseFormat: format, ...overrides }),
    checkpoints({ recordRound: async (r) => void rounds.push(r) }),
    new AbortController().signal,
  );
  return { outcome, provider, rounds };
}

const last = (messages: ChatMessage[]): ChatMessage => messages[messages.length - 1];

describe('structured output in the loop', () => {
  it('sends the format every round, does not judge tool rounds, repairs a mismatch once', async () => {
    const { outcome, provider, rounds } = await run([
      countWords,
      say('There are 3 words.'),
      say('{"words":3}'),
    ]);
    expect(outcome).toMatchObject({
      status: 'completed',
      stopReason: 'final_answer',
      finalText: '{"words":3}',
      iterations: 3,
      toolCalls: 1,
    });
    expect(provider.requests.map((r) => r.responseFormat)).toEqual([format, format, format]);
    // The repair round is a round like any other: recorded (and so priced and booked).
    expect(rounds).toHaveLength(3);
    const repair = last(provider.requests[2].messages);
    expect(repair.role).toBe('user');
    expect(repair.role === 'user' && repair.content).toContain('the answer is not JSON');
  });

  it('fails structured_output_invalid when the repaired answer still does not match', async () => {
    const { outcome, provider } = await run([say('three'), say('{"words":"3"}')]);
    expect(outcome).toMatchObject({
      status: 'failed',
      stopReason: 'structured_output_invalid',
      finalText: '',
      iterations: 2,
      failure: {
        kind: 'structured_output_invalid',
        message: 'the answer does not match the schema: $.words must be integer',
      },
    });
    expect(provider.requests).toHaveLength(2);
  });

  it('fails rather than complete with an invalid answer when the budget leaves no round to repair', async () => {
    const { outcome, provider } = await run([say('three')], {
      budget: { ...DEFAULT_BUDGET, maxIterations: 1 },
    });
    expect(outcome).toMatchObject({
      status: 'failed',
      stopReason: 'structured_output_invalid',
      failure: { message: expect.stringContaining('before a repair round') },
    });
    expect(provider.requests).toHaveLength(1);
  });

  it('a run resumed after a rejected answer was committed owes, and runs, its repair round', async () => {
    const { outcome, provider } = await run([say('{"words":2}')], {
      turnMessages: [
        { role: 'user', content: 'count "a b"' },
        { role: 'assistant', content: 'two', toolCalls: [] },
      ],
    });
    expect(outcome).toMatchObject({ status: 'completed', finalText: '{"words":2}', iterations: 2 });
    const sent = provider.requests[0].messages;
    expect(sent.slice(-2).map((m) => m.role)).toEqual(['assistant', 'user']);
    expect(last(sent).role === 'user' && last(sent)).toMatchObject({
      content: expect.stringContaining('Answer again'),
    });
  });

  it('without a format the first final answer ends the turn as it always did', async () => {
    const { outcome } = await run([say('three')], { responseFormat: undefined });
    expect(outcome).toMatchObject({ status: 'completed', finalText: 'three', iterations: 1 });
  });
});
