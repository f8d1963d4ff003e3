import {
  LAGGING_HOLD_MS,
  parseLsn,
  primaryReads,
  ReadRouter,
  REPLICA_RETRY_MS,
  type ReadRouterOptions,
} from './read-replica';

/**
 * The routing decision of ADR 0042 against scripted WAL positions: a fake clock whose `sleep` moves
 * time on, a primary position and a replay position the test sets. (The real thing, a standby with
 * its replay paused, is test/e2e/read-replica.e2e.spec.ts.)
 */
function harness(o: Partial<ReadRouterOptions<string>> & { maxWaitMs?: number } = {}) {
  const state = {
    now: 1_000,
    primary: '0/100',
    replayed: '0/100' as string | null,
    replicaDown: false,
    primaryChecks: 0,
    replicaChecks: 0,
    reads: [] as string[],
    lag: [] as number[],
    sleeps: [] as number[],
    /** Called at each sleep: how the replica moves while a read waits. */
    onSleep: (): void => undefined,
  };
  const router = new ReadRouter<string>({
    primary: 'primary',
    replica: 'replica',
    maxWaitMs: o.maxWaitMs ?? 100,
    primaryLsn: async () => {
      state.primaryChecks++;
      return state.primary;
    },
    replayedLsn: async () => {
      state.replicaChecks++;
      if (state.replicaDown)
        throw Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:5442'), { code: 'ECONNREFUSED' });
      return state.replayed;
    },
    onRead: (target, reason) => state.reads.push(`${target}:${reason}`),
    onLag: (bytes) => state.lag.push(bytes),
    now: () => state.now,
    sleep: async (ms) => {
      state.sleeps.push(ms);
      state.now += ms;
      state.onSleep();
    },
    ...o,
  });
  return { router, state };
}

describe('parseLsn', () => {
  it('reads a pg_lsn as bytes: the high word times 2^32 plus the low word', () => {
    expect(parseLsn('0/0')).toBe(0n);
    expect(parseLsn('0/16B3748')).toBe(0x16b3748n);
    expect(parseLsn('16/B374D848')).toBe((0x16n << 32n) + 0xb374d848n);
    expect(parseLsn('1/0') > parseLsn('0/FFFFFFFF')).toBe(true);
  });

  it.each(['', '0', '0/', 'x/1', '0/1/2', '123456789/0'])('refuses %p', (bad) => {
    expect(() => parseLsn(bad)).toThrow(/not a WAL position/);
  });
});

