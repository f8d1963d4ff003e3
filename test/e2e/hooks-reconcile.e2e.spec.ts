import { randomBytes } from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { Queue, QueueEvents } from 'bullmq';
import type IORedis from 'ioredis';
import { Client } from 'pg';
import { Webhook } from 'standardwebhooks';
import { PostTurnHookName, QueueName } from '@switchboard/contracts';
import { completionWebhookId } from '@switchboard/hooks';
import { createRedis } from '@switchboard/queue';
import { createTestEnv, spawnApp, waitFor, type AppProcess, type TestEnv } from '@switchboard/testing';
import { newTenant } from '../support/api';
import { FIXTURES, startGateway, startHarness, startTriage, type Running } from '../support/stack';

/**
 * Issue 18, defect 8 (docs/adr/0027), with real processes: turns end while no hooks worker runs, then
 * hooks workers are started and SIGKILLed one after another, each while its hooks are provably
 * mid-statement (the test holds the rows the learning, cost-log and archivist statements write). The
 * workers run with BullMQ's default stall policy (HOOKS_MAX_STALLED_COUNT=1: a job's second stall
 * fails it), so jobs do end `failed` on stalls; the hooks reconcile (every RECONCILE_INTERVAL_MS, in
 * the harness) publishes them again. Once a last worker runs, every (turn, hook) has run exactly once:
 * one `hook_runs` row each, every turn settled, and each hook's effect counted once.
 */
jest.setTimeout(180_000);

