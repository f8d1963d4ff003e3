import { QueueName } from '@switchboard/contracts';
import { poolOf } from '@switchboard/database';
import { sqlDbFor } from '@switchboard/store';
import { seedTenant, startAdmission, type AdmissionFixture } from '@switchboard/testing';
import { activateIdleAgents, activateWork, ensureWorkSession, type ActivationDeps } from './activation';
import { setPosture } from './lifecycle';
import { WorkItemStore } from './store';

jest.setTimeout(120_000);

/** Activation on real Postgres and Redis (docs/adr/0031): one tick at a time, held, asleep, rechecks. */
describe('work activation', () => {
  let f: AdmissionFixture;
  let deps: ActivationDeps;
  let store: WorkItemStore;

  beforeAll(async () => {
    f = await startAdmission();
    deps = {
      db: f.env.db,
      admission: f.admission,
      logger: f.logger,
      workQueue: f.queue(QueueName.Work),
      maxIdleTicks: 3,
    };
    store = new WorkItemStore(sqlDbFor(poolOf(f.env.db), 'test'), 60_000);
  });

  afterAll(async () => {
    await f?.close();
  });

  const ticks = (agentId: string) => f.env.db.message.findMany({ where: { agentId, kind: 'system_tick' } });

  it('makes one work session however many activations race for it', async () => {
    const { tenantId, agentId } = await seedTenant(f.env.db, 'sessions');
    const ids = await Promise.all(
      Array.from({ length: 6 }, () => ensureWorkSession(f.env.db, tenantId, agentId)),
    );
    expect(new Set(ids).size).toBe(1);
    expect(await f.env.db.session.count({ where: { agentId } })).toBe(1);
  });

  it('admits one tick for runnable queued work, however many passes race; none while it is unfinished', async () => {
    const { tenantId, agentId } = await seedTenant(f.env.db, 'race');
    await store.create({ tenantId, agentId, objective: 'do it', createdBy: 'operator' });
    const outcomes = await Promise.all(
      Array.from({ length: 5 }, () =>
        activateWork(deps, { tenantId, agentId }).catch((e: Error) => e.message),
      ),
    );
    const [tick] = await ticks(agentId);
    expect(await ticks(agentId)).toHaveLength(1);
    expect(tick).toMatchObject({
      origin: { kind: 'system', subsystem: 'work_items' },
      authorityClass: 'runtime_instruction',
      priority: 'normal',
      metadata: { workTick: { reason: 'activate_queued' } },
    });
    expect(
      outcomes.filter((o) => typeof o === 'object' && o.kind === 'admitted').length,
    ).toBeGreaterThanOrEqual(1);
    // Its turn is queued: the session is busy, nothing more.
    expect(await activateWork(deps, { tenantId, agentId })).toEqual({ kind: 'busy' });
  });

  it('holds a paused or stopped agent, and keeps keep-working ticks off a sleeping one', async () => {
    const sql = sqlDbFor(poolOf(f.env.db), 'test');
    const { tenantId, agentId } = await seedTenant(f.env.db, 'held');
    await store.create({ tenantId, agentId, objective: 'do it', createdBy: 'agent' });
    await setPosture(sql, tenantId, agentId, 'stopped', null);
    expect(await activateWork(deps, { tenantId, agentId })).toEqual({ kind: 'held' });
    await setPosture(sql, tenantId, agentId, 'paused', null);
    expect(await activateWork(deps, { tenantId, agentId })).toEqual({ kind: 'held' });
    await setPosture(sql, tenantId, agentId, 'active', null);
    await f.env.db.agent.update({ where: { id: agentId }, data: { asleepAt: new Date() } });
    expect(await activateWork(deps, { tenantId, agentId })).toEqual({ kind: 'asleep' });
    expect(await ticks(agentId)).toHaveLength(0);
  });

  it('a due recheck admits one low-priority tick and is consumed once', async () => {
    const { tenantId, agentId } = await seedTenant(f.env.db, 'recheck');
    const item = (await store.create({ tenantId, agentId, objective: 'wait', createdBy: 'agent' }))!;
    await store.update(tenantId, agentId, item.id, { blockedBy: 'vendor', recheckAfterMs: 1000 });
    expect(await activateWork(deps, { tenantId, agentId })).toEqual({ kind: 'nothing' });
    // Due now.
    await f.env.db.workItem.update({ where: { id: item.id }, data: { recheckAt: new Date(Date.now() - 1) } });
    const out = await activateWork(deps, { tenantId, agentId });
    expect(out).toMatchObject({ kind: 'admitted', reason: 'recheck_due' });
    const [tick] = await ticks(agentId);
    expect(tick).toMatchObject({
      priority: 'background',
      metadata: { workTick: { workItemIds: [item.id] } },
    });
    expect(
      (await f.env.db.workItem.findUniqueOrThrow({ where: { id: item.id } })).recheckConsumedAt,
    ).not.toBeNull();
    // Its turn ended: no second reminder for the same deadline.
    await f.env.db.turn.updateMany({
      where: { agentId },
      data: { status: 'completed', completedAt: new Date() },
    });
    expect(await activateWork(deps, { tenantId, agentId })).toEqual({ kind: 'nothing' });
    expect(await ticks(agentId)).toHaveLength(1);
  });

  it('the sweep finds a timed sleep that ended unwoken, and wakes it once', async () => {
    const { agentId } = await seedTenant(f.env.db, 'sweep-sleep');
    await f.env.db.agent.update({
      where: { id: agentId },
      data: { asleepAt: new Date(Date.now() - 2000), sleepingUntil: new Date(Date.now() - 1000) },
    });
    expect(await activateIdleAgents(deps)).toBeGreaterThanOrEqual(1);
    const [tick] = await ticks(agentId);
    expect(tick).toMatchObject({ metadata: { workTick: { reason: 'sleep_timer' } } });
    // Woken: the tick's turn came after the sleep; a second sweep admits nothing for it.
    await activateIdleAgents(deps);
    expect(await ticks(agentId)).toHaveLength(1);
  });
});
