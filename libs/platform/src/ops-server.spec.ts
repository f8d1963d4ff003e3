import type { INestApplicationContext } from '@nestjs/common';
import { readiness } from './ops-server';
import { workerReadinessChecks } from './process';
import { DB, REDIS } from './tokens';
import { QueueWorkers } from './worker';

describe('readiness', () => {
  const up = { name: 'postgres', check: () => Promise.resolve() };

  it('is ok when every check passes', async () => {
    await expect(readiness([up, { name: 'redis', check: () => Promise.resolve('PONG') }])).resolves.toEqual({
      status: 'ok',
      info: { postgres: { status: 'up' }, redis: { status: 'up' } },
      error: {},
      details: { postgres: { status: 'up' }, redis: { status: 'up' } },
    });
  });

  it('names the check that failed, with its message', async () => {
    const result = await readiness([
      up,
      { name: 'redis', check: () => Promise.reject(new Error('ECONNREFUSED')) },
    ]);
    expect(result.status).toBe('error');
    expect(result.error).toEqual({ redis: { status: 'down', message: 'ECONNREFUSED' } });
    expect(result.info).toEqual({ postgres: { status: 'up' } });
  });

  it('counts a check that does not answer in time as down', async () => {
    const started = performance.now();
    const result = await readiness([{ name: 'postgres', check: () => new Promise(() => undefined) }], {
      timeoutMs: 50,
    });
    expect(result.details).toEqual({ postgres: { status: 'down', message: 'timeout' } });
    expect(performance.now() - started).toBeLessThan(2000);
  });

  it('says shutting_down while the process drains, even with every dependency up', async () => {
    await expect(readiness([up], { stopping: true })).resolves.toMatchObject({ status: 'shutting_down' });
  });
});

describe('workerReadinessChecks', () => {
  /** A process with one Postgres, one Redis and the given queue workers (BullMQ's running flag). */
  function processWith(workers: Record<string, { running: boolean; closing?: boolean }>) {
    const registry = new QueueWorkers();
    for (const [queue, w] of Object.entries(workers))
      registry.add(queue, {
        isRunning: () => w.running,
        closing: w.closing ? Promise.resolve() : undefined,
      } as never);
    const db = { $queryRaw: () => Promise.resolve([{ '?column?': 1 }]) };
    const redis = { ping: () => Promise.resolve('PONG') };
    const byToken = new Map<unknown, unknown>([
      [DB, db],
      [REDIS, redis],
      [QueueWorkers, registry],
    ]);
    return { get: (token: unknown) => byToken.get(token) } as unknown as INestApplicationContext;
  }

  it('is ready with Postgres, Redis and every queue worker running', async () => {
    const checks = workerReadinessChecks(
      processWith({ triage: { running: true }, schedules: { running: true } }),
    );
    expect(checks.map((c) => c.name)).toEqual(['postgres', 'redis', 'queue:triage', 'queue:schedules']);
    await expect(readiness(checks)).resolves.toMatchObject({ status: 'ok' });
  });

  it('names the queue whose worker stopped running or is closing', async () => {
    const checks = workerReadinessChecks(
      processWith({
        triage: { running: true },
        schedules: { running: false },
        'post-turn': { running: true, closing: true },
      }),
    );
    const result = await readiness(checks);
    expect(result.status).toBe('error');
    expect(result.error).toEqual({
      'queue:schedules': { status: 'down', message: 'worker not running' },
      'queue:post-turn': { status: 'down', message: 'worker not running' },
    });
  });
});
