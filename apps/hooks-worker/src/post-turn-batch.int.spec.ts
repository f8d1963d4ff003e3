import { Queue } from 'bullmq';
import { Jobs, newId, QueueName, uuid7Time } from '@switchboard/contracts';
import { poolOf, Prisma } from '@switchboard/database';
import { PostTurnHooks } from '@switchboard/hooks';
import { createLogger, Metrics } from '@switchboard/observability';
import { createRedis, jobOptions } from '@switchboard/queue';
import { sqlDbFor } from '@switchboard/store';
import { PostTurnBatcher } from '@switchboard/turns';
import { createTestEnv, seedSession, seedTenant, waitFor, type TestEnv } from '@switchboard/testing';
import { FIXTURES, startHooks, type Running } from '../../../test/support/stack';

/**
 * Group commit of post-turn work (docs/adr/0070): one `post-turn` job carries several ended turns
 * (`more`), and the hooks worker commits every turn's hooks in ONE transaction (scoring's `skipped`
 * rows included, docs/adr/0077); every hook still runs once per turn.
 */
jest.setTimeout(120_000);

describe('post-turn group commit', () => {
  let env: TestEnv;
  let hooks: Running;
  let queue: Queue;

  beforeAll(async () => {
    env = await createTestEnv();
    hooks = await startHooks(env.config({ SCRIPTED_FIXTURES_DIR: FIXTURES }));
    queue = new Queue(QueueName.PostTurn, { connection: createRedis(env.redisUrl), prefix: env.queuePrefix });
  });

  afterAll(async () => {
    await hooks?.close();
    await queue?.close();
    await (await queue?.client)?.quit().catch(() => undefined);
    await env?.cleanup();
  });

  /** A completed turn of `of`'s agent in a new session, with one ledger entry and one tool call. */
  async function endedTurn(of: { tenantId: string; agentId: string }, cost: string, toolFails = false) {
    const { tenantId, agentId } = of;
    const sessionId = await seedSession(env.db, tenantId, agentId);
    const turnId = newId();
    await env.db.turn.create({
      data: {
        id: turnId,
        tenantId,
        sessionId,
        agentId,
        seq: 1,
        inputMessageId: newId(),
        status: 'completed',
        finalText: 'Counted 3 words.',
        completedAt: new Date(),
      },
    });
    await env.db.ledgerEntry.create({
      data: {
        id: newId(),
        tenantId,
        agentId,
        sessionId,
        turnId,
        turnAt: uuid7Time(turnId),
        key: `${turnId}:0:0`,
        provider: 'scripted',
        model: 'bench',
        inputTokens: 10,
        outputTokens: 5,
        cachedTokens: 0,
        cacheWriteTokens: 0,
        costUsd: new Prisma.Decimal(cost),
        costSource: 'rate_table',
      },
    });
    await env.db.toolCall.create({
      data: {
        id: newId(),
        tenantId,
        sessionId,
        turnId,
        callId: 'call_1',
        name: 'word_count',
        arguments: { text: 'one two three' },
        sideEffect: 'none',
        status: toolFails ? 'failed' : 'completed',
        idempotencyKey: `${turnId}:call_1`,
        ...(toolFails ? { error: { kind: 'timeout', message: 'slow' } } : { result: { count: 3 } }),
        durationMs: 7,
        startedAt: new Date(),
        completedAt: new Date(),
      },
    });
    return { tenantId, agentId, sessionId, turnId };
  }

  async function runJob(data: {
    turnId: string;
    tenantId: string;
    more?: { turnId: string; tenantId: string }[];
  }) {
    const payload = { ...data, trace: {} };
    // Each run its own job id (a repeat of the same group under another first turn).
    const job = await queue.add(QueueName.PostTurn, payload, {
      ...jobOptions(Jobs.postTurn, payload),
      jobId: newId(),
    });
    const done = await waitFor(async () => {
      const j = await queue.getJob(job.id!);
      return j?.finishedOn ? j : undefined;
    });
    expect(done.failedReason).toBeUndefined();
    return done.returnvalue as Record<string, Record<string, string>>;
  }

  const EVERY = ['archivist', 'completion-webhook', 'cost-log', 'episodic-index', 'learning', 'scoring'];

  it('runs every hook of every turn once, in one transaction; shared rows add up', async () => {
    const a = await seedTenant(env.db, 'group-a');
    const b = await seedTenant(env.db, 'group-b');
    const turns = [
      await endedTurn(a, '0.10000000'),
      await endedTurn(a, '0.20000000', true),
      await endedTurn(b, '0.40000000'),
    ];
    const [first, ...more] = turns;
    const out = await runJob({
      turnId: first.turnId,
      tenantId: first.tenantId,
      more: more.map((t) => ({ turnId: t.turnId, tenantId: t.tenantId })),
    });
    for (const t of turns) {
      expect(out[t.turnId]).toEqual({
        'episodic-index': 'written',
        archivist: 'deferred',
        'completion-webhook': 'skipped',
        learning: 'written',
        scoring: 'skipped',
        'cost-log': 'written',
      });
    }
    const rows = await env.db.$queryRawUnsafe<{ turn_id: string; hook: string; xmin: string }[]>(
      'SELECT turn_id::text, hook, xmin::text AS xmin FROM hook_runs WHERE turn_id = ANY($1::uuid[]) ORDER BY hook',
      turns.map((t) => t.turnId),
    );
    for (const t of turns)
      expect(rows.filter((r) => r.turn_id === t.turnId).map((r) => r.hook)).toEqual(EVERY);
    // ONE transaction for every hook of every turn, scoring's `skipped` rows included (docs/adr/0077).
    expect(new Set(rows.map((r) => r.xmin)).size).toBe(1);
    // The shared roll-ups count each turn once.
    const spendA = await env.db.tenantSpendDaily.findMany({ where: { tenantId: a.tenantId } });
    expect(spendA.map((s) => [s.costUsd.toFixed(8), s.turns, s.providerCalls])).toEqual([
      ['0.30000000', 2, 2],
    ]);
    const spendB = await env.db.tenantSpendDaily.findMany({ where: { tenantId: b.tenantId } });
    expect(spendB.map((s) => [s.costUsd.toFixed(8), s.turns])).toEqual([['0.40000000', 1]]);
    const statsA = await env.db.agentToolStat.findMany({ where: { agentId: a.agentId } });
    expect(statsA).toEqual([
      expect.objectContaining({ tool: 'word_count', calls: 2, failures: 1, failuresByKind: { timeout: 1 } }),
    ]);

    // The same group again (a redelivery, a reconcile): nothing more is written or counted.
    const again = await runJob({
      turnId: turns[2].turnId,
      tenantId: turns[2].tenantId,
      more: turns.slice(0, 2).map((t) => ({ turnId: t.turnId, tenantId: t.tenantId })),
    });
    for (const t of turns) {
      expect(again[t.turnId]).toMatchObject({
        learning: 'already_done',
        'cost-log': 'already_done',
        scoring: 'already_done',
      });
    }
    expect(await env.db.hookRun.count({ where: { turnId: { in: turns.map((t) => t.turnId) } } })).toBe(18);
    const spendAgain = await env.db.tenantSpendDaily.findMany({ where: { tenantId: a.tenantId } });
    expect(spendAgain.map((s) => [s.costUsd.toFixed(8), s.turns])).toEqual([['0.30000000', 2]]);
    expect((await env.db.agentToolStat.findFirst({ where: { agentId: a.agentId } }))?.calls).toBe(2);
  });

  /** Runs a group in this process (no job), counting the hooks' Postgres transactions and statements. */
  async function runCounted(turns: { turnId: string; tenantId: string }[]) {
    const metrics = new Metrics('test');
    const outbound = new Queue(QueueName.OutboundWebhooks, {
      connection: createRedis(env.redisUrl),
      prefix: env.queuePrefix,
    });
    const post = new PostTurnHooks({
      db: env.db,
      sql: sqlDbFor(poolOf(env.db), 'hooks', metrics),
      logger: createLogger({ service: 'test', level: 'silent' }),
      metrics,
      postTurnQueue: queue,
      outboundQueue: outbound,
      outboundBackoffMs: 1000,
    });
    const [first, ...more] = turns;
    try {
      const out = await post.runBatch({ ...first, trace: {}, more });
      const value = async (c: typeof metrics.dbStatements) =>
        (await c.get()).values.find((v) => v.labels.component === 'hooks')?.value ?? 0;
      return {
        out,
        transactions: await value(metrics.dbTransactions),
        statements: await value(metrics.dbStatements),
      };
    } finally {
      await outbound.close();
      await (await outbound.client).quit().catch(() => undefined);
    }
  }

  it('a group is ONE Postgres transaction, and only episodic and archivist cost a statement per turn', async () => {
    const a = await seedTenant(env.db, 'count-a');
    const one = await runCounted([await endedTurn(a, '0.10000000')]);
    const four = await runCounted([
      await endedTurn(a, '0.10000000'),
      await endedTurn(a, '0.20000000'),
      await endedTurn(a, '0.30000000'),
      await endedTurn(a, '0.40000000'),
    ]);
    for (const t of [...Object.values(one.out), ...Object.values(four.out)]) {
      expect(t).toEqual({
        'episodic-index': 'written',
        archivist: 'deferred',
        'completion-webhook': 'skipped',
        learning: 'written',
        scoring: 'skipped',
        'cost-log': 'written',
      });
    }
    // The snapshot read, the completion webhooks, the embedding read, scoring's read and its rows, the
    // cost log and learning once per group; the episode and the archivist's deferral once per turn.
    expect(one.transactions).toBe(1);
    expect(four.transactions).toBe(1);
    expect(four.statements - one.statements).toBe(3 * 2);
  });

  it('in a group, a turn with a notify endpoint and a turn with a sampled scorer run those hooks on their own, once', async () => {
    const quiet = await seedTenant(env.db, 'mixed-quiet');
    const loud = await seedTenant(
      env.db,
      'mixed-endpoint',
      {},
      {
        settings: {
          notifyUrl: 'https://receiver.example/hooks',
          notifySecret: `whsec_${Buffer.alloc(32, 7).toString('base64')}`,
        },
      },
    );
    const scored = await seedTenant(env.db, 'mixed-scored');
    await env.db.agent.update({
      where: { id: scored.agentId },
      data: { scorers: [{ name: 'no-fail', kind: 'rule', check: 'not_failed' }] },
    });
    const turns = [
      await endedTurn(quiet, '0.10000000'),
      await endedTurn(loud, '0.10000000'),
      await endedTurn(scored, '0.10000000'),
    ];
    const [q, l, sc] = turns;
    const first = await runCounted(turns);
    expect(first.out[q.turnId]).toMatchObject({ 'completion-webhook': 'skipped', scoring: 'skipped' });
    expect(first.out[l.turnId]).toMatchObject({ 'completion-webhook': 'written', scoring: 'skipped' });
    expect(first.out[sc.turnId]).toMatchObject({ 'completion-webhook': 'skipped', scoring: 'written' });
    const rows = await env.db.$queryRawUnsafe<
      { turn_id: string; hook: string; output: { skipped?: string | number; scored?: number } }[]
    >(
      'SELECT turn_id::text, hook, output FROM hook_runs WHERE turn_id = ANY($1::uuid[]) ORDER BY hook',
      turns.map((t) => t.turnId),
    );
    for (const t of turns)
      expect(rows.filter((r) => r.turn_id === t.turnId).map((r) => r.hook)).toEqual(EVERY);
    const hook = (turnId: string, name: string) => rows.find((r) => r.turn_id === turnId && r.hook === name);
    expect(hook(l.turnId, 'completion-webhook')?.output.skipped).toBeUndefined();
    expect(hook(sc.turnId, 'scoring')?.output.scored).toBe(1);
    expect(await env.db.turnScore.count({ where: { turnId: sc.turnId } })).toBe(1);
    // The same group again writes nothing: every hook finds its row.
    const again = await runCounted(turns);
    for (const t of turns) {
      for (const outcome of Object.values(again.out[t.turnId])) expect(outcome).toBe('already_done');
    }
    expect(await env.db.turnScore.count({ where: { turnId: sc.turnId } })).toBe(1);
  });

  it('two groups that share turns, named in opposite orders and run at once, write each hook once', async () => {
    const a = await seedTenant(env.db, 'group-overlap');
    const turns = [
      await endedTurn(a, '0.10000000'),
      await endedTurn(a, '0.20000000'),
      await endedTurn(a, '0.30000000'),
    ];
    const ref = (t: (typeof turns)[number]) => ({ turnId: t.turnId, tenantId: t.tenantId });
    const [one, two] = await Promise.all([
      runJob({ ...ref(turns[0]), more: [ref(turns[1]), ref(turns[2])] }),
      runJob({ ...ref(turns[2]), more: [ref(turns[1]), ref(turns[0])] }),
    ]);
    for (const t of turns) {
      // Exactly one of the two wrote each turn's cost log.
      expect([one[t.turnId]['cost-log'], two[t.turnId]['cost-log']].sort()).toEqual([
        'already_done',
        'written',
      ]);
    }
    expect(await env.db.hookRun.count({ where: { turnId: { in: turns.map((t) => t.turnId) } } })).toBe(18);
    const spend = await env.db.tenantSpendDaily.findMany({ where: { tenantId: a.tenantId } });
    expect(spend.map((s) => [s.costUsd.toFixed(8), s.turns])).toEqual([['0.60000000', 3]]);
    expect((await env.db.agentToolStat.findFirst({ where: { agentId: a.agentId } }))?.calls).toBe(3);
  });

  it('a turn of another tenant in the group is skipped and nothing of it is written', async () => {
    const a = await seedTenant(env.db, 'group-own');
    const other = await seedTenant(env.db, 'group-other');
    const mine = await endedTurn(a, '0.10000000');
    const foreign = await endedTurn(other, '0.50000000');
    const out = await runJob({
      turnId: mine.turnId,
      tenantId: mine.tenantId,
      // Named under the wrong tenant.
      more: [{ turnId: foreign.turnId, tenantId: a.tenantId }],
    });
    expect(out[mine.turnId]).toMatchObject({ 'cost-log': 'written', learning: 'written' });
    expect(out[foreign.turnId]).toMatchObject({
      'cost-log': 'skipped',
      learning: 'skipped',
      scoring: 'skipped',
    });
    expect(await env.db.hookRun.count({ where: { turnId: foreign.turnId } })).toBe(0);
    expect(await env.db.tenantSpendDaily.count({ where: { tenantId: other.tenantId } })).toBe(0);
  });

  it('when the group’s transaction fails, each turn runs on its own and every hook still lands once', async () => {
    const a = await seedTenant(env.db, 'group-rollback');
    const ok = await endedTurn(a, '0.10000000');
    const refused = await endedTurn(a, '0.20000000');
    // The episodic index's insert fails for one turn: the group rolls back whole.
    await env.db.$executeRawUnsafe(`
      CREATE FUNCTION refuse_group_episode() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        IF NEW.dedupe_key = 'episode:${refused.turnId}' THEN RAISE EXCEPTION 'refused for this test'; END IF;
        RETURN NEW;
      END $$`);
    await env.db.$executeRawUnsafe(
      'CREATE TRIGGER refuse_group_episode BEFORE INSERT ON memory_records FOR EACH ROW EXECUTE FUNCTION refuse_group_episode()',
    );
    try {
      const out = await runJob({
        turnId: ok.turnId,
        tenantId: ok.tenantId,
        more: [{ turnId: refused.turnId, tenantId: refused.tenantId }],
      });
      expect(out[ok.turnId]).toMatchObject({ 'episodic-index': 'written', 'cost-log': 'written' });
      expect(out[refused.turnId]).toMatchObject({ 'episodic-index': 'retrying', 'cost-log': 'written' });
      const hooksOf = async (turnId: string) =>
        (await env.db.hookRun.findMany({ where: { turnId }, orderBy: { hook: 'asc' } })).map((r) => r.hook);
      expect(await hooksOf(ok.turnId)).toEqual(EVERY);
      expect(await hooksOf(refused.turnId)).toEqual(EVERY.filter((h) => h !== 'episodic-index'));
      const spend = await env.db.tenantSpendDaily.findMany({ where: { tenantId: a.tenantId } });
      expect(spend.map((s) => [s.costUsd.toFixed(8), s.turns])).toEqual([['0.30000000', 2]]);
      expect(await queue.getJob(`${refused.turnId}.episodic-index`)).toBeDefined();
    } finally {
      await env.db.$executeRawUnsafe('DROP TRIGGER refuse_group_episode ON memory_records');
    }
  });

  it('the harness coalesces the turns that end together into one job; a lone turn gets its own', async () => {
    // A queue no worker takes jobs from, so the jobs stay to be read.
    const idle = new Queue(QueueName.PostTurn, {
      connection: createRedis(env.redisUrl),
      prefix: `${env.queuePrefix}-idle`,
    });
    try {
      await coalesces(idle);
    } finally {
      await idle.obliterate({ force: true });
      await idle.close();
      await (await idle.client).quit().catch(() => undefined);
    }
  });

  async function coalesces(idle: Queue) {
    const batcher = new PostTurnBatcher(idle, 50);
    const t = [newId(), newId(), newId()].map((turnId) => ({ turnId, tenantId: newId() }));
    // Added within the window: all three go as one job.
    await Promise.all(t.map((x) => batcher.add(x)));
    const job = await idle.getJob(`${t[0].turnId}.hooks`);
    // Not kept once completed (docs/adr/0077).
    expect(job?.opts.removeOnComplete).toBe(true);
    expect(job?.data).toMatchObject({
      turnId: t[0].turnId,
      more: [
        { turnId: t[1].turnId, tenantId: t[1].tenantId },
        { turnId: t[2].turnId, tenantId: t[2].tenantId },
      ],
    });
    const lone = { turnId: newId(), tenantId: newId() };
    await batcher.add(lone);
    const own = await idle.getJob(`${lone.turnId}.hooks`);
    expect(own?.data).toMatchObject({ turnId: lone.turnId });
    expect(own?.data.more).toBeUndefined();
  }

  it('a group the batcher published runs every hook of its turns once, then is gone from Redis', async () => {
    const a = await seedTenant(env.db, 'removed-a');
    const turns = [await endedTurn(a, '0.10000000'), await endedTurn(a, '0.20000000')];
    await Promise.all(turns.map((t) => new PostTurnBatcher(queue, 50).add(t)));
    // Two batchers: two jobs; one batcher: one — either way, every hook once per turn.
    await waitFor(
      async () =>
        (await env.db.hookRun.count({ where: { turnId: { in: turns.map((t) => t.turnId) } } })) ===
          turns.length * EVERY.length || undefined,
      { what: 'every hook of both turns' },
    );
    await waitFor(
      async () =>
        (await Promise.all(turns.map((t) => queue.getJob(`${t.turnId}.hooks`)))).every((j) => !j) ||
        undefined,
      { what: 'the completed jobs removed' },
    );
    const rows = await env.db.hookRun.groupBy({
      by: ['turnId', 'hook'],
      where: { turnId: { in: turns.map((t) => t.turnId) } },
      _count: true,
    });
    expect(rows.every((r) => r._count === 1)).toBe(true);
  });
});
