import { poolOf } from '@switchboard/database';
import { createTestEnv, seedTenantSession, type TestEnv } from '@switchboard/testing';
import { ofTenant, sql, SqlDb } from './sql';

/**
 * `ofTenant` on real Postgres: a tenant's turn looked up by id stays a one-row primary-key lookup
 * for a tenant the table's statistics have never seen (the case that read every turn of the tenant
 * through turns_tenant_id_idx when written `tenant_id = $n`), and still finds nothing for another
 * tenant.
 */
jest.setTimeout(120_000);

describe('ofTenant', () => {
  let env: TestEnv;

  beforeAll(async () => {
    env = await createTestEnv();
  });

  afterAll(async () => {
    await env?.cleanup();
  });

  const addTurns = (s: { tenantId: string; agentId: string; sessionId: string }, n: number) =>
    poolOf(env.db).query(
      `INSERT INTO turns (id, tenant_id, session_id, agent_id, seq, input_message_id, status, completed_at)
       SELECT gen_random_uuid(), $1, $2, $3, g, gen_random_uuid(), 'completed', now()
       FROM generate_series(1, $4::int) g`,
      [s.tenantId, s.sessionId, s.agentId, n],
    );

  it('keeps the primary key for a tenant newer than the last ANALYZE, and checks the tenant', async () => {
    const known = await seedTenantSession(env.db, 'known');
    await addTurns(known, 2_000);
    await poolOf(env.db).query('ANALYZE turns');
    const fresh = await seedTenantSession(env.db, 'fresh');
    await addTurns(fresh, 600);
    const {
      rows: [{ id }],
    } = await poolOf(env.db).query<{ id: string }>(
      'SELECT id FROM turns WHERE session_id = $1 ORDER BY seq OFFSET 300 LIMIT 1',
      [fresh.sessionId],
    );

    const lookup = (tenantId: string) =>
      sql`SELECT id FROM turns WHERE id = ${id}::uuid AND ${ofTenant('tenant_id', tenantId)}`;
    const q = lookup(fresh.tenantId).toQuery();
    const {
      rows: [{ 'QUERY PLAN': plan }],
    } = await poolOf(env.db).query<{ 'QUERY PLAN': { Plan: Record<string, unknown> }[] }>(
      `EXPLAIN (FORMAT JSON) ${q.text}`,
      q.values,
    );
    expect(plan[0].Plan).toMatchObject({ 'Node Type': 'Index Scan', 'Index Name': 'turns_pkey' });

    const db = new SqlDb(poolOf(env.db));
    expect(await db.first(lookup(fresh.tenantId))).toEqual({ id });
    expect(await db.first(lookup(known.tenantId))).toBeUndefined();
  });
});
