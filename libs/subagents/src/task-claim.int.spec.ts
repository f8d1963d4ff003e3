import { Queue } from 'bullmq';
import type IORedis from 'ioredis';
import { Admission } from '@switchboard/admission';
import { newId } from '@switchboard/contracts';
import { poolOf } from '@switchboard/database';
import { createLogger } from '@switchboard/observability';
import { createRedis } from '@switchboard/queue';
import { SqlDb, TurnStore, type CountSink } from '@switchboard/store';
import { createTestEnv, seedSession, seedTenant, type TestEnv } from '@switchboard/testing';
import { TaskService } from './tasks';

/**
 * A child turn's task is `running` from the claim that starts the child (docs/adr/0024), not from
 * its first checkpoint: `GET /v1/tasks/:id` must not say `pending` while the child's first model call
 * is in flight. The claim stays one statement, and a turn that runs no task touches no task row.
 */
jest.setTimeout(120_000);

describe('the claim of a child turn', () => {
  let env: TestEnv;
  let connection: IORedis;
  let turnsQueue: Queue;
  let admission: Admission;
  let svc: TaskService;
  const logger = createLogger({ service: 'test', level: 'silent' });
  const counted = { transactions: 0, statements: 0 };
  const sink = (key: keyof typeof counted): CountSink => ({
    inc: (_labels, value = 1) => void (counted[key] += value),
  });
  let store: TurnStore;

  beforeAll(async () => {
    env = await createTestEnv();
    connection = createRedis(env.redisUrl);
    turnsQueue = new Queue('turns', { connection, prefix: env.queuePrefix });
    admission = new Admission(env.db, turnsQueue, logger);
    svc = new TaskService(env.db, { turnsQueue, logger });
    store = new TurnStore(
      new SqlDb(poolOf(env.db), {
        component: 'test',
        transactions: sink('transactions'),
        statements: sink('statements'),
      }),
    );
  });

  afterAll(async () => {
    await turnsQueue?.close();
    await connection?.quit();
    await env?.cleanup();
  });

  /** A parent turn (admitted, then claimed as a root turn) that spawns a child task. */
  async function spawned() {
    const { tenantId, agentId } = await seedTenant(env.db, 'task-claim', { model: 'openai-chat/m' });
    const sessionId = await seedSession(env.db, tenantId, agentId);
    const { turnId } = await admission.admit({
      tenantId,
      sessionId,
      kind: 'operator_prompt',
      origin: { kind: 'operator' },
      body: { type: 'text', text: 'delegate' },
      deliverySurface: 'http_public_enqueue',
      admissionContext: 'control_authenticated',
    });
    const childAgent = { id: newId(), name: `helper-${newId().slice(0, 6)}` };
    await env.db.agent.create({ data: { ...childAgent, tenantId, model: 'openai-chat/m', tier: 'worker' } });
    return { tenantId, sessionId, turnId, childAgent };
  }

  const claim = (a: { tenantId: string; sessionId: string; turnId: string }) =>
    store.claimNext({ ...a, owner: 'test', lease: { token: newId(), ms: 60_000 } });

  it('marks the task running with the child turn, in the one statement of the claim', async () => {
    const p = await spawned();
    const root = await claim(p);
    expect(root.next?.turn.id).toBe(p.turnId);
    expect(root.next?.turn.taskId).toBeNull();
    const { task } = await svc.spawn({
      tenantId: p.tenantId,
      parentTurnId: p.turnId,
      parentSessionId: p.sessionId,
      parentTaskId: null,
      callId: 'call_spawn',
      agent: p.childAgent,
      depth: 1,
      task: 'count the sheep',
      blocking: false,
    });
    expect(task.status).toBe('pending');

    counted.transactions = counted.statements = 0;
    const child = await claim({
      tenantId: p.tenantId,
      sessionId: task.sessionId!,
      turnId: task.childTurnId!,
    });
    expect(counted).toEqual({ transactions: 1, statements: 1 });
    expect(child.next?.turn).toMatchObject({ id: task.childTurnId, taskId: task.id, status: 'running' });
    // Before any checkpoint of the child: what GET /v1/tasks/:id reads.
    expect((await svc.get(p.tenantId, task.id))?.status).toBe('running');
    const ended = await env.db.task.update({
      where: { id: task.id },
      data: { status: 'completed', completedAt: new Date() },
    });
    // A later claim of the child (a resumed run) never reopens an ended task.
    await env.db.$executeRaw`UPDATE sessions SET lease_token = NULL WHERE id = ${task.sessionId}::uuid`;
    await env.db.$executeRaw`UPDATE turns SET status = 'queued' WHERE id = ${task.childTurnId}::uuid`;
    const again = await claim({
      tenantId: p.tenantId,
      sessionId: task.sessionId!,
      turnId: task.childTurnId!,
    });
    expect(again.next?.turn.id).toBe(task.childTurnId);
    expect((await svc.get(p.tenantId, task.id))?.status).toBe(ended.status);
  });

  it('touches no task row when the claimed turn runs no task', async () => {
    const p = await spawned();
    const { task } = await svc.spawn({
      tenantId: p.tenantId,
      parentTurnId: p.turnId,
      parentSessionId: p.sessionId,
      parentTaskId: null,
      callId: 'call_spawn',
      agent: p.childAgent,
      depth: 1,
      task: 'count the sheep',
      blocking: false,
    });
    const before = await env.db.task.findUniqueOrThrow({ where: { id: task.id } });
    // The parent (a root turn in its own session) is claimed after the spawn: its task-less claim
    // leaves the child's pending task alone.
    const root = await claim(p);
    expect(root.next?.turn.id).toBe(p.turnId);
    const after = await env.db.task.findUniqueOrThrow({ where: { id: task.id } });
    expect(after).toEqual(before);
  });
});
