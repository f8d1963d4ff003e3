import { createTestEnv, seedTenantSession, seedTurn, type TestEnv } from '@switchboard/testing';
import { recordClosure } from './closure';

jest.setTimeout(30_000);

/** The closure of an ended turn, recorded once on the turn and in the journal (docs/adr/0031). */
describe('recordClosure', () => {
  let env: TestEnv;

  beforeAll(async () => {
    env = await createTestEnv();
  });

  afterAll(async () => {
    await env?.cleanup();
  });

  it('writes the decision and one turn_closure event, once', async () => {
    const s = await seedTenantSession(env.db, 'closure');
    const turn = await seedTurn(env.db, s, { status: 'failed', completedAt: new Date() });
    const target = { id: turn.id, tenantId: s.tenantId, sessionId: s.sessionId };
    expect(await recordClosure(env.db, target)).toMatchObject({ outcome: 'failed' });
    // A re-run step writes nothing more.
    await recordClosure(env.db, target);
    const row = await env.db.turn.findUniqueOrThrow({ where: { id: turn.id } });
    expect(row.closure).toMatchObject({ outcome: 'failed', runtimePosture: 'awake', workItemId: null });
    const events = await env.db.event.findMany({ where: { sessionId: s.sessionId, type: 'turn_closure' } });
    expect(events).toHaveLength(1);
    expect(events[0]).toMatchObject({ turnId: turn.id, data: { outcome: 'failed' } });
    // Another tenant's turn id finds nothing.
    const other = await seedTenantSession(env.db, 'other');
    expect(await recordClosure(env.db, { ...target, tenantId: other.tenantId })).toBeUndefined();
  });
});
