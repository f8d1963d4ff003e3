import { v7 } from 'uuid';
import { newId, uuid7Time } from '@switchboard/contracts';
import { poolOf } from '@switchboard/database';
import {
  createTestEnv,
  seedTenantSession,
  seedTurn,
  type SessionIds,
  type TestEnv,
} from '@switchboard/testing';
import { recordHookFailure } from './hook-store';
import { journalPage } from './journal-reads';
import { maintainPartitions } from './partitions';
import { Sql, sql, SqlDb } from './sql';

/**
 * The partitioned journal, transcript, ledger and hook runs (docs/adr/0044) on a fresh database: the
 * four tables are partitioned, rows land in the child for their time, a hook run or ledger line retried
 * for the same turn still conflicts after newer partitions exist, one session's events spanning two
 * partitions read back in seq order, and a retention detaches (keeps) an old partition while the
 * session's later events still read. The pg_partman cases need the extension (scripts/partman.sh
 * install; scripts/test.sh installs it as root): without it they only say so, and every row is in the
 * default partitions.
 */
jest.setTimeout(120_000);

const WEEK_MS = 7 * 24 * 3600 * 1000;
const TABLES = ['events', 'messages', 'ledger_entries', 'hook_runs'];

describe('partitioned tables', () => {
  let env: TestEnv;
  let db: SqlDb;
  let partman = false;
  let s: SessionIds;

  beforeAll(async () => {
    env = await createTestEnv();
    db = new SqlDb(poolOf(env.db));
    partman =
      (await db.first(sql`SELECT 1 AS one FROM pg_extension WHERE extname = 'pg_partman'`)) !== undefined;
    if (!partman) {
      console.warn(
        'libs/store/src/partitions.int.spec.ts: pg_partman is not installed, its cases are skipped (scripts/partman.sh install)',
      );
    }
    // The template database may be older than this week: children around now are made first.
    await maintainPartitions(db);
    s = await seedTenantSession(env.db, 'partitions');
  });

  afterAll(async () => {
    await env?.cleanup();
  });

  const partitionOf = async (table: string, id: string): Promise<string> => {
    const row = await db.first<{ p: string }>(
      sql`SELECT tableoid::regclass::text AS p FROM ${ident(table)} WHERE id = ${id}::uuid`,
    );
    if (!row) throw new Error(`no ${table} row ${id}`);
    return row.p;
  };

  it('partitions the four tables by range, with a default partition', async () => {
    const rows = await db.rows<{ table: string; kind: string; leaves: number; hasDefault: boolean }>(sql`
      SELECT c.relname AS table, c.relkind::text AS kind,
        (SELECT count(*)::int FROM pg_partition_tree(c.oid) WHERE isleaf) AS leaves,
        EXISTS (SELECT 1 FROM pg_inherits i JOIN pg_class d ON d.oid = i.inhrelid
                WHERE i.inhparent = c.oid AND pg_get_expr(d.relpartbound, d.oid) = 'DEFAULT') AS "hasDefault"
      FROM pg_class c WHERE c.relname = ANY(${TABLES}) AND c.relnamespace = 'public'::regnamespace ORDER BY 1`);
    expect(rows.map((r) => [r.table, r.kind, r.hasDefault])).toEqual(
      [...TABLES].sort().map((t) => [t, 'p', true]),
    );
    if (partman) for (const r of rows) expect(r.leaves).toBeGreaterThan(8);
  });

  it('computes turn_at from the UUIDv7 as the application does, the epoch for other ids', async () => {
    const ids = [
      newId(),
      v7({ msecs: Date.UTC(2026, 0, 2, 3, 4, 5, 678) }),
      '5f0c3a52-8d8e-4b8a-9f4e-2f1b8e1c9a10',
    ];
    for (const id of ids) {
      const row = await db.first<{ t: Date }>(sql`SELECT sb_uuid7_time(${id}::uuid) AS t`);
      expect(row?.t.toISOString()).toBe(uuid7Time(id).toISOString());
    }
    expect(uuid7Time(ids[2]).getTime()).toBe(0);
  });

  it('puts rows in the child for their time, not the default', async () => {
    if (!partman) return;
    const turn = await seedTurn(env.db, s, { status: 'completed' });
    const eventId = newId();
    await db.execute(sql`INSERT INTO events (id, tenant_id, session_id, turn_id, seq, type, data)
      VALUES (${eventId}::uuid, ${s.tenantId}::uuid, ${s.sessionId}::uuid, ${turn.id}::uuid, 1000, 'probe', '{}')`);
    expect(await partitionOf('events', eventId)).toMatch(/^events_p\d{4}w\d{2}$/);
    const hookId = newId();
    await recordHookFailure(db, {
      id: hookId,
      turnId: turn.id,
      tenantId: s.tenantId,
      hook: 'probe',
      attempts: 1,
      error: 'x',
    });
    expect(await partitionOf('hook_runs', hookId)).toMatch(/^hook_runs_p\d{4}w\d{2}$/);
  });

  it('a hook run or ledger line retried for an older turn after newer partitions exist still conflicts', async () => {
    // A turn made three weeks ago: its turn_at falls in an older partition than today's.
    const turnId = v7({ msecs: Date.now() - 3 * WEEK_MS });
    await seedTurn(env.db, s, { id: turnId, status: 'completed' });
    const run = { turnId, tenantId: s.tenantId, hook: 'retried', attempts: 1, error: 'boom' };
    expect(await recordHookFailure(db, { ...run, id: newId() })).toBe(true);
    const ledger = () =>
      db.execute(sql`
        INSERT INTO ledger_entries (id, tenant_id, agent_id, session_id, turn_id, turn_at, key, provider, model,
          input_tokens, output_tokens, cost_usd, cost_source)
        VALUES (${newId()}::uuid, ${s.tenantId}::uuid, ${s.agentId}::uuid, ${s.sessionId}::uuid, ${turnId}::uuid,
          sb_uuid7_time(${turnId}::uuid), ${`${turnId}:0:0`}, 'fake', 'm', 1, 1, 0, 'provider')
        ON CONFLICT (key, turn_at) DO NOTHING`);
    expect(await ledger()).toBe(1);
    if (partman) {
      // Newer children than any before (ten weeks ahead), and pg_partman's maintenance.
      await db.execute(
        sql`SELECT partman.create_partition_time('public.hook_runs', ARRAY[now() + interval '10 weeks'])`,
      );
      await db.execute(
        sql`SELECT partman.create_partition_time('public.ledger_entries', ARRAY[now() + interval '10 weeks'])`,
      );
      await maintainPartitions(db);
      const hookRow = await db.first<{ id: string }>(
        sql`SELECT id FROM hook_runs WHERE turn_id = ${turnId}::uuid AND hook = 'retried'`,
      );
      expect(await partitionOf('hook_runs', hookRow!.id)).toMatch(/^hook_runs_p\d{4}w\d{2}$/);
    }
    expect(await recordHookFailure(db, { ...run, id: newId() })).toBe(false);
    expect(await ledger()).toBe(0);
    const counts = await db.first<{ hooks: number; lines: number }>(sql`
      SELECT (SELECT count(*)::int FROM hook_runs WHERE turn_id = ${turnId}::uuid) AS hooks,
        (SELECT count(*)::int FROM ledger_entries WHERE turn_id = ${turnId}::uuid) AS lines`);
    expect(counts).toEqual({ hooks: 1, lines: 1 });
  });

  describe('one session across partitions', () => {
    let session: SessionIds;
    const old = new Date(Date.now() - 3 * WEEK_MS);

    beforeAll(async () => {
      session = await seedTenantSession(env.db, 'spanning');
      // Seqs 1-3 three weeks ago, 4-6 now: two partitions (or the default alone without pg_partman).
      for (let seq = 1; seq <= 6; seq++) {
        const at = seq <= 3 ? old : new Date();
        await db.execute(sql`INSERT INTO events (id, tenant_id, session_id, seq, type, data, created_at)
          VALUES (${newId()}::uuid, ${session.tenantId}::uuid, ${session.sessionId}::uuid, ${seq}, 'probe',
            ${JSON.stringify({ seq })}::jsonb, ${at})`);
      }
      await db.execute(sql`UPDATE sessions SET last_event_seq = 6 WHERE id = ${session.sessionId}::uuid`);
    });

    it('reads its events back in seq order through the journal read', async () => {
      const parts = await db.rows<{ p: string }>(
        sql`SELECT DISTINCT tableoid::regclass::text AS p FROM events WHERE session_id = ${session.sessionId}::uuid`,
      );
      if (partman) expect(parts).toHaveLength(2);
      const page = await journalPage(db, { sessionId: session.sessionId, after: 0, limit: 100 });
      expect(page.events.map((e) => e.seq)).toEqual([1, 2, 3, 4, 5, 6]);
      expect(
        (await journalPage(db, { sessionId: session.sessionId, after: 2, limit: 2 })).events.map(
          (e) => e.seq,
        ),
      ).toEqual([3, 4]);
    });

    it('a retention detaches the old partition, kept as a table, and the later events still read', async () => {
      if (!partman) return;
      const oldPart = (await db.first<{ p: string }>(
        sql`SELECT tableoid::regclass::text AS p FROM events WHERE session_id = ${session.sessionId}::uuid AND seq = 1`,
      ))!.p;
      const done = await maintainPartitions(db, '2 weeks');
      expect(done).toMatchObject({ ran: true });
      expect(done.detached).toBeGreaterThan(0);
      const state = await db.first<{ exists: boolean; attached: boolean; rows: number }>(sql`
        SELECT to_regclass(${oldPart}) IS NOT NULL AS exists,
          EXISTS (SELECT 1 FROM pg_inherits WHERE inhrelid = to_regclass(${oldPart})) AS attached,
          (SELECT count(*)::int FROM pg_partition_tree('events') t WHERE t.relid = to_regclass(${oldPart})) AS rows`);
      expect(state).toEqual({ exists: true, attached: false, rows: 0 });
      const page = await journalPage(db, { sessionId: session.sessionId, after: 0, limit: 100 });
      expect(page.events.map((e) => e.seq)).toEqual([4, 5, 6]);
      // The detached table still holds its rows, for an operator to archive (pg_dump -t) and drop.
      const kept = await db.first<{ n: number }>(
        sql`SELECT count(*)::int AS n FROM ${ident(oldPart)} WHERE session_id = ${session.sessionId}::uuid`,
      );
      expect(kept?.n).toBe(3);
    });
  });
});

/** A trusted table name (from the catalog or this file) spliced into a statement. */
function ident(name: string): Sql {
  if (!/^[a-z_][a-z0-9_]*$/.test(name)) throw new Error(`not a table name: ${name}`);
  return new Sql([name], []);
}
