import { detailLines } from './audit-details';

describe('detailLines', () => {
  it('flattens nested objects to dotted keys and shows values as text', () => {
    expect(
      detailLines({
        changes: { dailySpendLimitUsd: 42.5, maxConcurrentTurns: null },
        name: 'acme',
        firstKey: { prefix: 'sb_x' },
        scopes: ['a', 'b'],
        empty: {},
      }),
    ).toEqual([
      ['changes.dailySpendLimitUsd', '42.5'],
      ['changes.maxConcurrentTurns', 'null'],
      ['name', 'acme'],
      ['firstKey.prefix', 'sb_x'],
      ['scopes', '["a","b"]'],
      ['empty', '{}'],
    ]);
  });
});
