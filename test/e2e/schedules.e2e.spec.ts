import { Queue } from 'bullmq';
import type IORedis from 'ioredis';
import { QueueName } from '@switchboard/contracts';
import { createRedis } from '@switchboard/queue';
import { createTestEnv, spawnApp, waitFor, type AppProcess, type TestEnv } from '@switchboard/testing';
import { Api, newTenant } from '../support/api';
import { startGateway } from '../support/stack';

jest.setTimeout(90_000);

const ADMIN = 'test-admin-token-0123456789';
/** Long enough for two more fires of an every-second schedule, had it not stopped. */
const QUIET_MS = 2500;
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * Schedules through the public API with two triage worker processes (docs/adr/0020): every fire
 * time of an every-second schedule admits exactly one timer_tick, and pause, resume and delete
 * take effect.
 */
describe('schedules with two triage workers', () => {
  let env: TestEnv;
  let gateway: Awaited<ReturnType<typeof startGateway>>;
  let api: Api;
  let other: Api;
  let agentId: string;
  let connection: IORedis;
  let queue: Queue;
  const workers: AppProcess[] = [];

  beforeAll(async () => {
    env = await createTestEnv();
    gateway = await startGateway(env.config());
    const processEnv = env.processEnv();
    workers.push(
      ...(await Promise.all([spawnApp('triage-worker', processEnv), spawnApp('triage-worker', processEnv)])),
    );
    ({ api } = await newTenant(gateway.url, ADMIN, 'clockwork'));
    ({ api: other } = await newTenant(gateway.url, ADMIN, 'elsewhere'));
    agentId = (await api.post('/v1/agents', { name: 'ticker' })).body.id;
    connection = createRedis(env.redisUrl);
    queue = new Queue(QueueName.Schedules, { connection, prefix: env.queuePrefix });
  });

  afterAll(async () => {
    await Promise.all(workers.map((w) => w.kill('SIGTERM')));
    await queue?.close();
    await connection?.quit();
    await gateway?.close();
    await env?.cleanup();
  });

  /** The fire times of the session's ticks, in order. */
  async function ticks(sessionId: string): Promise<number[]> {
    const rows = await env.db.message.findMany({ where: { sessionId, kind: 'timer_tick' } });
    return rows.map((m) => Date.parse((m.metadata as { fireTime: string }).fireTime)).sort((a, b) => a - b);
  }

  it('admits exactly one timer_tick per fire time; pause, resume and delete take effect', async () => {
    const created = await api.post('/v1/schedules', {
      agentId,
      cron: '* * * * * *',
      timezone: 'Europe/Paris',
      payload: { text: 'tick', metadata: { job: 'heartbeat' } },
    });
    expect(created.status).toBe(201);
    const schedule = created.body;
    expect(schedule).toMatchObject({ agentId, cron: '* * * * * *', enabled: true, lastRunAt: null });
    expect(Date.parse(schedule.nextRunAt)).toBeGreaterThan(Date.now() - 1000);

    // Six fires: the first five seconds from the first fire are the window counted.
    await waitFor(async () => (await ticks(schedule.sessionId)).length >= 6, {
      what: 'six ticks',
      timeoutMs: 20_000,
    });
    const fired = await ticks(schedule.sessionId);
    const first = fired[0];
    expect(fired.filter((t) => t < first + 5000)).toEqual([0, 1, 2, 3, 4].map((i) => first + i * 1000));
    // Every fire time once, none skipped, across both workers.
    fired.forEach((t, i) => expect(t).toBe(first + i * 1000));
    const [message] = await env.db.message.findMany({
      where: { sessionId: schedule.sessionId, kind: 'timer_tick' },
      take: 1,
    });
    expect(message).toMatchObject({
      origin: { kind: 'timer', scheduleId: schedule.id },
      authorityClass: 'runtime_instruction',
      trust: 'trusted_system',
      body: { type: 'text', text: 'tick' },
      metadata: expect.objectContaining({ job: 'heartbeat', scheduleId: schedule.id }),
    });
    expect((await api.get(`/v1/schedules/${schedule.id}`)).body.lastRunAt).not.toBeNull();

    // Pause: no fire after the pause is admitted.
    const paused = await api.patch(`/v1/schedules/${schedule.id}`, { enabled: false });
    const pausedAt = Date.now();
    expect(paused.status).toBe(200);
    expect(paused.body).toMatchObject({ enabled: false, nextRunAt: null });
    await sleep(QUIET_MS);
    const whilePaused = await ticks(schedule.sessionId);
    expect(whilePaused.every((t) => t <= pausedAt)).toBe(true);

    // Resume: ticks again, from now on (no catch-up of the paused seconds).
    const resumedFrom = Date.now();
    expect((await api.patch(`/v1/schedules/${schedule.id}`, { enabled: true })).status).toBe(200);
    await waitFor(async () => (await ticks(schedule.sessionId)).length >= whilePaused.length + 2, {
      what: 'ticks after resume',
    });
    const resumed = (await ticks(schedule.sessionId)).slice(whilePaused.length);
    expect(resumed[0]).toBeGreaterThanOrEqual(resumedFrom - 1000);
    expect(new Set(await ticks(schedule.sessionId)).size).toBe((await ticks(schedule.sessionId)).length);

    // Delete: 204, gone, its job scheduler removed, no tick after it.
    expect((await api.delete(`/v1/schedules/${schedule.id}`)).status).toBe(204);
    const deletedAt = Date.now();
    expect((await api.get(`/v1/schedules/${schedule.id}`)).status).toBe(404);
    expect(await queue.getJobScheduler(schedule.id)).toBeUndefined();
    await sleep(QUIET_MS);
    expect((await ticks(schedule.sessionId)).every((t) => t <= deletedAt)).toBe(true);
  });

  it('lists, reads and changes schedules; a given session is used', async () => {
    const session = (await api.post('/v1/sessions', { agentId })).body;
    const a = await api.post('/v1/schedules', {
      agentId,
      sessionId: session.id,
      cron: '0 9 * * 1-5',
      enabled: false,
    });
    expect(a.status).toBe(201);
    expect(a.body).toMatchObject({
      sessionId: session.id,
      timezone: 'UTC',
      enabled: false,
      nextRunAt: null,
      payload: {},
    });
    expect(await queue.getJobScheduler(a.body.id)).toBeUndefined();
    const b = await api.post('/v1/schedules', { agentId, cron: '30 8 * * *', timezone: 'America/New_York' });
    expect(b.status).toBe(201);
    expect(await queue.getJobScheduler(b.body.id)).toMatchObject({
      pattern: '30 8 * * *',
      tz: 'America/New_York',
    });

    const changed = await api.patch(`/v1/schedules/${b.body.id}`, {
      cron: '0 12 * * *',
      payload: { text: 'noon' },
    });
    expect(changed.status).toBe(200);
    expect(changed.body).toMatchObject({
      cron: '0 12 * * *',
      timezone: 'America/New_York',
      payload: { text: 'noon' },
    });
    expect(await queue.getJobScheduler(b.body.id)).toMatchObject({ pattern: '0 12 * * *' });

    const page1 = await api.get('/v1/schedules?limit=1');
    expect(page1.status).toBe(200);
    expect(page1.body.data).toHaveLength(1);
    const page2 = await api.get(`/v1/schedules?limit=50&cursor=${page1.body.nextCursor}`);
    const ids = [...page1.body.data, ...page2.body.data].map((s: { id: string }) => s.id);
    expect(ids).toEqual(expect.arrayContaining([a.body.id, b.body.id]));
    expect(new Set(ids).size).toBe(ids.length);
  });

  it('refuses a bad cron or time zone with 400 and writes nothing', async () => {
    const before = await env.db.schedule.count();
    const cases = [
      { agentId, cron: 'every second' },
      { agentId, cron: '61 * * * *' },
      { agentId, cron: '* * * * * * *' },
      { agentId, cron: '' },
      { agentId, cron: '0 0 31 2 *' },
      { agentId, cron: '* * * * *', timezone: 'Mars/Olympus' },
      { agentId, cron: '* * * * *', timezone: '+01:00' },
      { agentId, cron: '* * * * *', payload: { text: 'x', extra: 1 } },
      { agentId, cron: '* * * * *', unknown: true },
    ];
    for (const body of cases) {
      const res = await api.post('/v1/schedules', body);
      expect({ body, status: res.status, code: res.body.error?.code }).toEqual({
        body,
        status: 400,
        code: 'validation_failed',
      });
    }
    expect(await env.db.schedule.count()).toBe(before);
    expect(
      (await api.patch(`/v1/schedules/${(await api.get('/v1/schedules')).body.data[0].id}`, {})).status,
    ).toBe(400);
  });

  it('holds schedules to SCHEDULE_MIN_INTERVAL_MS', async () => {
    const strict = await startGateway(env.config({ SCHEDULE_MIN_INTERVAL_MS: '60000' }));
    try {
      const client = new Api(strict.url, api.key);
      const tooOften = await client.post('/v1/schedules', { agentId, cron: '*/10 * * * * *' });
      expect(tooOften.status).toBe(400);
      expect(tooOften.body.error.message).toMatch(/at most once per 60000 ms/);
      expect((await client.post('/v1/schedules', { agentId, cron: '* * * * *' })).status).toBe(201);
      const existing = (await client.get('/v1/schedules')).body.data[0].id;
      expect((await client.patch(`/v1/schedules/${existing}`, { cron: '* * * * * *' })).status).toBe(400);
    } finally {
      await strict.close();
    }
  });

  it('is a 404 from another tenant, and for an agent or session of another tenant', async () => {
    const mine = (await api.post('/v1/schedules', { agentId, cron: '0 0 * * *' })).body;
    expect((await other.get(`/v1/schedules/${mine.id}`)).status).toBe(404);
    expect((await other.patch(`/v1/schedules/${mine.id}`, { enabled: false })).status).toBe(404);
    expect((await other.delete(`/v1/schedules/${mine.id}`)).status).toBe(404);
    expect((await other.get('/v1/schedules')).body.data).toEqual([]);
    expect((await other.post('/v1/schedules', { agentId, cron: '0 0 * * *' })).status).toBe(404);
    const otherAgent = (await other.post('/v1/agents', { name: 'theirs' })).body.id;
    expect(
      (
        await other.post('/v1/schedules', {
          agentId: otherAgent,
          sessionId: mine.sessionId,
          cron: '0 0 * * *',
        })
      ).status,
    ).toBe(404);
    expect((await api.get('/v1/schedules/not-a-uuid')).status).toBe(404);
    expect((await api.get(`/v1/schedules/${mine.id}`)).body.enabled).toBe(true);
  });
});
