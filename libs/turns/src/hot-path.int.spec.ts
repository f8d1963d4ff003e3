import { randomUUID } from 'node:crypto';
import { Worker, type Job } from 'bullmq';
import { Jobs, newId, QueueName } from '@switchboard/contracts';
import { createDatabase, type Db } from '@switchboard/database';
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
  countPoolTransactions,
  operatorPrompt,
  seedSession,
  seedTenant,
  startHarness,
  waitFor,
  wordCountTool,
  type HarnessFixture,
  type TestEnv,
} from '@switchboard/testing';
import { TurnRunner, type HandleResult } from './runner';
import { concludeTurnJob } from './turn-job';

/**
 * The turn's hot path against real Postgres and BullMQ (docs/adr/0010): what a simple turn costs
 * in transactions, counted on the harness's own connections; and a busy session's jobs completing at
 * once while every turn admitted into it still runs, in order.
 */
jest.setTimeout(120_000);

const USAGE = { inputTokens: 10, outputTokens: 5, cachedTokens: 0 };

/** Instant model: a word_count call first, then an answer (the bench's simple turn). */
class Instant implements ModelProvider {
  readonly name = 'instant';
  async complete(request: ModelRequest): Promise<ModelResponse> {
    // This turn's tool result is in: after the last user message (earlier turns' are before it).
    const answered = request.messages.at(-1)?.role === 'tool';
    return answered
      ? { text: 'three words', toolCalls: [], usage: USAGE, finishReason: 'stop' }
      : {
          text: '',
          toolCalls: [{ id: 'c1', name: 'word_count', arguments: '{"text":"a b c"}' }],
          usage: USAGE,
          finishReason: 'tool_calls',
        };
  }
}

