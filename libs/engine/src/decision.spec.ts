import type { ChatMessage } from '@switchboard/providers';
import type { RecalledRecord } from './context';
import { calledTools, decisionStrategy, withCitations } from './decision';

const call = (name: string, args: unknown = {}): ChatMessage => ({
  role: 'assistant',
  content: '',
  toolCalls: [{ id: `c-${name}`, name, arguments: JSON.stringify(args) }],
});
const record = (ref: string, via: RecalledRecord['via'], title = ref): RecalledRecord => ({
  ref,
  kind: 'fact',
  title,
  score: 1,
  path: 'fts',
  via,
  source: 'api',
  sourceTurnId: null,
  sourceSessionId: null,
});

describe('decisionStrategy (seed 001 stage 6.7)', () => {
  it.each([
    [[], 0, 'direct_answer'],
    [[], 2, 'retrieval_augmented'],
    [['memory_search', 'memory_get'], 0, 'retrieval_augmented'],
    [['http_fetch'], 3, 'web_augmented'],
    [['docs__web_search', 'memory_get'], 0, 'web_augmented'],
    [['word_count'], 1, 'tool_assisted'],
    [['http_fetch', 'word_count'], 0, 'tool_assisted'],
  ])('%j with %d recalled → %s', (tools, recalled, strategy) => {
    expect(decisionStrategy(tools, recalled)).toBe(strategy);
  });

  it("reads the called tools from the turn's assistant messages", () => {
    expect(calledTools([{ role: 'user', content: 'hi' }, call('http_fetch'), call('memory_get')])).toEqual([
      'http_fetch',
      'memory_get',
    ]);
  });
});

describe('withCitations (seed 001 stage 6.1)', () => {
  it('appends the recalled records (not standing preferences) and the web pages read', () => {
    const text = withCitations(
      'The answer.  ',
      [
        record('mem_a', 'facts', 'Deploy  window'),
        record('mem_b', 'episodic'),
        record('mem_p', 'preferences'),
      ],
      [
        call('http_fetch', { url: 'https://example.com/a' }),
        call('http_fetch', { url: 'https://example.com/a' }),
        { role: 'assistant', content: '', toolCalls: [{ id: 'x', name: 'http_fetch', arguments: '{bad' }] },
      ],
    );
    expect(text).toBe(
      'The answer.\n\nSources from memory:\n- [mem_a] Deploy window\n- [mem_b] mem_b\n' +
        'Sources from the web:\n- https://example.com/a',
    );
  });

  it('leaves the text alone without sources', () => {
    expect(withCitations('Plain.', [record('mem_p', 'preferences')], [call('word_count')])).toBe('Plain.');
  });

  it('bounds the list and counts what it left out', () => {
    const many = Array.from({ length: 200 }, (_, i) => record(`mem_${i}`, 'facts', 'x'.repeat(40)));
    const text = withCitations('A.', many, []);
    expect(text.length).toBeLessThan(2_200);
    expect(text).toMatch(/\(and \d+ more\)$/);
  });
});
