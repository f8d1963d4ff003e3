import { classifyToolFailure } from '@switchboard/engine';
import { cancelledAnswer, unansweredCalls } from '@switchboard/store';

/**
 * The cancel statement's answers (libs/store/src/unrun-answers.ts) are what the engine's `answerUnrun`
 * gives a call a stop kept from running: checked here, where both libraries meet.
 */
describe('cancelledAnswer', () => {
  it('carries the classification the engine gives a cancelled call', () => {
    const { result, failure, error } = cancelledAnswer({ name: 'word_count' });
    expect(result).toMatchObject({ ok: false, kind: 'cancelled', retryable: true, tool_name: 'word_count' });
    expect(failure).toEqual({ kind: 'cancelled', retryable: true, ...classifyToolFailure(result) });
    expect(error).toBe(`cancelled: ${result.message}`);
  });
});

describe('unansweredCalls', () => {
  const calls = [
    { id: 'wc', name: 'word_count', arguments: '{"text":"a b"}' },
    { id: 'ct', name: 'current_time', arguments: '{}' },
  ];

  it('lists the calls of assistant messages no tool result answers, in order', () => {
    expect(
      unansweredCalls([
        { role: 'user', toolCalls: null, toolCallId: null },
        { role: 'assistant', toolCalls: calls, toolCallId: null },
        { role: 'tool', toolCalls: null, toolCallId: 'ct' },
      ]),
    ).toEqual([calls[0]]);
  });

  it('finds none in a turn whose rounds are answered, or that has no round', () => {
    expect(
      unansweredCalls([
        { role: 'assistant', toolCalls: calls, toolCallId: null },
        { role: 'tool', toolCalls: null, toolCallId: 'wc' },
        { role: 'tool', toolCalls: null, toolCallId: 'ct' },
        { role: 'assistant', toolCalls: null, toolCallId: null },
      ]),
    ).toEqual([]);
    expect(unansweredCalls([{ role: 'user', toolCalls: null, toolCallId: null }])).toEqual([]);
  });
});
