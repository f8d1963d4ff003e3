import { Worker, type Job, type Queue } from 'bullmq';
import type { Admission } from '@switchboard/admission';
import { newId, QueueName, SCHEDULE_SYNC_ID, type AppError } from '@switchboard/contracts';
import type { Logger } from '@switchboard/observability';
import { createRedis } from '@switchboard/queue';
import {
  seedSession,
  seedTenant,
  startAdmission,
  waitFor,
  type AdmissionFixture,
  type TestEnv,
} from '@switchboard/testing';
import { fireSchedule, fireTimeOf, ScheduleScheduler, tickKey } from './schedules';

/** Schedules on real Postgres and real BullMQ job schedulers (docs/adr/0020). */
jest.setTimeout(120_000);

describe('schedules', () => {
  let f: AdmissionFixture;
  let env: TestEnv;
  let queue: Queue;
  let scheduler: ScheduleScheduler;
  let admission: Admission;
  let logger: Logger;
  let tenantId: string;
  let agentId: string;

  beforeAll(async () => {
    f = await startAdmission();
    ({ env, admission, logger } = f);
    queue = f.queue(QueueName.Schedules);
    scheduler = new ScheduleScheduler(queue, env.db, logger);
    ({ tenantId, agentId } = await seedTenant(env.db, 'schedules'));
  });

  afterAll(() => f?.close());

  async function newSchedule(fields: { cron?: string; enabled?: boolean; payload?: object } = {}) {
    const sessionId = await seedSession(env.db, tenantId, agentId);
    return env.db.schedule.create({
      data: {
        id: newId(),
        tenantId,
        agentId,
        sessionId,
        cron: fields.cron ?? '0 9 * * *',
        timezone: 'Europe/Paris',
        enabled: fields.enabled ?? true,
        payload: fields.payload ?? {},
      },
    });
  }

  const delayedJobIds = async (scheduleId: string) =>
    (await queue.getDelayed())
      .map((j) => String(j.id))
      .filter((id) => id.startsWith(`repeat:${scheduleId}:`));

  it('upserts one job scheduler per schedule, keeps its next fire on a re-upsert, and removes it', async () => {
    const schedule = await newSchedule();
    await scheduler.apply(schedule);
    const created = await queue.getJobScheduler(schedule.id);
    expect(created).toMatchObject({ key: schedule.id, pattern: '0 9 * * *', tz: 'Europe/Paris' });
    const first = await delayedJobIds(schedule.id);
    expect(first).toHaveLength(1);

    // Every process upserts the same scheduler: still one job for the next fire.
    await scheduler.apply(schedule);
    await scheduler.apply(schedule);
    expect(await delayedJobIds(schedule.id)).toEqual(first);

    // The slot is the fire time: 09:00 in Paris.
    const slot = Number(first[0].split(':')[2]);
    expect(
      new Intl.DateTimeFormat('en-GB', { timeZone: 'Europe/Paris', timeStyle: 'short' }).format(slot),
    ).toBe('09:00');

    await scheduler.apply({ ...schedule, enabled: false });
    expect(await queue.getJobScheduler(schedule.id)).toBeUndefined();
    expect(await delayedJobIds(schedule.id)).toEqual([]);
  });

  it('admits one timer_tick per fire time however often the fire runs', async () => {
    const schedule = await newSchedule({ payload: { text: 'daily digest', metadata: { report: 'sales' } } });
    const fireTime = new Date('2026-11-24T08:00:00.000Z');
    const job = { scheduleId: schedule.id, tenantId };
    const deps = { db: env.db, admission, scheduler, logger };

    // Concurrent runs of one fire: one admits; the others replay it or are told it is in flight (the
    // job is retried, and replays).
    const outcomes = await Promise.allSettled([1, 2, 3].map(() => fireSchedule(deps, job, fireTime)));
    const values = outcomes.map((o) => (o.status === 'fulfilled' ? o.value : (o.reason as AppError).code));
    expect(values.filter((v) => v === 'admitted')).toHaveLength(1);
    expect(
      values
        .filter((v) => v !== 'admitted')
        .every((v) => v === 'replayed' || v === 'idempotency_key_in_flight'),
    ).toBe(true);
    expect(await fireSchedule(deps, job, fireTime)).toBe('replayed');
    // A fire retried after the payload changed still stands once.
    await env.db.schedule.update({ where: { id: schedule.id }, data: { payload: { text: 'changed' } } });
    expect(await fireSchedule(deps, job, fireTime)).toBe('replayed');
    // The next fire time is a new tick.
    const next = new Date('2026-11-25T08:00:00.000Z');
    expect(await fireSchedule(deps, job, next)).toBe('admitted');

    const messages = await env.db.message.findMany({
      where: { sessionId: schedule.sessionId!, kind: 'timer_tick' },
      orderBy: { turnSeq: 'asc' },
    });
    expect(messages).toHaveLength(2);
    expect(messages[0]).toMatchObject({
      origin: { kind: 'timer', scheduleId: schedule.id },
      authorityClass: 'runtime_instruction',
      trust: 'trusted_system',
      deliverySurface: 'timer_scheduler',
      admissionContext: 'runtime_owned',
      body: { type: 'text', text: 'daily digest' },
      metadata: { report: 'sales', scheduleId: schedule.id, fireTime: fireTime.toISOString() },
      idempotencyKey: tickKey(schedule.id, fireTime),
    });
    expect(messages[1].body).toEqual({ type: 'text', text: 'changed' });
    const row = await env.db.schedule.findUniqueOrThrow({ where: { id: schedule.id } });
    expect(row.lastRunAt).toEqual(next);
  });

  it('admits nothing for a paused or deleted schedule and drops its stale job scheduler', async () => {
    const paused = await newSchedule();
    await scheduler.apply(paused);
    await env.db.schedule.update({ where: { id: paused.id }, data: { enabled: false } });
    const deps = { db: env.db, admission, scheduler, logger };
    expect(await fireSchedule(deps, { scheduleId: paused.id, tenantId }, new Date())).toBe('skipped');
    expect(await queue.getJobScheduler(paused.id)).toBeUndefined();
    expect(await env.db.message.count({ where: { sessionId: paused.sessionId! } })).toBe(0);

    const deleted = await newSchedule();
    await scheduler.apply(deleted);
    await env.db.schedule.delete({ where: { id: deleted.id } });
    expect(await fireSchedule(deps, { scheduleId: deleted.id, tenantId }, new Date())).toBe('skipped');
    expect(await queue.getJobScheduler(deleted.id)).toBeUndefined();

    // Another tenant's id in the job admits nothing either.
    const other = await newSchedule();
    expect(await fireSchedule(deps, { scheduleId: other.id, tenantId: newId() }, new Date())).toBe('skipped');
  });

  it('skips a fire of a paused tenant (docs/adr/0030): nothing admitted, its job scheduler kept', async () => {
    const own = await seedTenant(env.db, 'paused-schedules');
    const sessionId = await seedSession(env.db, own.tenantId, own.agentId);
    const schedule = await env.db.schedule.create({
      data: { id: newId(), tenantId: own.tenantId, agentId: own.agentId, sessionId, cron: '0 9 * * *' },
    });
    await scheduler.apply(schedule);
    await env.db.tenant.update({ where: { id: own.tenantId }, data: { killSwitch: true } });
    const deps = { db: env.db, admission, scheduler, logger };
    const fireTime = new Date('2026-03-02T09:00:00Z');
    expect(await fireSchedule(deps, { scheduleId: schedule.id, tenantId: own.tenantId }, fireTime)).toBe(
      'skipped',
    );
    expect(await env.db.message.count({ where: { sessionId } })).toBe(0);
    expect((await env.db.schedule.findUniqueOrThrow({ where: { id: schedule.id } })).lastRunAt).toBeNull();
    // The schedule stands: once resumed, its next fire admits.
    expect(await queue.getJobScheduler(schedule.id)).toBeDefined();
    await env.db.tenant.update({ where: { id: own.tenantId }, data: { killSwitch: false } });
    const next = new Date('2026-03-03T09:00:00Z');
    expect(await fireSchedule(deps, { scheduleId: schedule.id, tenantId: own.tenantId }, next)).toBe(
      'admitted',
    );
  });

  it('syncs job schedulers from Postgres: missing ones created, changed ones replaced, stale ones removed', async () => {
    await env.db.schedule.deleteMany({});
    for (const s of await queue.getJobSchedulers()) await queue.removeJobScheduler(s.key);

    const missing = await newSchedule();
    const changed = await newSchedule({ cron: '*/5 * * * *' });
    await scheduler.apply({ ...changed, cron: '0 * * * *' });
    const paused = await newSchedule({ enabled: false });
    await scheduler.apply({ ...paused, enabled: true });
    const orphan = newId();
    await scheduler.apply({ id: orphan, tenantId, cron: '0 0 * * *', timezone: 'UTC', enabled: true });
    await scheduler.scheduleSync(60_000);

    expect(await scheduler.syncAll()).toEqual({ upserted: 2, removed: 2 });
    const keys = (await queue.getJobSchedulers()).map((s) => s.key).sort();
    expect(keys).toEqual([missing.id, changed.id, SCHEDULE_SYNC_ID].sort());
    expect(await queue.getJobScheduler(changed.id)).toMatchObject({ pattern: '*/5 * * * *' });
    // In line: a second pass changes nothing.
    expect(await scheduler.syncAll()).toEqual({ upserted: 0, removed: 0 });
  });

  it('fires an overdue slot once when a worker comes back, then resumes from now (missed-fire policy)', async () => {
    const schedule = await newSchedule({ cron: '* * * * * *' });
    await scheduler.apply({ ...schedule, timezone: 'UTC' });
    // Nobody consumes for three fire times: the downtime this test is about.
    await new Promise((resolve) => setTimeout(resolve, 3200));
    const startedAt = Date.now();
    const fired: number[] = [];
    const worker = new Worker(
      QueueName.Schedules,
      async (job: Job) => {
        if (job.name === 'fire') fired.push(fireTimeOf(job).getTime());
      },
      { connection: createRedis(env.redisUrl), prefix: env.queuePrefix },
    );
    try {
      await waitFor(() => fired.length >= 3, { what: 'three fires after the restart' });
    } finally {
      await worker.close();
      await (await worker.client).quit().catch(() => undefined);
      await scheduler.remove(schedule.id);
    }
    // One catch-up fire for the slot that was due (not one per missed second)...
    expect(fired.filter((t) => t < startedAt - 1000)).toHaveLength(1);
    // ...then one fire per second from the restart on, each slot once.
    expect(new Set(fired).size).toBe(fired.length);
    const after = fired.filter((t) => t >= startedAt - 1000).sort((a, b) => a - b);
    for (let i = 1; i < after.length; i++) expect(after[i] - after[i - 1]).toBe(1000);
  });
});