describe('ReadRouter', () => {
  it('reads on the replica when it has replayed the primary position, asking it nothing once it is known to', async () => {
    const { router, state } = harness();
    expect(await router.read(async (side) => side)).toBe('replica');
    expect(state.reads).toEqual(['replica:caught_up']);
    expect(state.lag).toEqual([0]);
    // The replay position seen covers the same primary position: no second replica check.
    expect(await router.read(async (side) => side)).toBe('replica');
    expect(state.primaryChecks).toBe(2);
    expect(state.replicaChecks).toBe(1);
    expect(state.sleeps).toEqual([]);
  });

  it('waits for a replica a little behind, then reads there', async () => {
    const { router, state } = harness();
    state.primary = '0/200';
    state.onSleep = () => {
      if (state.sleeps.length === 3) state.replayed = '0/200';
    };
    expect(await router.read(async (side) => side)).toBe('replica');
    expect(state.reads).toEqual(['replica:caught_up']);
    // Backing off: 1, 2, 4 ms.
    expect(state.sleeps).toEqual([1, 2, 4]);
    expect(state.lag).toEqual([0x100, 0x100, 0x100, 0]);
  });

  it('goes to the primary once the bound passes with the replica behind, and then stops waiting for a while', async () => {
    const { router, state } = harness({ maxWaitMs: 100 });
    state.primary = '0/300';
    expect(await router.read(async (side) => side)).toBe('primary');
    expect(state.reads).toEqual(['primary:lagging']);
    expect(state.sleeps.reduce((a, b) => a + b, 0)).toBe(100);
    expect(Math.max(...state.sleeps)).toBeLessThanOrEqual(20);

    // Within the hold: one check, no wait.
    state.sleeps = [];
    const checks = state.replicaChecks;
    expect(await router.read(async (side) => side)).toBe('primary');
    expect(state.sleeps).toEqual([]);
    expect(state.replicaChecks).toBe(checks + 1);

    // Caught up: the replica again, at once.
    state.replayed = '0/300';
    expect(await router.read(async (side) => side)).toBe('replica');
    expect(state.reads).toEqual(['primary:lagging', 'primary:lagging', 'replica:caught_up']);

    // Lagging again: waited for (the hold ended when it caught up), then held again.
    state.primary = '0/400';
    state.sleeps = [];
    expect(await router.read(async (side) => side)).toBe('primary');
    expect(state.sleeps.reduce((a, b) => a + b, 0)).toBe(100);
    // After the hold, a lagging replica is waited for again.
    state.now += LAGGING_HOLD_MS;
    state.sleeps = [];
    expect(await router.read(async (side) => side)).toBe('primary');
    expect(state.sleeps.reduce((a, b) => a + b, 0)).toBe(100);
  });

  it('with no wait allowed, reads on the replica only when it is caught up already', async () => {
    const { router, state } = harness({ maxWaitMs: 0 });
    state.primary = '0/101';
    expect(await router.read(async (side) => side)).toBe('primary');
    expect(state.sleeps).toEqual([]);
    expect(state.reads).toEqual(['primary:lagging']);
  });

  it('never reads on a replica behind the position taken for the read, even one seen ahead before', async () => {
    const { router, state } = harness();
    state.replayed = '0/500';
    state.primary = '0/500';
    expect(await router.read(async (side) => side)).toBe('replica');
    state.primary = '0/501';
    state.replayed = '0/500';
    expect(await router.read(async (side) => side)).toBe('primary');
  });

  it('sends reads to the primary while the replica is down, and tries it again after a while', async () => {
    const { router, state } = harness();
    state.primary = '0/200';
    state.replicaDown = true;
    expect(await router.read(async (side) => side)).toBe('primary');
    const checks = state.replicaChecks;
    expect(await router.read(async (side) => side)).toBe('primary');
    // Within the retry interval the replica is not asked.
    expect(state.replicaChecks).toBe(checks);
    expect(state.primaryChecks).toBe(1);
    state.replicaDown = false;
    state.replayed = '0/200';
    state.now += REPLICA_RETRY_MS;
    expect(await router.read(async (side) => side)).toBe('replica');
    expect(state.reads).toEqual(['primary:replica_error', 'primary:replica_error', 'replica:caught_up']);
  });

  it('forgets the replay position it saw when the replica fails: the next one may be behind', async () => {
    const { router, state } = harness();
    state.primary = '0/200';
    state.replayed = '0/200';
    expect(await router.read(async (side) => side)).toBe('replica');
    state.replicaDown = true;
    state.primary = '0/201';
    expect(await router.read(async (side) => side)).toBe('primary');
    // A replacement standby, behind the position the first one had reached.
    state.replicaDown = false;
    state.replayed = '0/150';
    state.primary = '0/200';
    state.now += REPLICA_RETRY_MS;
    expect(await router.read(async (side) => side)).toBe('primary');
    expect(state.reads).toEqual(['replica:caught_up', 'primary:replica_error', 'primary:lagging']);
  });

  it('answers from the primary when the read itself fails on the replica with a connection error', async () => {
    const { router, state } = harness();
    const sides: string[] = [];
    const result = await router.read(async (side) => {
      sides.push(side);
      if (side === 'replica') throw Object.assign(new Error('Connection terminated unexpectedly'), {});
      return 'rows';
    });
    expect(result).toBe('rows');
    expect(sides).toEqual(['replica', 'primary']);
    expect(state.reads).toEqual(['primary:replica_error']);
  });

  it('does not repeat on the primary a read that failed for its own reasons', async () => {
    const { router, state } = harness();
    const sides: string[] = [];
    await expect(
      router.read(async (side) => {
        sides.push(side);
        throw new Error('turn not found');
      }),
    ).rejects.toThrow('turn not found');
    expect(sides).toEqual(['replica']);
    expect(state.reads).toEqual([]);
  });

  it('treats a replica that is no standby (no replay position) as failed', async () => {
    const { router, state } = harness();
    state.replayed = null;
    expect(await router.read(async (side) => side)).toBe('primary');
    expect(state.reads).toEqual(['primary:replica_error']);
  });

  it('fails the read when the primary cannot give its position, as it would fail without a replica', async () => {
    const { router } = harness({
      primaryLsn: async () => {
        throw new Error('connect ECONNREFUSED 127.0.0.1:5432');
      },
    });
    await expect(router.read(async (side) => side)).rejects.toThrow('ECONNREFUSED');
  });

  it('shares one replica check among reads waiting at the same time', async () => {
    let release!: () => void;
    const gate = new Promise<void>((resolve) => (release = resolve));
    let checks = 0;
    const router = new ReadRouter<string>({
      primary: 'primary',
      replica: 'replica',
      maxWaitMs: 100,
      primaryLsn: async () => '0/100',
      replayedLsn: async () => {
        checks++;
        await gate;
        return '0/100';
      },
    });
    const reads = Promise.all([1, 2, 3].map(() => router.read(async (side) => side)));
    await new Promise((resolve) => setImmediate(resolve));
    release();
    expect(await reads).toEqual(['replica', 'replica', 'replica']);
    expect(checks).toBe(1);
  });
});

describe('primaryReads', () => {
  it('runs every read on the primary', async () => {
    expect(await primaryReads('primary').read(async (side) => side)).toBe('primary');
  });
});
