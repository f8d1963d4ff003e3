import { randomBytes, randomUUID } from 'node:crypto';
import type { Cluster } from 'ioredis';
import { createLogger } from '@switchboard/observability';
import { createRedis, type RedisTarget } from '@switchboard/queue';
import { startTestRedisCluster, waitFor, type TestRedisCluster } from '@switchboard/testing';
import type { LiveMessage } from './channel';
import { RedisLivePublisher } from './publisher';
import { LiveSubscriber } from './subscriber';

/**
 * The live channel on a Redis Cluster (docs/adr/0043): classic PUBLISH through the cluster client,
 * the subscriber's own connection on one node. When that node dies (SIGKILL) the subscriber moves
 * to another node, resubscribes and tells its listeners to resync; events published afterwards
 * reach them again. Skips when `scripts/redis-cluster.sh` cannot start a cluster here.
 */
jest.setTimeout(60_000);

const logger = createLogger({ service: 'test', level: 'silent' });
const started = startTestRedisCluster();
if ('skip' in started) console.warn(`libs/live/src/live-cluster.int.spec.ts skipped: ${started.skip}`);

('skip' in started ? describe.skip : describe)('live channel on a Redis Cluster', () => {
  const cluster = started as TestRedisCluster;
  const target: RedisTarget = { url: 'redis://127.0.0.1:6379', clusterNodes: cluster.nodes };
  const prefix = `{sbt_live_${randomBytes(4).toString('hex')}}`;
  let command: Cluster;
  let subscriber: LiveSubscriber;

  afterAll(async () => {
    try {
      await subscriber?.close();
      command?.disconnect();
    } finally {
      cluster.stop();
    }
  });

  /** The port of the node holding the live subscriber's connection. */
  function subscriberNode(): number | undefined {
    return cluster.ports.find((p) => {
      try {
        return cluster.cli(p, 'client', 'list').includes('name=switchboard-live:');
      } catch {
        return false;
      }
    });
  }

  it('resubscribes on another node after its node dies, and its listeners resync', async () => {
    command = createRedis(target) as Cluster;
    await command.ping();
    const publisher = new RedisLivePublisher(command, { prefix, logger });
    subscriber = LiveSubscriber.connect(target, { prefix, logger, lingerMs: 0 });
    const sessionId = randomUUID();
    const heard: LiveMessage[] = [];
    let resyncs = 0;
    const subscription = subscriber.listen(sessionId, {
      onEvents: (events) => heard.push(...events),
      onResync: () => resyncs++,
    });
    expect(await subscription.ready).toBe(true);
    const event = (seq: number) => ({
      seq,
      type: 'provider_round_completed',
      turnId: null,
      data: { n: seq },
    });

    // Published through whichever node the cluster client picks: every node forwards it.
    await waitFor(
      async () => {
        await publisher.publish(sessionId, [event(1)]);
        return heard.some((e) => 'seq' in e && e.seq === 1);
      },
      { what: 'the first event on the subscriber' },
    );

    const node = await waitFor(() => subscriberNode(), { what: "the subscriber's node" });
    cluster.kill(node);
    await waitFor(() => resyncs === 1, { what: 'the listener told to resync', timeoutMs: 30_000 });
    expect(subscriberNode()).not.toBe(node);

    await waitFor(
      async () => {
        await publisher.publish(sessionId, [event(2)]);
        return heard.some((e) => 'seq' in e && e.seq === 2);
      },
      { what: 'an event published after the node died', timeoutMs: 30_000 },
    );
    expect(subscription.isReady).toBe(true);
    subscription.close();
  });
});
