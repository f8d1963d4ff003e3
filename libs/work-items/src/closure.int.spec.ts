import { newId } from '@switchboard/contracts';
import { createTestEnv, seedTenantSession, seedTurn, type TestEnv } from '@switchboard/testing';
import { recordClosure } from './closure';

jest.setTimeout(120_000);

/** The closure of an ended turn, recorded once on the turn and in the journal (docs/adr/0031). */
describe('recordClosure', () => {
  let env: TestEnv;

  beforeAll(async () => {
    env = await createTestEnv();
  });

  afterAll(async () => {
    await env?.cleanup();
  });

  it('writes the decision on the turn, and no event for a plain answer', async () => {
    const s = await seedTenantSession(env.db, 'plain');
    const turn = await seedTurn(env.db, s, { status: 'completed', completedAt: new Date() });
    expect(
      await recordClosure(env.db, { id: turn.id, tenantId: s.tenantId, sessionId: s.sessionId }),
    ).toEqual({ closure: expect.objectContaining({ outcome: 'completed' }), hasWork: false });
    expect((await env.db.turn.findUniqueOrThrow({ where: { id: turn.id } })).closure).toMatchObject({
      outcome: 'completed',
    });
    expect(await env.db.event.count({ where: { sessionId: s.sessionId } })).toBe(0);
  });

  it('a failed or cancelled turn of an agent without work is failed, awake', async () => {
    const s = await seedTenantSession(env.db, 'plain-failed');
    for (const status of ['failed', 'cancelled'] as const) {
      const turn = await seedTurn(env.db, s, { status, completedAt: new Date() });
      const target = { id: turn.id, tenantId: s.tenantId, sessionId: s.sessionId };
      expect(await recordClosure(env.db, target)).toEqual({
        closure: { outcome: 'failed', workItemId: null, runtimePosture: 'awake' },
        hasWork: false,
      });
      // Recorded once: a re-run finds it there and keeps it.
      await recordClosure(env.db, target);
      expect((await env.db.turn.findUniqueOrThrow({ where: { id: turn.id } })).closure).toEqual({
        outcome: 'failed',
        workItemId: null,
        runtimePosture: 'awake',
      });
    }
  });

  it('the one-statement path is not taken for a paused agent or one with open work', async () => {
    const paused = await seedTenantSession(env.db, 'paused');
    await env.db.agent.update({ where: { id: paused.agentId }, data: { lifecycle: 'paused' } });
    const t1 = await seedTurn(env.db, paused, { status: 'completed', completedAt: new Date() });
    expect(
      await recordClosure(env.db, { id: t1.id, tenantId: paused.tenantId, sessionId: paused.sessionId }),
    ).toEqual({
      closure: expect.objectContaining({ outcome: 'completed', runtimePosture: 'paused' }),
      hasWork: false,
    });

    const busy = await seedTenantSession(env.db, 'busy');
    await env.db.workItem.create({
      data: {
        id: newId(),
        tenantId: busy.tenantId,
        agentId: busy.agentId,
        objective: 'y',
        createdBy: 'operator',
      },
    });
    const t2 = await seedTurn(env.db, busy, { status: 'completed', completedAt: new Date() });
    // An unbound turn of an agent with runnable queued work: continuable, and a pass is asked for.
    expect(
      await recordClosure(env.db, { id: t2.id, tenantId: busy.tenantId, sessionId: busy.sessionId }),
    ).toMatchObject({ closure: { outcome: 'continuable', workSignal: { status: 'queued' } }, hasWork: true });
  });

  it('writes the decision and one turn_closure event, once', async () => {
    const s = await seedTenantSession(env.db, 'closure');
    const item = newId();
    await env.db.workItem.create({
      data: {
        id: item,
        tenantId: s.tenantId,
        agentId: s.agentId,
        objective: 'x',
        createdBy: 'operator',
        blockedBy: 'ci',
      },
    });
    const turn = await seedTurn(env.db, s, {
      status: 'completed',
      completedAt: new Date(),
      workItemId: item,
    });
    const target = { id: turn.id, tenantId: s.tenantId, sessionId: s.sessionId };
    expect(await recordClosure(env.db, target)).toMatchObject({
      closure: { outcome: 'waiting', waitingReason: 'awaiting_external_change', workItemId: item },
      // The agent's open (blocked) item: the activation step asks for a pass.
      hasWork: true,
    });
    // A re-run step writes nothing more.
    await recordClosure(env.db, target);
    const row = await env.db.turn.findUniqueOrThrow({ where: { id: turn.id } });
    expect(row.closure).toMatchObject({ outcome: 'waiting', runtimePosture: 'awake', workItemId: item });
    const events = await env.db.event.findMany({ where: { sessionId: s.sessionId, type: 'turn_closure' } });
    expect(events).toHaveLength(1);
    expect(events[0]).toMatchObject({ turnId: turn.id, data: { outcome: 'waiting' } });
    // Another tenant's turn id finds nothing.
    const other = await seedTenantSession(env.db, 'other');
    expect(await recordClosure(env.db, { ...target, tenantId: other.tenantId })).toBeUndefined();
  });
});
