import { Worker, type Job } from 'bullmq';
import { Jobs, QueueName } from '@switchboard/contracts';
import { TurnEngine } from '@switchboard/engine';
import { Metrics } from '@switchboard/observability';
import {
  ProviderRegistry,
  type ModelProvider,
  type ModelRequest,
  type ModelResponse,
} from '@switchboard/providers';
import { consume, createRedis } from '@switchboard/queue';
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
 * The Postgres intake (docs/adr/0075) against real Postgres, Redis and BullMQ. BullMQ's worker, after
 * an empty fetch while a job is active, fetches again only when an active job ends
 * (taskforcesh/bullmq#2290); a harness job lasts its turn's whole model call. Turns admitted while
 * one slow turn runs are claimed from Postgres by the process's spare permits instead of waiting
 * for it, each run once, and a drain waits for them.
 */
jest.setTimeout(60_000);

const USAGE = { inputTokens: 10, outputTokens: 5, cachedTokens: 0 };

/** A model whose every answer waits until `release()`: a slow stream, held open by the test. */
class Held implements ModelProvider {
  readonly name = 'held';
  /** The last user message of every request: one per model call. */
  readonly calls: string[] = [];
  private open!: Promise<void>;
  release!: () => void;

  constructor() {
    this.open = new Promise((resolve) => (this.release = resolve));
  }

  async complete(request: ModelRequest): Promise<ModelResponse> {
    const asked = [...request.messages].reverse().find((m) => m.role === 'user');
    this.calls.push(typeof asked?.content === 'string' ? asked.content : JSON.stringify(asked?.content));
    await this.open;
    return { text: 'done', toolCalls: [], usage: USAGE, finishReason: 'stop' };
  }
}

describe('the Postgres intake (docs/adr/0075)', () => {
  let h: HarnessFixture;

  beforeAll(async () => {
    h = await startHarness();
  });

  afterAll(() => h?.close());

  it('claims turns admitted while a slow turn holds the only active job, each once, and a drain waits for them', async () => {
    const { env } = h;
    const model = new Held();
    const engine = new TurnEngine({
      providers: new ProviderRegistry({}, [model]),
      tools: new ToolRegistry([]),
    });
    const runner = new TurnRunner({
      ...h.runnerDeps({ metrics: new Metrics('intake'), workerId: 'intake' }),
      engine,
      tools: new ToolRegistry([]),
      defaultModel: 'held/m',
      maxRunningTurns: 50,
      intakePollMs: 100,
    });
    const redis = createRedis(env.redisUrl);
    const worker = new Worker(
      QueueName.Turns,
      async (job: Job, token?: string) => {
        const result = await consume(Jobs.turn, job, (data) => runner.handle(data));
        await concludeTurnJob(result, job, token);
      },
      // As the harness: as many job slots as permits.
      { connection: redis, prefix: env.queuePrefix, concurrency: 50 },
    );
    const { tenantId, agentId } = await seedTenant(env.db, 'intake', { model: 'held/m' });
    const admit = async (text: string) => {
      const sessionId = await seedSession(env.db, tenantId, agentId);
      return (await h.admission.admit(operatorPrompt({ tenantId, sessionId }, text))).turnId;
    };
    try {
      const first = await admit('first');
      await waitFor(async () => model.calls.length === 1, { what: 'the first turn calling the model' });
      // The worker fetches nothing more while its job is active, as BullMQ's does after an empty
      // fetch (taskforcesh/bullmq#2290: it then waits for an active job to end, which depends on
      // the interleaving of its fetches; pausing it makes that deterministic).
      await worker.pause(true);
      const burst = await Promise.all(Array.from({ length: 12 }, (_, i) => admit(`burst ${i}`)));
      // Every one reaches the model while the first still holds its job (without the intake they
      // stay queued until it ends).
      await waitFor(async () => model.calls.length === 13, {
        what: 'every turn of the burst calling the model while the first streams',
        timeoutMs: 10_000,
      });
      expect(await env.db.turn.count({ where: { id: { in: burst }, status: 'running' } })).toBe(12);
      expect((await env.db.turn.findUniqueOrThrow({ where: { id: first } })).status).toBe('running');
      worker.resume();
      // A drain (SIGTERM) waits for the turns the intake claimed, as for the active jobs.
      let drained = false;
      const drain = Promise.all([runner.stopIntake(), worker.close()]).then(() => (drained = true));
      await new Promise((resolve) => setTimeout(resolve, 300));
      expect(drained).toBe(false);
      model.release();
      await drain;

      const turns = await env.db.turn.findMany({ where: { id: { in: [first, ...burst] } } });
      expect(turns.map((t) => t.status)).toEqual(turns.map(() => 'completed'));
      // Each turn claimed once and the model called once for it.
      expect(turns.every((t) => t.runCount === 1)).toBe(true);
      expect([...model.calls].sort()).toEqual(['first', ...burst.map((_, i) => `burst ${i}`)].sort());
      // Their jobs, handed to another process now, find their turns ended: nothing runs twice.
      const after = new TurnRunner({
        ...h.runnerDeps({ metrics: new Metrics('after'), workerId: 'after' }),
        engine,
        tools: new ToolRegistry([]),
        defaultModel: 'held/m',
      });
      const next = new Worker(
        QueueName.Turns,
        async (job: Job, token?: string) => {
          const result = await consume(Jobs.turn, job, (data) => after.handle(data));
          await concludeTurnJob(result, job, token);
        },
        { connection: redis, prefix: env.queuePrefix, concurrency: 4 },
      );
      try {
        await waitFor(
          async () => {
            const c = await h.turnsQueue.getJobCounts('waiting', 'prioritized', 'active');
            return c.waiting + c.prioritized + c.active === 0;
          },
          { what: 'every job handled' },
        );
      } finally {
        await next.close();
        after.close();
      }
      expect(model.calls).toHaveLength(13);
      const again = await env.db.turn.findMany({ where: { id: { in: [first, ...burst] } } });
      expect(again.every((t) => t.runCount === 1 && t.status === 'completed')).toBe(true);
      expect((await h.turnsQueue.getJobCounts('failed')).failed).toBe(0);
    } finally {
      model.release();
      runner.close();
      await worker.close();
      await redis.quit();
    }
  });
});
