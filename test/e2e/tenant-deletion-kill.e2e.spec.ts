import { Client } from 'pg';
import { poolOf } from '@switchboard/database';
import { tenantRowsLeft } from '@switchboard/store';
import { createTestEnv, spawnApp, waitFor, type AppProcess, type TestEnv } from '@switchboard/testing';
import { Api, newTenant } from '../support/api';
import { startGateway, type Running } from '../support/stack';

jest.setTimeout(180_000);

const ADMIN = 'test-admin-token-0123456789';

/**
 * A tenant deletion (docs/adr/0068) survives its worker's SIGKILL: the hooks worker runs as its own
 * process, one of its batches is held inside Postgres (a test transaction locks one of the tenant's
 * rows) so it is provably mid-deletion when killed; a new hooks worker takes the stalled job up and
 * finishes, each row counted once, no row of the tenant left.
 */
describe('a tenant deletion whose worker is killed', () => {
  let env: TestEnv;
  let gateway: Running & { url: string };
  const workers: AppProcess[] = [];
  let locker: Client;

  beforeAll(async () => {
    env = await createTestEnv();
    gateway = await startGateway(env.config());
    locker = new Client({ connectionString: env.databaseUrl });
    await locker.connect();
  });

  afterAll(async () => {
    await Promise.all(workers.map((w) => w.kill('SIGKILL')));
    await locker?.end().catch(() => undefined);
    await gateway?.close();
    await env?.cleanup();
  });

  /** A hooks worker whose Postgres sessions notice a dead client at once (its held DELETE rolled back). */
  const hooksWorker = async () => {
    const url = new URL(env.databaseUrl);
    url.searchParams.set('options', '-c client_connection_check_interval=100');
    const w = await spawnApp('hooks-worker', env.processEnv({ DATABASE_URL: url.toString() }));
    workers.push(w);
    return w;
  };

  it('finishes after a SIGKILL mid-deletion, counting every row once', async () => {
    const admin = new Api(gateway.url, ADMIN);
    const { api, tenantId } = await newTenant(gateway.url, ADMIN, 'killed-midway');
    const agent = (await api.post('/v1/agents', { name: 'a' })).body.id as string;
    const session = (await api.post('/v1/sessions', { agentId: agent })).body.id as string;
    expect((await api.post(`/v1/agents/${agent}/memory`, { content: 'kept until deleted' })).status).toBe(
      201,
    );
    const pool = poolOf(env.db);
    const EVENTS = 20_000;
    await pool.query(
      `INSERT INTO events (id, tenant_id, session_id, seq, type, data)
       SELECT gen_random_uuid(), $1::uuid, $2::uuid, g, 'note', '{"text":"x"}'::jsonb FROM generate_series(1, $3::int) g`,
      [tenantId, session, EVENTS],
    );

    // One of the tenant's journal rows locked: the deletion's batch that reaches it waits in Postgres.
    await locker.query('BEGIN');
    await locker.query(`SELECT 1 FROM events WHERE tenant_id = $1 AND seq = $2 FOR UPDATE`, [
      tenantId,
      EVENTS,
    ]);
    const first = await hooksWorker();
    const started = await admin.delete(`/v1/admin/tenants/${tenantId}`);
    expect(started.status).toBe(202);
    const id = started.body.deletion.id as string;
    await waitFor(
      async () => {
        const { rows } = await pool.query<{ n: number }>(
          `SELECT count(*)::int AS n FROM pg_stat_activity
           WHERE datname = current_database() AND wait_event_type = 'Lock' AND query LIKE 'DELETE FROM "events"%'`,
        );
        return rows[0].n > 0 || undefined;
      },
      { what: 'a deletion batch held on the locked row' },
    );
    const midway = (await admin.get(`/v1/admin/tenant-deletions/${id}`)).body;
    expect(midway).toMatchObject({ status: 'running', stage: 'rows' });
    expect(midway.counts.events ?? 0).toBeLessThan(EVENTS);

    await first.kill('SIGKILL');
    await locker.query('ROLLBACK');
    await hooksWorker();
    const done = await waitFor(
      async () => {
        const d = (await admin.get(`/v1/admin/tenant-deletions/${id}`)).body;
        return d.status === 'completed' ? d : undefined;
      },
      { what: 'the deletion completed', timeoutMs: 60_000 },
    );
    expect(done.counts.events).toBe(EVENTS);
    expect(done.counts.memory_records).toBe(1);
    expect(done.counts.sessions).toBe(1);
    expect(done.counts.tenants).toBe(1);
    expect(await tenantRowsLeft(pool, tenantId)).toEqual({});
    // One receipt.
    const receipts = (await admin.get('/v1/admin/audit-events?action=tenant.deleted')).body.data.filter(
      (e: { targetId: string }) => e.targetId === tenantId,
    );
    expect(receipts).toHaveLength(1);
  });
});
