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

describe('TurnPermits recovering from pressure', () => {
  // Fake timers, but each window awaits real microtasks: on a loaded machine a test can take longer
  // than Jest's 5 s default, and one that times out keeps running into the next test's windows.
  jest.setTimeout(30_000);
  const WINDOW_MS = 250;
  let delayMs = 0;
  const loopDelay = () => delayMs;

  beforeEach(() => jest.useFakeTimers());
  afterEach(() => jest.useRealTimers());

  /** `n` jobs' loops asking for a permit at once; the answer counts how many hold one so far. */
  async function demand(p: TurnPermits, n: number): Promise<() => number> {
    let granted = 0;
    for (let i = 0; i < n; i++) void p.acquire().then(() => granted++);
    await jest.advanceTimersByTimeAsync(0);
    return () => granted;
  }

  /** Windows pass on the injected clock with the loop's mean delay at `ms`. */
  async function windows(n: number, ms: number): Promise<void> {
    delayMs = ms;
    for (let i = 0; i < n; i++) await jest.advanceTimersByTimeAsync(WINDOW_MS);
  }

  it('is back at a ceiling of 500, every permit handed out, within three seconds of quiet windows', async () => {
    const p = new TurnPermits({ max: 500, windowMs: WINDOW_MS, loopDelay });
    // A burst at the ceiling makes the loop lag: the limit falls to its floor.
    const burst = await demand(p, 500);
    expect(burst()).toBe(500);
    await windows(20, 50);
    expect(p.limit).toBe(2);
    // Those turns end and 500 slow ones arrive (a model streaming for minutes): two start.
    for (let i = 0; i < 500; i++) p.release();
    const slow = await demand(p, 500);
    expect(slow()).toBe(2);
    // The loop is quiet (0.5 ms, an idle process) and every permit is used.
    const seen: [number, number][] = [];
    for (let i = 0; i < 12 && slow() < 500; i++) {
      await windows(1, 0.5);
      seen.push([p.limit, slow()]);
    }
    // At most doubling per window (+1, +2, +4, …), each new permit handed to a waiting turn at once.
    expect(seen).toEqual([3, 5, 9, 17, 33, 65, 129, 257, 500].map((n) => [n, n]));
    expect(seen.length * WINDOW_MS).toBeLessThanOrEqual(3000);
    p.close();
  });

  it('still backs off under sustained pressure, and grows one at a time near its target', async () => {
    const p = new TurnPermits({ max: 500, windowMs: WINDOW_MS, loopDelay });
    await demand(p, 500);
    await windows(2, 50);
    expect(p.limit).toBe(281); // 500 × 0.75 × 0.75
    await windows(4, 0.5);
    expect(p.limit).toBe(281 + 1 + 2 + 4 + 8);
    // Sustained pressure: every window cuts it, to the floor, however fast it grew before.
    await windows(1, 50);
    expect(p.limit).toBe(222);
    await windows(20, 50);
    expect(p.limit).toBe(2);
    // Between a quarter of the target and the target: one at a time, however long it lasts.
    await windows(3, 8);
    await windows(2, 3);
    expect(p.limit).toBe(7);
    // Quiet again: the step starts at one after pressure, then doubles.
    await windows(1, 50);
    expect(p.limit).toBe(5);
    await windows(3, 0.5);
    expect(p.limit).toBe(5 + 1 + 2 + 4);
    p.close();
  });
});
