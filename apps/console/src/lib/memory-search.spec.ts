import { embeddingProgress, memoryQuery, pathLabel, tagsOf } from './memory-search';

describe('memory search', () => {
  const blank = { q: '', mode: '' as const, kind: '' as const, tags: '' };

  it('splits tags on commas and spaces, without blanks or duplicates', () => {
    expect(tagsOf(' ops, home ops\n  ')).toEqual(['ops', 'home']);
    expect(tagsOf('')).toEqual([]);
  });

  it('sends the mode only with a search text, and the filters whenever set', () => {
    expect(memoryQuery(blank)).toEqual({ limit: 50 });
    expect(memoryQuery({ ...blank, mode: 'vector', kind: 'fact', tags: 'ops,home' })).toEqual({
      kind: 'fact',
      tags: 'ops,home',
      limit: 50,
    });
    expect(memoryQuery({ ...blank, q: ' deploy day ', mode: 'hybrid' }, 10)).toEqual({
      q: 'deploy day',
      mode: 'hybrid',
      limit: 10,
    });
  });

  it('labels a hit by the path that found it', () => {
    expect(pathLabel('fts')).toBe('full-text');
    expect(pathLabel('vector')).toBe('vector');
    expect(pathLabel('both')).toBe('full-text + vector');
    expect(pathLabel(null)).toBeNull();
  });

  it('shows progress only while an embedder is filling its set', () => {
    const s = { model: null, target: 'local/hash-256', embedded: 1, total: 3, complete: false };
    expect(embeddingProgress(s)).toEqual({
      percent: 33,
      text: 'Embedding memory with local/hash-256: 1 of 3 records (33%)',
    });
    expect(embeddingProgress({ ...s, embedded: 3, complete: true })).toBeNull();
    expect(embeddingProgress({ ...s, target: null })).toBeNull();
    expect(embeddingProgress(undefined)).toBeNull();
    expect(embeddingProgress({ ...s, total: 0, embedded: 0 })?.percent).toBe(100);
  });
});
