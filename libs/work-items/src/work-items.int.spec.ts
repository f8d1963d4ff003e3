import { newId } from '@switchboard/contracts';
import { poolOf } from '@switchboard/database';
import { sqlDbFor } from '@switchboard/store';
import {
  createTestEnv,
  seedTenantSession,
  seedTurn,
  type SessionIds,
  type TestEnv,
} from '@switchboard/testing';
import { ToolError, ToolRegistry, type ToolContext } from '@switchboard/tools';
import { renderWorkItems, workItemContext } from './projection';
import { WorkItemStore } from './store';
import { workItemTools } from './tools';

jest.setTimeout(120_000);

/** Work items on a real Postgres: the store's views, the four tools' seed 002 rules, the projection. */
describe('work items', () => {
  let env: TestEnv;
  let store: WorkItemStore;
  let registry: ToolRegistry;
  let s: SessionIds;
  let other: SessionIds;

  beforeAll(async () => {
    env = await createTestEnv();
    store = new WorkItemStore(sqlDbFor(poolOf(env.db), 'test'), 60_000);
    registry = new ToolRegistry(workItemTools(store));
    s = await seedTenantSession(env.db, 'worker');
    other = await seedTenantSession(env.db, 'other');
  });

  afterAll(async () => {
    await env?.cleanup();
  });

  const ctx = (over: Partial<ToolContext> = {}): ToolContext => ({
    tenantId: s.tenantId,
    agentId: s.agentId,
    sessionId: s.sessionId,
    turnId: newId(),
    callId: 'c1',
    idempotencyKey: newId(),
    signal: new AbortController().signal,
    resumed: false,
    writeGate: { isOpen: () => true },
    roundText: '',
    ...over,
  });

  async function call(name: string, args: unknown, c = ctx()): Promise<Record<string, unknown>> {
    const tool = registry.get(name)!;
    const parsed = tool.schema.parse(args);
    return (await tool.execute(parsed, c)) as Record<string, unknown>;
  }

  async function refusal(name: string, args: unknown, c = ctx()): Promise<ToolError> {
    const err = await call(name, args, c).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(ToolError);
    return err as ToolError;
  }

  it('creates, picks, updates and completes with the same-round text as the report', async () => {
    const created = await call('create_work_item', {
      objective: 'Ship the report',
      todo_list: [{ text: 'draft', state: 'pending' }],
    });
    expect(created).toMatchObject({
      state: 'open',
      plan_status: 'ready',
      current: false,
      readiness: 'runnable',
    });
    const id = created.work_item_id as string;

    expect(await call('pick_work_item', { work_item_id: id })).toMatchObject({ current: true });
    const agent = await env.db.agent.findUniqueOrThrow({ where: { id: s.agentId } });
    expect(agent.currentWorkItemId).toBe(id);

    // A full snapshot replaces the list; other fields stay.
    const updated = await call('update_work_item', {
      work_item_id: id,
      todo_list: [
        { text: 'draft', state: 'completed' },
        { text: 'send', state: 'in_progress' },
      ],
    });
    expect(updated).toMatchObject({
      objective: 'Ship the report',
      todo_list: [{ state: 'completed' }, { state: 'in_progress' }],
    });

    const turnId = newId();
    const done = await call(
      'complete_work_item',
      { work_item_id: id },
      ctx({ turnId, roundText: '  Sent the report to finance.  ' }),
    );
    expect(done).toMatchObject({ state: 'completed', completion_report: true, current: false });
    expect(done.warning).toBeUndefined();
    const row = await store.find(s.tenantId, s.agentId, id);
    expect(row).toMatchObject({
      resultSummary: 'Sent the report to finance.',
      closedBy: 'agent',
      closedTurnId: turnId,
    });
    // Focus let go.
    expect((await env.db.agent.findUniqueOrThrow({ where: { id: s.agentId } })).currentWorkItemId).toBeNull();
    // The same turn's call again (a re-run after a crash) answers the same; another turn is refused.
    expect(
      await call('complete_work_item', { work_item_id: id }, ctx({ turnId, roundText: 'x' })),
    ).toMatchObject({
      state: 'completed',
    });
    expect((await refusal('complete_work_item', { work_item_id: id })).kind).toBe('work_item_closed');
    expect((await refusal('update_work_item', { work_item_id: id, objective: 'again' })).kind).toBe(
      'work_item_closed',
    );
    expect((await refusal('pick_work_item', { work_item_id: id })).kind).toBe('work_item_closed');
  });

  it('completing without same-round text records no report and warns', async () => {
    const { work_item_id } = await call('create_work_item', { objective: 'Quiet one' });
    const done = await call('complete_work_item', { work_item_id }, ctx({ roundText: '   ' }));
    expect(done).toMatchObject({
      state: 'completed',
      completion_report: false,
      warning: { kind: 'missing_completion_report' },
    });
    expect((await store.find(s.tenantId, s.agentId, work_item_id as string))?.resultSummary).toBeNull();
  });

  it('a re-run create finds the item its first run made', async () => {
    const key = newId();
    const a = await call('create_work_item', { objective: 'Once' }, ctx({ idempotencyKey: key }));
    const b = await call('create_work_item', { objective: 'Once' }, ctx({ idempotencyKey: key }));
    expect(b.work_item_id).toBe(a.work_item_id);
    expect(await env.db.workItem.count({ where: { tenantId: s.tenantId, objective: 'Once' } })).toBe(1);
  });

  it('sets a blocker with its recheck, keeps it across other updates, clears both', async () => {
    const { work_item_id: id } = await call('create_work_item', { objective: 'Wait for CI' });
    const before = Date.now();
    const blocked = await call('update_work_item', {
      work_item_id: id,
      blocked_by: 'CI run 42',
      recheck_after: 5000,
    });
    expect(blocked).toMatchObject({ blocked_by: 'CI run 42', readiness: 'blocked' });
    const at = Date.parse(blocked.recheck_at as string);
    expect(at).toBeGreaterThanOrEqual(before + 4900);
    expect(at).toBeLessThanOrEqual(Date.now() + 5100);
    // Another field: the deadline stays.
    expect(await call('update_work_item', { work_item_id: id, plan_status: 'draft' })).toMatchObject({
      recheck_at: blocked.recheck_at,
    });
    // No recheck_after: the default (60 s here).
    const dflt = await call('update_work_item', { work_item_id: id, blocked_by: 'CI run 43' });
    expect(Date.parse(dflt.recheck_at as string)).toBeGreaterThan(Date.now() + 50_000);
    const cleared = await call('update_work_item', { work_item_id: id, blocked_by: null });
    expect(cleared).toMatchObject({ blocked_by: null, recheck_at: null, readiness: 'runnable' });
    // recheck_after without a blocker is a bad argument.
    const tool = registry.get('update_work_item')!;
    expect(tool.schema.safeParse({ work_item_id: id, recheck_after: 10 }).success).toBe(false);
    expect(tool.schema.safeParse({ work_item_id: id, blocked_by: null, recheck_after: 10 }).success).toBe(
      false,
    );
    expect(
      tool.schema.safeParse({ work_item_id: id, todo_list: [{ text: 'x', state: 'done' }] }).success,
    ).toBe(false);
  });

  it("never reaches another tenant's or agent's item", async () => {
    const foreign = await store.create({
      tenantId: other.tenantId,
      agentId: other.agentId,
      objective: 'theirs',
      createdBy: 'operator',
    });
    for (const [name, args] of [
      ['pick_work_item', { work_item_id: foreign!.id }],
      ['update_work_item', { work_item_id: foreign!.id, objective: 'mine' }],
      ['complete_work_item', { work_item_id: foreign!.id }],
    ] as const) {
      expect((await refusal(name, args)).kind).toBe('not_found');
    }
    expect(await store.find(s.tenantId, s.agentId, foreign!.id)).toBeUndefined();
    expect(
      await store.create({
        tenantId: s.tenantId,
        agentId: other.agentId,
        objective: 'x',
        createdBy: 'operator',
      }),
    ).toBeUndefined();
    expect((await store.find(other.tenantId, other.agentId, foreign!.id))?.objective).toBe('theirs');
  });

  it('derives the views and pages in insertion order', async () => {
    const t = await seedTenantSession(env.db, 'views');
    const mk = (objective: string, planStatus?: 'needs_input') =>
      store.create({
        tenantId: t.tenantId,
        agentId: t.agentId,
        objective,
        planStatus,
        createdBy: 'operator',
      });
    const a = (await mk('a'))!;
    const b = (await mk('b'))!;
    const c = (await mk('c', 'needs_input'))!;
    const d = (await mk('d'))!;
    const e = (await mk('e'))!;
    await store.pick(t.tenantId, t.agentId, a.id);
    await store.update(t.tenantId, t.agentId, d.id, { blockedBy: 'x' });
    await store.close(t.tenantId, t.agentId, e.id, { state: 'cancelled', by: 'operator', report: null });
    const view = async (v: Parameters<WorkItemStore['page']>[0]['view']) =>
      (await store.page({ tenantId: t.tenantId, agentId: t.agentId, view: v }, 50)).rows.map(
        (w) => w.objective,
      );
    expect(await view('all')).toEqual(['a', 'b', 'c', 'd', 'e']);
    expect(await view('current')).toEqual(['a']);
    expect(await view('queued')).toEqual(['b', 'c']);
    expect(await view('runnable')).toEqual(['a', 'b']);
    expect(await view('blocked')).toEqual(['d']);
    expect(await view('waiting_for_operator')).toEqual(['c']);
    expect(await view('completed')).toEqual(['e']);
    const first = await store.page({ tenantId: t.tenantId, agentId: t.agentId, view: 'all' }, 2);
    expect(first.more).toBe(true);
    const next = await store.page(
      { tenantId: t.tenantId, agentId: t.agentId, view: 'all', afterPosition: first.rows[1].position },
      2,
    );
    expect(next.rows.map((w) => w.id)).toEqual([c.id, d.id]);
    expect(b.current).toBe(false);
  });

  it('projects the queue as turn content and binds the turn to the current item once', async () => {
    const t = await seedTenantSession(env.db, 'projection');
    const source = workItemContext(store);
    const turn = await seedTurn(env.db, t, { status: 'running' });
    const q = {
      tenantId: t.tenantId,
      agentId: t.agentId,
      sessionId: t.sessionId,
      turnId: turn.id,
      input: '',
    };
    // No work items: the message-driven path, nothing projected, nothing bound.
    expect(await source(q)).toBeNull();
    const cur = (await store.create({
      tenantId: t.tenantId,
      agentId: t.agentId,
      objective: 'Current thing',
      plan: 'step one',
      todoList: [{ text: 'x', state: 'in_progress' }],
      createdBy: 'operator',
    }))!;
    const queued = (await store.create({
      tenantId: t.tenantId,
      agentId: t.agentId,
      objective: 'Next thing',
      createdBy: 'operator',
    }))!;
    const done = (await store.create({
      tenantId: t.tenantId,
      agentId: t.agentId,
      objective: 'Old thing',
      createdBy: 'operator',
    }))!;
    await store.close(t.tenantId, t.agentId, done.id, {
      state: 'completed',
      by: 'agent',
      report: 'It shipped.',
    });
    await store.pick(t.tenantId, t.agentId, cur.id);
    const text = (await source(q))!;
    expect(text).toContain(`- id: ${cur.id}`);
    expect(text).toContain('plan: step one');
    expect(text).toContain('[>] x');
    expect(text).toContain(`- ${queued.id}: Next thing`);
    expect(text).toContain(`- ${done.id}: Old thing — report: It shipped.`);
    expect((await env.db.turn.findUniqueOrThrow({ where: { id: turn.id } })).workItemId).toBe(cur.id);
    // A later run (focus moved meanwhile) keeps the first binding.
    await store.pick(t.tenantId, t.agentId, queued.id);
    await source(q);
    expect((await env.db.turn.findUniqueOrThrow({ where: { id: turn.id } })).workItemId).toBe(cur.id);
  });

  it('renders blockers with a due recheck first', () => {
    const now = new Date('2026-01-01T00:00:00Z');
    const row = {
      id: newId(),
      tenantId: s.tenantId,
      agentId: s.agentId,
      position: '1',
      objective: 'Blocked one',
      state: 'open' as const,
      planStatus: 'ready' as const,
      plan: null,
      todoList: [],
      blockedBy: 'vendor reply',
      recheckAt: new Date('2025-12-31T23:00:00Z'),
      recheckConsumedAt: null,
      resultSummary: null,
      createdBy: 'operator' as const,
      createdTurnId: null,
      closedBy: null,
      closedTurnId: null,
      createdAt: now,
      updatedAt: now,
      completedAt: null,
      current: false,
    };
    const text = renderWorkItems([row], now)!;
    expect(text).toContain('Blocked, recheck due:');
    expect(text).toContain('recheck due now');
    expect(renderWorkItems([], now)).toBeNull();
  });
});
