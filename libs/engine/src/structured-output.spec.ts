import type { ResponseFormat } from '@switchboard/contracts';
import type { ChatMessage } from '@switchboard/providers';
import { decideStructured, withRepairPrompts } from './structured-output';

const format: ResponseFormat = {
  type: 'json_schema',
  name: 'count',
  schema: { type: 'object', properties: { n: { type: 'integer' } }, required: ['n'] },
};
const user = (content: string): ChatMessage => ({ role: 'user', content });
const said = (content: string): ChatMessage => ({ role: 'assistant', content, toolCalls: [] });
const called: ChatMessage = {
  role: 'assistant',
  content: 'let me count',
  toolCalls: [{ id: 'c1', name: 'word_count', arguments: '{}' }],
};
const result: ChatMessage = { role: 'tool', toolCallId: 'c1', name: 'word_count', content: '{"ok":true}' };

describe('decideStructured', () => {
  it('accepts a matching final answer (its JSON text)', () => {
    expect(decideStructured(format, [user('q'), said('```json\n{"n":3}\n```')])).toEqual({
      kind: 'accept',
      finalText: '{"n":3}',
    });
  });

  it('repairs the first mismatch, telling the model what failed; tool rounds are not judged', () => {
    const d = decideStructured(format, [user('q'), called, result, said('three')]);
    expect(d).toMatchObject({ kind: 'repair', problem: expect.stringContaining('not JSON') });
    expect(d.kind === 'repair' && d.prompt.role === 'user' && d.prompt.content).toContain('"required":["n"]');
  });

  it('fails the second mismatch structured_output_invalid with the validator’s message', () => {
    const d = decideStructured(
      format,
      [user('q'), said('three'), user('repair'), said('{"n":"3"}')],
      'openai/x',
    );
    expect(d).toMatchObject({
      kind: 'fail',
      failure: {
        kind: 'structured_output_invalid',
        category: 'protocol',
        message: expect.stringContaining('$.n must be integer'),
        model: 'openai/x',
      },
    });
  });
});

describe('withRepairPrompts', () => {
  it('puts back the repair prompt after each rejected answer of a resumed transcript, not after the last', () => {
    const stored = [user('q'), said('three'), said('{"n":3}')];
    const rebuilt = withRepairPrompts(stored, format);
    expect(rebuilt.map((m) => m.role)).toEqual(['user', 'assistant', 'user', 'assistant']);
    expect(rebuilt[2]).toEqual(
      (decideStructured(format, stored.slice(0, 2)) as { prompt: ChatMessage }).prompt,
    );
    // The rebuilt transcript decides as the first run did: the repaired answer is accepted.
    expect(decideStructured(format, rebuilt)).toMatchObject({ kind: 'accept' });
    expect(withRepairPrompts(stored, undefined)).toEqual(stored);
    expect(withRepairPrompts([user('q'), said('three')], format)).toHaveLength(2);
  });
});
