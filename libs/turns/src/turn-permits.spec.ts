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

  it('shrinks when the loop lags past its target, once per drain, and grows back while every permit is used', async () => {
    const p = permits(8);
    for (let i = 0; i < 8; i++) await p.acquire();
    p.adjustFor(50);
    expect(p.limit).toBe(6);
    // The cut has not taken effect (8 in use over a limit of 6): more lagging windows cut nothing.
    p.adjustFor(50);
    p.adjustFor(50);
    expect(p.limit).toBe(6);
    // Turns end down to the limit: the next lagging window cuts again, from what runs.
    p.release();
    p.release();
    p.adjustFor(50);
    expect(p.limit).toBe(4);
    for (let i = 0; i < 3; i++) p.release();
    p.adjustFor(50);
    expect(p.limit).toBe(2);
    p.adjustFor(50);
    expect(p.limit).toBe(2);
    // Releases above the shrunk limit free no one.
    const waiter = p.acquire();
    let got = false;
    void waiter.then(() => (got = true));
    p.release();
    await Promise.resolve();
    expect(got).toBe(false);
    // Under the target with every permit in use: one more, and it goes to the waiter.
    p.adjustFor(1);
    expect(p.limit).toBe(3);
    await waiter;
    expect(got).toBe(true);
    p.close();
  });

  it('cuts from the permits in use, and not at all while fewer than half are used', async () => {
    const p = permits(5000);
    for (let i = 0; i < 2400; i++) await p.acquire();
    // An idle-ish process whose loop lags (other processes, a GC): the turns are not the cause.
    p.adjustFor(50);
    expect(p.limit).toBe(5000);
    for (let i = 0; i < 600; i++) await p.acquire();
    p.adjustFor(50);
    expect(p.limit).toBe(2250);
    p.close();
  });

  it('counts an overloaded process (lease renewals running late) as a window over the target', async () => {
    jest.useFakeTimers();
    try {
      let overloaded = false;
      const p = new TurnPermits({
        max: 100,
        windowMs: 250,
        loopDelay: () => 0.5,
        overloaded: () => overloaded,
      });
      for (let i = 0; i < 100; i++) await p.acquire();
      overloaded = true;
      await jest.advanceTimersByTimeAsync(250);
      expect(p.limit).toBe(75);
      // No new permit while it lasts, however quiet the loop.
      let got = false;
      void p.acquire().then(() => (got = true));
      for (let i = 0; i < 30; i++) p.release();
      await jest.advanceTimersByTimeAsync(1_000);
      expect(got).toBe(false);
      // 70 in use under a limit of 75: the next overloaded window cut again, from what runs.
      expect(p.limit).toBe(52);
      // Over: quiet windows grow it back (53, 55, 59, 67, 83) and the waiter gets the 71st permit.
      overloaded = false;
      await jest.advanceTimersByTimeAsync(1_000);
      expect(got).toBe(false);
      await jest.advanceTimersByTimeAsync(250);
      expect(p.limit).toBe(83);
      expect(got).toBe(true);
      p.close();
    } finally {
      jest.useRealTimers();
    }
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
    // A burst at the ceiling makes the loop lag: the limit is cut, once while the burst holds its permits.
    const burst = await demand(p, 500);
    expect(burst()).toBe(500);
    await windows(20, 50);
    expect(p.limit).toBe(375);
    // Its turns end down to the limit, window after window, and the loop still lags: the floor.
    let inUse = 500;
    while (p.limit > 2) {
      for (; inUse > p.limit; inUse--) p.release();
      await windows(1, 50);
    }
    for (; inUse > 0; inUse--) p.release();
    await windows(1, 50);
    expect(p.limit).toBe(2);
    // 500 slow ones arrive (a model streaming for minutes): two start.
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

  it('backs off once per drain under sustained pressure, and grows by an eighth near its target', async () => {
    const p = new TurnPermits({ max: 1500, windowMs: WINDOW_MS, loopDelay });
    const held = await demand(p, 1000);
    expect(held()).toBe(1000);
    // Slow turns hold their permits: sustained pressure cuts once, not to the floor.
    await windows(20, 50);
    expect(p.limit).toBe(750);
    // Between a quarter of the target and the target: an eighth more per window (750 → 843 → 948 → 1066).
    await windows(3, 8);
    expect(p.limit).toBe(1066);
    // Pressure again, the cut having taken effect (fewer in use than the limit): cut from those in use.
    await windows(1, 50);
    expect(p.limit).toBe(750);
    // Quiet: the step starts at one after pressure, then doubles.
    await windows(3, 0.5);
    expect(p.limit).toBe(750 + 1 + 2 + 4);
    // A small limit (a CPU-bound backlog) still grows one at a time near the target.
    const small = new TurnPermits({ max: 8, windowMs: WINDOW_MS, loopDelay });
    await demand(small, 6);
    for (let i = 0; i < 2; i++) small.adjustFor(50);
    for (let i = 0; i < 2; i++) small.release();
    small.adjustFor(50);
    expect(small.limit).toBe(3);
    small.adjustFor(8);
    expect(small.limit).toBe(4);
    small.close();
    p.close();
  });
});

describe('TurnPermits.tryAcquire (the Postgres intake, docs/adr/0075)', () => {
  it('takes only a spare permit: none past the limit, none while a loop waits, none while overloaded', async () => {
    let overloaded = false;
    const p = new TurnPermits({ max: 2, loopDelay: () => 0, overloaded: () => overloaded });
    try {
      expect(p.tryAcquire()).toBe(true);
      overloaded = true;
      expect(p.tryAcquire()).toBe(false);
      overloaded = false;
      await p.acquire();
      expect(p.tryAcquire()).toBe(false);
      let waited = false;
      const waiting = p.acquire().then(() => (waited = true));
      p.release();
      await waiting;
      expect(waited).toBe(true);
      expect(p.used).toBe(2);
    } finally {
      p.close();
    }
  });
});
