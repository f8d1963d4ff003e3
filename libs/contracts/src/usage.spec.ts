import { UsageQuery } from './usage';

const DAY = 24 * 3600 * 1000;

describe('UsageQuery', () => {
  it('defaults to the 30 days before now, grouped by day', () => {
    const q = UsageQuery.parse({});
    expect(q.groupBy).toEqual(['day']);
    expect(q.to.getTime() - q.from.getTime()).toBe(30 * DAY);
    expect(Math.abs(q.to.getTime() - Date.now())).toBeLessThan(5_000);
  });

  it('takes `from` as 30 days before a given `to`, and reads offsets', () => {
    const q = UsageQuery.parse({ to: '2026-03-01T01:00:00+01:00', groupBy: 'model,agent' });
    expect(q.to.toISOString()).toBe('2026-03-01T00:00:00.000Z');
    expect(q.from.toISOString()).toBe('2026-01-30T00:00:00.000Z');
    expect(q.groupBy).toEqual(['model', 'agent']);
  });

  it('accepts a window of exactly 366 days and refuses one a second longer', () => {
    const from = '2024-01-01T00:00:00Z';
    expect(UsageQuery.safeParse({ from, to: '2025-01-01T00:00:00Z' }).success).toBe(true);
    expect(UsageQuery.safeParse({ from, to: '2025-01-01T00:00:01Z' }).success).toBe(false);
  });

  it.each([
    [{ groupBy: 'week' }],
    [{ groupBy: 'day,,agent' }],
    [{ groupBy: 'agent,agent' }],
    [{ from: '2026-01-02T00:00:00Z', to: '2026-01-01T00:00:00Z' }],
    [{ from: 'today' }],
    [{ limit: '5' }],
  ])('refuses %j', (query) => expect(UsageQuery.safeParse(query).success).toBe(false));
});
