/**
 * The floor of a durable turn on Postgres — not a test (issue 22).
 *
 * What the cheapest possible durable version of `npm run bench:peers`' turn (two model rounds,
 * one tool call) costs when nothing but the unavoidable writes is done: one process, no HTTP, no
 * queue, no hooks, no journal reads, named prepared statements, and the rows a durable turn has to
 * leave behind written with the fewest commits that keep every step durable:
 *
 *   1. admission:   the user's message, the turn, its `turn_queued` event, the session's counters;
 *   2. round 1:     the assistant's tool call, the tool call row, the tool result, their events,
 *                   the turn running (the model's output is committed before the tool runs);
 *   3. round 2:     the answer, the turn completed, its cost ledger row, its events.
 *
 * The tables are Switchboard's own (a migrated database of its own, every index in place), so
 * index maintenance is counted. Printed per turn: Postgres backend CPU, this process's CPU
 * (building the rows and driving the protocol), transactions and statements. This is the floor
 * the `bench:peers` CPU goal is compared against: whatever a durable design does beyond it is
 * overhead, and no design that commits each step can go under it.
 *
 *   npm run bench:floor -- [--concurrency 50] [--seconds 8] [--json]
 */
import { randomUUID } from 'node:crypto';
import { parseArgs } from 'node:util';
import { Pool, type PoolClient } from 'pg';
import { createTestEnv } from '@switchboard/testing';
import globalSetup from '../libs/testing/src/global-setup';
import { cpuMs, sleep } from './bench-lib';

const { values } = parseArgs({
  options: {
    concurrency: { type: 'string', default: '50' },
    seconds: { type: 'string', default: '8' },
    json: { type: 'boolean', default: false },
  },
});
const CONCURRENCY = Number(values.concurrency);
const SECONDS = Number(values.seconds);
// An idle backend flushes its statistics up to 10 s late (PGSTAT_IDLE_INTERVAL in Postgres 15).
const STATS_FLUSH_MS = 11_000;

const ORIGIN = JSON.stringify({ kind: 'api' });

