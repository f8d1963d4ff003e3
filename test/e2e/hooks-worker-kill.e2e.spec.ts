import { randomBytes } from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { Queue } from 'bullmq';
import type IORedis from 'ioredis';
import { Client } from 'pg';
import { Webhook } from 'standardwebhooks';
import { QueueName } from '@switchboard/contracts';
import { completionWebhookId } from '@switchboard/hooks';
import { createRedis } from '@switchboard/queue';
import { createTestEnv, spawnApp, waitFor, type AppProcess, type TestEnv } from '@switchboard/testing';
import { newTenant } from '../support/api';
import { FIXTURES, startGateway, startHarness, startTriage, type Running } from '../support/stack';

/**
 * Issue 13, "killing the hooks worker mid-hook repeats nothing", with real processes: the hooks
 * worker runs as its own process; its `learning` and `cost-log` statements are held inside
 * Postgres (a test transaction holds the rows they upsert) so it is provably mid-hook when it is
 * SIGKILLed; a new hooks worker picks the stalled jobs up and each hook's effect lands exactly once:
 * one hook_runs row per (turn, hook), the agent's tool statistics equal to the calls made, the
 * tenant's daily spend equal to the ledger, one completion webhook per turn.
 *
 * Twice: each turn's post-turn job alone, and the three turns in ONE job (the harness's window held
 * open long enough for all of them, docs/adr/0070), killed while the group's transaction waits.
 */
jest.setTimeout(180_000);

