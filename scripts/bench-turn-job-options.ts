/**
 * Redis commands per `turns` job by job options (docs/adr/0080), counted by Redis itself (`INFO
 * commandstats`, Lua-internal calls included): the job options before ADR 0080 (priority, completed
 * jobs kept a day) against after (no priority, removed at completion), alternately, on a Redis of
 * its own. Each job is added and completed by a worker that does nothing, one at a time (the queue
 * runs dry after every job, as on a harness that keeps up), so only BullMQ's own work is counted.
 *
 *   redis-server --port 6391 --save "" --appendonly no --daemonize yes
 *   REDIS_URL=redis://127.0.0.1:6391 npm run bench:turn-job-options -- [--jobs 300] [--reps 2]
 *
 * Commandstats are server-wide: run it against a Redis nobody else uses.
 */
import { randomUUID } from 'node:crypto';
import { parseArgs } from 'node:util';
import { Queue, QueueEvents, Worker, type JobsOptions } from 'bullmq';
import { Redis } from 'ioredis';
import { commandStats, statsDelta } from './bench-redis-stats';

const { values } = parseArgs({
  options: { jobs: { type: 'string', default: '300' }, reps: { type: 'string', default: '2' } },
});
const url = process.env.REDIS_URL ?? 'redis://127.0.0.1:6391';
const jobs = Number(values.jobs);

const VARIANTS: Record<string, JobsOptions> = {
  'before (priority 3, kept a day)': { priority: 3, removeOnComplete: { age: 24 * 3600 } },
  'after (no priority, removed)': { removeOnComplete: true },
};

async function run(name: string, opts: JobsOptions): Promise<Record<string, number>> {
  const connection = new Redis(url, { maxRetriesPerRequest: null });
  const prefix = `bench-tjo-${randomUUID().slice(0, 8)}`;
  const queue = new Queue('turns', { connection, prefix });
  const events = new QueueEvents('turns', {
    connection: new Redis(url, { maxRetriesPerRequest: null }),
    prefix,
  });
  const worker = new Worker('turns', async () => undefined, { connection, prefix, concurrency: 1 });
  await Promise.all([queue.waitUntilReady(), worker.waitUntilReady(), events.waitUntilReady()]);
  // Warm-up: the scripts loaded, the queue's meta written.
  const warm = await queue.add('turns', {}, { ...opts, jobId: randomUUID(), attempts: 5 });
  await warm.waitUntilFinished(events);
  await events.close();
  const before = await commandStats(url);
  for (let i = 0; i < jobs; i++) {
    const id = randomUUID();
    const done = new Promise<void>((resolve) => {
      const on = (job: { id?: string }) => {
        if (job.id !== id) return;
        worker.off('completed', on);
        resolve();
      };
      worker.on('completed', on);
    });
    await queue.add('turns', { turnId: id }, { ...opts, jobId: id, attempts: 5 });
    await done;
  }
  const after = await commandStats(url);
  await worker.close();
  await queue.obliterate({ force: true });
  await queue.close();
  await connection.quit();
  const delta = statsDelta(before, after);
  delete delta.info;
  const perJob = Object.fromEntries(
    Object.entries(delta)
      .map(([k, v]) => [k, Number((v / jobs).toFixed(2))] as const)
      .filter(([, v]) => v >= 0.05)
      .sort((a, b) => b[1] - a[1]),
  );
  const total = Object.values(delta).reduce((a, b) => a + b, 0) / jobs;
  console.log(`${name}: ${total.toFixed(1)} commands per job`, JSON.stringify(perJob));
  return perJob;
}

async function main(): Promise<void> {
  for (let rep = 0; rep < Number(values.reps); rep++) {
    for (const [name, opts] of Object.entries(VARIANTS)) await run(name, opts);
  }
}

void main().then(
  () => process.exit(0),
  (err: unknown) => {
    console.error(err);
    process.exit(1);
  },
);
