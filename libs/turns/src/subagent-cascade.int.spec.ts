import type { Admission, TurnSteering } from '@switchboard/admission';
import { cancelCause, newId, stoppedParentCause } from '@switchboard/contracts';
import { poolOf } from '@switchboard/database';
import { TurnEngine } from '@switchboard/engine';
import { Metrics } from '@switchboard/observability';
import {
  ProviderRegistry,
  type ModelProvider,
  type ModelRequest,
  type ModelResponse,
} from '@switchboard/providers';
import { readTurn, SqlDb } from '@switchboard/store';
import { ToolRegistry } from '@switchboard/tools';
import {
  operatorPrompt,
  seedSession,
  seedTenant,
  cancelLeftovers,
  startHarness,
  type HarnessFixture,
  type TestEnv,
} from '@switchboard/testing';
import { TurnRunner } from './runner';

/**
 * A parent turn and its sub-agents' child turns (issue 11, docs/adr/0025) on real Postgres and
 * BullMQ: cancelling the parent cancels its children's turns and tasks recursively, and the
 * children's cost rolls up into the parent, counting against its maxUsd when it resumes.
 */
jest.setTimeout(120_000);

class Model implements ModelProvider {
  readonly name = 'openai-chat';
  readonly requests: ModelRequest[] = [];
  async complete(request: ModelRequest): Promise<ModelResponse> {
    this.requests.push(request);
    return {
      text: 'done',
      toolCalls: [],
      usage: { inputTokens: 10, outputTokens: 5, cachedTokens: 0 },
      finishReason: 'stop',
    };
  }
}

