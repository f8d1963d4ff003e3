import { reciprocalRankFusion, RRF_K } from './search';

describe('reciprocalRankFusion', () => {
  it('sums 1/(k + rank) over the lists: found by both outranks either alone', () => {
    const fused = reciprocalRankFusion([
      ['a', 'b'],
      ['c', 'b'],
    ]);
    expect(fused.map((f) => f.id)).toEqual(['b', 'a', 'c']);
    expect(fused[0].score).toBeCloseTo(2 / (RRF_K + 2));
    expect(fused[1].score).toBeCloseTo(1 / (RRF_K + 1));
  });

  it('breaks ties by first appearance, the full-text list first: deterministic', () => {
    expect(reciprocalRankFusion([['a'], ['c']]).map((f) => f.id)).toEqual(['a', 'c']);
    expect(reciprocalRankFusion([[], ['c', 'd']]).map((f) => f.id)).toEqual(['c', 'd']);
    expect(reciprocalRankFusion([[], []])).toEqual([]);
  });
});
