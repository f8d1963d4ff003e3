import { Queue, Worker, type Job } from 'bullmq';
import { Jobs, newId, QueueName, type PostTurnJob } from '@switchboard/contracts';
import { ProviderRegistry } from '@switchboard/providers';
import { consume, createRedis } from '@switchboard/queue';
import {
  createTestEnv,
  FakeLlmServer,
  hookContext,
  hookJob,
  scripted,
  seedEndedTurn,
  seedTenantSession,
  transcriptMessage,
  type ScriptedReply,
  type SessionIds,
  type TestEnv,
} from '@switchboard/testing';
import { ARCHIVIST_IDLE_SLACK_MS, runArchivist } from './archivist';
import { publishSessionDistillation } from './archivist-publish';
import type { HookContext } from './context';

/**
 * The archivist's debounce (docs/adr/0032) on real Postgres, Redis and BullMQ, with the real OpenAI
 * SDK against the fake model server: a burst of turns is distilled once, a session's turns survive a
 * worker's death and are distilled once, and a turn with nothing new never reaches the model.
 */
jest.setTimeout(120_000);

const MODEL = 'openai-chat/archivist-small';

describe('archivist debounce', () => {
  let env: TestEnv;
  let llm: FakeLlmServer;
  let queue: Queue;
  const workers: Worker[] = [];
  const connections: ReturnType<typeof createRedis>[] = [];

  beforeAll(async () => {
    env = await createTestEnv();
    llm = await FakeLlmServer.start();
    const connection = createRedis(env.redisUrl);
    connections.push(connection);
    queue = new Queue(QueueName.PostTurn, { connection, prefix: env.queuePrefix });
  });

  afterEach(async () => {
    await Promise.all(workers.splice(0).map((w) => w.close(true)));
    llm.setDefault(undefined);
  });

  afterAll(async () => {
    await queue?.close();
    await Promise.all(connections.map((c) => c.quit()));
    await llm?.close();
    await env?.cleanup();
  });

  const ctx = (deferArchivist?: HookContext['deferArchivist']): HookContext =>
    hookContext(env, {
      models: {
        providers: new ProviderRegistry({
          openaiApiKey: 'sk-test',
          openaiBaseUrl: llm.openaiBaseUrl,
          timeoutMs: 20_000,
        }),
        defaultModel: MODEL,
      },
      deferArchivist: deferArchivist ?? ((j, delayMs) => publishSessionDistillation(queue, j, delayMs)),
    });

  /** A worker running the session distillations on the test's queue, as the hooks worker does. */
  function startWorker(options: { lockDuration?: number; stalledInterval?: number } = {}): Worker {
    const connection = createRedis(env.redisUrl);
    connections.push(connection);
    const worker = new Worker(
      QueueName.PostTurn,
      (job: Job) => consume(Jobs.postTurn, job, (data: PostTurnJob) => runArchivist(ctx(), data)),
      { connection, prefix: env.queuePrefix, ...options },
    );
    workers.push(worker);
    return worker;
  }

  const tenant = (archivist: { idleMs?: number; afterTurns?: number }) =>
    seedTenantSession(
      env.db,
      `t-${newId()}`,
      {},
      { settings: { modelRoutes: { summarization: MODEL }, archivist } },
    );

  async function endedTurn(s: SessionIds, input: string, answer = 'Noted.'): Promise<string> {
    const row = await seedEndedTurn(env.db, s, { status: 'completed', input, answer });
    await env.db.message.createMany({
      data: [transcriptMessage(s, row, 0, 'user', input), transcriptMessage(s, row, 1, 'assistant', answer)],
    });
    return row.id;
  }

  const facts = (title: string): ScriptedReply =>
    scripted.text(JSON.stringify({ facts: [{ title, content: `${title} is a durable fact.` }] }), {
      usage: { input: 500, output: 40 },
      costUsd: 0.002,
    });

  const runs = (s: SessionIds) =>
    env.db.hookRun.findMany({
      where: { tenantId: s.tenantId, hook: 'archivist' },
      orderBy: { createdAt: 'asc' },
    });
  const ledger = (s: SessionIds) =>
    env.db.ledgerEntry.findMany({ where: { tenantId: s.tenantId, key: { startsWith: 'hook:archivist:' } } });
  const memory = (s: SessionIds) => env.db.memoryRecord.findMany({ where: { agentId: s.agentId } });

  async function until(probe: () => Promise<boolean>, what: string): Promise<void> {
    const deadline = Date.now() + 30_000;
    while (!(await probe())) {
      if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
      await new Promise((r) => setTimeout(r, 50));
    }
  }

  it('distils a burst of turns once, after the session has been idle; every turn recorded', async () => {
    const s = await tenant({ idleMs: 1500, afterTurns: 50 });
    const before = llm.requests.length;
    llm.enqueue(facts('Deploy day'));
    startWorker();
    const turns: string[] = [];
    for (let i = 0; i < 6; i++) {
      const id = await endedTurn(s, `Our deploys move to Tuesday, change ${i}.`);
      turns.push(id);
      await expect(runArchivist(ctx(), hookJob('archivist', id, s.tenantId))).resolves.toBe('deferred');
    }
    // Deferred, not distilled: no model call yet.
    expect(llm.requests.length).toBe(before);
    expect((await runs(s)).map((r) => r.status)).toEqual(Array(6).fill('deferred'));
    // Each deferred row carries its session: the session's reads find them by it (ADR 0083).
    expect((await runs(s)).map((r) => r.sessionId)).toEqual(Array(6).fill(s.sessionId));

    await until(async () => (await runs(s)).every((r) => r.status === 'completed'), 'the distillation');
    expect(llm.requests.length - before).toBe(1);
    // The one request carried every turn.
    const prompt = JSON.stringify(llm.requests[before].body);
    for (let i = 0; i < 6; i++) expect(prompt).toContain(`change ${i}`);
    expect((await runs(s)).map((r) => (r.output as { turns: number }).turns)).toEqual(Array(6).fill(6));
    expect(await memory(s)).toHaveLength(1);
    const entries = await ledger(s);
    expect(entries).toHaveLength(1);
    expect(entries[0].turnId).toBe(turns[5]);
    expect(entries[0].costUsd.toFixed()).toBe('0.002');
  });

  it('a turn deferred while the job is delayed still pushes the distillation back: the job fired early defers again', async () => {
    const s = await tenant({ idleMs: 1500, afterTurns: 50 });
    const before = llm.requests.length;
    llm.enqueue(facts('Release train'));
    startWorker();
    const first = await endedTurn(s, 'Our release train leaves on Thursdays.');
    await expect(runArchivist(ctx(), hookJob('archivist', first, s.tenantId))).resolves.toBe('deferred');
    await new Promise((r) => setTimeout(r, 800));
    const second = await endedTurn(s, 'The release train now leaves on Fridays.');
    await expect(runArchivist(ctx(), hookJob('archivist', second, s.tenantId))).resolves.toBe('deferred');
    const deferredAt = Date.now();
    // The second publish was a duplicate of the delayed job (not a replacement): one job for the session.
    const delayed = await queue.getDelayed();
    expect(delayed.filter((j) => (j.data as PostTurnJob).sessionId === s.sessionId)).toHaveLength(1);
    // And a publish with a delay while it waits is not even made (bullmq's key layout as assumed).
    await expect(
      publishSessionDistillation(
        queue,
        { turnId: second, tenantId: s.tenantId, hook: 'archivist', sessionId: s.sessionId },
        1500,
      ),
    ).resolves.toBe(false);

    await until(async () => (await runs(s)).every((r) => r.status === 'completed'), 'the distillation');
    // Not at the first turn's idle time (800 ms after the second): idle since the second turn.
    expect(Date.now() - deferredAt).toBeGreaterThanOrEqual(1500 - ARCHIVIST_IDLE_SLACK_MS - 100);
    expect(llm.requests.length - before).toBe(1);
    const prompt = JSON.stringify(llm.requests[before].body);
    expect(prompt).toContain('Thursdays');
    expect(prompt).toContain('Fridays');
  });

  it('distils at once when afterTurns turns are deferred, without waiting for the idle period', async () => {
    const s = await tenant({ idleMs: 24 * 3600 * 1000, afterTurns: 3 });
    const before = llm.requests.length;
    llm.enqueue(facts('Team size'));
    startWorker();
    for (let i = 0; i < 3; i++) {
      const id = await endedTurn(s, `The team has ${i + 5} engineers.`);
      await runArchivist(ctx(), hookJob('archivist', id, s.tenantId));
    }
    await until(async () => (await runs(s)).every((r) => r.status === 'completed'), 'the distillation');
    expect(llm.requests.length - before).toBe(1);
    expect(await memory(s)).toHaveLength(1);
  });

  it('skips a bare acknowledgement and an agent whose archivist is off, without a model call', async () => {
    const s = await tenant({ idleMs: 1000 });
    const before = llm.requests.length;
    const ack = await endedTurn(s, 'ok thanks!', 'You are welcome.');
    await expect(runArchivist(ctx(), hookJob('archivist', ack, s.tenantId))).resolves.toBe('skipped');
    await env.db.agent.update({ where: { id: s.agentId }, data: { archivist: { mode: 'off' } } });
    const off = await endedTurn(s, 'Our office moved to Lyon.');
    await expect(runArchivist(ctx(), hookJob('archivist', off, s.tenantId))).resolves.toBe('skipped');
    expect((await runs(s)).map((r) => (r.output as { skipped: string }).skipped)).toEqual([
      'nothing_new',
      'archivist_off',
    ]);
    expect(llm.requests.length).toBe(before);
  });

  it('loses no turn when the publish after the deferral fails: the retry publishes again', async () => {
    const s = await tenant({ idleMs: 1000, afterTurns: 1 });
    llm.enqueue(facts('Region'));
    const id = await endedTurn(s, 'We run in eu-west-3.');
    const failing = ctx(() => Promise.reject(new Error('Redis went away')));
    await expect(runArchivist(failing, hookJob('archivist', id, s.tenantId))).rejects.toThrow(
      'Redis went away',
    );
    expect((await runs(s)).map((r) => r.status)).toEqual(['deferred']);
    startWorker();
    // The job's retry finds the turn deferred and publishes its session's distillation.
    await expect(runArchivist(ctx(), hookJob('archivist', id, s.tenantId))).resolves.toBe('already_done');
    await until(async () => (await runs(s))[0].status === 'completed', 'the distillation');
    expect(await memory(s)).toHaveLength(1);
  });

  it('a run that dies before its commit loses no turn, and its late answer distils nothing twice', async () => {
    const s = await tenant({ idleMs: 1000, afterTurns: 2 });
    const before = llm.requests.length;
    // The first request is held until the test answers it: that run has not committed when the other does.
    let answerFirst: (r: ScriptedReply) => void = () => undefined;
    const held = new Promise<ScriptedReply>((resolve) => (answerFirst = resolve));
    let served = 0;
    llm.setDefault(() => (served++ === 0 ? held : facts('Survivor')));

    const turns: string[] = [];
    for (let i = 0; i < 2; i++) {
      turns.push(await endedTurn(s, `Billing runs on day ${i + 1}.`));
      await runArchivist(ctx(), hookJob('archivist', turns[i], s.tenantId));
    }
    // A distillation of the session that stalls in its model call (its worker about to die).
    const stalled = runArchivist(ctx(), {
      ...hookJob('archivist', turns[1], s.tenantId),
      sessionId: s.sessionId,
    });
    await llm.waitForRequests(before + 1);
    expect((await runs(s)).map((r) => r.status)).toEqual(['deferred', 'deferred']);

    // The published job runs meanwhile and distils both turns.
    startWorker();
    await until(async () => (await runs(s)).every((r) => r.status === 'completed'), 'the distillation');
    expect(llm.requests.length - before).toBe(2);
    expect((await memory(s)).map((m) => m.title)).toEqual(['Survivor']);
    expect(await ledger(s)).toHaveLength(1);

    // The stalled run's model answers late: the turns are taken, it keeps nothing but books its call.
    answerFirst(facts('Zombie'));
    await expect(stalled).resolves.toBe('already_done');
    expect((await memory(s)).map((m) => m.title)).toEqual(['Survivor']);
    expect(await ledger(s)).toHaveLength(2);
    expect((await runs(s)).map((r) => (r.output as { facts: number }).facts)).toEqual([1, 1]);
  });
});
