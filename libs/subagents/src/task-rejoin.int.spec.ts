import type { Queue } from 'bullmq';
import type { Admission } from '@switchboard/admission';
import { cancelCause, newId } from '@switchboard/contracts';
import {
  operatorPrompt,
  seedSession,
  seedTenant,
  startAdmission,
  type AdmissionFixture,
  type TestEnv,
} from '@switchboard/testing';
import { TaskService } from './tasks';

/**
 * Task results rejoin their parent (docs/adr/0057) against real Postgres and BullMQ: an async child
 * that ends with nobody waiting becomes exactly one `task_result` message in its parent's session —
 * once its spawning turn has ended, whichever of the child's report, the parent's end and the sweep
 * comes first or twice — queued behind a running turn, never for a result the parent already took,
 * and kept until a paused tenant resumes.
 */
jest.setTimeout(120_000);

describe('task results rejoin the parent', () => {
  let f: AdmissionFixture;
  let env: TestEnv;
  let turnsQueue: Queue;
  let admission: Admission;
  let svc: TaskService;

  beforeAll(async () => {
    f = await startAdmission();
    ({ env, turnsQueue, admission } = f);
    svc = new TaskService(env.db, { turnsQueue, logger: f.logger });
  });

  afterAll(() => f?.close());

  /** A tenant, a parent agent with a running turn in its session, and a child agent. */
  async function parent() {
    const { tenantId, agentId } = await seedTenant(env.db, 'rejoin', { model: 'openai-chat/m' });
    const sessionId = await seedSession(env.db, tenantId, agentId);
    const { turnId } = await admission.admit(operatorPrompt({ tenantId, sessionId }, 'delegate'));
    await env.db
      .$executeRaw`UPDATE turns SET status = 'running', started_at = now() WHERE id = ${turnId}::uuid`;
    const childId = newId();
    await env.db.agent.create({
      data: { id: childId, tenantId, name: 'helper', model: 'openai-chat/m', tier: 'worker' },
    });
    return { tenantId, sessionId, turnId, agentId, child: { id: childId, name: 'helper' } };
  }
  type Parent = Awaited<ReturnType<typeof parent>>;

  const spawn = async (p: Parent, callId: string, blocking = false) =>
    (
      await svc.spawn({
        tenantId: p.tenantId,
        parentTurnId: p.turnId,
        parentSessionId: p.sessionId,
        parentTaskId: null,
        callId,
        agent: p.child,
        depth: 1,
        task: `task of ${callId}`,
        blocking,
      })
    ).task;

  /** A turn's end as its terminal statement writes it. */
  const endTurn = (turnId: string, status = 'completed') =>
    env.db.$executeRaw`
      UPDATE turns SET status = ${status}, stop_reason = ${status === 'completed' ? 'final_answer' : status},
        final_text = 'done', completed_at = now()
      WHERE id = ${turnId}::uuid`;
  /** The child's end as its terminal statement writes it (its task with it). */
  const endChild = async (taskId: string, childTurnId: string) => {
    await endTurn(childTurnId);
    await env.db.$executeRaw`
      UPDATE tasks SET status = 'completed', completed_at = now(), output = '42 sheep',
        handback = '{"status":"completed","result":"42 sheep"}'::jsonb
      WHERE id = ${taskId}::uuid`;
  };

  const taskResults = (sessionId: string) =>
    env.db.message.findMany({ where: { sessionId, kind: 'task_result' }, orderBy: { createdAt: 'asc' } });
  const turnsOf = (sessionId: string) =>
    env.db.turn.findMany({ where: { sessionId }, orderBy: { seq: 'asc' } });

  it('an async child ending after its parent’s turn ended: one task_result message and one queued parent turn', async () => {
    const p = await parent();
    const task = await spawn(p, 'c1');
    await endTurn(p.turnId);
    await endChild(task.id, task.childTurnId!);
    await svc.childEnded(task.childTurnId!);

    const [message] = await taskResults(p.sessionId);
    expect(message).toMatchObject({
      kind: 'task_result',
      origin: { kind: 'task', taskId: task.id },
      trust: 'trusted_system',
      authorityClass: 'runtime_instruction',
      deliverySurface: 'task_rejoin',
      admissionContext: 'runtime_owned',
      taskId: task.id,
      idempotencyKey: `task_result:${task.id}`,
      correlationId: p.turnId,
      causationId: task.childTurnId,
    });
    const body = message.body as { type: string; title: string; text: string };
    expect(body.type).toBe('brief');
    expect(JSON.parse(body.text)).toEqual({
      task_id: task.id,
      agent: 'helper',
      status: 'completed',
      handback: { status: 'completed', result: '42 sheep' },
    });
    const turns = await turnsOf(p.sessionId);
    expect(turns).toHaveLength(2);
    expect(turns[1]).toMatchObject({ inputMessageId: message.id, status: 'queued', seq: 2 });
    expect(await turnsQueue.getJob(turns[1].id)).toBeDefined();
    expect(await svc.get(p.tenantId, task.id)).toMatchObject({
      rejoin: 'task_result',
      rejoinMessageId: message.id,
      rejoinTurnId: turns[1].id,
    });

    // Every other path finds it rejoined: a redelivered child job, the parent's end step, the sweep.
    await svc.childEnded(task.childTurnId!);
    expect(await svc.rejoinSession(p.sessionId)).toBe(0);
    expect(await svc.reportDue()).toBe(0);
    expect(await taskResults(p.sessionId)).toHaveLength(1);
    expect(await turnsOf(p.sessionId)).toHaveLength(2);
  });

  it('a child ending while its spawning turn runs waits for that turn’s end, then queues behind the session’s running turn', async () => {
    const p = await parent();
    const task = await spawn(p, 'c1');
    await endChild(task.id, task.childTurnId!);
    await svc.childEnded(task.childTurnId!);
    // The spawning turn may still take it (wait_subagent, list_subagents): nothing yet, also from the sweep.
    expect(await taskResults(p.sessionId)).toHaveLength(0);
    expect(await svc.reportDue()).toBe(0);

    // The spawning turn ends while an operator's next message already runs in the session.
    await endTurn(p.turnId);
    const next = await admission.admit(operatorPrompt(p, 'and another thing'));
    await env.db.$executeRaw`UPDATE turns SET status = 'running' WHERE id = ${next.turnId}::uuid`;
    expect(await svc.rejoinSession(p.sessionId)).toBe(1);
    const turns = await turnsOf(p.sessionId);
    expect(turns.map((t) => t.status)).toEqual(['completed', 'running', 'queued']);
    expect(turns[2].inputMessageId).toBe((await taskResults(p.sessionId))[0].id);
    expect(await svc.rejoinSession(p.sessionId)).toBe(0);
  });

  it('no task_result when a parent turn waits for it or a call already answered with it', async () => {
    const p = await parent();
    const waited = await spawn(p, 'c1', true);
    const seen = await spawn(p, 'c2');
    await endChild(waited.id, waited.childTurnId!);
    await endChild(seen.id, seen.childTurnId!);
    await svc.childEnded(waited.childTurnId!);
    // wait_subagent on the ended task (or list_subagents) answered the spawning turn with it.
    await svc.markSeen([seen.id]);
    await svc.childEnded(seen.childTurnId!);
    await endTurn(p.turnId);
    expect(await svc.rejoinSession(p.sessionId)).toBe(0);
    expect(await svc.reportDue()).toBe(0);
    expect(await taskResults(p.sessionId)).toHaveLength(0);
    expect((await svc.get(p.tenantId, waited.id))?.rejoin).toBe('waiting_turn');
    expect((await svc.get(p.tenantId, seen.id))?.rejoin).toBe('tool_call');
  });

  it('a spawning turn that was cancelled, or a closed task, gets no task_result', async () => {
    const p = await parent();
    const task = await spawn(p, 'c1');
    const closed = await spawn(p, 'c2');
    await env.db.$executeRaw`UPDATE tasks SET closed_at = now() WHERE id = ${closed.id}::uuid`;
    await endTurn(p.turnId, 'cancelled');
    await endChild(task.id, task.childTurnId!);
    await endChild(closed.id, closed.childTurnId!);
    await svc.childEnded(task.childTurnId!);
    await svc.childEnded(closed.childTurnId!);
    expect(await svc.reportDue()).toBe(0);
    expect(await taskResults(p.sessionId)).toHaveLength(0);
    expect((await svc.get(p.tenantId, task.id))?.rejoin).toBe('skipped');
  });

  it('a worker killed between the child’s end and its report: the sweep admits exactly one', async () => {
    const p = await parent();
    const task = await spawn(p, 'c1');
    await endTurn(p.turnId);
    // The child's terminal statement committed; its worker died before childEnded.
    await endChild(task.id, task.childTurnId!);
    const sweeps = await Promise.all([svc.reportDue(), svc.reportDue(), svc.childEnded(task.childTurnId!)]);
    expect(sweeps.filter((n) => typeof n === 'number').length).toBe(2);
    expect(await taskResults(p.sessionId)).toHaveLength(1);
    expect(await env.db.event.count({ where: { sessionId: p.sessionId, type: 'subagent_completed' } })).toBe(
      1,
    );
    expect(await turnsOf(p.sessionId)).toHaveLength(2);
    expect(await svc.reportDue()).toBe(0);
  });

  it('a paused tenant admits nothing: the result stays due and rejoins after the resume', async () => {
    const p = await parent();
    const task = await spawn(p, 'c1');
    await endTurn(p.turnId);
    await env.db.tenant.update({ where: { id: p.tenantId }, data: { killSwitch: true } });
    await endChild(task.id, task.childTurnId!);
    await svc.childEnded(task.childTurnId!);
    expect(await taskResults(p.sessionId)).toHaveLength(0);
    expect((await svc.get(p.tenantId, task.id))?.rejoin).toBeNull();
    await env.db.tenant.update({ where: { id: p.tenantId }, data: { killSwitch: false } });
    expect(await svc.reportDue()).toBeGreaterThanOrEqual(1);
    expect(await taskResults(p.sessionId)).toHaveLength(1);
  });

  it('stop: another tenant’s task is not found, an ended one is a conflict; nothing is audited', async () => {
    const p = await parent();
    const task = await spawn(p, 'c1');
    const other = await parent();
    const cause = cancelCause('api_cancel', 'no longer needed');
    expect(await svc.stop(other.tenantId, task.id, cause, 'api_key:x')).toEqual({ kind: 'not_found' });
    await endChild(task.id, task.childTurnId!);
    expect(await svc.stop(p.tenantId, task.id, cause, 'api_key:x')).toEqual({ kind: 'conflict' });
    expect(await env.db.auditEvent.count({ where: { tenantId: p.tenantId, action: 'task.cancelled' } })).toBe(
      0,
    );
  });
});