const SQL = {
  admit: {
    name: 'floor_admit',
    text: `WITH s AS (
             UPDATE sessions SET last_turn_seq = last_turn_seq + 1, last_event_seq = last_event_seq + 1,
                    updated_at = now()
              WHERE id = $1 RETURNING last_turn_seq, last_event_seq, tenant_id, agent_id),
           m AS (
             INSERT INTO messages (id, tenant_id, agent_id, session_id, turn_id, turn_seq, position, role, kind,
                                   origin, trust, authority_class, body)
             SELECT $2, tenant_id, agent_id, $1, $3, last_turn_seq, 0, 'user', 'message', $5::jsonb,
                    'trusted', 'operator', $4::jsonb FROM s RETURNING id),
           t AS (
             INSERT INTO turns (id, tenant_id, session_id, agent_id, seq, input_message_id)
             SELECT $3, tenant_id, $1, agent_id, last_turn_seq, $2 FROM s, m RETURNING id)
           INSERT INTO events (id, tenant_id, session_id, turn_id, seq, type, data)
           SELECT $6, tenant_id, $1, $3, last_event_seq, 'turn_queued', '{}'::jsonb FROM s, t`,
  },
  round1: {
    name: 'floor_round1',
    text: `WITH s AS (
             UPDATE sessions SET last_event_seq = last_event_seq + 3, updated_at = now()
              WHERE id = $1 RETURNING last_event_seq, last_turn_seq, tenant_id, agent_id),
           t AS (
             UPDATE turns SET status = 'running', started_at = now(), iterations = 1, run_count = 1,
                    tool_call_count = 1
              WHERE id = $2 RETURNING id),
           a AS (
             INSERT INTO messages (id, tenant_id, agent_id, session_id, turn_id, turn_seq, position, role, kind,
                                   origin, trust, authority_class, body, tool_calls)
             SELECT $3, tenant_id, agent_id, $1, $2, last_turn_seq, 1, 'assistant', 'message', $9::jsonb,
                    'trusted', 'agent', '{"text":""}'::jsonb, $5::jsonb FROM s, t RETURNING id),
           c AS (
             INSERT INTO tool_calls (id, tenant_id, session_id, turn_id, call_id, name, arguments, side_effect,
                                     status, idempotency_key, result)
             SELECT $6::uuid, tenant_id, $1, $2, 'call_1', 'word_count', $5::jsonb -> 0 -> 'arguments', 'read',
                    'completed', $6::uuid::text, $7::jsonb FROM s, a RETURNING id),
           r AS (
             INSERT INTO messages (id, tenant_id, agent_id, session_id, turn_id, turn_seq, position, role, kind,
                                   origin, trust, authority_class, body, tool_call_id)
             SELECT $4, tenant_id, agent_id, $1, $2, last_turn_seq, 2, 'tool', 'message', $9::jsonb,
                    'untrusted', 'tool', $7::jsonb, 'call_1' FROM s, c RETURNING id)
           INSERT INTO events (id, tenant_id, session_id, turn_id, seq, type, data)
           SELECT ($8::uuid[])[i], tenant_id, $1, $2, last_event_seq - 3 + i,
                  (ARRAY['turn_started','tool_call_started','tool_call_completed'])[i], '{}'::jsonb
             FROM s, r, generate_series(1, 3) AS i`,
  },
  round2: {
    name: 'floor_round2',
    text: `WITH s AS (
             UPDATE sessions SET last_event_seq = last_event_seq + 2, input_tokens = input_tokens + 60,
                    output_tokens = output_tokens + 20, cost_usd = cost_usd + 0.0001, updated_at = now()
              WHERE id = $1 RETURNING last_event_seq, last_turn_seq, tenant_id, agent_id),
           t AS (
             UPDATE turns SET status = 'completed', completed_at = now(), iterations = 2, final_text = $4,
                    stop_reason = 'end_turn', input_tokens = 60, output_tokens = 20, cost_usd = 0.0001,
                    cost_status = 'priced'
              WHERE id = $2 RETURNING id),
           m AS (
             INSERT INTO messages (id, tenant_id, agent_id, session_id, turn_id, turn_seq, position, role, kind,
                                   origin, trust, authority_class, body)
             SELECT $3, tenant_id, agent_id, $1, $2, last_turn_seq, 3, 'assistant', 'message', $7::jsonb,
                    'trusted', 'agent', jsonb_build_object('text', $4::text) FROM s, t RETURNING id),
           l AS (
             INSERT INTO ledger_entries (id, tenant_id, agent_id, session_id, turn_id, turn_at, key, provider, model,
                                         input_tokens, output_tokens, cost_usd, cost_source)
             SELECT $5::uuid, tenant_id, agent_id, $1, $2, sb_uuid7_time($2::uuid), $5::uuid::text, 'scripted', 'scripted',
                    60, 20, 0.0001, 'table'
               FROM s, m RETURNING id)
           INSERT INTO events (id, tenant_id, session_id, turn_id, seq, type, data)
           SELECT ($6::uuid[])[i], tenant_id, $1, $2, last_event_seq - 2 + i,
                  (ARRAY['message_completed','turn_completed'])[i], '{}'::jsonb
             FROM s, l, generate_series(1, 2) AS i`,
  },
};

async function turn(client: PoolClient, sessionId: string, text: string): Promise<void> {
  const turnId = randomUUID();
  const words = text.split(/\s+/).length;
  await client.query({
    ...SQL.admit,
    values: [sessionId, randomUUID(), turnId, JSON.stringify({ text }), ORIGIN, randomUUID()],
  });
  const calls = JSON.stringify([{ id: 'call_1', name: 'word_count', arguments: { text } }]);
  await client.query({
    ...SQL.round1,
    values: [
      sessionId,
      turnId,
      randomUUID(),
      randomUUID(),
      calls,
      randomUUID(),
      JSON.stringify({ ok: true, result: { words } }),
      [randomUUID(), randomUUID(), randomUUID()],
      ORIGIN,
    ],
  });
  await client.query({
    ...SQL.round2,
    values: [
      sessionId,
      turnId,
      randomUUID(),
      `counted ${words}`,
      randomUUID(),
      [randomUUID(), randomUUID()],
      ORIGIN,
    ],
  });
}

