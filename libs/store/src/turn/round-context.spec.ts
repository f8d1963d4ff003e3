import { decodeRoundParts, encodeRoundParts, type RoundPartRef } from './round-context';

const ref = (h: string, s: string): RoundPartRef => ({ h, s });

describe('round part lists (docs/adr/0045)', () => {
  const round0 = [ref('a', 'system'), ref('b', 'tools'), ref('c', 'recall'), ref('d', 'transcript')];
  const round1 = [...round0, ref('e', 'transcript'), ref('f', 'work_items')];
  const round2 = [...round0.slice(0, 3), ref('g', 'summary'), ref('h', 'other')];

  it('stores a list whole as parallel arrays, one source letter per part', () => {
    expect(encodeRoundParts({ round: 0, parts: round0 })).toEqual({ h: ['a', 'b', 'c', 'd'], s: 'yxrt' });
  });

  it('stores an extension as its base, the kept prefix and what follows; decodes it back', () => {
    const lists = {
      '0': encodeRoundParts({ round: 0, parts: round0 }),
      '1': encodeRoundParts({ round: 1, parts: round1, base: { round: 0, keep: 4 } }),
      '2': encodeRoundParts({ round: 2, parts: round2, base: { round: 1, keep: 3 } }),
    };
    expect(lists['1']).toEqual({ h: ['e', 'f'], s: 'tw', p: 0, k: 4 });
    expect(decodeRoundParts(lists, 0)).toEqual(round0);
    expect(decodeRoundParts(lists, 1)).toEqual(round1);
    expect(decodeRoundParts(lists, 2)).toEqual(round2);
  });

  it('a round not stored, a missing base, or a base that is not earlier: undefined', () => {
    const one = encodeRoundParts({ round: 1, parts: round1, base: { round: 0, keep: 4 } });
    expect(decodeRoundParts({}, 0)).toBeUndefined();
    expect(decodeRoundParts({ '1': one }, 1)).toBeUndefined();
    expect(decodeRoundParts({ '1': { ...one, p: 1 } }, 1)).toBeUndefined();
  });

  it('an unknown source letter reads as other', () => {
    expect(decodeRoundParts({ '0': { h: ['a'], s: '?' } }, 0)).toEqual([ref('a', 'other')]);
  });
});