describe('the turn hot path', () => {
  let h: HarnessFixture;
  let env: TestEnv;
  const tools = new ToolRegistry([wordCountTool]);
  const engine = new TurnEngine({ providers: new ProviderRegistry({}, [new Instant()]), tools });

  const runner = (db: Db, metrics: Metrics, workerId: string) =>
    new TurnRunner({ ...h.runnerDeps({ db, metrics, workerId }), engine, tools, defaultModel: 'instant/m' });

  beforeAll(async () => {
    h = await startHarness();
    env = h.env;
  });

  afterAll(() => h?.close());

  const admit = (tenantId: string, sessionId: string, text: string) =>
    h.admission.admit(operatorPrompt({ tenantId, sessionId }, text));

  it('runs a simple turn (two rounds, one read-only tool) in three harness transactions', async () => {
    const { tenantId, agentId } = await seedTenant(env.db, 'budget', {
      model: 'instant/m',
      tools: ['word_count'],
    });
    const sessionId = await seedSession(env.db, tenantId, agentId);
    const { turnId } = await admit(tenantId, sessionId, 'count a b c');

    // The harness on its own pool, counted below Prisma and the store.
    const { prisma, pool } = createDatabase(env.databaseUrl, { poolSize: 2 });
    const sent = countPoolTransactions(pool);
    const metrics = new Metrics('budget');
    try {
      expect(await runner(prisma, metrics, 'budget').handle({ turnId, sessionId, tenantId, trace: {} })).toBe(
        'done',
      );
    } finally {
      await prisma.$disconnect();
    }

    const turn = await env.db.turn.findUniqueOrThrow({ where: { id: turnId } });
    expect(turn).toMatchObject({
      status: 'completed',
      finalText: 'three words',
      iterations: 2,
      toolCallCount: 1,
    });
    // Claim + load; round 1 with the read-only tool's start and result; round 2 + finalisation +
    // decision + release (docs/adr/0010: a round waits for its calls' first commit).
    expect(sent.transactions).toBe(3);
    expect(sent.statements).toHaveLength(sent.transactions);
    // The store's own counter (the metric the benchmark reads) agrees with the wire.
    const counted = (await metrics.registry.getSingleMetric('switchboard_db_transactions_total')!.get())
      .values;
    expect(counted).toEqual([
      expect.objectContaining({ labels: { component: 'harness' }, value: sent.transactions }),
    ]);

    // Everything a turn persists is there, once.
    const transcript = await env.db.message.findMany({ where: { sessionId }, orderBy: { position: 'asc' } });
    expect(transcript.map((m) => m.role)).toEqual(['user', 'assistant', 'tool', 'assistant']);
    const call = await env.db.toolCall.findFirstOrThrow({ where: { turnId } });
    expect(call).toMatchObject({ status: 'completed', result: { words: 3 }, sideEffect: 'read_only' });
    expect(call.startedAt!.getTime()).toBeLessThanOrEqual(call.completedAt!.getTime());
    expect((await env.db.ledgerEntry.findMany({ where: { turnId } })).map((l) => l.key).sort()).toEqual([
      `${turnId}:round:0`,
      `${turnId}:round:1`,
    ]);
    const events = await env.db.event.findMany({ where: { sessionId }, orderBy: { seq: 'asc' } });
    expect(events.map((e) => e.seq)).toEqual(events.map((_, i) => i + 1));
    expect(events.map((e) => e.type)).toEqual([
      'message_admitted',
      'turn_started',
      'provider_round_started',
      'provider_round_completed',
      'tool_call_started',
      'tool_call_completed',
      'iteration_completed',
      'provider_round_started',
      'provider_round_completed',
      'turn_completed',
    ]);
    expect(events.at(-1)!.data).toMatchObject({ costUsd: turn.costUsd.toFixed(8) });
    expect(turn.decision).toMatchObject({ strategy: 'tool_assisted', tools: ['word_count'] });
    // The plain closure (no work item, an awake agent) went with the turn's end (docs/adr/0031).
    expect(turn.closure).toEqual({ outcome: 'completed', workItemId: null, runtimePosture: 'awake' });
    const session = await env.db.session.findUniqueOrThrow({ where: { id: sessionId } });
    expect(session).toMatchObject({ leaseToken: null, inputTokens: 20, outputTokens: 10 });
    expect(session.systemPrompt).toContain('word_count');
  });

  it('leaves the closure of a turn whose agent has open work to the work-activation step', async () => {
    const { tenantId, agentId } = await seedTenant(env.db, 'open-work', {
      model: 'instant/m',
      tools: ['word_count'],
    });
    await env.db.workItem.create({
      data: { id: newId(), tenantId, agentId, objective: 'y', createdBy: 'operator' },
    });
    const sessionId = await seedSession(env.db, tenantId, agentId);
    const { turnId } = await admit(tenantId, sessionId, 'count a b c');
    const metrics = new Metrics('open-work');
    expect(
      await runner(env.db, metrics, 'open-work').handle({ turnId, sessionId, tenantId, trace: {} }),
    ).toBe('done');
    const turn = await env.db.turn.findUniqueOrThrow({ where: { id: turnId } });
    expect(turn).toMatchObject({ status: 'completed', closure: null });
  });

  it('completes, without a statement, the job of a turn another job already ran to its end here', async () => {
    const { tenantId, agentId } = await seedTenant(env.db, 'ended-here', {
      model: 'instant/m',
      tools: ['word_count'],
    });
    const sessionId = await seedSession(env.db, tenantId, agentId);
    const first = await admit(tenantId, sessionId, 'count a b c');
    const second = await admit(tenantId, sessionId, 'count d e');
    const { prisma, pool } = createDatabase(env.databaseUrl, { poolSize: 2 });
    const sent = countPoolTransactions(pool);
    try {
      const r = runner(prisma, new Metrics('ended-here'), 'ended-here');
      // The first job drains the session: both turns run.
      expect(await r.handle({ turnId: first.turnId, sessionId, tenantId, trace: {} })).toBe('done');
      const turns = await env.db.turn.findMany({ where: { sessionId }, orderBy: { seq: 'asc' } });
      expect(turns.map((t) => t.status)).toEqual(['completed', 'completed']);
      const before = sent.transactions;
      // The second turn's own job finds nothing to do, and asks Postgres nothing.
      expect(await r.handle({ turnId: second.turnId, sessionId, tenantId, trace: {} })).toBe('done');
      expect(sent.transactions).toBe(before);
      // Remembered once: a redelivery of that job chooses as any job does.
      expect(await r.handle({ turnId: second.turnId, sessionId, tenantId, trace: {} })).toBe('done');
      expect(sent.transactions).toBeGreaterThan(before);
    } finally {
      await prisma.$disconnect();
    }
  });

  it('owes no new choice for a job whose turn another job’s loop ran or runs here (docs/adr/0076)', async () => {
    // Turns saying "xyzzy-gate" wait in their first model call until the test opens the gate.
    let open!: () => void;
    const gate = new Promise<void>((resolve) => (open = resolve));
    const instant = new Instant();
    const gated: ModelProvider = {
      name: 'gated',
      complete: async (request: ModelRequest): Promise<ModelResponse> => {
        if (JSON.stringify(request.messages).includes('xyzzy-gate')) await gate;
        return instant.complete(request);
      },
    };
    const gatedEngine = new TurnEngine({ providers: new ProviderRegistry({}, [gated]), tools });
    const { tenantId, agentId } = await seedTenant(env.db, 'ran-here', {
      model: 'gated/m',
      tools: ['word_count'],
    });
    const a = await seedSession(env.db, tenantId, agentId);
    const b = await seedSession(env.db, tenantId, agentId);
    const a1 = await admit(tenantId, a, 'count a b c');
    const a2 = await admit(tenantId, a, 'count d e');
    const b1 = await admit(tenantId, b, 'count xyzzy-gate');
    const { prisma, pool } = createDatabase(env.databaseUrl, { poolSize: 4 });
    const sent = countPoolTransactions(pool);
    const choices = () => sent.statements.filter((q) => q.includes('job_turn')).length;
    const r = new TurnRunner({
      ...h.runnerDeps({ db: prisma, metrics: new Metrics('ran-here'), workerId: 'ran-here' }),
      engine: gatedEngine,
      tools,
      defaultModel: 'gated/m',
    });
    try {
      // Session A held elsewhere: a1's job chooses B, and runs b1 up to the gate.
      const holder = randomUUID();
      await env.db.session.update({
        where: { id: a },
        data: { leaseToken: holder, leaseOwner: 'other', leaseExpiresAt: new Date(Date.now() + 60_000) },
      });
      const job1 = r.handle({ turnId: a1.turnId, sessionId: a, tenantId, trace: {} });
      await waitFor(
        async () => (await env.db.turn.findUniqueOrThrow({ where: { id: b1.turnId } })).status === 'running',
        {
          what: 'b1 running',
        },
      );
      // b1's own job, while b1 runs here: done at once, without a statement.
      let before = sent.transactions;
      expect(await r.handle({ turnId: b1.turnId, sessionId: b, tenantId, trace: {} })).toBe('done');
      expect(sent.transactions).toBe(before);
      // A freed: a2's job drains A, a1 first (another job's turn, ended here) then a2.
      await env.db.session.update({
        where: { id: a },
        data: { leaseToken: null, leaseOwner: null, leaseExpiresAt: null },
      });
      expect(await r.handle({ turnId: a2.turnId, sessionId: a, tenantId, trace: {} })).toBe('done');
      before = choices();
      open();
      // a1's job ends its drain of B with its own turn run here: it does not choose again.
      expect(await job1).toBe('done');
      expect(choices()).toBe(before);
      const turns = await env.db.turn.findMany({ where: { tenantId } });
      expect(turns.map((t) => t.status)).toEqual(['completed', 'completed', 'completed']);
    } finally {
      open();
      await prisma.$disconnect();
    }
  });

  it('completes a busy session’s jobs at once and still runs every turn admitted into it, in order', async () => {
    const { tenantId, agentId } = await seedTenant(env.db, 'busy', {
      model: 'instant/m',
      tools: ['word_count'],
    });
    const sessionId = await seedSession(env.db, tenantId, agentId);
    const results: HandleResult[] = [];
    // Three workers, two jobs at a time each, each its own runner; no reconciler.
    const redis = createRedis(env.redisUrl);
    const workers = ['w1', 'w2', 'w3'].map((id) => {
      const r = runner(env.db, new Metrics(id), id);
      return new Worker(
        QueueName.Turns,
        async (job: Job, token?: string) => {
          const result = await consume(Jobs.turn, job, (data) => r.handle(data));
          results.push(result);
          await concludeTurnJob(result, job, token);
        },
        { connection: redis, prefix: env.queuePrefix, concurrency: 2 },
      );
    });
    try {
      const n = 30;
      // Admitted concurrently, in three waves so admissions land while turns run and finish.
      const ids: string[] = [];
      for (let wave = 0; wave < 3; wave++) {
        const admitted = await Promise.all(
          Array.from({ length: n / 3 }, (_, i) => admit(tenantId, sessionId, `message ${wave}-${i}`)),
        );
        ids.push(...admitted.map((a) => a.turnId));
      }
      await waitFor(
        async () => (await env.db.turn.count({ where: { sessionId, status: 'completed' } })) === n,
        { what: 'every turn of the session completed', timeoutMs: 45_000 },
      );
      const turns = await env.db.turn.findMany({ where: { sessionId }, orderBy: { seq: 'asc' } });
      expect(turns).toHaveLength(n);
      // One at a time, in admission order.
      for (let i = 1; i < turns.length; i++) {
        expect(turns[i].startedAt!.getTime()).toBeGreaterThanOrEqual(turns[i - 1].completedAt!.getTime());
      }
      expect(turns.every((t) => t.runCount === 1)).toBe(true);
      // Jobs that found nothing runnable (the session held by another worker) completed at once
      // instead of polling (docs/adr/0029).
      expect(results.filter((r) => r === 'done').length).toBeGreaterThan(0);
      const messages = await env.db.message.findMany({
        where: { sessionId },
        orderBy: [{ turnSeq: 'asc' }, { position: 'asc' }],
      });
      expect(messages).toHaveLength(n * 4);
      // Nothing waits for a wake-up: every job is done and the lease is free.
      await waitFor(
        async () => (await h.turnsQueue.getJobCounts('delayed', 'waiting', 'active')).active === 0,
        {
          what: 'idle queue',
        },
      );
      const counts = await h.turnsQueue.getJobCounts('delayed', 'waiting', 'active', 'failed');
      expect(counts).toMatchObject({ delayed: 0, waiting: 0, active: 0, failed: 0 });
      // Completed turn jobs are removed at completion (docs/adr/0080): none is left.
      const jobs = await Promise.all(ids.map((id) => h.turnsQueue.getJob(id)));
      expect(jobs.filter(Boolean)).toEqual([]);
      expect((await env.db.session.findUniqueOrThrow({ where: { id: sessionId } })).leaseToken).toBeNull();
    } finally {
      await Promise.all(workers.map((w) => w.close()));
      await redis.quit();
    }
  });
});
