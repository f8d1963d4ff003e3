import { randomBytes } from 'node:crypto';
import type { Queue } from 'bullmq';
import type { Admission } from '@switchboard/admission';
import { newId } from '@switchboard/contracts';
import { setContentCipher } from '@switchboard/database';
import { LocalKeyRing, TenantCipher } from '@switchboard/platform';
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
 * Sub-agent tasks against real Postgres and BullMQ (docs/adr/0024): a spawn is idempotent by the
 * parent's turn and call; the parent's resume is found whichever of the child's end and the parent's
 * pause commits first, and reported once; idle child sessions are reused per agent.
 */
jest.setTimeout(120_000);

describe('TaskService', () => {
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
    const { tenantId, agentId } = await seedTenant(env.db, 'tasks', { model: 'openai-chat/m' });
    const sessionId = await seedSession(env.db, tenantId, agentId);
    const { turnId } = await admission.admit(operatorPrompt({ tenantId, sessionId }, 'delegate'));
    await env.db
      .$executeRaw`UPDATE turns SET status = 'running', started_at = now() WHERE id = ${turnId}::uuid`;
    const child = async (name: string) => {
      const id = newId();
      await env.db.agent.create({ data: { id, tenantId, name, model: 'openai-chat/m', tier: 'worker' } });
      return { id, name };
    };
    return { tenantId, sessionId, turnId, child };
  }

  const spawn = (
    p: Awaited<ReturnType<typeof parent>>,
    agent: { id: string; name: string },
    callId: string,
    blocking = true,
  ) =>
    svc.spawn({
      tenantId: p.tenantId,
      parentTurnId: p.turnId,
      parentSessionId: p.sessionId,
      parentTaskId: null,
      callId,
      agent,
      depth: 1,
      task: `task of ${callId}`,
      blocking,
    });

  const events = (sessionId: string, type: string) =>
    env.db.event.findMany({ where: { sessionId, type }, orderBy: { seq: 'asc' } });
  const status = async (turnId: string) =>
    (await env.db.turn.findUniqueOrThrow({ where: { id: turnId } })).status;
  /** The child's end as its terminal statement writes it. */
  const end = async (taskId: string, childTurnId: string) => {
    await env.db.$executeRaw`
      UPDATE turns SET status = 'completed', stop_reason = 'final_answer', final_text = 'done', completed_at = now()
      WHERE id = ${childTurnId}::uuid`;
    await env.db.$executeRaw`
      UPDATE tasks SET status = 'completed', completed_at = now(), output = 'done',
        handback = '{"status":"completed","result":"done"}'::jsonb
      WHERE id = ${taskId}::uuid`;
  };

  it('spawns once per parent call: one task, one child turn, one subagent_spawned', async () => {
    const p = await parent();
    const helper = await p.child('helper');
    const first = await spawn(p, helper, 'c1');
    const again = await spawn(p, helper, 'c1');
    expect(first.created).toBe(true);
    expect(again.created).toBe(false);
    expect(again.task.id).toBe(first.task.id);
    const childTurns = await env.db.turn.findMany({ where: { parentTurnId: p.turnId } });
    expect(childTurns).toHaveLength(1);
    expect(childTurns[0]).toMatchObject({ taskId: first.task.id, status: 'queued' });
    expect(await events(p.sessionId, 'subagent_spawned')).toHaveLength(1);
    // The child's message: a runtime instruction from the sub-agent subsystem, caused by the parent turn.
    const input = await env.db.message.findUniqueOrThrow({ where: { id: childTurns[0].inputMessageId } });
    expect(input).toMatchObject({
      kind: 'internal_followup',
      authorityClass: 'runtime_instruction',
      causationId: p.turnId,
      taskId: first.task.id,
    });
    expect(await turnsQueue.getJob(childTurns[0].id)).toBeDefined();
  });

  it("seals an encrypting tenant's task, question, answer and handback (docs/adr/0067)", async () => {
    const sealed = /^sbe1\./;
    const p = await parent();
    await env.db.tenant.update({
      where: { id: p.tenantId },
      data: { settings: { encryption: { mode: 'on' } } },
    });
    const cipher = new TenantCipher(
      env.db,
      LocalKeyRing.fromSpec(`k1:${randomBytes(32).toString('base64')}`),
    );
    setContentCipher(cipher);
    try {
      const { task } = await spawn(p, await p.child('helper'), 'c1');
      expect(task.input).toEqual({ task: 'task of c1' });
      const raw = async () => env.db.task.findUniqueOrThrow({ where: { id: task.id } });
      expect((await raw()).input).toEqual({ task: expect.stringMatching(sealed) });

      await svc.ask(task, 'call_ask', 'which city?', ['Paris', 'Rome']);
      expect((await raw()).handback).toEqual({
        status: 'awaiting_user',
        question: expect.stringMatching(sealed),
        options: expect.stringMatching(sealed),
        callId: 'call_ask',
      });
      const [asked] = await events(p.sessionId, 'subagent_completed');
      expect((asked.data as { handback: unknown }).handback).toEqual(expect.stringMatching(sealed));
      expect((await svc.get(p.tenantId, task.id))?.handback).toEqual({
        status: 'awaiting_user',
        question: 'which city?',
        options: ['Paris', 'Rome'],
        callId: 'call_ask',
      });

      expect(await svc.answer(p.tenantId, task.id, 'Rome')).toMatchObject({ kind: 'answered' });
      expect((await raw()).input).toEqual({
        task: expect.stringMatching(sealed),
        answers: { call_ask: expect.stringMatching(sealed) },
      });

      // Ended outside the runner with a sealed final text longer than the handback's cut: copied whole.
      const long = 'x'.repeat(5000);
      await env.db.$executeRaw`
        UPDATE turns SET status = 'completed', stop_reason = 'final_answer', completed_at = now(),
          final_text = ${await cipher.sealText(p.tenantId, long)}
        WHERE id = ${task.childTurnId}::uuid`;
      await svc.childEnded(task.childTurnId!);
      const ended = await svc.get(p.tenantId, task.id);
      expect(ended).toMatchObject({ status: 'completed', output: long, handback: { result: long } });
      expect((await raw()).output).toMatch(sealed);
      const reports = await events(p.sessionId, 'subagent_completed');
      expect((reports[1].data as { handback: unknown }).handback).toEqual(expect.stringMatching(sealed));
    } finally {
      setContentCipher(undefined);
    }
  });

  it('spawns nothing for a paused tenant (docs/adr/0030): the spawn’s transaction rolls back whole', async () => {
    const p = await parent();
    const helper = await p.child('helper');
    await env.db.tenant.update({ where: { id: p.tenantId }, data: { killSwitch: true } });
    await expect(spawn(p, helper, 'c1')).rejects.toMatchObject({ code: 'tenant_paused' });
    expect(await env.db.task.count({ where: { parentTurnId: p.turnId } })).toBe(0);
    expect(await env.db.session.count({ where: { parentSessionId: p.sessionId } })).toBe(0);
    expect(await events(p.sessionId, 'subagent_spawned')).toHaveLength(0);
  });

  it('the child ends before the parent’s pause commits: the pause’s own check resumes it, reported once', async () => {
    const p = await parent();
    const { task } = await spawn(p, await p.child('helper'), 'c1');
    await end(task.id, task.childTurnId!);
    // The child's report runs while the parent is still running: journaled, nothing to resume yet.
    await svc.childEnded(task.childTurnId!);
    expect(await status(p.turnId)).toBe('running');
    // The parent's pause commits, then looks again.
    await env.db.$executeRaw`UPDATE turns SET status = 'awaiting_subagent' WHERE id = ${p.turnId}::uuid`;
    await svc.parentWaiting(p.turnId);
    expect(await status(p.turnId)).toBe('queued');
    expect(await turnsQueue.getJob(`${p.turnId}.${task.id}`)).toBeDefined();
    // A repeated report (a redelivered child job, the sweep) changes nothing.
    await svc.childEnded(task.childTurnId!);
    expect(await svc.reportDue()).toBe(0);
    const reports = await events(p.sessionId, 'subagent_completed');
    expect(reports).toHaveLength(1);
    expect(reports[0].data).toMatchObject({
      taskId: task.id,
      status: 'completed',
      handback: { result: 'done' },
    });
  });

  it('the parent pauses first: it waits for every blocking child, and the last one’s end resumes it', async () => {
    const p = await parent();
    const a = (await spawn(p, await p.child('a'), 'c1')).task;
    const b = (await spawn(p, await p.child('b'), 'c2')).task;
    const async = (await spawn(p, await p.child('c'), 'c3', false)).task;
    await env.db.$executeRaw`UPDATE turns SET status = 'awaiting_subagent' WHERE id = ${p.turnId}::uuid`;
    await svc.parentWaiting(p.turnId);
    expect(await status(p.turnId)).toBe('awaiting_subagent');
    await end(a.id, a.childTurnId!);
    await svc.childEnded(a.childTurnId!);
    expect(await status(p.turnId)).toBe('awaiting_subagent');
    // An async child it does not wait for holds nothing.
    expect(async.blocking).toBe(false);
    await end(b.id, b.childTurnId!);
    await svc.childEnded(b.childTurnId!);
    expect(await status(p.turnId)).toBe('queued');
    expect(await turnsQueue.getJob(`${p.turnId}.${b.id}`)).toBeDefined();
  });

  it('the sweep reports a child whose worker died after its end, and a child turn cancelled while queued', async () => {
    const p = await parent();
    const { task } = await spawn(p, await p.child('helper'), 'c1');
    const other = (await spawn(p, await p.child('other'), 'c2')).task;
    await end(task.id, task.childTurnId!);
    // Cancelled outside the runner: the turn ended, the task not yet.
    await env.db.$executeRaw`
      UPDATE turns SET status = 'cancelled', stop_reason = 'cancelled', completed_at = now()
      WHERE id = ${other.childTurnId!}::uuid`;
    expect(await svc.reportDue()).toBe(2);
    const reports = await events(p.sessionId, 'subagent_completed');
    expect(reports.map((e) => (e.data as { status: string }).status).sort()).toEqual([
      'cancelled',
      'completed',
    ]);
    expect(await svc.get(p.tenantId, other.id)).toMatchObject({
      status: 'cancelled',
      handback: { status: 'incomplete', reason: 'cancelled' },
    });
    expect(await svc.reportDue()).toBe(0);
  });

  it('the sweep resumes a parent whose worker died between its pause and its own check', async () => {
    const p = await parent();
    const { task } = await spawn(p, await p.child('helper'), 'c1');
    await end(task.id, task.childTurnId!);
    await svc.childEnded(task.childTurnId!);
    // The wait committed; its worker was killed before parentWaiting.
    await env.db.$executeRaw`UPDATE turns SET status = 'awaiting_subagent' WHERE id = ${p.turnId}::uuid`;
    expect(await svc.reportDue()).toBe(1);
    expect(await status(p.turnId)).toBe('queued');
    expect(await svc.reportDue()).toBe(0);
  });

  it('reuses an idle child session of the same agent; a busy one or another agent gets a new session', async () => {
    const p = await parent();
    const helper = await p.child('helper');
    const first = (await spawn(p, helper, 'c1')).task;
    // Busy (its turn is queued): a second spawn of the same agent gets a session of its own.
    const busy = (await spawn(p, helper, 'c2')).task;
    expect(busy.sessionId).not.toBe(first.sessionId);
    await end(first.id, first.childTurnId!);
    const reused = (await spawn(p, helper, 'c3')).task;
    expect(reused.sessionId).toBe(first.sessionId);
    const seqs = await env.db.turn.findMany({
      where: { sessionId: first.sessionId! },
      orderBy: { seq: 'asc' },
    });
    expect(seqs.map((t) => t.seq)).toEqual([1, 2]);
    const another = (await spawn(p, await p.child('critic'), 'c4')).task;
    expect([first.sessionId, busy.sessionId]).not.toContain(another.sessionId);
  });

  it('answer: 404 for another tenant, conflict unless the child waits for one', async () => {
    const p = await parent();
    const { task } = await spawn(p, await p.child('helper'), 'c1');
    const other = await parent();
    expect(await svc.answer(other.tenantId, task.id, 'x')).toEqual({ kind: 'not_found' });
    expect(await svc.answer(p.tenantId, task.id, 'x')).toEqual({ kind: 'conflict' });
  });
});
