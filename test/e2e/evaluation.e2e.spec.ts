import { Queue } from 'bullmq';
import type IORedis from 'ioredis';
import { Jobs, QueueName } from '@switchboard/contracts';
import { sampledAt, samplingIdOf } from '@switchboard/hooks';
import { createRedis, publish } from '@switchboard/queue';
import {
  createTestEnv,
  freePort,
  FakeLlmServer,
  scripted,
  spawnApp,
  waitFor,
  type AppProcess,
  type RecordedRequest,
  type ScriptedReply,
  type TestEnv,
} from '@switchboard/testing';
import { newTenant, type Api } from '../support/api';

jest.setTimeout(300_000);

const ADMIN = 'test-admin-token-0123456789';
/** What one judge call costs (reported by the fake provider). */
const JUDGE_USD = 0.004;

const modelOf = (r: RecordedRequest) => (r.body as { model: string }).model;

/**
 * Evaluation (docs/adr/0062) through real processes — a gateway, a harness worker and a hooks worker,
 * the fake LLM behind the real OpenAI SDK as both the agents and their judges: sampling keeps the turns
 * a ratio sampler keeps (the same on a rerun), judges' spend is on the ledger and stops at the budget,
 * a hooks worker SIGKILLed mid-scoring leaves every sampled turn scored exactly once, feedback moves
 * the version's aggregate, and bad input is a 4xx that writes nothing.
 */
