import { once } from 'node:events';
import { createTestEnv, type TestEnv } from '@switchboard/testing';
import { createDatabase } from './prisma';

/** The pool under Prisma: how long its idle connections live (DATABASE_POOL_IDLE_MS). */
jest.setTimeout(60_000);

describe('createDatabase', () => {
  let env: TestEnv;

  beforeAll(async () => {
    env = await createTestEnv();
  });

  afterAll(async () => {
    await env?.cleanup();
  });

  const backendPid = async (pool: import('pg').Pool): Promise<number> =>
    (await pool.query<{ pid: number }>('SELECT pg_backend_pid() AS pid')).rows[0].pid;

  it('closes a connection idle for idleMs, and the next query runs on a new one', async () => {
    const { prisma, pool } = createDatabase(env.databaseUrl, { poolSize: 1, idleMs: 50 });
    try {
      const removed = once(pool, 'remove');
      const first = await backendPid(pool);
      await removed;
      expect(pool.totalCount).toBe(0);
      expect(await backendPid(pool)).not.toBe(first);
    } finally {
      await prisma.$disconnect();
    }
  });

  it('keeps an idle connection, its prepared statements with it, when idleMs is 0', async () => {
    const { prisma, pool } = createDatabase(env.databaseUrl, { poolSize: 1, idleMs: 0 });
    try {
      expect(pool.options.idleTimeoutMillis).toBe(0);
      const named = { name: 'sb_pool_idle_probe', text: 'SELECT pg_backend_pid() AS pid' };
      const first = (await pool.query<{ pid: number }>(named)).rows[0].pid;
      // A connection closed in between would have to prepare it again: Postgres lists it on this one.
      const prepared = await pool.query<{ n: number }>(
        "SELECT count(*)::int AS n FROM pg_prepared_statements WHERE name = 'sb_pool_idle_probe'",
      );
      expect(prepared.rows[0].n).toBe(1);
      expect((await pool.query<{ pid: number }>(named)).rows[0].pid).toBe(first);
      expect(pool.idleCount).toBe(1);
    } finally {
      await prisma.$disconnect();
    }
  });

  it('leaves pg’s own idle timeout when idleMs is not given', () => {
    const { prisma, pool } = createDatabase(env.databaseUrl);
    expect(pool.options.idleTimeoutMillis).toBe(10_000);
    return prisma.$disconnect();
  });
});