describe('sub-agent cancel cascade and cost roll-up', () => {
  let h: HarnessFixture;
  let env: TestEnv;
  let admission: Admission;
  let control: TurnSteering;
  let sqlDb: SqlDb;
  const model = new Model();

  beforeAll(async () => {
    h = await startHarness();
    ({ env, admission, control } = h);
    sqlDb = new SqlDb(poolOf(env.db));
  });

  afterAll(() => h?.close());

  const admit = async (tenantId: string, sessionId: string, text = 'go') =>
    (await admission.admit(operatorPrompt({ tenantId, sessionId }, text))).turnId;

  /** A child turn in its own session, linked to `parentTurnId` by a task, with what it has cost. */
  async function child(
    ids: { tenantId: string; agentId: string },
    parentTurnId: string,
    o: { status?: string; costUsd?: string; depth?: number } = {},
  ) {
    const sessionId = await seedSession(env.db, ids.tenantId, ids.agentId);
    const turnId = await admit(ids.tenantId, sessionId, 'child task');
    await env.db.turn.update({
      where: { id: turnId },
      data: {
        parentTurnId,
        status: o.status ?? 'queued',
        costUsd: o.costUsd ?? '0',
        ...(o.status === 'running' ? { startedAt: new Date() } : {}),
      },
    });
    const taskId = newId();
    await env.db.task.create({
      data: {
        id: taskId,
        tenantId: ids.tenantId,
        agentId: ids.agentId,
        parentTurnId,
        sessionId,
        childTurnId: turnId,
        depth: o.depth ?? 1,
        status: o.status === 'running' ? 'running' : 'pending',
      },
    });
    await env.db.turn.update({ where: { id: turnId }, data: { taskId } });
    return { sessionId, turnId, taskId };
  }

  const turn = (id: string) => env.db.turn.findUniqueOrThrow({ where: { id } });
  const task = (id: string) => env.db.task.findUniqueOrThrow({ where: { id } });

  it('cancelling a parent cancels its running and queued children and their children, not others', async () => {
    const ids = await seedTenant(env.db, 'cascade');
    const sessionId = await seedSession(env.db, ids.tenantId, ids.agentId);
    const parent = await admit(ids.tenantId, sessionId);
    // The parent waits for its children (no worker holds it).
    await env.db.turn.update({
      where: { id: parent },
      data: { status: 'awaiting_subagent', startedAt: new Date() },
    });
    const running = await child(ids, parent, { status: 'running' });
    const queued = await child(ids, parent);
    const grandchild = await child(ids, running.turnId, { depth: 2 });
    const done = await child(ids, parent, { status: 'completed' });
    // Another parent's child is left alone.
    const otherParent = await admit(ids.tenantId, await seedSession(env.db, ids.tenantId, ids.agentId));
    const stranger = await child(ids, otherParent);

    const r = await control.cancel(ids.tenantId, parent, cancelCause('operator', 'stop everything'));
    expect(r).toEqual({ status: 'cancelled', changed: true });
    expect((await turn(parent)).status).toBe('cancelled');
    // The queued child and the grandchild end at once, with their tasks.
    for (const c of [queued, grandchild]) {
      // The parent's reason, the note naming the parent (docs/adr/0055).
      expect(await turn(c.turnId)).toMatchObject({
        status: 'cancelled',
        cancelReason: 'operator',
        cancelNote: expect.stringContaining(`parent turn`),
      });
      expect((await task(c.taskId)).status).toBe('cancelled');
    }
    // The running child: its cancel is recorded for its worker (which ends it and its task).
    expect((await turn(running.turnId)).cancelRequestedAt).not.toBeNull();
    expect(await turn(running.turnId)).toMatchObject({
      cancelReason: 'operator',
      cancelNote: `parent turn ${parent} was cancelled`,
    });
    // An ended child and another parent's child are untouched.
    expect((await turn(done.turnId)).cancelRequestedAt).toBeNull();
    expect(await turn(stranger.turnId)).toMatchObject({ status: 'queued', cancelRequestedAt: null });
    expect((await task(stranger.taskId)).status).toBe('pending');
    // A child's cancel is journaled on its own session.
    const cancelled = await env.db.event.findMany({
      where: { turnId: queued.turnId, type: 'turn_cancelled' },
    });
    expect(cancelled).toHaveLength(1);
  });

  it('a repeated cancel of a cancelled parent finishes a cascade cut short', async () => {
    const ids = await seedTenant(env.db, 'retry');
    const sessionId = await seedSession(env.db, ids.tenantId, ids.agentId);
    const parent = await admit(ids.tenantId, sessionId);
    // As if the gateway died after cancelling the parent but before its children.
    await env.db.turn.update({
      where: { id: parent },
      data: { status: 'cancelled', completedAt: new Date() },
    });
    const orphan = await child(ids, parent);
    expect(await control.cancel(ids.tenantId, parent, cancelCause('api_cancel'))).toEqual({
      status: 'cancelled',
      changed: false,
    });
    expect((await turn(orphan.turnId)).status).toBe('cancelled');
    expect((await task(orphan.taskId)).status).toBe('cancelled');
  });

  it('the maintenance sweep cancels children left open under a cancelled parent, once', async () => {
    const ids = await seedTenant(env.db, 'sweep');
    const sessionId = await seedSession(env.db, ids.tenantId, ids.agentId);
    const parent = await admit(ids.tenantId, sessionId);
    // The parent was cancelled and the gateway died before its children were.
    await env.db.turn.update({
      where: { id: parent },
      data: { status: 'cancelled', completedAt: new Date(), cancelReason: 'superseded' },
    });
    const queued = await child(ids, parent);
    const running = await child(ids, parent, { status: 'running' });
    const grandchild = await child(ids, queued.turnId, { depth: 2 });
    // A live parent's child is no orphan.
    const live = await admit(ids.tenantId, await seedSession(env.db, ids.tenantId, ids.agentId));
    const kept = await child(ids, live);

    expect(await control.cancelOrphans()).toBe(2);
    expect((await turn(queued.turnId)).status).toBe('cancelled');
    expect((await task(queued.taskId)).status).toBe('cancelled');
    expect((await turn(grandchild.turnId)).status).toBe('cancelled');
    expect(await turn(running.turnId)).toMatchObject({
      cancelReason: 'superseded',
      cancelNote: `parent turn ${parent} was cancelled`,
    });
    expect((await turn(grandchild.turnId)).cancelReason).toBe('superseded');
    expect((await turn(kept.turnId)).status).toBe('queued');
    // The running child's cancel is already requested: the next sweep has nothing to do.
    expect(await control.cancelOrphans()).toBe(0);
  });

  it('a completed parent’s children are not cancelled by a cancel of the ended parent', async () => {
    const ids = await seedTenant(env.db, 'ended');
    const sessionId = await seedSession(env.db, ids.tenantId, ids.agentId);
    const parent = await admit(ids.tenantId, sessionId);
    await env.db.turn.update({
      where: { id: parent },
      data: { status: 'completed', completedAt: new Date() },
    });
    const async = await child(ids, parent);
    expect(await control.cancel(ids.tenantId, parent, cancelCause('api_cancel'))).toEqual({
      status: 'completed',
      changed: false,
    });
    expect((await turn(async.turnId)).status).toBe('queued');
    // Nor by the sweep: a final answer leaves asynchronous children to run.
    expect(await control.cancelOrphans()).toBe(0);
    expect((await turn(async.turnId)).status).toBe('queued');
  });

  it.each([
    ['deadline', 'deadline', 'its deadline'],
    ['max_usd', 'budget', 'its budget (max_usd)'],
    ['tenant_budget_exhausted', 'budget', 'its budget (tenant_budget_exhausted)'],
  ])(
    'a parent that ended at %s takes its open children with it, reason %s (docs/adr/0055)',
    async (stopReason, reason, what) => {
      const ids = await seedTenant(env.db, `stopped-${stopReason}`);
      const sessionId = await seedSession(env.db, ids.tenantId, ids.agentId);
      const parent = await admit(ids.tenantId, sessionId);
      await env.db.turn.update({
        where: { id: parent },
        data: { status: 'completed', stopReason, completedAt: new Date() },
      });
      const queued = await child(ids, parent);
      const running = await child(ids, parent, { status: 'running' });
      // The runner's finalisation step (cancelChildren), or the sweep after a crash before it.
      const cause = stoppedParentCause(parent, stopReason);
      expect(cause).toBeDefined();
      expect(await control.cancelChildren(ids.tenantId, parent, cause ?? cancelCause('api_cancel'))).toBe(2);
      expect(await turn(queued.turnId)).toMatchObject({
        status: 'cancelled',
        cancelReason: reason,
        cancelNote: `parent turn ${parent} stopped at ${what}`,
      });
      expect((await task(queued.taskId)).status).toBe('cancelled');
      expect(await turn(running.turnId)).toMatchObject({
        cancelRequestedAt: expect.any(Date),
        cancelReason: reason,
      });
      const later = await child(ids, parent);
      expect(await control.cancelOrphans()).toBe(1);
      expect((await turn(later.turnId)).cancelReason).toBe(reason);
    },
  );

  it('rolls the children’s cost (recursively, running ones included) up into the parent', async () => {
    const ids = await seedTenant(env.db, 'rollup');
    const sessionId = await seedSession(env.db, ids.tenantId, ids.agentId);
    const parent = await admit(ids.tenantId, sessionId);
    await env.db.turn.update({ where: { id: parent }, data: { costUsd: '0.1' } });
    const a = await child(ids, parent, { status: 'completed', costUsd: '0.2' });
    await child(ids, parent, { status: 'running', costUsd: '0.3' });
    await child(ids, a.turnId, { status: 'completed', costUsd: '0.05', depth: 2 });
    // As GET /v1/turns/:id reads it: the turn's one statement carries the roll-up.
    expect(await readTurn(sqlDb, ids.tenantId, parent)).toMatchObject({
      childrenCostUsd: '0.55000000',
      totalCostUsd: '0.65000000',
      spawned: true,
    });
    expect(await readTurn(sqlDb, ids.tenantId, a.turnId)).toMatchObject({
      childrenCostUsd: '0.05000000',
      totalCostUsd: '0.25000000',
    });
    // Another tenant sees nothing.
    const other = await seedTenant(env.db, 'other');
    expect(await readTurn(sqlDb, other.tenantId, parent)).toBeUndefined();
  });

  describe('against the parent’s maxUsd', () => {
    // The harness chooses across every tenant (docs/adr/0029): each test starts with nothing runnable.
    beforeEach(() => cancelLeftovers(env.db));

    const runner = () =>
      new TurnRunner({
        ...h.runnerDeps({ turnsQueue: undefined, metrics: new Metrics('rollup'), workerId: 'rollup' }),
        engine: new TurnEngine({ providers: new ProviderRegistry({}, [model]), tools: new ToolRegistry([]) }),
        tools: new ToolRegistry([]),
        defaultModel: 'openai-chat/m',
      });

    async function budgeted(maxUsd: number) {
      const ids = await seedTenant(env.db, 'budget', { model: 'openai-chat/m' });
      await env.db.agent.update({ where: { id: ids.agentId }, data: { budgets: { maxUsd } } });
      await env.db.tenant.update({
        where: { id: ids.tenantId },
        data: { settings: { modelPrices: { 'openai-chat/m': { input: 1, output: 1 } } } },
      });
      const sessionId = await seedSession(env.db, ids.tenantId, ids.agentId);
      const parent = await admit(ids.tenantId, sessionId);
      return { ids, sessionId, parent };
    }

    const run = async (p: { ids: { tenantId: string }; sessionId: string; parent: string }) => {
      expect(
        await runner().handle({
          turnId: p.parent,
          sessionId: p.sessionId,
          tenantId: p.ids.tenantId,
          trace: {},
        }),
      ).toBe('done');
      return turn(p.parent);
    };

    it('stops a parent whose children spent its budget before its next model call', async () => {
      const p = await budgeted(0.5);
      await child(p.ids, p.parent, { status: 'completed', costUsd: '0.3' });
      await child(p.ids, p.parent, { status: 'completed', costUsd: '0.25' });
      const before = model.requests.length;
      const t = await run(p);
      expect(t.stopReason).toBe('max_usd');
      expect(model.requests.length).toBe(before);
    });

    it('runs a parent whose children left budget', async () => {
      const p = await budgeted(0.5);
      await child(p.ids, p.parent, { status: 'completed', costUsd: '0.1' });
      const before = model.requests.length;
      const t = await run(p);
      expect(t).toMatchObject({ status: 'completed', stopReason: expect.not.stringMatching(/max_usd/) });
      expect(model.requests.length).toBe(before + 1);
    });

    it('caps a child turn at the share its spawn wrote on its input message, below its agent’s maxUsd', async () => {
      const run2 = async (share: number | undefined) => {
        const { ids } = await budgeted(5);
        // Only the child turn below is runnable (the seeded parent is not part of this case).
        await cancelLeftovers(env.db);
        const sessionId = await seedSession(env.db, ids.tenantId, ids.agentId);
        const { turnId } = await admission.admit({
          tenantId: ids.tenantId,
          sessionId,
          kind: 'internal_followup',
          origin: { kind: 'system', subsystem: 'subagent' },
          body: { type: 'text', text: 'child task' },
          deliverySurface: 'runtime_system',
          admissionContext: 'runtime_owned',
          metadata: { subagent: { taskId: newId(), ...(share !== undefined ? { maxUsd: share } : {}) } },
        });
        // Its own children spent 0.2: over a 0.1 share, far under its agent's 5.
        await child(ids, turnId, { status: 'completed', costUsd: '0.2', depth: 2 });
        const before = model.requests.length;
        const t = await run({ ids, sessionId, parent: turnId });
        return { stopReason: t.stopReason, requests: model.requests.length - before };
      };
      expect(await run2(0.1)).toEqual({ stopReason: 'max_usd', requests: 0 });
      expect(await run2(undefined)).toEqual({
        stopReason: expect.not.stringMatching(/max_usd/),
        requests: 1,
      });
    });
  });
});
