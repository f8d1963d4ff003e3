import { readFileSync } from 'node:fs';
import { Queue } from 'bullmq';
import type { Prisma } from '@switchboard/database';
import { Jobs, newId, QueueName } from '@switchboard/contracts';
import { createRedis, jobOptions } from '@switchboard/queue';
import {
  createTestEnv,
  FakeLlmServer,
  scripted,
  seedSession,
  seedTenant,
  waitFor,
  type TestEnv,
} from '@switchboard/testing';
import { FIXTURES, startHooks, type Running } from '../../../test/support/stack';

/** The post-turn processor dispatches by hook name through the hook registry; an unknown name is never retried. */
jest.setTimeout(120_000);

describe('PostTurnProcessor', () => {
  let env: TestEnv;
  let hooks: Running;
  let queue: Queue;
  let llm: FakeLlmServer;

  beforeAll(async () => {
    env = await createTestEnv();
    llm = await FakeLlmServer.start();
    // The deployment's defaults (DEFAULT_MODEL scripted/demo), with the SDKs pointed at the fake LLM server.
    hooks = await startHooks(env.config({ SCRIPTED_FIXTURES_DIR: FIXTURES, ...llm.providerEnv }));
    queue = new Queue(QueueName.PostTurn, { connection: createRedis(env.redisUrl), prefix: env.queuePrefix });
  });

  afterAll(async () => {
    await hooks?.close();
    await llm?.close();
    await queue?.close();
    await (await queue?.client)?.quit().catch(() => undefined);
    await env?.cleanup();
  });

  /** A completed turn with an input and an answer, of a new tenant with `settings` (or of `of`'s agent, in a new session). */
  async function endedTurn(
    name: string,
    settings: Prisma.InputJsonObject = {},
    agent: { model?: string } = {},
    of?: { tenantId: string; agentId: string },
  ) {
    const { tenantId, agentId } = of ?? (await seedTenant(env.db, name, agent));
    if (!of) await env.db.tenant.update({ where: { id: tenantId }, data: { settings } });
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
        finalText: 'The deploy window is Tuesdays at 14:00 UTC.',
        completedAt: new Date(),
      },
    });
    return { tenantId, agentId, sessionId, turnId };
  }

  it('runs the named hook’s handler', async () => {
    const { tenantId, agentId } = await seedTenant(env.db, 'hooks');
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
      },
    });
    const data = { turnId, tenantId, hook: 'cost-log' as const, trace: {} };
    await queue.add(QueueName.PostTurn, data, jobOptions(Jobs.postTurn, data));
    const run = await waitFor(() =>
      env.db.hookRun.findFirst({ where: { turnId } }).then((r) => r ?? undefined),
    );
    expect(run).toMatchObject({ hook: 'cost-log', status: 'completed' });
  });

  it('runs every hook in the turn’s one job; a hook that fails there is retried in a job of its own', async () => {
    // The archivist's model refuses every call: the archivist fails, the other hooks stand.
    const { tenantId, turnId } = await endedTurn('one-job', {
      modelRoutes: { summarization: 'scripted/auth-fails' },
      archivist: { mode: 'every_turn' },
    });
    const data = { turnId, tenantId, trace: {} };
    const job = await queue.add(QueueName.PostTurn, data, jobOptions(Jobs.postTurn, data));
    expect(job.id).toBe(`${turnId}.hooks`);
    const done = await waitFor(async () => {
      const j = await queue.getJob(job.id!);
      return j?.finishedOn ? j : undefined;
    });
    expect(done.failedReason).toBeUndefined();
    expect(done.returnvalue).toEqual({
      'cost-log': 'written',
      'completion-webhook': 'skipped',
      learning: 'written',
      scoring: 'skipped',
      archivist: 'retrying',
      'episodic-index': 'written',
    });
    const runs = await env.db.hookRun.findMany({ where: { turnId }, orderBy: { hook: 'asc' } });
    expect(runs.map((r) => r.hook)).toEqual([
      'completion-webhook',
      'cost-log',
      'episodic-index',
      'learning',
      'scoring',
    ]);
    // The archivist's own job, with the attempts and backoff of a job naming one hook.
    const own = await queue.getJob(`${turnId}.archivist`);
    expect(own?.data).toMatchObject({ turnId, tenantId, hook: 'archivist' });
    expect(own?.opts.attempts).toBe(Jobs.postTurn.attempts);
  });

  /** The JSON lines the apps in this process logged (LOG_FILE), from the `from`-th on. */
  function logLines(from = 0): Record<string, unknown>[] {
    const lines = readFileSync(env.config().LOG_FILE!, 'utf8').split('\n').filter(Boolean);
    return lines.slice(from).flatMap((l) => {
      try {
        return [JSON.parse(l) as Record<string, unknown>];
      } catch {
        return [];
      }
    });
  }

  async function runTurnJob(turnId: string, tenantId: string) {
    const data = { turnId, tenantId, trace: {} };
    const job = await queue.add(QueueName.PostTurn, data, jobOptions(Jobs.postTurn, data));
    const done = await waitFor(async () => {
      const j = await queue.getJob(job.id!);
      return j?.finishedOn ? j : undefined;
    });
    expect(done.failedReason).toBeUndefined();
    return done.returnvalue as Record<string, string>;
  }

  it('commits a turn’s hooks in one transaction, and publishes the archivist’s session job after it', async () => {
    const { tenantId, sessionId, turnId } = await endedTurn('shared-tx');
    expect(await runTurnJob(turnId, tenantId)).toEqual({
      'episodic-index': 'written',
      archivist: 'deferred',
      'completion-webhook': 'skipped',
      learning: 'written',
      scoring: 'skipped',
      'cost-log': 'written',
    });
    // Rows one transaction wrote carry its id as xmin: every hook's row and the episode share one
    // (learning and the cost log take the rows other turns share last, docs/adr/0070); scoring
    // commits alone.
    const rows = await env.db.$queryRawUnsafe<{ hook: string; xmin: string }[]>(
      'SELECT hook, xmin::text AS xmin FROM hook_runs WHERE turn_id = $1::uuid ORDER BY hook',
      turnId,
    );
    expect(rows.map((r) => r.hook)).toEqual([
      'archivist',
      'completion-webhook',
      'cost-log',
      'episodic-index',
      'learning',
      'scoring',
    ]);
    const [episode] = await env.db.$queryRawUnsafe<{ xmin: string }[]>(
      `SELECT xmin::text AS xmin FROM memory_records WHERE dedupe_key = 'episode:' || $1`,
      turnId,
    );
    const xmin = (hook: string) => rows.find((r) => r.hook === hook)?.xmin;
    const shared = new Set([
      xmin('archivist'),
      xmin('completion-webhook'),
      xmin('episodic-index'),
      xmin('learning'),
      xmin('cost-log'),
      // Scoring's `skipped` row too: a group's one transaction holds it (docs/adr/0077).
      xmin('scoring'),
      episode?.xmin,
    ]);
    expect(shared.size).toBe(1);
    // The deferral's debounced distillation of the session, published once the deferral committed.
    const session = await waitFor(async () =>
      (await queue.getJobs(['delayed', 'waiting', 'active', 'completed'])).find(
        (j) => (j.data as { sessionId?: string }).sessionId === sessionId,
      ),
    );
    expect(session.data).toMatchObject({ turnId, tenantId, hook: 'archivist', sessionId });
  });

  it('rolls the shared transaction back when a hook fails in it; each hook then runs on its own', async () => {
    const { tenantId, turnId } = await endedTurn('shared-rollback');
    // The episodic index's insert fails for this tenant, inside the shared transaction and alone.
    await env.db.$executeRawUnsafe(`
      CREATE FUNCTION refuse_episode() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        IF NEW.tenant_id = '${tenantId}'::uuid THEN RAISE EXCEPTION 'episodes refused for this test'; END IF;
        RETURN NEW;
      END $$`);
    await env.db.$executeRawUnsafe(
      'CREATE TRIGGER refuse_episode BEFORE INSERT ON memory_records FOR EACH ROW EXECUTE FUNCTION refuse_episode()',
    );
    try {
      expect(await runTurnJob(turnId, tenantId)).toEqual({
        'episodic-index': 'retrying',
        archivist: 'deferred',
        'completion-webhook': 'skipped',
        learning: 'written',
        scoring: 'skipped',
        'cost-log': 'written',
      });
      const runs = await env.db.hookRun.findMany({ where: { turnId }, orderBy: { hook: 'asc' } });
      expect(runs.map((r) => r.hook)).toEqual([
        'archivist',
        'completion-webhook',
        'cost-log',
        'learning',
        'scoring',
      ]);
      expect(await env.db.memoryRecord.count({ where: { tenantId } })).toBe(0);
      // The failing hook has its own job, as before the shared transaction.
      const own = await queue.getJob(`${turnId}.episodic-index`);
      expect(own?.data).toMatchObject({ turnId, tenantId, hook: 'episodic-index' });
    } finally {
      await env.db.$executeRawUnsafe('DROP TRIGGER refuse_episode ON memory_records');
    }
  });

  it('records a hook that failed its last attempt as failed (the hooks reconcile leaves it be)', async () => {
    // The archivist's model refuses every call.
    const { tenantId, turnId } = await endedTurn('failing-archivist', {
      modelRoutes: { summarization: 'scripted/auth-fails' },
      archivist: { mode: 'every_turn' },
    });
    const data = { turnId, tenantId, hook: 'archivist' as const, trace: {} };
    const job = await queue.add(QueueName.PostTurn, data, {
      ...jobOptions(Jobs.postTurn, data),
      attempts: 1,
    });
    await waitFor(async () => (await queue.getJobState(job.id!)) === 'failed', { what: 'the job failed' });
    const run = await waitFor(() =>
      env.db.hookRun.findFirst({ where: { turnId, hook: 'archivist' } }).then((r) => r ?? undefined),
    );
    expect(run).toMatchObject({ status: 'failed', attempts: 1, output: { error: expect.any(String) } });
    // Logged as well as counted: which turn and hook, and that no attempt is left.
    const logged = await waitFor(() =>
      logLines().find((l) => l.turnId === turnId && l.msg === 'post-turn hook failed; no attempts left'),
    );
    expect(logged).toMatchObject({ level: 50, hook: 'archivist', tenantId, attempt: 1, attempts: 1 });
  });

  /**
   * A turn's job and its session's distillation (debounced, published at once: `afterTurns` 1), run
   * to their end; the turn's archivist row once it is no longer deferred.
   */
  async function distilSession(turn: { turnId: string; tenantId: string }) {
    await runTurnJob(turn.turnId, turn.tenantId);
    return waitFor(() =>
      env.db.hookRun
        .findFirst({ where: { turnId: turn.turnId, hook: 'archivist', status: { not: 'deferred' } } })
        .then((r) => r ?? undefined),
    );
  }

  const debouncedNow = { archivist: { mode: 'debounced', afterTurns: 1 } } as const;
  const errorsIn = (lines: Record<string, unknown>[]) => lines.filter((l) => Number(l.level) >= 50);

  it('without a summarization route, distils with the agent’s model when DEFAULT_MODEL (scripted/demo) cannot; no error logged', async () => {
    // A default deployment (DEFAULT_MODEL scripted/demo, which answers the archivist with a tool
    // call) and an agent on a real provider SDK, its tenant routing no summarization.
    const from = logLines().length;
    const first = await endedTurn('fallback', debouncedNow, { model: 'openai-chat/agent-model' });
    const facts = (content: string) =>
      scripted.text(JSON.stringify({ facts: [{ title: 'Deploy window', content }] }), {
        usage: { input: 300, output: 40 },
      });
    const before = llm.requests.length;
    llm.enqueue(facts('The deploy window is Tuesdays at 14:00 UTC.'));
    expect(await distilSession(first)).toMatchObject({
      status: 'completed',
      output: expect.objectContaining({ facts: 1, model: 'openai-chat/agent-model' }),
    });
    // A second session of the agent: distilled the same way (scripted/demo is not asked again).
    const second = await endedTurn('fallback', {}, {}, first);
    llm.enqueue(facts('Deploys happen on Tuesdays.'));
    expect(await distilSession(second)).toMatchObject({ status: 'completed' });
    const requests = llm.requests.slice(before);
    expect(requests.map((r) => (r.body as { model: string }).model)).toEqual(['agent-model', 'agent-model']);
    const memory = await env.db.memoryRecord.findMany({ where: { agentId: first.agentId, kind: 'fact' } });
    expect(memory.map((m) => m.provenance)).toEqual([
      expect.objectContaining({ model: 'openai-chat/agent-model' }),
      expect.objectContaining({ model: 'openai-chat/agent-model' }),
    ]);
    // One warning that scripted/demo cannot distil, and no error-level line.
    const lines = await waitFor(() => {
      const l = logLines(from);
      return l.some((x) => x.model === 'scripted/demo' && x.level === 40) ? l : undefined;
    });
    expect(lines.filter((l) => l.model === 'scripted/demo')).toHaveLength(1);
    expect(errorsIn(lines)).toEqual([]);
  });

  it('when no model can distil, records the archivist’s turns skipped with the reason, warns once per tenant and logs no error', async () => {
    // The agent's own model is scripted/demo too: nothing left to ask.
    const from = logLines().length;
    const first = await endedTurn('no-model', debouncedNow, { model: 'scripted/demo' });
    const second = await endedTurn('no-model', {}, {}, first);
    for (const turn of [first, second]) {
      expect(await distilSession(turn)).toMatchObject({
        status: 'completed',
        output: expect.objectContaining({ skipped: 'unsupported_model', models: ['scripted/demo'] }),
      });
    }
    expect(await env.db.memoryRecord.count({ where: { agentId: first.agentId, kind: 'fact' } })).toBe(0);
    const lines = await waitFor(() => {
      const l = logLines(from);
      return l.some((x) => x.tenantId === first.tenantId && x.level === 40) ? l : undefined;
    });
    expect(lines.filter((l) => l.tenantId === first.tenantId && l.hook === 'archivist')).toEqual([
      expect.objectContaining({ level: 40, models: ['scripted/demo'] }),
    ]);
    expect(errorsIn(lines)).toEqual([]);
  });

  it('embeds the records a turn’s hooks wrote when the agent has an embedder (the memory-embed job, docs/adr/0050)', async () => {
    const { tenantId, agentId, turnId } = await endedTurn('embeds');
    await env.db.agent.update({ where: { id: agentId }, data: { embedder: 'local/hash-256' } });
    expect(await runTurnJob(turnId, tenantId)).toMatchObject({ 'episodic-index': 'written' });
    const vectors = await waitFor(async () => {
      const rows = await env.db.memoryEmbedding.findMany({ where: { agentId } });
      const records = await env.db.memoryRecord.count({ where: { agentId } });
      return rows.length > 0 && rows.length === records ? rows : undefined;
    });
    expect(
      vectors.every(
        (v) => v.model === 'local/hash-256' && v.dimensions === 256 && v.embedding.length === 256,
      ),
    ).toBe(true);
    // The set is complete: recall compares it from now on.
    await waitFor(async () =>
      (await env.db.agent.findUnique({ where: { id: agentId } }))?.memoryVectorsModel === 'local/hash-256'
        ? true
        : undefined,
    );
    // An agent without an embedder gets no embedding job (and so no vectors).
    const plain = await endedTurn('no-embedder');
    await runTurnJob(plain.turnId, plain.tenantId);
    const embedQueue = new Queue(QueueName.MemoryEmbed, {
      connection: createRedis(env.redisUrl),
      prefix: env.queuePrefix,
    });
    try {
      const jobs = await embedQueue.getJobs(['active', 'waiting', 'delayed', 'completed', 'failed']);
      expect(jobs.map((j) => (j.data as { agentId: string }).agentId)).toContain(agentId);
      expect(jobs.map((j) => (j.data as { agentId: string }).agentId)).not.toContain(plain.agentId);
    } finally {
      await embedQueue.close();
      await (await embedQueue.client).quit().catch(() => undefined);
    }
  });

  it('fails a job naming a hook it has no handler for, without retrying it', async () => {
    const data = { turnId: newId(), tenantId: newId(), hook: 'no-such-hook', trace: {} };
    const job = await queue.add(QueueName.PostTurn, data, {
      jobId: `${data.turnId}.${data.hook}`,
      attempts: Jobs.postTurn.attempts,
      backoff: Jobs.postTurn.backoff,
    });
    await waitFor(async () => (await queue.getJobState(job.id!)) === 'failed', { what: 'the job failed' });
    const failed = await queue.getJob(job.id!);
    expect(failed?.attemptsMade).toBe(1);
    expect(failed?.failedReason).toMatch(/no-such-hook|invalid post-turn job/);
  });
});
