import { instantsOf, lastDays, usd } from './usage-range';

describe('usage range', () => {
  it('spans the last N UTC days, today included', () => {
    expect(lastDays(30, new Date('2026-03-31T23:59:00Z'))).toEqual({ from: '2026-03-02', to: '2026-03-31' });
    expect(lastDays(1, new Date('2026-03-31T00:00:00Z'))).toEqual({ from: '2026-03-31', to: '2026-03-31' });
  });

  it('turns inclusive days into the [from, to) instants of GET /v1/usage', () => {
    expect(instantsOf({ from: '2026-02-28', to: '2026-02-28' })).toEqual({
      from: '2026-02-28T00:00:00.000Z',
      to: '2026-03-01T00:00:00.000Z',
    });
    expect(instantsOf({ from: '', to: '2026-02-28' })).toBeNull();
    expect(instantsOf({ from: '2026-13-45', to: '2026-02-28' })).toBeNull();
  });

  it('reads USD strings for charts', () => {
    expect(usd('0.00012000')).toBeCloseTo(0.00012);
    expect(usd(undefined)).toBe(0);
  });
});