describe.each([
  { mode: 'each turn alone', window: '0', grouped: false },
  { mode: 'the turns in one group', window: '10000', grouped: true },
])('a hooks worker killed mid-hook: $mode', ({ window, grouped }) => {
  const TURNS = 3;
  let env: TestEnv;
  let gateway: Running & { url: string };
  let harness: Running;
  let triage: Running;
  const workers: AppProcess[] = [];
  let connection: IORedis;
  let postTurn: Queue;
  let receiver: http.Server;
  /** Every delivery the receiver got: its webhook-id and whether its signature verified. */
  const received: { id: string; verified: boolean }[] = [];
  const secret = `whsec_${randomBytes(32).toString('base64')}`;
  let locker: Client;
  const overrides = {
    SCRIPTED_FIXTURES_DIR: FIXTURES,
    OUTBOUND_WEBHOOK_ALLOW_HOSTS: 'localhost',
    OUTBOUND_WEBHOOK_BACKOFF_MS: '100',
    HOOKS_BATCH_WINDOW_MS: window,
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
    // The outbound-webhooks worker (completion webhook deliveries) lives in the triage worker.
    triage = await startTriage(config);
    connection = createRedis(env.redisUrl);
    postTurn = new Queue(QueueName.PostTurn, { connection, prefix: env.queuePrefix });
    locker = new Client({ connectionString: env.databaseUrl });
    await locker.connect();
  });

  afterAll(async () => {
    await Promise.all(workers.map((w) => w.kill('SIGKILL')));
    await locker?.end().catch(() => undefined);
    await Promise.all([harness?.close(), triage?.close()]);
    await gateway?.close();
    await postTurn?.close();
    await connection?.quit();
    await new Promise((resolve) => receiver?.close(resolve));
    await env?.cleanup();
  });

  /**
   * A hooks worker process. Its Postgres sessions check every 100 ms that their client is still
   * there, so a statement of a killed worker that waits on a lock is rolled back at once (as
   * TCP keepalive would, later), instead of finishing on its own once the lock is released.
   */
  const hooksWorker = async () => {
    const url = new URL(env.databaseUrl);
    url.searchParams.set('options', '-c client_connection_check_interval=100');
    const w = await spawnApp('hooks-worker', env.processEnv({ ...overrides, DATABASE_URL: url.toString() }));
    workers.push(w);
    return w;
  };

  /** The hooks of this build that hold a statement in Postgres while the test holds their rows. */
  const HELD = {
    learning: 'SELECT id, tenant_id, agent_id FROM turns',
    costLog: 'SELECT id, session_id, agent_id, tenant_id, status FROM turns',
    // The archivist's transaction books its model call's spend last, after its hook_runs row and facts.
    archivist: 'INSERT INTO tenant_spend_daily',
    // A group's transaction: its cost log's statement (then learning's) over all its turns.
    group: 'WITH j AS (SELECT * FROM unnest(',
  };

  /**
   * Per hook, the backends of this test's database whose statement waits on a lock (matched by
   * text pg_stat_activity keeps: its first kilobyte). Not on the locker's connection: inside its
   * transaction, pg_stat_activity would not change.
   */
  const heldStatements = async () => {
    const [row] = await env.db.$queryRaw<
      { learning: number; costLog: number; archivist: number; group: number }[]
    >`
      SELECT count(*) FILTER (WHERE query LIKE ${`%${HELD.learning}%`})::int AS learning,
        count(*) FILTER (WHERE query LIKE ${`%${HELD.costLog}%`})::int AS "costLog",
        count(*) FILTER (WHERE query LIKE ${`%${HELD.archivist}%`} AND query NOT LIKE ${`%${HELD.group}%`})::int
          AS archivist,
        count(*) FILTER (WHERE query LIKE ${`%${HELD.group}%`})::int AS "group"
      FROM pg_stat_activity
      WHERE datname = current_database() AND wait_event_type = 'Lock' AND pid <> pg_backend_pid()`;
    return row;
  };

  it('lands every hook’s effect exactly once after a SIGKILL in the middle of the hooks', async () => {
    const { api, tenantId } = await newTenant(gateway.url, 'test-admin-token-0123456789', 'kill-hooks');
    const notifyUrl = `http://localhost:${(receiver.address() as AddressInfo).port}/hooks`;
    // The archivist's summarization call answers one fact (kill-facts fixture).
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

    // Hold the rows the learning and cost-log statements upsert (uncommitted inserts of the same
    // keys: the agent's word_count statistics, the tenant's spend today and tomorrow in case the
    // turns cross midnight), so those statements block inside Postgres, mid-hook.
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

    const first = await hooksWorker();
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
      { what: 'the turns to complete', timeoutMs: 30_000 },
    );
    // Each turn called word_count once (its real number of calls).
    const calls = await env.db.toolCall.count({ where: { turnId: { in: turnIds }, name: 'word_count' } });
    expect(calls).toBe(TURNS);

    // Mid-hook: each job's one transaction (docs/adr/0070), every hook of its turns written but
    // scoring's and the ones that run outside it (the archivist's model call, the webhook's publish),
    // uncommitted, waits on the held rows in its cost log's statement: one per turn, or one for the group.
    const held = { learning: 0, costLog: 0, archivist: 0, group: grouped ? 1 : TURNS };
    await waitFor(async () => JSON.stringify(await heldStatements()) === JSON.stringify(held), {
      what: 'the hook statements to wait on the held rows',
      timeoutMs: 30_000,
    });
    expect(await first.kill('SIGKILL')).toBeNull();
    const none = { learning: 0, costLog: 0, archivist: 0, group: 0 };
    await waitFor(async () => JSON.stringify(await heldStatements()) === JSON.stringify(none), {
      what: "the killed worker's statements to be rolled back",
    });
    await locker.query('ROLLBACK');

    // The killed hooks left nothing behind.
    const hookRuns = (hook: string) => env.db.hookRun.count({ where: { turnId: { in: turnIds }, hook } });
    expect(await hookRuns('learning')).toBe(0);
    expect(await hookRuns('cost-log')).toBe(0);
    expect(await hookRuns('archivist')).toBe(0);
    // The job's transaction held the episodic index too, and went with the kill (docs/adr/0070).
    expect(await hookRuns('episodic-index')).toBe(0);
    expect(await env.db.memoryRecord.count({ where: { tenantId, kind: 'fact' } })).toBe(0);
    expect(await env.db.agentToolStat.count({ where: { agentId } })).toBe(0);
    expect(await env.db.tenantSpendDaily.count({ where: { tenantId } })).toBe(0);

    // A new worker takes the stalled jobs over and finishes them; the queue drains.
    await hooksWorker();
    await waitFor(
      async () => {
        const counts = await postTurn.getJobCounts(
          'active',
          'waiting',
          'delayed',
          'prioritized',
          'completed',
          'failed',
        );
        return (
          counts.active + counts.waiting + counts.delayed + counts.prioritized + counts.failed === 0 &&
          // One job per turn, running every hook (docs/adr/0039), or one for the group (0070), which
          // the harness's batcher publishes not to be kept once completed (0077).
          counts.completed === (grouped ? 0 : TURNS)
        );
      },
      { what: 'every post-turn job to complete on the new worker', timeoutMs: 30_000 },
    );

    // One hook_runs row per (turn, hook) for the hooks that record one.
    expect(await hookRuns('learning')).toBe(TURNS);
    expect(await hookRuns('cost-log')).toBe(TURNS);
    expect(await hookRuns('archivist')).toBe(TURNS);
    expect(await hookRuns('episodic-index')).toBe(TURNS);
    // Memory: one fact (the archivist's) and one episode per turn, none twice.
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

    // Learning: the statistics count each real call once, and the agent's status shows them.
    const shown = await api.get(`/v1/agents/${agentId}`);
    expect(shown.status).toBe(200);
    expect(shown.body.status.tools).toEqual([
      expect.objectContaining({ tool: 'word_count', calls, failures: 0, failureRate: 0, failuresByKind: {} }),
    ]);
    const latencies = await env.db.toolCall.aggregate({
      where: { turnId: { in: turnIds } },
      _sum: { durationMs: true },
      _max: { durationMs: true },
    });
    const stat = await env.db.agentToolStat.findUniqueOrThrow({
      where: { agentId_tool: { agentId, tool: 'word_count' } },
    });
    expect(Number(stat.totalLatencyMs)).toBe(latencies._sum.durationMs);
    expect(stat.maxLatencyMs).toBe(latencies._max.durationMs);

    // Cost log: the tenant's daily spend is the ledger (the turns' calls and the archivist's),
    // exactly, each turn once.
    const [ledger] = await env.db.$queryRaw<{ usd: string; calls: number; input: number; output: number }[]>`
      SELECT sum(cost_usd)::numeric(20, 8)::text AS usd, count(*)::int AS calls,
        sum(input_tokens)::int AS input, sum(output_tokens)::int AS output
      FROM ledger_entries WHERE tenant_id = ${tenantId}::uuid`;
    const [spend] = await env.db.$queryRaw<
      { usd: string; calls: number; input: number; output: number; turns: number }[]
    >`
      SELECT sum(cost_usd)::numeric(20, 8)::text AS usd, sum(provider_calls)::int AS calls,
        sum(input_tokens)::int AS input, sum(output_tokens)::int AS output, sum(turns)::int AS turns
      FROM tenant_spend_daily WHERE tenant_id = ${tenantId}::uuid`;
    expect(Number(ledger.usd)).toBeGreaterThan(0);
    expect(spend).toEqual({ ...ledger, turns: TURNS });
    // The tenant reads it per day; another tenant sees none of it.
    const daily = await api.get('/v1/usage/daily');
    expect(daily.status).toBe(200);
    expect(daily.body.totals).toMatchObject({
      inputTokens: ledger.input,
      outputTokens: ledger.output,
      providerCalls: ledger.calls,
      turns: TURNS,
    });
    expect(Number(daily.body.totals.costUsd).toFixed(8)).toBe(ledger.usd);
    expect(daily.body.days.reduce((n: number, d: { turns: number }) => n + d.turns, 0)).toBe(TURNS);
    const other = await newTenant(gateway.url, 'test-admin-token-0123456789', 'someone-else');
    expect((await other.api.get('/v1/usage/daily')).body).toMatchObject({
      days: [],
      totals: { costUsd: '0', turns: 0 },
    });

    // Completion webhooks: one outbound job and one signed delivery per turn.
    const ids = turnIds.map(completionWebhookId).sort();
    await waitFor(async () => new Set(received.map((r) => r.id)).size === TURNS, {
      what: 'a completion webhook per turn',
    });
    expect(received.every((r) => r.verified)).toBe(true);
    expect(received.map((r) => r.id).sort()).toEqual(ids);
    const attempts = await env.db.outboundWebhookAttempt.findMany({ where: { webhookId: { in: ids } } });
    expect(attempts.map((a) => a.webhookId).sort()).toEqual(ids);
  });
});