describe('evaluation', () => {
  let env: TestEnv;
  let llm: FakeLlmServer;
  let url: string;
  let hooks: AppProcess;
  const workers: AppProcess[] = [];
  let connection: IORedis;
  let postTurn: Queue;
  /** Judge replies of model `judge-held` wait here until the test lets them go. */
  let held: ((reply: ScriptedReply) => void)[] = [];
  let holdJudges = false;
  /** Replies to agent model `agent-held` wait here. */
  const heldAgents: ((reply: ScriptedReply) => void)[] = [];

  const judgeReply = () =>
    scripted.text(JSON.stringify({ score: 0.8, reason: 'good' }), { costUsd: JUDGE_USD });

  beforeAll(async () => {
    env = await createTestEnv();
    llm = await FakeLlmServer.start();
    llm.setDefault((r) => {
      const model = modelOf(r);
      if (model === 'judge') return judgeReply();
      if (model === 'judge-held' && holdJudges) {
        return new Promise<ScriptedReply>((resolve) => held.push(resolve));
      }
      if (model === 'judge-held') return judgeReply();
      if (model === 'agent-held') return new Promise<ScriptedReply>((resolve) => heldAgents.push(resolve));
      return scripted.text('The answer is 42.');
    });
    const port = await freePort();
    const processEnv = env.processEnv({ ...llm.providerEnv, EVAL_DAILY_BUDGET_USD: '5' });
    workers.push(await spawnApp('gateway', { ...processEnv, PORT: String(port), HOST: '127.0.0.1' }));
    workers.push(await spawnApp('harness-worker', processEnv));
    hooks = await spawnApp('hooks-worker', processEnv);
    url = `http://127.0.0.1:${port}`;
    connection = createRedis(env.redisUrl);
    postTurn = new Queue(QueueName.PostTurn, { connection, prefix: env.queuePrefix });
  });

  afterAll(async () => {
    await Promise.all([...workers, hooks].map((w) => w?.kill('SIGKILL')));
    await postTurn?.close();
    await connection?.quit();
    await llm?.close();
    await env?.cleanup();
  });

  async function tenant(name: string, settings: Record<string, unknown> = {}) {
    const t = await newTenant(url, ADMIN, name);
    const res = await t.api.patch('/v1/settings', {
      archivist: { mode: 'off' },
      modelRoutes: { evaluation: 'openai-chat/judge' },
      ...settings,
    });
    expect(res.status).toBe(200);
    return t;
  }

  async function agent(api: Api, scorers: unknown[]) {
    const res = await api.post('/v1/agents', {
      name: `a-${Date.now()}`,
      model: 'openai-chat/agent',
      scorers,
    });
    expect(res.status).toBe(201);
    return res.body as { id: string; version: number; scorers: unknown[] };
  }

  /** `n` turns of the agent, over sessions of five messages each; resolves with the ended turns' ids. */
  async function turns(api: Api, tenantId: string, agentId: string, n: number): Promise<string[]> {
    const sessions = Math.ceil(n / 5);
    const ids: string[] = [];
    await Promise.all(
      Array.from({ length: sessions }, async (_, s) => {
        const session = await api.post('/v1/sessions', { agentId });
        expect(session.status).toBe(201);
        for (let i = 0; i < 5 && s * 5 + i < n; i++) {
          const res = await api.post(`/v1/sessions/${session.body.id}/messages`, {
            content: `question ${s}.${i}`,
            wait: 60,
          });
          expect(res.status).toBe(200);
          expect(res.body.status).toBe('completed');
          ids.push(res.body.id as string);
        }
      }),
    );
    await scoringDone(tenantId, ids);
    return ids;
  }

  /** Waits until the scoring hook has run (its hook_runs row) for every one of `ids`. */
  const scoringDone = (tenantId: string, ids: string[]) =>
    waitFor(
      async () =>
        (await env.db.hookRun.count({ where: { tenantId, hook: 'scoring', turnId: { in: ids } } })) ===
        ids.length,
      { timeoutMs: 120_000, what: 'every turn scored' },
    );

  const scoredTurns = async (tenantId: string, scorer: string) =>
    new Set(
      (
        await env.db.turnScore.findMany({
          where: { tenantId, scorer, source: 'scorer' },
          select: { turnId: true },
        })
      ).map((r) => r.turnId),
    );

  it('samples 30 % of 200 turns as a 30 % ratio sampler does, and the same turns on a rerun', async () => {
    const { api, tenantId } = await tenant('eval-sampling');
    const a = await agent(api, [
      { name: 'no-fail', kind: 'rule', check: 'not_failed', samplePercent: 30 },
      { name: 'says-42', kind: 'rule', check: 'regex', pattern: '\\b42\\b' },
    ]);
    const ids = await turns(api, tenantId, a.id, 200);

    const rows = await env.db.turn.findMany({
      where: { id: { in: ids } },
      select: { id: true, traceContext: true },
    });
    const expected = new Set(
      rows.filter((t) => sampledAt(samplingIdOf(t.traceContext, t.id).id, 30)).map((t) => t.id),
    );
    const sampled = await scoredTurns(tenantId, 'no-fail');
    expect(sampled).toEqual(expected);
    expect(sampled.size).toBeGreaterThanOrEqual(40);
    expect(sampled.size).toBeLessThanOrEqual(80);
    // At 100 %: every turn.
    expect((await scoredTurns(tenantId, 'says-42')).size).toBe(200);

    // The rerun: the hook's rows gone, its jobs published again: the same turns are sampled.
    await env.db.turnScore.deleteMany({ where: { tenantId } });
    await env.db.hookRun.deleteMany({ where: { tenantId, hook: 'scoring' } });
    for (const turnId of ids) await publish(postTurn, Jobs.postTurn, { turnId, tenantId, hook: 'scoring' });
    await scoringDone(tenantId, ids);
    expect(await scoredTurns(tenantId, 'no-fail')).toEqual(sampled);

    // The aggregate: one rule always passes, on version 1.
    const agg = await api.get(`/v1/agents/${a.id}/scores?scorer=says-42`);
    expect(agg.status).toBe(200);
    expect(agg.body.data).toEqual([
      expect.objectContaining({
        version: 1,
        scorer: 'says-42',
        source: 'scorer',
        count: 200,
        meanScore: 1,
        passRate: 1,
      }),
    ]);
  });

  it("books judges' spend on the ledger and stops judging at the tenant's evaluation budget", async () => {
    const { api, tenantId } = await tenant('eval-budget', { evaluation: { dailyBudgetUsd: 0.01 } });
    const a = await agent(api, [
      { name: 'judge', kind: 'llm_judge', rubric: 'Is the answer helpful?' },
      { name: 'no-fail', kind: 'rule', check: 'not_failed' },
    ]);
    const session = await api.post('/v1/sessions', { agentId: a.id });
    const ids: string[] = [];
    // One at a time, each scored before the next: 0, 0.004 and 0.008 spent are under 0.01, 0.012 is not.
    for (let i = 0; i < 5; i++) {
      const res = await api.post(`/v1/sessions/${session.body.id}/messages`, { content: `q${i}`, wait: 60 });
      expect(res.body.status).toBe('completed');
      ids.push(res.body.id as string);
      await scoringDone(tenantId, [res.body.id as string]);
    }
    const judged = await env.db.turnScore.findMany({
      where: { tenantId, scorer: 'judge' },
      orderBy: { createdAt: 'asc' },
    });
    expect(judged.map((r) => [r.status, r.reason])).toEqual([
      ['scored', 'good'],
      ['scored', 'good'],
      ['scored', 'good'],
      ['skipped', 'evaluation_budget'],
      ['skipped', 'evaluation_budget'],
    ]);
    // Rules go on past the budget.
    expect((await scoredTurns(tenantId, 'no-fail')).size).toBe(5);
    const ledger = await env.db.ledgerEntry.findMany({
      where: { tenantId, key: { startsWith: 'hook:scoring:' } },
    });
    expect(ledger.map((e) => e.key).sort()).toEqual(
      ids
        .slice(0, 3)
        .map((id) => `hook:scoring:${id}:judge:1`)
        .sort(),
    );
    const judgeUsd = ledger.reduce((sum, e) => sum + Number(e.costUsd), 0);
    expect(judgeUsd).toBeCloseTo(3 * JUDGE_USD, 8);
    // Counted in the tenant's daily spend with the turns' own.
    const allLedger = await env.db.ledgerEntry.findMany({ where: { tenantId } });
    const spend = await env.db.tenantSpendDaily.findMany({ where: { tenantId } });
    expect(spend.reduce((s, r) => s + Number(r.costUsd), 0)).toBeCloseTo(
      allLedger.reduce((s, e) => s + Number(e.costUsd), 0),
      8,
    );
    // The turn shows its scores.
    const turn = await api.get(`/v1/turns/${ids[0]}`);
    expect(turn.body.scores).toEqual(
      expect.arrayContaining([
        expect.objectContaining({
          scorer: 'judge',
          kind: 'llm_judge',
          source: 'scorer',
          status: 'scored',
          score: 0.8,
          passed: true,
          givenBy: 'openai-chat/judge',
        }),
        expect.objectContaining({
          scorer: 'no-fail',
          kind: 'rule',
          status: 'scored',
          score: 1,
          passed: true,
        }),
      ]),
    );
  });

  it('scores every sampled turn exactly once when the hooks worker is SIGKILLed mid-scoring', async () => {
    const { api, tenantId } = await tenant('eval-kill');
    const a = await agent(api, [
      { name: 'judge', kind: 'llm_judge', rubric: 'Helpful?', model: 'openai-chat/judge-held' },
    ]);
    holdJudges = true;
    held = [];
    const session = await api.post('/v1/sessions', { agentId: a.id });
    const ids: string[] = [];
    for (let i = 0; i < 4; i++) {
      const res = await api.post(`/v1/sessions/${session.body.id}/messages`, { content: `k${i}`, wait: 60 });
      expect(res.body.status).toBe('completed');
      ids.push(res.body.id as string);
    }
    // The hooks worker is waiting on the judges: mid-scoring.
    await waitFor(() => held.length >= ids.length, { timeoutMs: 60_000, what: 'every judge call held' });
    expect(await env.db.turnScore.count({ where: { tenantId } })).toBe(0);
    await hooks.kill('SIGKILL');
    holdJudges = false;
    for (const release of held) release(judgeReply());
    hooks = await spawnApp(
      'hooks-worker',
      env.processEnv({ ...llm.providerEnv, EVAL_DAILY_BUDGET_USD: '5' }),
    );
    await scoringDone(tenantId, ids);

    const rows = await env.db.turnScore.findMany({ where: { tenantId } });
    expect(rows.map((r) => r.turnId).sort()).toEqual([...ids].sort());
    expect(rows.every((r) => r.status === 'scored' && r.score === 0.8)).toBe(true);
    // One booking per scored judge call: the killed worker's calls left nothing behind.
    const ledger = await env.db.ledgerEntry.findMany({
      where: { tenantId, key: { startsWith: 'hook:scoring:' } },
    });
    expect(ledger.map((e) => e.key).sort()).toEqual(ids.map((id) => `hook:scoring:${id}:judge:1`).sort());
    expect(await env.db.hookRun.count({ where: { tenantId, hook: 'scoring' } })).toBe(ids.length);
  });

  it("moves the version's aggregate with feedback, and refuses bad feedback and bad scorers", async () => {
    const { api, tenantId } = await tenant('eval-feedback');
    const other = await tenant('eval-feedback-other');
    const a = await agent(api, [{ name: 'no-fail', kind: 'rule', check: 'not_failed' }]);
    const [turnId] = await turns(api, tenantId, a.id, 1);

    const before = await api.get(`/v1/agents/${a.id}/scores`);
    expect(before.body.data.map((d: { scorer: string }) => d.scorer)).toEqual(['no-fail']);
    const down = await api.post(`/v1/turns/${turnId}/feedback`, {
      rating: 'down',
      comment: 'wrong',
      by: 'user-1',
    });
    expect(down.status).toBe(201);
    expect(down.body).toMatchObject({
      turnId,
      scorer: 'feedback',
      kind: 'feedback',
      source: 'feedback',
      score: 0,
      passed: false,
      givenBy: 'user-1',
      comment: 'wrong',
    });
    const up = await api.post(`/v1/turns/${turnId}/feedback`, { score: 0.9, label: 'great', by: 'user-2' });
    expect(up.status).toBe(201);
    const after = await api.get(`/v1/agents/${a.id}/scores?scorer=feedback`);
    expect(after.body.data).toEqual([
      expect.objectContaining({ version: 1, scorer: 'feedback', source: 'feedback', count: 2, passRate: 0 }),
    ]);
    expect(after.body.data[0].meanScore).toBeCloseTo(0.45, 8);
    const turn = await api.get(`/v1/turns/${turnId}`);
    expect(turn.body.scores.filter((s: { source: string }) => s.source === 'feedback')).toHaveLength(2);

    // Bad feedback: nothing written.
    const rows = await env.db.turnScore.count({ where: { tenantId } });
    const bad: [unknown, number][] = [
      [{ by: 'u' }, 400],
      [{ score: 2, by: 'u' }, 400],
      [{ rating: 'meh', by: 'u' }, 400],
      [{ score: 1 }, 400],
      [{ label: 'x'.repeat(101), by: 'u' }, 400],
      [{ score: 1, rating: 'down', by: 'u' }, 400],
    ];
    for (const [body, status] of bad) {
      expect([body, (await api.post(`/v1/turns/${turnId}/feedback`, body)).status]).toEqual([body, status]);
    }
    expect((await other.api.post(`/v1/turns/${turnId}/feedback`, { score: 1, by: 'u' })).status).toBe(404);
    expect(
      (await api.post(`/v1/turns/00000000-0000-7000-8000-000000000000/feedback`, { score: 1, by: 'u' }))
        .status,
    ).toBe(404);
    // A turn still running: 409.
    const slow = await api.post('/v1/agents', { name: 'slow', model: 'openai-chat/agent-held' });
    const session = await api.post('/v1/sessions', { agentId: slow.body.id });
    const running = await api.post(`/v1/sessions/${session.body.id}/messages`, { content: 'slow one' });
    expect(running.status).toBe(202);
    const runningId = running.body.turnId as string;
    const conflict = await api.post(`/v1/turns/${runningId}/feedback`, { score: 1, by: 'u' });
    expect(conflict.status).toBe(409);
    await waitFor(() => heldAgents.length > 0, { timeoutMs: 30_000, what: 'the slow turn asked its model' });
    for (const release of heldAgents.splice(0)) release(scripted.text('done'));
    expect(await env.db.turnScore.count({ where: { tenantId, source: 'feedback' } })).toBe(2);
    expect(rows).toBe(await env.db.turnScore.count({ where: { tenantId, turnId } }));

    // Aggregates: another tenant's agent is 404; from after to is 400.
    expect((await other.api.get(`/v1/agents/${a.id}/scores`)).status).toBe(404);
    expect((await api.get(`/v1/agents/${a.id}/scores?from=2026-12-10&to=2026-12-01`)).status).toBe(400);
    expect((await api.get(`/v1/agents/${a.id}/scores?from=yesterday`)).status).toBe(400);

    // Bad scorers: 400, nothing written (no agent, no new version).
    const badScorers: unknown[][] = [
      [
        { name: 'x', kind: 'rule', check: 'not_failed' },
        { name: 'x', kind: 'rule', check: 'not_failed' },
      ],
      [{ name: 'j', kind: 'llm_judge', rubric: 'r', model: 'nope/judge' }],
      [{ name: 's', kind: 'rule', check: 'json_schema', schema: { type: 'nonsense' } }],
      [{ name: 'r', kind: 'rule', check: 'regex', pattern: '(' }],
      [{ name: 'p', kind: 'rule', check: 'not_failed', samplePercent: 150 }],
      [{ name: 'w', kind: 'webhook', url: 'ftp://example.com' }],
      [{ name: 'w', kind: 'webhook', url: 'http://169.254.169.254/latest' }],
      [{ name: 'w', kind: 'webhook', url: 'http://127.0.0.1:9/score' }],
    ];
    const agents = await env.db.agent.count({ where: { tenantId } });
    for (const scorers of badScorers) {
      const created = await api.post('/v1/agents', { name: 'bad', scorers });
      expect([scorers, created.status]).toEqual([scorers, 400]);
      const patched = await api.patch(`/v1/agents/${a.id}`, { scorers });
      expect([scorers, patched.status]).toEqual([scorers, 400]);
    }
    expect(await env.db.agent.count({ where: { tenantId } })).toBe(agents);
    const got = await api.get(`/v1/agents/${a.id}`);
    expect(got.body).toMatchObject({
      version: 1,
      scorers: [{ name: 'no-fail', kind: 'rule', check: 'not_failed', samplePercent: 100 }],
    });
    // A good change is a new version.
    const changed = await api.patch(`/v1/agents/${a.id}`, {
      scorers: [{ name: 'judge', kind: 'llm_judge', rubric: 'ok?' }],
    });
    expect(changed.status).toBe(200);
    expect(changed.body.version).toBe(2);
    // The evaluation budget setting is validated too.
    expect((await api.patch('/v1/settings', { evaluation: { dailyBudgetUsd: -1 } })).status).toBe(400);
    expect(
      (await api.patch('/v1/settings', { evaluation: { dailyBudgetUsd: 2.5 } })).body.evaluation,
    ).toEqual({ dailyBudgetUsd: 2.5 });
  });
});
