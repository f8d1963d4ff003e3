import { bigrams, searchQuery, searchText, terms } from './cjk';
import { snippetOf } from './snippet';
import { decodeSourceRef, encodeSourceRef } from './source-ref';

describe('CJK expansion', () => {
  it('cuts text into script runs, lower-cased, punctuation dropped', () => {
    expect(terms('I use Python用来写机器学习, OK?')).toEqual([
      { kind: 'word', text: 'i' },
      { kind: 'word', text: 'use' },
      { kind: 'word', text: 'python' },
      { kind: 'cjk', text: '用来写机器学习' },
      { kind: 'word', text: 'ok' },
    ]);
  });

  it('makes overlapping bigrams of a run; one character stays itself', () => {
    expect(bigrams('机器学习')).toEqual(['机器', '器学', '学习']);
    expect(bigrams('猫')).toEqual(['猫']);
    expect(bigrams('')).toEqual([]);
  });

  it('indexes CJK runs as unigrams and bigrams, words as they are', () => {
    expect(searchText('Tokyo 東京タワー')).toBe('tokyo 東 京 タ ワ ー 東京 京タ タワ ワー');
    expect(searchText('喜欢猫')).toBe('喜 欢 猫 喜欢 欢猫');
  });

  it('queries words OR-ed and each CJK run as the AND of its bigrams', () => {
    expect(searchQuery('favourite colour 机器学习')).toBe('favourite | colour | ( 机器 & 器学 & 学习 )');
    expect(searchQuery('猫')).toBe('猫');
    expect(searchQuery('タワー')).toBe('( タワ & ワー )');
  });

  it('treats a long CJK run as a sentence: its bigrams OR-ed, not all required', () => {
    expect(searchQuery('東京タワーはどこ')).toBe('東京 | 京タ | タワ | ワー | ーは | はど | どこ');
    expect(searchQuery('我最喜欢的颜色是什么')).toBe(
      '我最 | 最喜 | 喜欢 | 欢的 | 的颜 | 颜色 | 色是 | 是什 | 什么',
    );
  });

  it('never lets tsquery syntax through and returns null when nothing is searchable', () => {
    expect(searchQuery("a & b | !c <-> 'd' (e):* \\f")).toBe('a | b | c | d | e | f');
    expect(searchQuery('  ?!& ')).toBeNull();
    expect(searchQuery('')).toBeNull();
  });

  it('dedupes terms and caps a long query at 32 of them', () => {
    expect(searchQuery('cat Cat CAT')).toBe('cat');
    const long = Array.from({ length: 100 }, (_, i) => `w${i}`).join(' ');
    expect(searchQuery(long)?.split(' | ')).toHaveLength(32);
  });

  it('applies the same split to index text and query text (full-width and composed forms too)', () => {
    // NFKC: full-width Latin and half-width katakana become their usual forms on both sides.
    expect(searchText('ＰＹＴＨＯＮ')).toBe('python');
    expect(searchQuery('ＰＹＴＨＯＮ')).toBe('python');
    expect(searchText('ｶﾀｶﾅ')).toBe(searchText('カタカナ'));
  });
});

describe('snippetOf', () => {
  it('cuts a window around the first query term, from the original text', () => {
    const content = `${'x '.repeat(200)}the user prefers 机器学习 over statistics ${'y '.repeat(200)}`;
    const s = snippetOf(content, '机器学习');
    expect(s.startsWith('…')).toBe(true);
    expect(s.endsWith('…')).toBe(true);
    expect(s).toContain('the user prefers 机器学习 over statistics');
    expect(s).not.toContain('机器 器学');
  });

  it('starts at the beginning when no term occurs literally', () => {
    expect(snippetOf('Short note.', 'unrelated')).toBe('Short note.');
  });
});

describe('source refs', () => {
  it('round-trips a record id and rejects anything else', () => {
    const id = '0193a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b';
    const ref = encodeSourceRef(id);
    expect(ref).toMatch(/^mem_[A-Za-z0-9_-]{22}$/);
    expect(decodeSourceRef(ref)).toBe(id);
    expect(decodeSourceRef(id)).toBeNull();
    expect(decodeSourceRef('mem_short')).toBeNull();
    expect(decodeSourceRef(`${ref}x`)).toBeNull();
    // A non-canonical spelling of the same bytes (different unused low bits) names nothing.
    const alphabet = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_';
    const alias = ref.slice(0, -1) + alphabet[alphabet.indexOf(ref[ref.length - 1]) ^ 1];
    expect(decodeSourceRef(alias)).toBeNull();
  });
});
