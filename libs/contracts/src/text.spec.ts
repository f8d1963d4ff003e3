import { findInvalidText } from './text';

describe('findInvalidText', () => {
  it('accepts ordinary text, including astral characters (surrogate pairs)', () => {
    expect(findInvalidText({ a: 'héllo 😀', b: ['漢字', { c: '\ud83d\ude00' }], n: 1, z: null })).toEqual([]);
  });

  it('names each NUL or lone surrogate by its path, in keys too', () => {
    expect(
      findInvalidText({ content: 'a\u0000b', metadata: { 'k\ud800': 'ok', list: ['x', '\udc00'] } }),
    ).toEqual([
      { path: 'content', message: 'contains a NUL character (U+0000)', code: 'invalid_text' },
      {
        path: 'metadata.k\\ud800',
        message: 'key contains a lone UTF-16 surrogate (not a Unicode character)',
        code: 'invalid_text',
      },
      {
        path: 'metadata.list.1',
        message: 'contains a lone UTF-16 surrogate (not a Unicode character)',
        code: 'invalid_text',
      },
    ]);
  });

  it('finds a high surrogate at the end of a string and a plain string value', () => {
    expect(findInvalidText('abc\ud83d')).toHaveLength(1);
    expect(findInvalidText('\u0000')[0].path).toBe('');
  });

  it('stops at the limit', () => {
    expect(
      findInvalidText(
        Array.from({ length: 50 }, () => '\u0000'),
        5,
      ),
    ).toHaveLength(5);
  });

  it('walks values nested far deeper than the stack allows recursion', () => {
    let deep: unknown = '\u0000';
    for (let i = 0; i < 100_000; i++) deep = [deep];
    expect(findInvalidText(deep)).toHaveLength(1);
  });
});