describe('post-turn hooks through repeated hooks worker deaths', () => {
  const TURNS = 12;
  const KILLS = 6;
  let env: TestEnv;
  let gateway: Running & { url: string };
  let harness: Running;
  let triage: Running;
  const workers: AppProcess[] = [];
  let connection: IORedis;
  let eventsConnection: IORedis;
  let postTurn: Queue;
  let events: QueueEvents;
  /** Post-turn jobs BullMQ failed because their worker died holding them too often. */
  const stalledOut = new Set<string>();
  let receiver: http.Server;
  const received: { id: string; verified: boolean }[] = [];
  const secret = `whsec_${randomBytes(32).toString('base64')}`;
  let locker: Client;
  const overrides = {
    SCRIPTED_FIXTURES_DIR: FIXTURES,
    OUTBOUND_WEBHOOK_ALLOW_HOSTS: 'localhost',
    OUTBOUND_WEBHOOK_BACKOFF_MS: '100',
    // A short sweep, and a grace shorter than a worker's start-up.
    RECONCILE_INTERVAL_MS: '500',
    HOOKS_RECONCILE_GRACE_MS: '200',
  };

  beforeAll(async () => {
    env = await createTestEnv();
    receiver = http.createServer((req, res) => {
      let body = '';
      req.on('data', (c: Buffer) => (body += c.toString()));
      req.on('end', () => {
        let verified = true;
        try {
          new Webhook(secret).verify(body, req.headers as Record<string, string>);
        } catch {
          verified = false;
        }
        received.push({ id: String(req.headers['webhook-id']), verified });
        res.writeHead(verified ? 200 : 401).end();
      });
    });
    await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve));
    const config = env.config(overrides);
    gateway = await startGateway(config);
    harness = await startHarness(config);
    triage = await startTriage(config);
    connection = createRedis(env.redisUrl);
    postTurn = new Queue(QueueName.PostTurn, { connection, prefix: env.queuePrefix });
    eventsConnection = createRedis(env.redisUrl);
    events = new QueueEvents(QueueName.PostTurn, { connection: eventsConnection, prefix: env.queuePrefix });
    events.on('failed', ({ jobId, failedReason }) => {
      if (/stalled more than allowable limit/.test(failedReason)) stalledOut.add(jobId);
    });
    await events.waitUntilReady();
    locker = new Client({ connectionString: env.databaseUrl });
    await locker.connect();
  });

  afterAll(async () => {
    await Promise.all(workers.map((w) => w.kill('SIGKILL')));
    await locker?.end().catch(() => undefined);
    await Promise.all([harness?.close(), triage?.close()]);
    await gateway?.close();
    await events?.close();
    await eventsConnection?.quit();
    await postTurn?.close();
    await connection?.quit();
    await new Promise((resolve) => receiver?.close(resolve));
    await env?.cleanup();
  });

  /**
   * Hooks worker `n`, a process with BullMQ's default stall policy. Its Postgres sessions carry its
   * name (so the test sees which worker's statements wait) and check every 100 ms that their client
   * is still there, so a killed worker's waiting statement is rolled back at once.
   */
  const hooksWorker = async (n: number) => {
    const url = new URL(env.databaseUrl);
    url.searchParams.set('options', `-c client_connection_check_interval=100 -c application_name=hooks-${n}`);
    const w = await spawnApp(
      'hooks-worker',
      env.processEnv({ ...overrides, HOOKS_MAX_STALLED_COUNT: '1', DATABASE_URL: url.toString() }),
    );
    workers.push(w);
    return w;
  };

  /** Statements of hooks worker `n` that wait on a lock (the rows the test holds). */
  const waiting = async (n: number) => {
    const [row] = await env.db.$queryRaw<{ n: number }[]>`
      SELECT count(*)::int AS n FROM pg_stat_activity
      WHERE datname = current_database() AND application_name = ${`hooks-${n}`}
        AND wait_event_type = 'Lock'`;
    return row.n;
  };

  it('runs every hook of every ended turn exactly once', async () => {
    const { api, tenantId } = await newTenant(gateway.url, 'test-admin-token-0123456789', 'reconcile-hooks');
    const notifyUrl = `http://localhost:${(receiver.address() as AddressInfo).port}/hooks`;
    const settings = await api.patch('/v1/settings', {
      notifyUrl,
      notifySecret: secret,
      modelRoutes: { summarization: 'scripted/kill-facts' },
      // One distillation per turn, at once (the default defers to the session's, docs/adr/0032).
      archivist: { mode: 'every_turn' },
    });
    expect(settings.status).toBe(200);
    const agent = await api.post('/v1/agents', { name: 'counter', tools: ['word_count'] });
    expect(agent.status).toBe(201);
    const agentId = agent.body.id as string;

    // The turns end while no hooks worker runs: their post-turn jobs wait in Redis.
    const turnIds = await Promise.all(
      Array.from({ length: TURNS }, async (_, i) => {
        const session = await api.post('/v1/sessions', { agentId });
        const admitted = await api.post(`/v1/sessions/${session.body.id}/messages`, {
          content: `count these ${i + 3} words please`,
        });
        expect(admitted.status).toBe(202);
        return admitted.body.turnId as string;
      }),
    );
    await waitFor(
      async () =>
        (await env.db.turn.count({ where: { id: { in: turnIds }, status: 'completed' } })) === TURNS,
      { what: 'the turns to complete', timeoutMs: 60_000 },
    );
    const calls = await env.db.toolCall.count({ where: { turnId: { in: turnIds }, name: 'word_count' } });
    expect(calls).toBe(TURNS);

    // Hold the rows the learning, cost-log and archivist statements write, so those hooks wait
    // inside Postgres, mid-hook, whenever a worker runs them.
    await locker.query('BEGIN');
    await locker.query(
      `INSERT INTO agent_tool_stats (tenant_id, agent_id, tool) VALUES ($1, $2, 'word_count')`,
      [tenantId, agentId],
    );
    await locker.query(
      `INSERT INTO tenant_spend_daily (tenant_id, day)
       SELECT $1::uuid, (now() AT TIME ZONE 'UTC')::date + d FROM generate_series(0, 1) d`,
      [tenantId],
    );

    // Each worker is killed as soon as one of its hooks is mid-statement.
    for (let n = 0; n < KILLS; n++) {
      const worker = await hooksWorker(n);
      await waitFor(async () => (await waiting(n)) > 0, {
        what: `hooks worker ${n} to be mid-hook`,
        timeoutMs: 30_000,
      });
      expect(await worker.kill('SIGKILL')).toBeNull();
    }
    await locker.query('ROLLBACK');

    // A last worker; the reconcile publishes again what the stalls failed.
    await hooksWorker(KILLS);
    const progress = async () => {
      const [row] = await env.db.$queryRaw<{ runs: number; settled: number }[]>`
        SELECT (SELECT count(*)::int FROM hook_runs WHERE turn_id = ANY(${turnIds}::uuid[])) AS runs,
          (SELECT count(*)::int FROM turns
           WHERE id = ANY(${turnIds}::uuid[]) AND hooks_settled_at IS NOT NULL) AS settled`;
      return row;
    };
    const runsWanted = TURNS * PostTurnHookName.options.length;
    await waitFor(
      async () => {
        const p = await progress();
        if (p.runs === runsWanted && p.settled === TURNS) return true;
        // Not yet: a timeout names how far it got.
        throw new Error(`hook runs ${p.runs}/${runsWanted}, turns settled ${p.settled}/${TURNS}`);
      },
      { what: 'a hook run per (turn, hook) and every turn settled', timeoutMs: 90_000 },
    );
    // The scenario is the defect's: jobs did end failed on stalls, and still ran.
    expect(stalledOut.size).toBeGreaterThan(0);

    const runs = await env.db.hookRun.groupBy({
      by: ['hook', 'status'],
      where: { turnId: { in: turnIds } },
      _count: { _all: true },
      orderBy: { hook: 'asc' },
    });
    expect(runs.map((r) => [r.hook, r.status, r._count._all])).toEqual(
      [...PostTurnHookName.options].sort().map((hook) => [hook, 'completed', TURNS]),
    );

    // Each hook's effect exactly once. Memory: one fact (archivist) and one episode per turn.
    const memory = await env.db.memoryRecord.groupBy({
      by: ['kind'],
      where: { tenantId },
      _count: { _all: true },
      orderBy: { kind: 'asc' },
    });
    expect(memory.map((m) => [m.kind, m._count._all])).toEqual([
      ['episode', TURNS],
      ['fact', TURNS],
    ]);
    // Learning: every real call counted once.
    const stat = await env.db.agentToolStat.findUniqueOrThrow({
      where: { agentId_tool: { agentId, tool: 'word_count' } },
    });
    expect(stat.calls).toBe(calls);
    // Cost log: the tenant's daily roll-up is its ledger (the turns' calls and the archivist's), each turn once.
    const [ledger] = await env.db.$queryRaw<{ usd: string; calls: number }[]>`
      SELECT sum(cost_usd)::numeric(20, 8)::text AS usd, count(*)::int AS calls
      FROM ledger_entries WHERE tenant_id = ${tenantId}::uuid`;
    const [spend] = await env.db.$queryRaw<{ usd: string; calls: number; turns: number }[]>`
      SELECT sum(cost_usd)::numeric(20, 8)::text AS usd, sum(provider_calls)::int AS calls,
        sum(turns)::int AS turns
      FROM tenant_spend_daily WHERE tenant_id = ${tenantId}::uuid`;
    expect(spend).toEqual({ ...ledger, turns: TURNS });
    // Completion webhooks: one signed delivery per turn.
    const ids = turnIds.map(completionWebhookId).sort();
    await waitFor(async () => received.length >= TURNS, { what: 'a completion webhook per turn' });
    expect(received.every((r) => r.verified)).toBe(true);
    expect(received.map((r) => r.id).sort()).toEqual(ids);
  });
});
