import { Queue, UnrecoverableError, Worker } from 'bullmq';
import { Jobs, newId, PostTurnHookName, QueueName, uuid7Time } from '@switchboard/contracts';
import { poolOf } from '@switchboard/database';
import { createLogger, Metrics } from '@switchboard/observability';
import { createRedis, publish } from '@switchboard/queue';
import { recordHookFailure, sqlDbFor, type SqlDb } from '@switchboard/store';
import { createTestEnv, seedSession, seedTenant, waitFor, type TestEnv } from '@switchboard/testing';
import { reconcileHooks } from './reconcile';

/**
 * The hooks reconcile (docs/adr/0027) on real Postgres and BullMQ, with no hooks worker: which ended
 * turns it publishes jobs for, which it marks reconciled, and that an ended job's id does not block it.
 */
jest.setTimeout(120_000);

describe('reconcileHooks', () => {
  let env: TestEnv;
  let queue: Queue;
  let sql: SqlDb;
  let seq = 0;
  let ids: { tenantId: string; agentId: string; sessionId: string };
  const logger = createLogger({ service: 'test', level: 'silent' });
  const HOOKS = PostTurnHookName.options;

  beforeAll(async () => {
    env = await createTestEnv();
    queue = new Queue(QueueName.PostTurn, { connection: createRedis(env.redisUrl), prefix: env.queuePrefix });
    sql = sqlDbFor(poolOf(env.db), 'hooks', new Metrics('test'));
    const t = await seedTenant(env.db, 'reconcile');
    ids = { ...t, sessionId: await seedSession(env.db, t.tenantId, t.agentId) };
  });

  afterAll(async () => {
    await queue?.close();
    await (await queue?.client)?.quit().catch(() => undefined);
    await env?.cleanup();
  });

  beforeEach(async () => {
    await queue.obliterate({ force: true });
    // Earlier tests' turns are reconciled, so each test sees its own.
    await env.db.turn.updateMany({ data: { hooksSettledAt: new Date() } });
  });

  async function turn(data: { status: string; endedAgoMs?: number; stopReason?: string }) {
    const id = newId();
    const completedAt = data.status === 'running' ? null : new Date(Date.now() - (data.endedAgoMs ?? 60_000));
    await env.db.turn.create({
      data: {
        id,
        tenantId: ids.tenantId,
        sessionId: ids.sessionId,
        agentId: ids.agentId,
        seq: ++seq,
        inputMessageId: newId(),
        status: data.status,
        stopReason: data.stopReason,
        completedAt,
      },
    });
    return id;
  }

  const ran = (turnId: string, hook: string) =>
    env.db.hookRun.create({
      data: {
        id: newId(),
        tenantId: ids.tenantId,
        turnId,
        turnAt: uuid7Time(turnId),
        hook,
        status: 'completed',
        completedAt: new Date(),
      },
    });
  const jobIds = async () => (await queue.getJobs(['waiting', 'prioritized'])).map((j) => j.id).sort();
  const reconciledOf = async (id: string) =>
    (await env.db.turn.findUniqueOrThrow({ where: { id } })).hooksSettledAt !== null;

  it('publishes the missing hooks of ended turns past the grace, marks complete ones reconciled, and leaves live jobs be', async () => {
    const lost = await turn({ status: 'cancelled' });
    const half = await turn({ status: 'failed' });
    for (const hook of ['cost-log', 'learning', 'archivist', 'scoring']) await ran(half, hook);
    const done = await turn({ status: 'completed' });
    for (const hook of HOOKS) await ran(done, hook);
    const fresh = await turn({ status: 'completed', endedAgoMs: 0 });
    const running = await turn({ status: 'running' });
    const imported = await turn({ status: 'completed', stopReason: 'imported' });

    const first = await reconcileHooks(sql, queue, logger, { graceMs: 10_000 });
    expect(first).toEqual({ republished: HOOKS.length + 2, reconciled: 2 });
    expect(await jobIds()).toEqual(
      [...HOOKS.map((h) => `${lost}.${h}`), `${half}.completion-webhook`, `${half}.episodic-index`].sort(),
    );
    expect(await reconciledOf(done)).toBe(true);
    expect(await reconciledOf(imported)).toBe(true);
    for (const id of [lost, half, fresh, running]) expect(await reconciledOf(id)).toBe(false);

    // Their jobs are waiting: the next sweep publishes nothing and reconciles nothing.
    expect(await reconcileHooks(sql, queue, logger, { graceMs: 10_000 })).toEqual({
      republished: 0,
      reconciled: 0,
    });

    // Once every hook has its row, the turn is reconciled and never read again.
    for (const hook of HOOKS) await ran(lost, hook);
    for (const hook of ['completion-webhook', 'episodic-index']) await ran(half, hook);
    expect(await reconcileHooks(sql, queue, logger, { graceMs: 10_000 })).toEqual({
      republished: 0,
      reconciled: 2,
    });
  });

  it('publishes again a job whose old job failed (stalled out) or completed without its record', async () => {
    const id = await turn({ status: 'completed' });
    for (const hook of HOOKS) if (hook !== 'archivist' && hook !== 'learning') await ran(id, hook);
    const job = (hook: PostTurnHookName) => ({ turnId: id, tenantId: ids.tenantId, hook });
    await publish(queue, Jobs.postTurn, job('archivist'));
    await publish(queue, Jobs.postTurn, job('learning'));
    // A worker that fails the archivist's job for good and completes the learning one without a row.
    const workerConnection = createRedis(env.redisUrl);
    const worker = new Worker(
      QueueName.PostTurn,
      async (j) => {
        if (j.data.hook === 'archivist')
          throw new UnrecoverableError('job stalled more than allowable limit');
        return 'written';
      },
      { connection: workerConnection, prefix: env.queuePrefix },
    );
    try {
      await waitFor(
        async () =>
          (await queue.getJobState(`${id}.archivist`)) === 'failed' &&
          (await queue.getJobState(`${id}.learning`)) === 'completed',
        { what: 'the old jobs to end' },
      );
    } finally {
      await worker.close();
      await workerConnection.quit();
    }
    // Publishing under the same id is a no-op while the ended job holds it.
    await publish(queue, Jobs.postTurn, job('archivist'));
    expect(await queue.getJobState(`${id}.archivist`)).toBe('failed');

    expect(await reconcileHooks(sql, queue, logger, { graceMs: 0 })).toEqual({
      republished: 2,
      reconciled: 0,
    });
    expect(await jobIds()).toEqual([`${id}.archivist`, `${id}.learning`]);
  });

  it('bounds a sweep, oldest first, and leaves a hook recorded failed alone', async () => {
    const older = await turn({ status: 'completed', endedAgoMs: 120_000 });
    const newer = await turn({ status: 'completed', endedAgoMs: 60_000 });
    for (const hook of HOOKS) {
      await recordHookFailure(sql, {
        id: newId(),
        turnId: older,
        tenantId: ids.tenantId,
        hook,
        attempts: 8,
        error: 'boom',
      });
    }
    // A job of another tenant's id records nothing.
    expect(
      await recordHookFailure(sql, {
        id: newId(),
        turnId: newer,
        tenantId: newId(),
        hook: 'archivist',
        attempts: 1,
        error: 'x',
      }),
    ).toBe(false);
    expect(await reconcileHooks(sql, queue, logger, { graceMs: 0, limit: 1 })).toEqual({
      republished: 0,
      reconciled: 1,
    });
    expect(await reconcileHooks(sql, queue, logger, { graceMs: 0, limit: 1 })).toEqual({
      republished: HOOKS.length,
      reconciled: 0,
    });
    expect((await jobIds()).every((j) => j?.startsWith(newer))).toBe(true);
  });

  it('publishes the distillation of a session whose deferred archivist turns are overdue, and only those', async () => {
    const overdue = await turn({ status: 'completed' });
    const recent = await turn({ status: 'completed' });
    const deferred = (turnId: string, agoMs: number) =>
      env.db.hookRun.create({
        data: {
          id: newId(),
          tenantId: ids.tenantId,
          turnId,
          turnAt: uuid7Time(turnId),
          hook: 'archivist',
          status: 'deferred',
          createdAt: new Date(Date.now() - agoMs),
        },
      });
    // Deferred 20 minutes ago, past the default 10 minutes' idle period and the 5 minutes' margin.
    await deferred(overdue, 20 * 60_000);
    const session = await reconcileHooks(sql, queue, logger, { graceMs: 10_000 });
    expect(session.archivistSessions).toBe(1);
    const job = await queue.getJob(`${overdue}.archivist.session`);
    expect(job?.data).toMatchObject({ turnId: overdue, sessionId: ids.sessionId, hook: 'archivist' });
    // A session with a turn deferred just now is within its idle period: nothing published.
    await env.db.hookRun.updateMany({ where: { turnId: overdue }, data: { status: 'completed' } });
    await deferred(recent, 1000);
    expect((await reconcileHooks(sql, queue, logger, { graceMs: 10_000 })).archivistSessions).toBeUndefined();
    expect(await queue.getJob(`${recent}.archivist.session`)).toBeUndefined();
  });

  it("gives a deferred row written without its session (a hooks worker older than the column) its turn's session", async () => {
    const old = await turn({ status: 'completed' });
    const done = await turn({ status: 'completed' });
    const row = (turnId: string, status: string) => ({
      id: newId(),
      tenantId: ids.tenantId,
      turnId,
      turnAt: uuid7Time(turnId),
      hook: 'archivist',
      status,
    });
    await env.db.hookRun.createMany({ data: [row(old, 'deferred'), row(done, 'completed')] });
    await reconcileHooks(sql, queue, logger, { graceMs: 10_000 });
    const rows = await env.db.hookRun.findMany({ where: { turnId: { in: [old, done] } } });
    // The deferred row now has its session (its distillation reads deferred rows by session); a
    // row no longer deferred keeps none.
    expect(Object.fromEntries(rows.map((r) => [r.status, r.sessionId]))).toEqual({
      deferred: ids.sessionId,
      completed: null,
    });
  });
});
