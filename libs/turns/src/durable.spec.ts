import { retriesWithin } from './durable';

/** The retry count handed to p-retry: never what stops the retries before the time budget does, and small. */
describe('retriesWithin', () => {
  const backoffs = (n: number, min: number, max: number) =>
    Array.from({ length: n }, (_, k) => Math.min(max, min * 2 ** k)).reduce((a, b) => a + b, 0);

  it.each([
    [30_000, 100, 2_000],
    [1_000, 100, 2_000],
    [0, 100, 2_000],
    [5_000, 50, 500],
    [60_000, 10, 10_000],
  ])('budget %i ms, backoff %i..%i ms: the budget runs out first', (maxMs, min, max) => {
    const retries = retriesWithin(maxMs, min, max);
    // Even with every backoff at its shortest (randomized ones are longer), the retries allowed
    // take longer than the budget before they run out.
    expect(backoffs(retries - 1, min, max)).toBeGreaterThan(maxMs);
  });

  it('is a handful for the checkpoint budget, not one per minimum backoff', () => {
    expect(retriesWithin(30_000, 100, 2_000)).toBeLessThan(25);
  });
});
