import { Queue } from 'bullmq';
import { QueueName } from '@switchboard/contracts';
import { createRedis } from '@switchboard/queue';
import { createTestEnv, spawnApp, waitFor, type AppProcess, type TestEnv } from '@switchboard/testing';

jest.setTimeout(90_000);

const INTERVAL_MS = 1000;

/**
 * The reconciler is one BullMQ job scheduler for the cluster: however many harness
 * processes run, one reconcile job runs per interval (not one per process).
 */
describe('the reconcile schedule with two harness processes', () => {
  let env: TestEnv;
  let queue: Queue;
  const workers: AppProcess[] = [];

  beforeAll(async () => {
    env = await createTestEnv();
    queue = new Queue(QueueName.Maintenance, {
      connection: createRedis(env.redisUrl),
      prefix: env.queuePrefix,
    });
  });

  afterAll(async () => {
    await Promise.all(workers.map((w) => w.kill('SIGTERM')));
    await queue?.close();
    await (await queue?.client)?.quit().catch(() => undefined);
    await env?.cleanup();
  });

  it('runs one reconcile per interval across both processes', async () => {
    const processEnv = env.processEnv({ RECONCILE_INTERVAL_MS: String(INTERVAL_MS) });
    workers.push(
      ...(await Promise.all([
        spawnApp('harness-worker', processEnv),
        spawnApp('harness-worker', processEnv),
      ])),
    );
    const ran = () =>
      workers.flatMap((w) =>
        w
          .output()
          .split('\n')
          .filter((l) => l.includes('"maintenance task ran"')),
      );

    const from = Date.now();
    await waitFor(() => ran().length >= 6, { what: 'six reconcile runs', timeoutMs: 30_000 });
    const elapsed = Date.now() - from;

    // Two processes each on their own timer would run twice per interval.
    expect(ran().length).toBeLessThanOrEqual(Math.floor(elapsed / INTERVAL_MS) + 2);
    // One job per slot of the schedule, consecutive slots one interval apart.
    const jobs = await queue.getJobs(['completed']);
    const slots = jobs
      .filter((j) => j.name === 'reconcile')
      .map((j) => Number(/^repeat:reconcile:(\d+)$/.exec(String(j.id))?.[1]))
      .sort((a, b) => a - b);
    expect(slots.length).toBeGreaterThanOrEqual(6);
    expect(new Set(slots).size).toBe(slots.length);
    for (let i = 1; i < slots.length; i++) expect(slots[i] - slots[i - 1]).toBe(INTERVAL_MS);
  });
});
