import { exceedsDepth } from './body';

describe('exceedsDepth', () => {
  const nested = (n: number) => '['.repeat(n) + ']'.repeat(n);

  it('counts objects and arrays opened at once', () => {
    expect(exceedsDepth(nested(32), 32)).toBe(false);
    expect(exceedsDepth(nested(33), 32)).toBe(true);
    expect(exceedsDepth(`{"a":{"b":${nested(30)}}}`, 32)).toBe(false);
    expect(exceedsDepth(`{"a":{"b":${nested(31)}}}`, 32)).toBe(true);
  });

  it('does not count siblings', () => {
    expect(exceedsDepth(`[${Array.from({ length: 100 }, () => nested(30)).join(',')}]`, 32)).toBe(false);
  });

  it('ignores brackets inside strings, escaped quotes included', () => {
    expect(exceedsDepth(JSON.stringify({ s: '['.repeat(100) }), 32)).toBe(false);
    expect(exceedsDepth(JSON.stringify({ s: `\\"${'{'.repeat(100)}` }), 32)).toBe(false);
    expect(exceedsDepth(`["\\\\", ${nested(40)}]`, 32)).toBe(true);
  });
});
