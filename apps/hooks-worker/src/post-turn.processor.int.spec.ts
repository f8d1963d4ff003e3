import { readFileSync } from 'node:fs';
import { Queue } from 'bullmq';
import type { Prisma } from '@switchboard/database';
import { Jobs, newId, QueueName } from '@switchboard/contracts';
import { createRedis, jobOptions } from '@switchboard/queue';
import { createTestEnv, seedSession, seedTenant, waitFor, type TestEnv } from '@switchboard/testing';
import { FIXTURES, startHooks, type Running } from '../../../test/support/stack';

/** The post-turn processor dispatches by hook name through the hook registry; an unknown name is never retried. */
jest.setTimeout(120_000);

describe('PostTurnProcessor', () => {
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

  /** A completed turn with an input and an answer, of a new tenant with `settings`. */
  async function endedTurn(name: string, settings: Prisma.InputJsonObject = {}) {
    const { tenantId, agentId } = await seedTenant(env.db, name);
    await env.db.tenant.update({ where: { id: tenantId }, data: { settings } });
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
      archivist: 'retrying',
      'episodic-index': 'written',
    });
    const runs = await env.db.hookRun.findMany({ where: { turnId }, orderBy: { hook: 'asc' } });
    expect(runs.map((r) => r.hook)).toEqual(['completion-webhook', 'cost-log', 'episodic-index', 'learning']);
    // The archivist's own job, with the attempts and backoff of a job naming one hook.
    const own = await queue.getJob(`${turnId}.archivist`);
    expect(own?.data).toMatchObject({ turnId, tenantId, hook: 'archivist' });
    expect(own?.opts.attempts).toBe(Jobs.postTurn.attempts);
  });

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
      'cost-log': 'written',
    });
    // Rows one transaction wrote carry its id as xmin: the shared hooks' rows and the episode share
    // one; learning and the cost log (rows every turn of the agent or tenant updates) commit alone.
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
      episode?.xmin,
    ]);
    expect(shared.size).toBe(1);
    expect(shared.has(xmin('learning'))).toBe(false);
    expect(shared.has(xmin('cost-log'))).toBe(false);
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
        'cost-log': 'written',
      });
      const runs = await env.db.hookRun.findMany({ where: { turnId }, orderBy: { hook: 'asc' } });
      expect(runs.map((r) => r.hook)).toEqual(['archivist', 'completion-webhook', 'cost-log', 'learning']);
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
    const logged = await waitFor(() => {
      const lines = readFileSync(env.config().LOG_FILE!, 'utf8').split('\n').filter(Boolean);
      return lines
        .flatMap((l) => {
          try {
            return [JSON.parse(l) as Record<string, unknown>];
          } catch {
            return [];
          }
        })
        .find((l) => l.turnId === turnId && l.msg === 'post-turn hook failed; no attempts left');
    });
    expect(logged).toMatchObject({ level: 50, hook: 'archivist', tenantId, attempt: 1, attempts: 1 });
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