async function main() {
  await globalSetup();
  const env = await createTestEnv();
  const dbName = new URL(env.databaseUrl).pathname.slice(1);
  const pool = new Pool({ connectionString: env.databaseUrl, max: CONCURRENCY });
  const admin = new Pool({ connectionString: env.databaseUrl, max: 1 });
  const clients: PoolClient[] = [];
  try {
    const tenantId = randomUUID();
    const agentId = randomUUID();
    await admin.query(`INSERT INTO tenants (id, name) VALUES ($1, 'floor')`, [tenantId]);
    await admin.query(
      `INSERT INTO agents (id, tenant_id, name, model, updated_at) VALUES ($1, $2, 'floor', 'scripted/scripted', now())`,
      [agentId, tenantId],
    );
    const sessions = Array.from({ length: CONCURRENCY }, () => randomUUID());
    for (const id of sessions) {
      await admin.query(
        `INSERT INTO sessions (id, tenant_id, agent_id, updated_at) VALUES ($1, $2, $3, now())`,
        [id, tenantId, agentId],
      );
    }
    clients.push(...(await Promise.all(sessions.map(() => pool.connect()))));
    const run = async (seconds: number) => {
      let turns = 0;
      const deadline = performance.now() + seconds * 1000;
      await Promise.all(
        clients.map(async (c, i) => {
          for (let t = 0; performance.now() < deadline; t++) {
            await turn(c, sessions[i], `client ${i} turn ${t} counts these words`);
            turns++;
          }
        }),
      );
      return turns;
    };
    await run(2); // warm-up: plans cached, pages in memory

    const backendPids = async () =>
      (
        await admin.query<{ pid: number }>(
          'SELECT pid FROM pg_stat_activity WHERE datname = $1 AND pid <> pg_backend_pid()',
          [dbName],
        )
      ).rows.map((r) => r.pid);
    const pgCpu = async () => (await backendPids()).reduce((s, pid) => s + cpuMs(pid), 0);
    const xacts = async () => {
      await admin.query('SELECT pg_stat_force_next_flush()');
      const r = await admin.query<{ n: string }>(
        'SELECT xact_commit::text AS n FROM pg_stat_database WHERE datname = $1',
        [dbName],
      );
      return Number(r.rows[0].n);
    };
    await sleep(STATS_FLUSH_MS);
    const x0 = await xacts();
    const pg0 = await pgCpu();
    const me0 = process.cpuUsage();
    const t0 = performance.now();
    const turns = await run(SECONDS);
    const wall = (performance.now() - t0) / 1000;
    const me = process.cpuUsage(me0);
    const pg = (await pgCpu()) - pg0;
    await sleep(STATS_FLUSH_MS);
    // Our own statements between the readings: pgCpu's two, the first flush and reading.
    const x = (await xacts()) - x0 - 4;
    const per = (n: number) => Number((n / turns).toFixed(2));
    const result = {
      concurrency: CONCURRENCY,
      turns,
      turnsPerSecond: Number((turns / wall).toFixed(1)),
      perTurn: {
        postgresCpuMs: per(pg),
        clientCpuMs: per((me.user + me.system) / 1000),
        totalCpuMs: per(pg + (me.user + me.system) / 1000),
        postgresTransactions: per(x),
        statements: 3,
      },
    };
    if (values.json) console.log(JSON.stringify(result, null, 2));
    else {
      console.log(`The floor of a durable two-round turn, ${CONCURRENCY} sessions at once, ${turns} turns in ${wall.toFixed(1)} s (${result.turnsPerSecond} turns/s):
  Postgres backends ${result.perTurn.postgresCpuMs} ms + this process ${result.perTurn.clientCpuMs} ms = ${result.perTurn.totalCpuMs} ms CPU per turn
  ${result.perTurn.postgresTransactions} transactions (pg_stat_database), ${result.perTurn.statements} statements per turn`);
    }
  } finally {
    for (const c of clients) c.release();
    await pool.end();
    await admin.end();
    await env.cleanup();
  }
}

main().then(
  () => process.exit(0),
  (err: unknown) => {
    console.error(err instanceof Error ? err.stack : err);
    process.exit(1);
  },
);
