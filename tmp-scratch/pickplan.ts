import pg from 'pg';
import { createTestEnv, seedTenant, seedSession, seedTurn } from '@switchboard/testing';
import { pickStatement, queryConfig } from '@switchboard/store';
import { randomUUID } from 'node:crypto';

async function main() {
  const env = await createTestEnv();
  const { tenantId, agentId } = await seedTenant(env.db, 'p');
  const sessions: string[] = [];
  for (let i = 0; i < 50; i++) sessions.push(await seedSession(env.db, tenantId, agentId));
  // 500 completed turns, 20 queued
  for (const [i, s] of sessions.entries()) {
    for (let k = 0; k < 10; k++) await seedTurn(env.db, { tenantId, agentId, sessionId: s }, { status: 'completed' });
    if (i < 20) await seedTurn(env.db, { tenantId, agentId, sessionId: s }, { status: 'queued' });
  }
  if (process.env.ANALYZE) await env.db.$executeRawUnsafe('ANALYZE');
  const client = new pg.Client({ connectionString: env.databaseUrl });
  await client.connect();
  const mode = process.argv[2];
  if (mode) await client.query(`SET plan_cache_mode = ${mode}`);
  const turn = await env.db.turn.findFirstOrThrow({ where: { status: 'completed' } });
  const times: number[] = [];
  for (let i = 0; i < 30; i++) {
    await client.query('BEGIN');
    const q = pickStatement({
      own: { turnId: turn.id, sessionId: turn.sessionId, tenantId },
      owner: 'w',
      lease: { token: randomUUID(), ms: 30000 },
      defaultCap: 0,
      skipLocked: true,
    }).toQuery();
    const t0 = process.hrtime.bigint();
    await client.query({ name: 'pick', text: q.text, values: q.values });
    times.push(Number(process.hrtime.bigint() - t0) / 1e6);
    await client.query('ROLLBACK');
  }
  const ps = await client.query(`SELECT name, generic_plans, custom_plans FROM pg_prepared_statements`);
  console.log(mode ?? 'auto', ps.rows, times.map((t) => t.toFixed(2)).join(' '));
  await client.end();
  await env.cleanup();
}
void main();
