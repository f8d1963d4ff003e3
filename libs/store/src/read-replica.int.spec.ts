import pg from 'pg';
import { poolOf } from '@switchboard/database';
import { createTestEnv, type TestEnv } from '@switchboard/testing';
import { currentWalLsn, parseLsn, ReadRouter, replayedWalLsn } from './read-replica';
import { sql, SqlDb } from './sql';

/**
 * The WAL-position statements of ADR 0042 on real Postgres (the test's primary), and the router's
 * fallbacks when DATABASE_READ_URL names a server that is not a standby or answers nothing. A real
 * standby with its replay paused is test/e2e/read-replica.e2e.spec.ts.
 */
jest.setTimeout(60_000);

describe('ReadRouter on Postgres', () => {
  let env: TestEnv;
  let primary: SqlDb;

  beforeAll(async () => {
    env = await createTestEnv();
    primary = new SqlDb(poolOf(env.db));
  });

  afterAll(async () => {
    await env?.cleanup();
  });

  it("reads the primary's WAL position, which moves forward with a commit", async () => {
    const before = parseLsn(await currentWalLsn(primary));
    await primary.execute(sql`INSERT INTO tenants (id, name) VALUES (gen_random_uuid(), 'wal probe')`);
    expect(parseLsn(await currentWalLsn(primary))).toBeGreaterThan(before);
  });

  it('finds no replay position on a server that is not a standby', async () => {
    expect(await replayedWalLsn(primary)).toBeNull();
  });

  it('reads on the primary when the "replica" is no standby, and when it cannot be reached', async () => {
    const reads: string[] = [];
    const notStandby = new ReadRouter({
      primary: 'primary',
      replica: 'replica',
      maxWaitMs: 50,
      primaryLsn: () => currentWalLsn(primary),
      replayedLsn: () => replayedWalLsn(primary),
      onRead: (target, reason) => reads.push(`${target}:${reason}`),
    });
    expect(await notStandby.read(async (side) => side)).toBe('primary');

    // A port nothing listens on: connection refused.
    const url = new URL(env.databaseUrl);
    url.port = '1';
    const downPool = new pg.Pool({ connectionString: url.toString(), connectionTimeoutMillis: 2_000 });
    downPool.on('error', () => undefined);
    try {
      const down = new ReadRouter({
        primary: 'primary',
        replica: 'replica',
        maxWaitMs: 50,
        primaryLsn: () => currentWalLsn(primary),
        replayedLsn: () => replayedWalLsn(new SqlDb(downPool)),
        onRead: (target, reason) => reads.push(`${target}:${reason}`),
      });
      expect(await down.read(async (side) => side)).toBe('primary');
    } finally {
      await downPool.end();
    }
    expect(reads).toEqual(['primary:replica_error', 'primary:replica_error']);
  });
});
