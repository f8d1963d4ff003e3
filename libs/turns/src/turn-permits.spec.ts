import { TurnPermits } from './turn-permits';

describe('TurnPermits', () => {
  const permits = (max: number, min = 2) => new TurnPermits({ max, min, windowMs: 60_000 });

  it('hands out up to the limit, then passes each released permit to the next waiter in order', async () => {
    const p = permits(2);
    await p.acquire();
    await p.acquire();
    const order: number[] = [];
    const waiters = [1, 2].map((i) => p.acquire().then(() => order.push(i)));
    await Promise.resolve();
    expect(order).toEqual([]);
    p.release();
    await waiters[0];
    expect(order).toEqual([1]);
    p.release();
    await waiters[1];
    expect(order).toEqual([1, 2]);
    p.close();
  });

  it('shrinks when the loop lags past its target and grows back, one at a time, while every permit is used', async () => {
    const p = permits(8);
    for (let i = 0; i < 8; i++) await p.acquire();
    p.adjustFor(50);
    expect(p.limit).toBe(6);
    p.adjustFor(50);
    p.adjustFor(50);
    p.adjustFor(50);
    p.adjustFor(50);
    expect(p.limit).toBe(2);
    // Releases above the shrunk limit free no one.
    const waiter = p.acquire();
    let got = false;
    void waiter.then(() => (got = true));
    for (let i = 0; i < 6; i++) p.release();
    await Promise.resolve();
    expect(got).toBe(false);
    // Under the target with every permit in use: one more, and it goes to the waiter.
    p.adjustFor(1);
    expect(p.limit).toBe(3);
    await waiter;
    expect(got).toBe(true);
    p.close();
  });

  it('does not grow while permits lie unused, nor past its ceiling', async () => {
    const p = permits(3);
    await p.acquire();
    p.adjustFor(1);
    expect(p.limit).toBe(3);
    p.close();
  });
});
