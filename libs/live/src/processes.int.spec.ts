import { randomBytes } from 'node:crypto';
import { createLogger } from '@switchboard/observability';
import { createRedis, type RedisConnection } from '@switchboard/queue';
import { startTestRedisCluster, testRedisUrl, waitFor, type TestRedisCluster } from '@switchboard/testing';
import { liveProcesses, ProcessHeartbeat, type ProcessLoad } from './processes';

jest.setTimeout(60_000);

const logger = createLogger({ service: 'test', level: 'silent' });

/**
 * Heartbeats and the live list on one Redis and on a Redis Cluster (docs/adr/0043: the prefix's
 * hash tag keeps the hash and the sorted set in one slot, so the scripts run there). Skips the
 * cluster part when `scripts/redis-cluster.sh` cannot start one here.
 */
function suite(connect: () => RedisConnection, prefix: () => string) {
  let redis: RedisConnection;
  const beats: ProcessHeartbeat[] = [];

  beforeAll(() => {
    redis = connect();
  });

  afterAll(async () => {
    await Promise.all(beats.map((b) => b.stop()));
    redis?.disconnect();
  });

  const heartbeat = (processId: string, ttlMs: number, load: () => ProcessLoad) => {
    const beat = new ProcessHeartbeat({
      redis,
      prefix: prefix(),
      kind: 'harness',
      processId,
      hostname: 'host-a',
      pid: 42,
      intervalMs: 60_000,
      ttlMs,
      load,
      logger,
    });
    beats.push(beat);
    return beat;
  };

  it('lists a process while its beat is fresh, with its latest load, and forgets it after its TTL', async () => {
    let inFlight = 1;
    const load = () => ({
      turnsInFlight: inFlight,
      permitsInUse: inFlight,
      permitLimit: 8,
      maxConcurrency: 8,
    });
    const lasting = heartbeat('p-lasting', 60_000, load);
    const brief = heartbeat('p-brief', 300, load);
    await lasting.beat();
    await brief.beat();
    const both = await liveProcesses(redis, prefix(), 'harness');
    expect(both.map((p) => p.processId).sort()).toEqual(['p-brief', 'p-lasting']);
    expect(both[0]).toMatchObject({ hostname: 'host-a', pid: 42, turnsInFlight: 1, permitLimit: 8 });
    expect(Date.parse(both[0].lastSeenAt)).not.toBeNaN();

    inFlight = 3;
    await lasting.beat();
    // The brief one's beat expires (Redis' clock); the other stays with its new load.
    const left = await waitFor(
      async () => {
        const now = await liveProcesses(redis, prefix(), 'harness');
        return now.length === 1 ? now : undefined;
      },
      { what: 'the brief process to expire' },
    );
    expect(left).toEqual([expect.objectContaining({ processId: 'p-lasting', turnsInFlight: 3 })]);

    await lasting.stop();
    expect(await liveProcesses(redis, prefix(), 'harness')).toEqual([]);
  });
}

describe('process heartbeats on one Redis', () => {
  const prefix = `sbt_proc_${randomBytes(4).toString('hex')}`;
  suite(
    () => createRedis(testRedisUrl()),
    () => prefix,
  );
});

const started = startTestRedisCluster();
if ('skip' in started)
  console.warn(`libs/live/src/processes.int.spec.ts cluster part skipped: ${started.skip}`);

('skip' in started ? describe.skip : describe)('process heartbeats on a Redis Cluster', () => {
  const cluster = started as TestRedisCluster;
  const prefix = `{sbt_proc_${randomBytes(4).toString('hex')}}`;
  suite(
    () => createRedis({ url: 'redis://127.0.0.1:6379', clusterNodes: cluster.nodes }),
    () => prefix,
  );
  // After the suite's own afterAll, which disconnects its client.
  afterAll(() => cluster.stop());
});
