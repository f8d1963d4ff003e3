import pg from 'pg';
import { poolOf } from '@switchboard/database';
import { createLogger } from '@switchboard/observability';
import { SqlDb, TurnStore } from '@switchboard/store';
import {
  createTestEnv,
  seedTenant,
  seedTurn,
  seedSession,
  type SessionIds,
  type TestEnv,
  waitFor,
} from '@switchboard/testing';
import { TurnAbort } from './control';
import { SessionLease } from './lease';
import { LeaseKeeper } from './lease-keeper';

jest.setTimeout(60_000);

const logger = createLogger({ service: 'test', level: 'silent' });

/**
 * The batched lease renewal (docs/adr/0069) against Postgres: every lease of a process in one
 * statement, a lease freed by the sweep while its turn still runs restored, another owner's lease
 * lost, this process's own re-claim left for the runner to adopt, cancels and interjections reported.
 */
describe('LeaseKeeper', () => {
  let env: TestEnv;
  let store: TurnStore;
  let db: SqlDb;
  let tenant: { tenantId: string; agentId: string };

  beforeAll(async () => {
    env = await createTestEnv();
    db = new SqlDb(poolOf(env.db), { component: 'harness-lease' });
    store = new TurnStore(db);
    tenant = await seedTenant(env.db, 'keeper');
  });

  afterAll(async () => {
    await env?.cleanup();
  });

  /** A session whose turn runs under a lease of `owner`, as a claim leaves it. */
  async function running(owner = 'me', ms = 30_000) {
    const sessionId = await seedSession(env.db, tenant.tenantId, tenant.agentId);
    const ids: SessionIds = { ...tenant, sessionId };
    const turn = await seedTurn(env.db, ids, { status: 'running', runCount: 1 });
    const lease = (await SessionLease.claim(store, sessionId, owner, ms))!;
    const abort = new TurnAbort();
    let interjected = 0;
    return {
      sessionId,
      turnId: turn.id,
      lease,
      abort,
      interjected: () => interjected,
      interject: () => interjected++,
    };
  }

  const keeper = (owner = 'me', ms = 30_000) =>
    new LeaseKeeper({ store, owner, leaseMs: ms, logger: logger, intervalMs: 60_000 });

  const leaseRow = (id: string) =>
    env.db.session.findUniqueOrThrow({
      where: { id },
      select: { leaseOwner: true, leaseToken: true, leaseExpiresAt: true },
    });

  it('renews every lease it keeps in one statement', async () => {
    const turns = await Promise.all(Array.from({ length: 50 }, () => running('me', 2_000)));
    const k = keeper('me', 30_000);
    const stops = turns.map((t) => k.keep(t));
    const before = db.counts.statements;
    await k.renewNow();
    expect(db.counts.statements - before).toBe(1);
    for (const t of turns) {
      const row = await leaseRow(t.sessionId);
      expect(row.leaseToken).toBe(t.lease.token);
      expect(row.leaseExpiresAt!.getTime()).toBeGreaterThan(Date.now() + 20_000);
      expect(t.abort.signal.aborted).toBe(false);
    }
    stops.forEach((s) => s());
    expect(k.size).toBe(0);
    k.close();
  });

  it('restores a lease the sweep freed while its turn still runs here, and an expired one nobody took', async () => {
    const freed = await running();
    const expired = await running();
    const k = keeper();
    k.keep(freed);
    k.keep(expired);
    await env.db.session.update({
      where: { id: expired.sessionId },
      data: { leaseExpiresAt: new Date(Date.now() - 1_000) },
    });
    // The sweep: every expired lease freed (and its turn woken).
    await env.db.session.update({
      where: { id: freed.sessionId },
      data: { leaseExpiresAt: new Date(Date.now() - 1_000) },
    });
    const swept = await store.freeExpiredLeases();
    expect(swept.map((f) => f.sessionId).sort()).toEqual([freed.sessionId, expired.sessionId].sort());
    await k.renewNow();
    for (const t of [freed, expired]) {
      const row = await leaseRow(t.sessionId);
      expect(row).toEqual({ leaseOwner: 'me', leaseToken: t.lease.token, leaseExpiresAt: expect.any(Date) });
      expect(row.leaseExpiresAt!.getTime()).toBeGreaterThan(Date.now() + 20_000);
      expect(t.abort.signal.aborted).toBe(false);
    }
    k.close();
  });

  it('does not restore a freed lease whose turn no longer runs', async () => {
    const t = await running();
    const k = keeper();
    k.keep(t);
    await env.db.turn.update({ where: { id: t.turnId }, data: { status: 'completed' } });
    await env.db.session.update({
      where: { id: t.sessionId },
      data: { leaseOwner: null, leaseToken: null, leaseExpiresAt: null },
    });
    await k.renewNow();
    expect(await leaseRow(t.sessionId)).toEqual({ leaseOwner: null, leaseToken: null, leaseExpiresAt: null });
    expect(t.abort.lostLease).toBe(true);
    k.close();
  });

  it('does not take back a lease its turn released while the renewal waited for that commit', async () => {
    // The renewal judges `running` by its snapshot, taken before the turn's final commit, and the
    // session's row after it: only the owner the release cleared tells it the lease was given up.
    const t = await running();
    const k = keeper();
    k.keep(t);
    const final = new pg.Client({ connectionString: env.databaseUrl });
    await final.connect();
    try {
      await final.query('BEGIN');
      await final.query(`UPDATE turns SET status = 'completed', completed_at = now() WHERE id = $1`, [
        t.turnId,
      ]);
      await final.query(
        `UPDATE sessions SET lease_owner = NULL, lease_token = NULL, lease_expires_at = NULL
          WHERE id = $1 AND lease_token = $2`,
        [t.sessionId, t.lease.token],
      );
      const renewal = k.renewNow();
      // The renewal waits for the final commit's lock on the session.
      await waitFor(
        async () => {
          const r = await final.query<{ n: number }>(
            `SELECT count(*)::int AS n FROM pg_stat_activity
              WHERE datname = current_database() AND wait_event_type = 'Lock'`,
          );
          return r.rows[0].n > 0 ? true : undefined;
        },
        { what: 'the renewal waiting for the final commit' },
      );
      await final.query('COMMIT');
      await renewal;
    } finally {
      await final.end();
    }
    expect(await leaseRow(t.sessionId)).toEqual({ leaseOwner: null, leaseToken: null, leaseExpiresAt: null });
    // (That renewal read the owner in its snapshot too; the next one sees the lease given up.)
    await k.renewNow();
    expect(t.abort.lostLease).toBe(true);
    expect(await leaseRow(t.sessionId)).toEqual({ leaseOwner: null, leaseToken: null, leaseExpiresAt: null });
    k.close();
  });

  it("aborts a turn whose session another worker holds now, and leaves the other's lease alone", async () => {
    const t = await running('me', 300);
    const k = keeper();
    k.keep(t);
    await env.db.session.update({
      where: { id: t.sessionId },
      data: { leaseExpiresAt: new Date(Date.now() - 1_000) },
    });
    const other = (await SessionLease.claim(store, t.sessionId, 'other', 30_000))!;
    expect(other).not.toBeNull();
    await k.renewNow();
    expect(t.abort.lostLease).toBe(true);
    expect((await leaseRow(t.sessionId)).leaseToken).toBe(other.token);
    k.close();
  });

  it("waits one renewal for this process's own re-claim to be adopted, then gives the turn up", async () => {
    const t = await running('me', 300);
    const k = keeper();
    k.keep(t);
    await env.db.session.update({
      where: { id: t.sessionId },
      data: { leaseExpiresAt: new Date(Date.now() - 1_000) },
    });
    // Another job of this process claimed the session (same owner, a new token).
    const mine = (await SessionLease.claim(store, t.sessionId, 'me', 30_000))!;
    await k.renewNow();
    expect(t.abort.signal.aborted).toBe(false);
    // Adopted: the running turn renews under the claim's token from now on.
    t.lease.adopt(mine.token);
    await k.renewNow();
    expect(t.abort.signal.aborted).toBe(false);
    expect((await leaseRow(t.sessionId)).leaseToken).toBe(mine.token);

    // Not adopted twice in a row: the turn is another run's.
    const u = await running('me', 300);
    k.keep(u);
    await env.db.session.update({
      where: { id: u.sessionId },
      data: { leaseExpiresAt: new Date(Date.now() - 1_000) },
    });
    await SessionLease.claim(store, u.sessionId, 'me', 30_000);
    await k.renewNow();
    expect(u.abort.signal.aborted).toBe(false);
    await k.renewNow();
    expect(u.abort.lostLease).toBe(true);
    k.close();
  });

  it('holds a claimed lease from the claim to its release, a run or not', async () => {
    const t = await running('me', 2_000);
    const k = keeper('me', 30_000);
    const unhold = k.hold(t.lease, t.turnId);
    await k.renewNow();
    expect((await leaseRow(t.sessionId)).leaseExpiresAt!.getTime()).toBeGreaterThan(Date.now() + 20_000);
    // A run under it; when it ends, the lease is still held (the drain goes on with the next turn).
    const stop = k.keep(t);
    expect(k.size).toBe(1);
    stop();
    expect(k.size).toBe(1);
    await env.db.turn.update({ where: { id: t.turnId }, data: { cancelRequestedAt: new Date() } });
    await k.renewNow();
    // The run's abort is no longer the keeper's to fire.
    expect(t.abort.signal.aborted).toBe(false);
    unhold();
    expect(k.size).toBe(0);
    k.close();
  });

  it('reports a cancel request and a waiting interjection per turn', async () => {
    const cancelled = await running();
    const interjected = await running();
    const k = keeper();
    k.keep(cancelled);
    k.keep(interjected);
    await env.db.turn.update({ where: { id: cancelled.turnId }, data: { cancelRequestedAt: new Date() } });
    await seedTurn(
      env.db,
      { ...tenant, sessionId: interjected.sessionId },
      { status: 'queued', priority: 'interject' },
    );
    await k.renewNow();
    expect(cancelled.abort.cancelled).toBe(true);
    expect(cancelled.interjected()).toBe(0);
    expect(interjected.abort.signal.aborted).toBe(false);
    expect(interjected.interjected()).toBe(1);
    k.close();
  });

  it('counts its lag while renewals fail, and none while they run on time', async () => {
    const t = await running();
    const broken = new TurnStore(
      new SqlDb(
        // A pool that cannot connect: every renewal fails.
        new pg.Pool({
          connectionString: 'postgres://postgres@127.0.0.1:1/none',
          connectionTimeoutMillis: 500,
        }),
        { component: 'broken' },
      ),
    );
    const k = new LeaseKeeper({
      store: broken,
      owner: 'me',
      leaseMs: 30_000,
      logger: logger,
      intervalMs: 100,
    });
    k.keep(t);
    const start = performance.now();
    expect(k.renewalLagMs(start)).toBe(0);
    await k.renewNow();
    expect(k.renewalLagMs(start + 5_000)).toBeGreaterThan(4_000);
    expect(t.abort.signal.aborted).toBe(false);
    k.close();
  });
});
