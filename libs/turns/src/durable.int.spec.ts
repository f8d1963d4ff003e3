import { newId } from '@switchboard/contracts';
import { createPrisma, isTransientDbError, type Db } from '@switchboard/database';
import {
  createTestEnv,
  seedTenant,
  startTcpProxy,
  waitFor,
  type TcpProxy,
  type TestEnv,
} from '@switchboard/testing';
import { retryTransient } from './durable';
import { SessionLease } from './lease';

jest.setTimeout(120_000);

/**
 * Database blips against a real Postgres behind a TCP proxy that can go down for this file's own
 * client only: what counts as transient, a write retried until the database is back, and a lease
 * released as soon as it is back rather than when it expires.
 */
describe('transient database errors', () => {
  let env: TestEnv;
  let proxy: TcpProxy;
  let db: Db;
  let tenantId: string;
  let agentId: string;

  beforeAll(async () => {
    env = await createTestEnv();
    ({ tenantId, agentId } = await seedTenant(env.db, 'durable'));
    const pg = new URL(env.databaseUrl);
    proxy = await startTcpProxy({ host: pg.hostname, port: Number(pg.port || 5432) });
    db = createPrisma(proxy.rewrite(env.databaseUrl), { poolSize: 2 });
  });

  afterEach(async () => {
    await proxy.up();
  });

  afterAll(async () => {
    await proxy?.close();
    await db?.$disconnect();
    await env?.cleanup();
  });

  const failure = (p: Promise<unknown>) =>
    p.then(
      () => undefined,
      (err: unknown) => err,
    );

  it('classifies an unreachable server, a dropped connection and a terminated backend as transient', async () => {
    await db.$queryRaw`SELECT 1`;
    // An in-flight transaction whose connection is reset.
    let inTx!: () => void;
    const reached = new Promise<void>((r) => (inTx = r));
    const dropped = failure(
      db.$transaction(async (tx) => {
        await tx.$queryRaw`SELECT 1`;
        inTx();
        await tx.$queryRaw`SELECT pg_sleep(5)`;
      }),
    );
    await reached;
    await proxy.down();
    expect(isTransientDbError(await dropped)).toBe(true);
    // A server that refuses connections, for a plain query and for a transaction.
    expect(isTransientDbError(await failure(db.$queryRaw`SELECT 1`))).toBe(true);
    expect(isTransientDbError(await failure(db.$transaction(async (tx) => tx.$queryRaw`SELECT 1`)))).toBe(
      true,
    );
    await proxy.up();

    // The administrator terminates the backend (what a restart does): 57P01.
    const terminated = failure(db.$queryRaw`SELECT pg_sleep(5) FROM (SELECT pg_backend_pid() AS me) x`);
    await waitFor(
      async () =>
        (
          await env.db.$queryRaw<{ n: number }[]>`
          SELECT count(*)::int AS n FROM pg_stat_activity WHERE query LIKE '%pg_sleep(5) FROM%' AND pid <> pg_backend_pid()`
        )[0].n > 0,
      { what: 'the sleeping query' },
    );
    await env.db.$queryRaw`
      SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE query LIKE '%pg_sleep(5) FROM%' AND pid <> pg_backend_pid()`;
    expect(isTransientDbError(await terminated)).toBe(true);
  });

  it('gets its pool back after connections die inside transactions (no leaked pool slots)', async () => {
    // The pool has 2 slots; each broken transaction used to keep one for good.
    for (let i = 0; i < 3; i++) {
      let inTx!: () => void;
      const reached = new Promise<void>((r) => (inTx = r));
      const broken = failure(
        db.$transaction(async (tx) => {
          await tx.$queryRaw`SELECT 1`;
          inTx();
          await tx.$queryRaw`SELECT pg_sleep(5)`;
        }),
      );
      await reached;
      await proxy.down();
      expect(isTransientDbError(await broken)).toBe(true);
      await proxy.up();
      await retryTransient(() => db.$queryRaw`SELECT 1`, { maxMs: 3_000 });
    }
    const [row] = await db.$queryRaw<{ one: number }[]>`SELECT 1::int AS one`;
    expect(row.one).toBe(1);
  });

  it('does not classify a constraint violation or a syntax error as transient', async () => {
    const id = newId();
    await env.db.session.create({ data: { id, tenantId, agentId } });
    expect(isTransientDbError(await failure(db.session.create({ data: { id, tenantId, agentId } })))).toBe(
      false,
    );
    expect(isTransientDbError(await failure(db.$executeRawUnsafe('SELEC 1')))).toBe(false);
  });

  it('retries a write until the database is back, then commits it once', async () => {
    const id = newId();
    await proxy.down();
    const attempts: number[] = [];
    const write = retryTransient(
      async (attempt) => {
        attempts.push(attempt);
        await db.session.create({ data: { id, tenantId, agentId } });
      },
      { maxMs: 20_000, maxBackoffMs: 200 },
    );
    await waitFor(() => attempts.length >= 2, { what: 'a retried attempt' });
    await proxy.up();
    await write;
    expect(await env.db.session.count({ where: { id } })).toBe(1);
  });

  it('gives up after its time budget, with the database error', async () => {
    await proxy.down();
    const started = Date.now();
    const err = await failure(
      retryTransient(() => db.$queryRaw`SELECT 1`, { maxMs: 500, maxBackoffMs: 100 }),
    );
    expect(isTransientDbError(err)).toBe(true);
    expect(Date.now() - started).toBeLessThan(5_000);
  });

  it('does not retry an error that is not transient', async () => {
    let calls = 0;
    const err = await failure(
      retryTransient(
        async () => {
          calls++;
          await db.$executeRawUnsafe('SELEC 1');
        },
        { maxMs: 5_000 },
      ),
    );
    expect(err).toBeInstanceOf(Error);
    expect(calls).toBe(1);
  });

  it('releases a lease as soon as the database is back, not when the lease expires', async () => {
    const id = newId();
    await env.db.session.create({ data: { id, tenantId, agentId } });
    const lease = (await SessionLease.claim(db, id, 'w', 60_000))!;
    await proxy.down();
    const errors: boolean[] = [];
    await lease.releaseOrRetry((_err, final) => errors.push(final));
    // The first release failed; the lease is still held.
    expect(errors).toEqual([false]);
    const row = () => env.db.session.findUniqueOrThrow({ where: { id }, select: { leaseToken: true } });
    expect((await row()).leaseToken).toBe(lease.token);
    await proxy.up();
    await waitFor(async () => (await row()).leaseToken === null, { what: 'the lease released' });
    expect(errors).toEqual([false]);
  });
});
