import { createTestEnv, seedSession, seedTenant, type TestEnv } from '@switchboard/testing';
import { SchedulesRepository } from './schedules-repository';

/** `SchedulesRepository` on real Postgres: a schedule's own session, and a change racing a delete. */
jest.setTimeout(120_000);

describe('SchedulesRepository', () => {
  let env: TestEnv;
  let tenantId: string;
  let agentId: string;
  let schedules: SchedulesRepository;

  beforeAll(async () => {
    env = await createTestEnv();
    ({ tenantId, agentId } = await seedTenant(env.db, 'schedules-repository'));
    schedules = new SchedulesRepository(env.db);
  });

  afterAll(async () => {
    await env?.cleanup();
  });

  const spec = { cron: '0 * * * *', timezone: 'UTC', payload: { note: 'x' }, enabled: true };

  it('gives a schedule without a session one of its own, created with it', async () => {
    const row = await schedules.create({ tenantId, agentId, ...spec });
    const session = await env.db.session.findUniqueOrThrow({ where: { id: row.sessionId! } });
    expect(session).toMatchObject({
      tenantId,
      agentId,
      title: `schedule ${row.id}`,
      metadata: { scheduleId: row.id },
    });
  });

  it('keeps the session it names', async () => {
    const sessionId = await seedSession(env.db, tenantId, agentId);
    const before = await env.db.session.count();
    const row = await schedules.create({ tenantId, agentId, sessionId, ...spec });
    expect(row.sessionId).toBe(sessionId);
    expect(await env.db.session.count()).toBe(before);
  });

  it('a change after a delete finds nothing; a delete of another tenant’s schedule deletes nothing', async () => {
    const row = await schedules.create({ tenantId, agentId, ...spec });
    const other = await seedTenant(env.db, 'other');
    expect(await schedules.delete(other.tenantId, row.id)).toBe(false);
    expect(await schedules.update(row.id, { cron: '5 * * * *', timezone: 'UTC' })).toMatchObject({
      cron: '5 * * * *',
      payload: { note: 'x' },
    });
    expect(await schedules.delete(tenantId, row.id)).toBe(true);
    expect(await schedules.update(row.id, { cron: '0 * * * *', timezone: 'UTC' })).toBeUndefined();
  });
});
