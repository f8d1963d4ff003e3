import { Worker, type Job } from 'bullmq';
import { Jobs, QueueName } from '@switchboard/contracts';
import { TurnEngine } from '@switchboard/engine';
import { ProviderRegistry, type ModelProvider, type ModelResponse } from '@switchboard/providers';
import { consume, createRedis, publish } from '@switchboard/queue';
import { ToolRegistry } from '@switchboard/tools';
import {
  operatorPrompt,
  seedSession,
  seedTenant,
  startHarness,
  waitFor,
  type HarnessFixture,
} from '@switchboard/testing';
import { TurnRunner } from './runner';
import { concludeTurnJob } from './turn-job';

/**
 * `turns` jobs as BullMQ holds them since docs/adr/0080, on real Postgres and BullMQ: without a BullMQ
 * priority (a background turn's job is fetched in arrival order, yet the tenant's normal turn runs
 * first) and removed at completion (a re-published job of an ended turn runs nothing again).
 */
jest.setTimeout(120_000);

class Answer implements ModelProvider {
  readonly name = 'answer';
  async complete(): Promise<ModelResponse> {
    return {
      text: 'done',
      toolCalls: [],
      usage: { inputTokens: 1, outputTokens: 1, cachedTokens: 0 },
      finishReason: 'stop',
    };
  }
}

describe('turn jobs', () => {
  let h: HarnessFixture;
  const tools = new ToolRegistry([]);
  const engine = new TurnEngine({ providers: new ProviderRegistry({}, [new Answer()]), tools });

  beforeAll(async () => {
    h = await startHarness();
  });

  afterAll(() => h?.close());

  /** One worker, one job at a time, over its own runner. */
  const startWorker = () => {
    const redis = createRedis(h.env.redisUrl);
    const runner = new TurnRunner({ ...h.runnerDeps(), engine, tools, defaultModel: 'answer/m' });
    const worker = new Worker(
      QueueName.Turns,
      async (job: Job, token?: string) =>
        concludeTurnJob(await consume(Jobs.turn, job, (data) => runner.handle(data)), job, token),
      { connection: redis, prefix: h.env.queuePrefix, concurrency: 1 },
    );
    return {
      close: async () => {
        await worker.close();
        await redis.quit();
      },
    };
  };

  it('runs a normal turn before background turns admitted earlier, though their jobs come first', async () => {
    const { tenantId, agentId } = await seedTenant(h.env.db, 'bands', { model: 'answer/m' });
    const background: string[] = [];
    for (let i = 0; i < 3; i++) {
      const sessionId = await seedSession(h.env.db, tenantId, agentId);
      const a = await h.admission.admit(
        operatorPrompt({ tenantId, sessionId }, `background ${i}`, { priority: 'background' }),
      );
      background.push(a.turnId);
    }
    const normalSession = await seedSession(h.env.db, tenantId, agentId);
    const normal = await h.admission.admit(operatorPrompt({ tenantId, sessionId: normalSession }, 'normal'));
    // Plain FIFO wake-ups in BullMQ: no job is prioritized.
    expect(await h.turnsQueue.getJobCountByTypes('prioritized')).toBe(0);

    const worker = startWorker();
    try {
      const ids = [...background, normal.turnId];
      await waitFor(
        async () => (await h.env.db.turn.count({ where: { id: { in: ids }, status: 'completed' } })) === 4,
        { what: 'every turn completed' },
      );
      const turns = await h.env.db.turn.findMany({
        where: { id: { in: ids } },
        orderBy: { startedAt: 'asc' },
      });
      expect(turns[0].id).toBe(normal.turnId);
    } finally {
      await worker.close();
    }
  });

  it('removes a turn’s job at completion; its job published again runs nothing twice', async () => {
    const { tenantId, agentId } = await seedTenant(h.env.db, 'dup', { model: 'answer/m' });
    const sessionId = await seedSession(h.env.db, tenantId, agentId);
    const { turnId } = await h.admission.admit(operatorPrompt({ tenantId, sessionId }, 'once'));
    // While the job waits, its id still deduplicates a second publish. Only this turn's jobs are
    // counted: a job of the test before may still wait, its turn run by another of its jobs.
    await publish(h.turnsQueue, Jobs.turn, { turnId, sessionId, tenantId });
    const waiting = await h.turnsQueue.getJobs(['waiting', 'prioritized']);
    expect(waiting.filter((j) => (j.data as { turnId?: string }).turnId === turnId)).toHaveLength(1);

    const worker = startWorker();
    try {
      await waitFor(
        async () => (await h.env.db.turn.findUniqueOrThrow({ where: { id: turnId } })).status === 'completed',
        {
          what: 'the turn completed',
        },
      );
      await waitFor(async () => (await h.turnsQueue.getJob(turnId)) === undefined, {
        what: 'the completed job removed',
      });
      const before = {
        messages: await h.env.db.message.count({ where: { sessionId } }),
        events: await h.env.db.event.count({ where: { sessionId } }),
      };
      // A duplicate after completion (no completed job left to make it a no-op): a wake-up that finds
      // the turn ended in Postgres.
      await publish(h.turnsQueue, Jobs.turn, { turnId, sessionId, tenantId });
      await waitFor(async () => (await h.turnsQueue.getJob(turnId)) === undefined, {
        what: 'the duplicate job done',
      });
      const turn = await h.env.db.turn.findUniqueOrThrow({ where: { id: turnId } });
      expect(turn).toMatchObject({ status: 'completed', runCount: 1 });
      expect({
        messages: await h.env.db.message.count({ where: { sessionId } }),
        events: await h.env.db.event.count({ where: { sessionId } }),
      }).toEqual(before);
      // Its hooks job was published again under the same id: one job, not two.
      expect(
        (await h.postTurnQueue.getJobs(['waiting', 'prioritized', 'delayed', 'completed'])).filter(
          (j) => j.data.turnId === turnId,
        ),
      ).toHaveLength(1);
    } finally {
      await worker.close();
    }
  });
});
