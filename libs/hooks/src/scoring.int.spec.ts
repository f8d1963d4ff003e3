import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { Webhook } from 'standardwebhooks';
import { newId, type Scorer } from '@switchboard/contracts';
import type { Prisma } from '@switchboard/database';
import { Metrics } from '@switchboard/observability';
import { ProviderRegistry } from '@switchboard/providers';
import {
  createTestEnv,
  FakeLlmServer,
  hookContext,
  hookJob,
  scripted,
  seedSession,
  seedTenant,
  seedTurn,
  transcriptMessage,
  type SessionIds,
  type TestEnv,
} from '@switchboard/testing';
import type { HookContext } from './context';
import { runScoring } from './scoring';
import { sampledAt } from './scoring-sampler';

/**
 * The scoring hook on real Postgres, judges through the real OpenAI SDK against the fake LLM server:
 * rules and judges score a turn's final answer once (scores, hook run and ledger in one commit), the
 * sampler keeps the same turns a ratio sampler keeps, the budget stops judges, webhooks are signed.
 */
jest.setTimeout(120_000);

const JUDGE = 'openai-chat/judge-small';
const SECRET = `whsec_${Buffer.alloc(32, 7).toString('base64')}`;

describe('runScoring', () => {
  let env: TestEnv;
  let llm: FakeLlmServer;

  beforeAll(async () => {
    env = await createTestEnv();
    llm = await FakeLlmServer.start();
  });

  afterAll(async () => {
    await llm?.close();
    await env?.cleanup();
  });

  const ctx = (metrics = new Metrics('test'), allowHosts: string[] = []): HookContext =>
    hookContext(env, {
      metrics,
      models: {
        providers: new ProviderRegistry({
          openaiApiKey: 'sk-test',
          openaiBaseUrl: llm.openaiBaseUrl,
          timeoutMs: 10_000,
        }),
        defaultModel: 'openai-chat/deployment-default',
      },
      evaluation: { dailyBudgetUsd: 10, allowHosts: new Set(allowHosts) },
    });

  async function agent(scorers: unknown[], settings: Prisma.InputJsonObject = {}): Promise<SessionIds> {
    const ids = await seedTenant(
      env.db,
      `t-${newId()}`,
      {},
      { settings: { modelRoutes: { evaluation: JUDGE }, notifySecret: SECRET, ...settings } },
    );
    await env.db.agent.update({
      where: { id: ids.agentId },
      data: { scorers: scorers as Prisma.InputJsonArray },
    });
    return { ...ids, sessionId: await seedSession(env.db, ids.tenantId, ids.agentId) };
  }

  async function turn(
    t: SessionIds,
    opts: {
      answer?: string;
      status?: 'completed' | 'failed';
      traceId?: string;
      sourceRefs?: Record<string, string>;
    } = {},
  ): Promise<string> {
    const inputMessageId = newId();
    const row = await seedTurn(env.db, t, {
      status: opts.status ?? 'completed',
      finalText: opts.answer ?? 'The capital of France is Paris.',
      inputMessageId,
      startedAt: new Date(Date.now() - 1500),
      completedAt: new Date(),
      ...(opts.traceId ? { traceContext: { traceparent: `00-${opts.traceId}-00f067aa0ba902b7-01` } } : {}),
    });
    await env.db.message.create({
      data: {
        ...transcriptMessage(t, row, 0, 'user', 'What is the capital of France?'),
        id: inputMessageId,
        ...(opts.sourceRefs ? { sourceRefs: opts.sourceRefs } : {}),
      },
    });
    return row.id;
  }

  const run = (turnId: string, tenantId: string, c = ctx()) =>
    runScoring(c, hookJob('scoring', turnId, tenantId));
  const scoresOf = (turnId: string) =>
    env.db.turnScore.findMany({ where: { turnId }, orderBy: { scorer: 'asc' } });
  const judgeSays = (score: number, reason = 'fine') =>
    scripted.text(JSON.stringify({ score, reason }), { usage: { input: 300, output: 20 }, costUsd: 0.002 });

  it('scores rules and a judge once: scores, hook run and ledger in one commit; a re-run does nothing', async () => {
    const t = await agent([
      { name: 'says-paris', kind: 'rule', check: 'regex', pattern: 'paris', flags: 'i' },
      { name: 'json', kind: 'rule', check: 'json_schema', schema: { type: 'object' } },
      { name: 'no-fail', kind: 'rule', check: 'not_failed' },
      { name: 'fast', kind: 'rule', check: 'max_latency_ms', maxMs: 60_000 },
      { name: 'no-tools', kind: 'rule', check: 'tool_called', tool: 'http_fetch', called: false },
      { name: 'exact', kind: 'rule', check: 'expected', expected: ' The capital of France is Paris. ' },
      { name: 'quality', kind: 'llm_judge', rubric: 'Is the answer correct?', passThreshold: 0.7 },
    ]);
    const turnId = await turn(t);
    const before = llm.requests.length;
    llm.enqueue(judgeSays(0.9, 'correct'));
    const metrics = new Metrics('test');
    await expect(run(turnId, t.tenantId, ctx(metrics))).resolves.toBe('written');

    const [req] = llm.requests.slice(before);
    expect((req.body as { model: string }).model).toBe('judge-small');
    const messages = (req.body as { messages: { role: string; content: string }[] }).messages;
    expect(messages[0].content).toContain('Is the answer correct?');
    expect(messages[1].content).toContain('What is the capital of France?');
    expect(messages[1].content).toContain('The capital of France is Paris.');

    const rows = await scoresOf(turnId);
    expect(rows.map((r) => [r.scorer, r.kind, r.status, r.score, r.passed])).toEqual([
      ['exact', 'rule', 'scored', 1, true],
      ['fast', 'rule', 'scored', 1, true],
      ['json', 'rule', 'scored', 0, false],
      ['no-fail', 'rule', 'scored', 1, true],
      ['no-tools', 'rule', 'scored', 1, true],
      ['quality', 'llm_judge', 'scored', 0.9, true],
      ['says-paris', 'rule', 'scored', 1, true],
    ]);
    const quality = rows.find((r) => r.scorer === 'quality')!;
    expect(quality).toMatchObject({
      reason: 'correct',
      givenBy: JUDGE,
      source: 'scorer',
      agentId: t.agentId,
    });
    expect(quality.costUsd.toFixed(8)).toBe('0.00200000');
    expect(rows.find((r) => r.scorer === 'json')!.reason).toContain('not JSON');

    const hookRun = await env.db.hookRun.findFirstOrThrow({ where: { turnId, hook: 'scoring' } });
    expect(hookRun.output).toMatchObject({
      scored: 7,
      skipped: 0,
      errors: 0,
      notSampled: 0,
      costUsd: '0.00200000',
    });
    const ledger = await env.db.ledgerEntry.findMany({ where: { turnId } });
    expect(ledger.map((e) => [e.key, e.model, e.costUsd.toFixed(8)])).toEqual([
      [`hook:scoring:${turnId}:quality:1`, 'judge-small', '0.00200000'],
    ]);
    const spend = await env.db.tenantSpendDaily.findFirstOrThrow({ where: { tenantId: t.tenantId } });
    expect(spend.costUsd.toFixed(8)).toBe('0.00200000');
    const counted = await metrics.scores.get();
    expect(counted.values.find((v) => v.labels.kind === 'llm_judge')?.value).toBe(1);
    expect(counted.values.find((v) => v.labels.kind === 'rule')?.value).toBe(6);

    const again = llm.requests.length;
    await expect(run(turnId, t.tenantId)).resolves.toBe('already_done');
    expect(llm.requests.length).toBe(again);
    expect(await env.db.turnScore.count({ where: { turnId } })).toBe(7);
    expect(await env.db.ledgerEntry.count({ where: { turnId } })).toBe(1);
  });

  it('samples deterministically by trace id, like a ratio sampler; an experiment turn gets every scorer', async () => {
    const t = await agent([{ name: 'no-fail', kind: 'rule', check: 'not_failed', samplePercent: 30 }]);
    const traces = Array.from(
      { length: 60 },
      () => newId().replace(/-/g, '').slice(0, 16) + newId().replace(/-/g, '').slice(16),
    );
    const turns: { id: string; traceId: string }[] = [];
    for (const traceId of traces) turns.push({ id: await turn(t, { traceId }), traceId });
    for (const x of turns) await run(x.id, t.tenantId);
    const scored = new Set(
      (await env.db.turnScore.findMany({ where: { tenantId: t.tenantId } })).map((r) => r.turnId),
    );
    const expected = new Set(turns.filter((x) => sampledAt(x.traceId, 30)).map((x) => x.id));
    expect(scored).toEqual(expected);
    // Every turn has its run recorded, sampled or not.
    expect(await env.db.hookRun.count({ where: { tenantId: t.tenantId, hook: 'scoring' } })).toBe(60);
    const rows = await env.db.turnScore.findMany({ where: { tenantId: t.tenantId } });
    for (const r of rows) expect(r.traceId).toBe(turns.find((x) => x.id === r.turnId)!.traceId);

    // An experiment's turn is scored whatever the sample share.
    const none = await agent([{ name: 'no-fail', kind: 'rule', check: 'not_failed', samplePercent: 0 }]);
    const plain = await turn(none);
    const experiment = await turn(none, {
      sourceRefs: { experimentId: newId(), datasetItemId: newId(), experimentRunId: newId() },
    });
    await expect(run(plain, none.tenantId)).resolves.toBe('skipped');
    await expect(run(experiment, none.tenantId)).resolves.toBe('written');
    expect(await env.db.turnScore.count({ where: { turnId: plain } })).toBe(0);
    expect(await env.db.turnScore.count({ where: { turnId: experiment } })).toBe(1);
  });

  it("scores with the scorers of the turn's version, not the agent's current ones", async () => {
    const t = await agent([{ name: 'now', kind: 'rule', check: 'not_failed' }]);
    await env.db.agentVersion.upsert({
      where: { agentId_version: { agentId: t.agentId, version: 1 } },
      create: {
        tenantId: t.tenantId,
        agentId: t.agentId,
        version: 1,
        config: { scorers: [{ name: 'then', kind: 'rule', check: 'regex', pattern: 'Paris' }] },
      },
      update: { config: { scorers: [{ name: 'then', kind: 'rule', check: 'regex', pattern: 'Paris' }] } },
    });
    const turnId = await turn(t);
    await env.db.turn.update({ where: { id: turnId }, data: { agentVersion: 1 } });
    await run(turnId, t.tenantId);
    const rows = await scoresOf(turnId);
    expect(rows.map((r) => [r.scorer, r.agentVersion])).toEqual([['then', 1]]);
  });

  it("skips judges (only judges) once the tenant's evaluation budget is spent today, without calling", async () => {
    const t = await agent(
      [
        { name: 'judge', kind: 'llm_judge', rubric: 'Correct?' },
        { name: 'rule', kind: 'rule', check: 'not_failed' },
      ],
      { evaluation: { dailyBudgetUsd: 0.003 } },
    );
    const first = await turn(t);
    const second = await turn(t);
    const third = await turn(t);
    llm.enqueue(judgeSays(1), judgeSays(1));
    await run(first, t.tenantId);
    await run(second, t.tenantId);
    const before = llm.requests.length;
    await run(third, t.tenantId);
    expect(llm.requests.length).toBe(before);
    const rows = await scoresOf(third);
    expect(rows.map((r) => [r.scorer, r.status, r.reason])).toEqual([
      ['judge', 'skipped', 'evaluation_budget'],
      ['rule', 'scored', null],
    ]);
    const judged = await env.db.turnScore.findMany({
      where: { tenantId: t.tenantId, scorer: 'judge', status: 'scored' },
    });
    expect(judged).toHaveLength(2);
  });

  it('records an unusable judge answer (twice) as an error score with its calls booked', async () => {
    const t = await agent([{ name: 'judge', kind: 'llm_judge', rubric: 'Correct?', model: JUDGE }]);
    const turnId = await turn(t);
    llm.enqueue(
      scripted.text('looks good to me', { costUsd: 0.001 }),
      scripted.text('{"score": 7}', { costUsd: 0.001 }),
    );
    await expect(run(turnId, t.tenantId)).resolves.toBe('written');
    const [row] = await scoresOf(turnId);
    expect(row).toMatchObject({ status: 'error', score: null });
    expect(row.reason).toContain('invalid_judge_answer');
    expect(await env.db.ledgerEntry.count({ where: { turnId } })).toBe(2);

    // Words around the object are tolerated; a corrected second answer is used.
    const other = await turn(t);
    llm.enqueue(
      scripted.text('Sure! {"score": 2}', { costUsd: 0.001 }),
      scripted.text('Here it is: {"score": 0.3, "reason": "vague"} — done.', { costUsd: 0.001 }),
    );
    await run(other, t.tenantId);
    expect((await scoresOf(other))[0]).toMatchObject({
      status: 'scored',
      score: 0.3,
      passed: false,
      reason: 'vague',
    });
  });

  it("posts a webhook scorer's request signed with the tenant's secret and keeps its verdict", async () => {
    const received: { headers: http.IncomingHttpHeaders; body: string }[] = [];
    const server = http.createServer((req, res) => {
      let body = '';
      req.on('data', (c: Buffer) => (body += c.toString()));
      req.on('end', () => {
        received.push({ headers: req.headers, body });
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ score: 0.25, reason: 'too short' }));
      });
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    try {
      const port = (server.address() as AddressInfo).port;
      const url = `http://127.0.0.1:${port}/score`;
      const t = await agent([{ name: 'ext', kind: 'webhook', url } satisfies Partial<Scorer>]);
      const turnId = await turn(t);
      // A private address is refused unless allowed.
      const refused = await turn(t);
      await run(refused, t.tenantId);
      expect((await scoresOf(refused))[0]).toMatchObject({ status: 'error' });
      expect(received).toHaveLength(0);

      await run(turnId, t.tenantId, ctx(new Metrics('test'), ['127.0.0.1']));
      expect(received).toHaveLength(1);
      const { headers, body } = received[0];
      const verified = new Webhook(SECRET).verify(body, {
        'webhook-id': String(headers['webhook-id']),
        'webhook-timestamp': String(headers['webhook-timestamp']),
        'webhook-signature': String(headers['webhook-signature']),
      }) as { type: string; data: { turnId: string; finalText: string; scorer: string } };
      expect(verified).toMatchObject({
        type: 'turn.score_requested',
        data: { turnId, scorer: 'ext', finalText: 'The capital of France is Paris.' },
      });
      expect((await scoresOf(turnId))[0]).toMatchObject({
        status: 'scored',
        score: 0.25,
        passed: false,
        reason: 'too short',
        kind: 'webhook',
      });
    } finally {
      await new Promise((r) => server.close(r));
    }
  });

  it("skips a turn that is not the tenant's or not ended, recording nothing", async () => {
    const t = await agent([{ name: 'no-fail', kind: 'rule', check: 'not_failed' }]);
    const turnId = await turn(t);
    await expect(run(turnId, newId())).resolves.toBe('skipped');
    const running = await seedTurn(env.db, t, { status: 'running' });
    await expect(run(running.id, t.tenantId)).resolves.toBe('skipped');
    expect(await env.db.hookRun.count({ where: { turnId: { in: [turnId, running.id] } } })).toBe(0);
  });
});
