import net from 'node:net';
import IORedis, { Cluster } from 'ioredis';
import { createRedis, createSubscriberRedis, redisTarget } from './redis';

describe('createRedis', () => {
  it('connects to one Redis at a URL, BullMQ-ready', () => {
    const redis = createRedis('redis://127.0.0.1:6390/2', { lazyConnect: true });
    expect(redis).toBeInstanceOf(IORedis);
    expect(redis.options).toMatchObject({ host: '127.0.0.1', port: 6390, db: 2, maxRetriesPerRequest: null });
    redis.disconnect();
  });

  it('connects to one Redis when the target names no cluster nodes', () => {
    const redis = createRedis(redisTarget({ REDIS_URL: 'redis://127.0.0.1:6390' }), { lazyConnect: true });
    expect(redis).toBeInstanceOf(IORedis);
    redis.disconnect();
  });

  it('is a Cluster over the seed nodes with REDIS_CLUSTER_NODES, with credentials and TLS from REDIS_URL', () => {
    const redis = createRedis(
      redisTarget({
        REDIS_URL: 'rediss://sb:s%3Dcret@ignored:6379/3',
        REDIS_CLUSTER_NODES: [
          { host: '10.0.0.1', port: 7000 },
          { host: '10.0.0.2', port: 7001 },
        ],
      }),
      { lazyConnect: true },
    );
    expect(redis).toBeInstanceOf(Cluster);
    const cluster = redis as Cluster;
    expect(cluster.options.redisOptions).toMatchObject({
      username: 'sb',
      password: 's=cret',
      tls: {},
      maxRetriesPerRequest: null,
      enableReadyCheck: true,
      lazyConnect: true,
    });
    // The database number has no meaning on a cluster (only db 0 exists there).
    expect(cluster.options.redisOptions).not.toHaveProperty('db');
    // The seed nodes as ioredis keeps them (a private field: no public accessor).
    expect((cluster as unknown as { startupNodes: unknown }).startupNodes).toEqual([
      { host: '10.0.0.1', port: 7000 },
      { host: '10.0.0.2', port: 7001 },
    ]);
    cluster.disconnect();
  });
});

describe('createSubscriberRedis', () => {
  it('connects to the next seed node each time its connection drops', async () => {
    // Two nodes that hang up on every connection: the subscriber moves from one to the other.
    const seen: number[] = [];
    const servers = await Promise.all(
      [0, 1].map(async () => {
        const server = net.createServer((socket) => {
          seen.push((server.address() as net.AddressInfo).port);
          socket.destroy();
        });
        await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
        return server;
      }),
    );
    const ports = servers.map((s) => (s.address() as net.AddressInfo).port);
    const redis = createSubscriberRedis(
      { url: 'redis://127.0.0.1:1', clusterNodes: ports.map((port) => ({ host: '127.0.0.1', port })) },
      { retryStrategy: () => 10, enableReadyCheck: false, lazyConnect: true, disconnectTimeout: 50 },
    );
    redis.on('error', () => undefined);
    try {
      void redis.connect().catch(() => undefined);
      await new Promise<void>((resolve) => {
        const timer = setInterval(() => {
          if (seen.length >= 4) {
            clearInterval(timer);
            resolve();
          }
        }, 10);
      });
      // Every attempt went to the other node than the one before.
      for (let i = 1; i < 4; i++) expect(seen[i]).not.toBe(seen[i - 1]);
      expect(new Set(seen)).toEqual(new Set(ports));
    } finally {
      redis.disconnect();
      await Promise.all(servers.map((s) => new Promise((resolve) => s.close(resolve))));
    }
  });

  it('connects to REDIS_URL without cluster nodes', () => {
    const redis = createSubscriberRedis({ url: 'redis://127.0.0.1:6391' }, { lazyConnect: true });
    expect(redis.options).toMatchObject({ host: '127.0.0.1', port: 6391 });
    redis.disconnect();
  });
});
