import { randomUUID } from 'node:crypto';
import { Queue, Worker, type Job } from 'bullmq';
import type IORedis from 'ioredis';
import { Jobs, newId, PRIORITY_RANK, type Priority } from '@switchboard/contracts';
import { createLogger } from '@switchboard/observability';
import { createRedis, publish } from '@switchboard/queue';
import { createTestEnv, seedTenant, type TestEnv } from '@switchboard/testing';
import { reconcileTurns } from './reconciler';

/** Postgres is the source of truth: the reconciler re-enqueues unfinished turns Redis lost. */
jest.setTimeout(120_000);

describe('reconcileTurns', () => {
  let env: TestEnv;
  let connection: IORedis;
  const queues: Queue[] = [];
  const workers: Worker[] = [];
  let tenantId: string;
  let agentId: string;
  let sessionId: string;
  let seq = 0;
  const logger = createLogger({ service: 'test', level: 'silent' });

  beforeAll(async () => {
    env = await createTestEnv();
    connection = createRedis(env.redisUrl);
    ({ tenantId, agentId } = await seedTenant(env.db, 'reconciler'));
    sessionId = newId();
    await env.db.session.create({ data: { id: sessionId, tenantId, agentId } });
  });

  // Every test starts from no turns in Postgres and an empty queue of its own.
  beforeEach(async () => {
    await env.db.turn.deleteMany();
  });

  afterAll(async () => {
    await Promise.all(workers.map((w) => w.close()));
    await Promise.all(queues.map((q) => q.close()));
    await connection?.quit();
    await env?.cleanup();
  });

  function freshQueue(): Queue {
    const q = new Queue(`turns-${queues.length}`, { connection, prefix: env.queuePrefix });
    queues.push(q);
    return q;
  }

  async function turn(
    status: string,
    options: { createdAt?: Date; priority?: Priority } = {},
  ): Promise<{ id: string; turnId: string; sessionId: string; tenantId: string }> {
    const id = newId();
    await env.db.turn.create({
      data: {
        id,
        tenantId,
        sessionId,
        agentId,
        seq: ++seq,
        inputMessageId: newId(),
        status,
        priority: options.priority ?? 'normal',
        ...(options.createdAt ? { createdAt: options.createdAt } : {}),
      },
    });
    return { id, turnId: id, sessionId, tenantId };
  }

  /** Takes the queue's next job by hand and finishes it, as a worker that completed or gave up would. */
  async function finishNextJob(queue: Queue, outcome: 'completed' | 'failed'): Promise<Job> {
    const worker = new Worker(queue.name, null, { connection, prefix: env.queuePrefix, autorun: false });
    workers.push(worker);
    const token = randomUUID();
    const job = await worker.getNextJob(token, { block: false });
    expect(job).toBeDefined();
    if (outcome === 'completed') await job!.moveToCompleted('done', token, false);
    else await job!.moveToFailed(new Error('gave up'), token, false);
    expect(await job!.getState()).toBe(outcome);
    return job!;
  }

  const jobIds = async (queue: Queue) =>
    (await queue.getJobs(['waiting', 'prioritized', 'delayed', 'active', 'completed', 'failed']))
      .map((j) => j.id)
      .sort();

  it('re-enqueues queued and running turns that have no job', async () => {
    const queue = freshQueue();
    const queued = await turn('queued');
    const running = await turn('running');

    expect(await reconcileTurns(env.db, queue, logger)).toBe(2);

    for (const t of [queued, running]) {
      const job = await queue.getJob(t.id);
      expect(job).toBeDefined();
      expect(job!.name).toBe(Jobs.turn.queue);
      expect(job!.data).toMatchObject({ turnId: t.id, sessionId: t.sessionId, tenantId: t.tenantId });
      expect(['waiting', 'prioritized']).toContain(await job!.getState());
    }
    expect(await jobIds(queue)).toEqual([queued.id, running.id].sort());
  });

  it('skips turns whose job is still waiting or delayed', async () => {
    const queue = freshQueue();
    const waiting = await turn('queued');
    const prioritized = await turn('queued');
    const delayed = await turn('running');
    await publish(queue, Jobs.turn, waiting);
    await publish(queue, Jobs.turn, prioritized, { priority: PRIORITY_RANK.background });
    await publish(queue, Jobs.turn, delayed, { delay: 60_000 });
    const before = await Promise.all([waiting, prioritized, delayed].map((t) => queue.getJob(t.id)));
    expect(await Promise.all(before.map((j) => j!.getState()))).toEqual([
      'waiting',
      'prioritized',
      'delayed',
    ]);

    expect(await reconcileTurns(env.db, queue, logger)).toBe(0);

    const after = await Promise.all([waiting, prioritized, delayed].map((t) => queue.getJob(t.id)));
    expect(after.map((j) => j!.timestamp)).toEqual(before.map((j) => j!.timestamp));
    expect(await Promise.all(after.map((j) => j!.getState()))).toEqual(['waiting', 'prioritized', 'delayed']);
    expect(await queue.getJobCounts('waiting', 'prioritized', 'delayed')).toMatchObject({
      waiting: 1,
      prioritized: 1,
      delayed: 1,
    });
  });

  it('leaves a job that a worker is running alone', async () => {
    const queue = freshQueue();
    const t = await turn('running');
    await publish(queue, Jobs.turn, t);
    const worker = new Worker(queue.name, null, { connection, prefix: env.queuePrefix, autorun: false });
    workers.push(worker);
    const job = (await worker.getNextJob(randomUUID(), { block: false })) as Job;
    expect(job.id).toBe(t.id);

    expect(await reconcileTurns(env.db, queue, logger)).toBe(0);
    expect(await (await queue.getJob(t.id))!.getState()).toBe('active');
  });

  it.each(['completed', 'failed'] as const)(
    'replaces a %s job whose turn is still unfinished',
    async (outcome) => {
      const queue = freshQueue();
      const t = await turn('queued');
      const { id: _id, ...data } = t;
      await queue.add(Jobs.turn.queue, { ...data, trace: {} }, { jobId: t.id, attempts: 1 });
      const old = await finishNextJob(queue, outcome);

      expect(await reconcileTurns(env.db, queue, logger)).toBe(1);

      const job = await queue.getJob(t.id);
      expect(job).toBeDefined();
      expect(['waiting', 'prioritized']).toContain(await job!.getState());
      expect(job!.timestamp).toBeGreaterThanOrEqual(old.timestamp);
      expect(job!.finishedOn).toBeUndefined();
      expect(job!.data).toMatchObject({ turnId: t.id, sessionId: t.sessionId, tenantId: t.tenantId });
      expect(await queue.getJobCounts('completed', 'failed')).toMatchObject({ completed: 0, failed: 0 });
    },
  );

  it('ignores ended and waiting turns', async () => {
    const queue = freshQueue();
    for (const status of ['completed', 'failed', 'cancelled', 'awaiting_approval']) await turn(status);

    expect(await reconcileTurns(env.db, queue, logger)).toBe(0);
    expect(await jobIds(queue)).toEqual([]);
  });

  it('respects olderThanMs: a turn admitted a moment ago is left to its own enqueue', async () => {
    const queue = freshQueue();
    const fresh = await turn('queued');
    const old = await turn('queued', { createdAt: new Date(Date.now() - 120_000) });

    expect(await reconcileTurns(env.db, queue, logger, { olderThanMs: 60_000 })).toBe(1);
    expect(await jobIds(queue)).toEqual([old.id]);
    expect(await queue.getJob(fresh.id)).toBeUndefined();

    // Without the age bound the fresh one is picked up too.
    expect(await reconcileTurns(env.db, queue, logger)).toBe(1);
    expect(await jobIds(queue)).toEqual([fresh.id, old.id].sort());
  });

  it('adds nothing when called a second time', async () => {
    const queue = freshQueue();
    const turns = [await turn('queued'), await turn('running'), await turn('queued')];

    expect(await reconcileTurns(env.db, queue, logger)).toBe(3);
    const first = await Promise.all(turns.map((t) => queue.getJob(t.id)));
    expect(await reconcileTurns(env.db, queue, logger)).toBe(0);
    const second = await Promise.all(turns.map((t) => queue.getJob(t.id)));
    expect(second.map((j) => j!.timestamp)).toEqual(first.map((j) => j!.timestamp));
    expect(await jobIds(queue)).toEqual(turns.map((t) => t.id).sort());
  });

  it('honours the limit, oldest first', async () => {
    const queue = freshQueue();
    const turns = [];
    for (let i = 0; i < 3; i++)
      turns.push(await turn('queued', { createdAt: new Date(Date.now() - 10_000 + i) }));

    expect(await reconcileTurns(env.db, queue, logger, { limit: 2 })).toBe(2);
    expect(await jobIds(queue)).toEqual([turns[0].id, turns[1].id].sort());

    await env.db.turn.updateMany({
      where: { id: { in: [turns[0].id, turns[1].id] } },
      data: { status: 'completed' },
    });
    expect(await reconcileTurns(env.db, queue, logger, { limit: 2 })).toBe(1);
    expect(await jobIds(queue)).toEqual(turns.map((t) => t.id).sort());
  });

  it('re-enqueues a background turn as a plain wake-up: its band is in Postgres (docs/adr/0080)', async () => {
    const queue = freshQueue();
    const t = await turn('queued', { priority: 'background' });

    expect(await reconcileTurns(env.db, queue, logger)).toBe(1);
    const job = await queue.getJob(t.id);
    expect(job!.priority).toBe(0);
  });
});
