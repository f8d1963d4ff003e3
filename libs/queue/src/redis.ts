import net from 'node:net';
import tls from 'node:tls';
import IORedis, { AbstractConnector, Cluster, type RedisOptions } from 'ioredis';

/**
 * Where a process's Redis is (docs/adr/0043): one Redis at `url`, or a Redis Cluster reached through
 * `clusterNodes` (REDIS_CLUSTER_NODES), whose credentials and TLS come from `url`.
 */
export interface RedisTarget {
  url: string;
  clusterNodes?: readonly { host: string; port: number }[];
}

/** A command connection: one Redis, or a Redis Cluster (BullMQ and every command work on both). */
export type RedisConnection = IORedis | Cluster;

/** The target a parsed configuration names. */
export function redisTarget(config: {
  REDIS_URL: string;
  REDIS_CLUSTER_NODES?: readonly { host: string; port: number }[];
}): RedisTarget {
  return { url: config.REDIS_URL, clusterNodes: config.REDIS_CLUSTER_NODES };
}

/** What a cluster node connection takes from REDIS_URL: credentials and TLS, nothing else. */
function nodeOptions(url: string): RedisOptions {
  const u = new URL(url);
  return {
    ...(u.username ? { username: decodeURIComponent(u.username) } : {}),
    ...(u.password ? { password: decodeURIComponent(u.password) } : {}),
    ...(u.protocol === 'rediss:' ? { tls: {} } : {}),
  };
}

/**
 * A BullMQ-ready connection: blocking commands need `maxRetriesPerRequest: null`. With cluster nodes
 * it is an ioredis `Cluster` (keys must then share a slot per command: QUEUE_PREFIX carries a hash tag).
 */
export function createRedis(url: string, options?: RedisOptions): IORedis;
export function createRedis(target: RedisTarget, options?: RedisOptions): RedisConnection;
export function createRedis(target: string | RedisTarget, options: RedisOptions = {}): RedisConnection {
  const base = { maxRetriesPerRequest: null, enableReadyCheck: true };
  if (typeof target === 'string') return new IORedis(target, { ...base, ...options });
  if (!target.clusterNodes?.length) return new IORedis(target.url, { ...base, ...options });
  return new Cluster([...target.clusterNodes], {
    redisOptions: { ...nodeOptions(target.url), ...base, ...options },
    enableReadyCheck: true,
    // A master that fails is replaced by its replica within cluster-node-timeout plus an election:
    // commands meanwhile wait and are retried against the new slot owner rather than fail.
    retryDelayOnFailover: 200,
    retryDelayOnClusterDown: 200,
    retryDelayOnTryAgain: 200,
    maxRedirections: 64,
    slotsRefreshTimeout: 2000,
  });
}

/**
 * A connection for SUBSCRIBE (subscriber mode allows no other command). On one Redis it connects to
 * `url`. On a cluster it is a plain connection to one node at a time: classic pub/sub is broadcast
 * over the cluster bus, so a node (master or replica) hears every PUBLISH of the cluster. When its
 * node goes away the connection reconnects to the next seed node, and its `close`/`ready` events are
 * those of any connection: the live subscriber resubscribes and resyncs as after a dropped link.
 */
export function createSubscriberRedis(target: string | RedisTarget, options: RedisOptions = {}): IORedis {
  if (typeof target === 'string') return new IORedis(target, options);
  const nodes = target.clusterNodes;
  if (!nodes?.length) return new IORedis(target.url, options);
  return new IORedis({ ...nodeOptions(target.url), ...options, Connector: nodeRotatingConnector(nodes) });
}

type Stream = net.Socket | tls.TLSSocket;

/**
 * An ioredis connector that connects to the next of `nodes` on every (re)connection, starting at a
 * random one so a fleet's subscribers spread over the cluster.
 */
function nodeRotatingConnector(nodes: readonly { host: string; port: number }[]) {
  let next = Math.floor(Math.random() * nodes.length);
  return class NodeRotatingConnector extends AbstractConnector {
    private readonly options: RedisOptions;

    /** ioredis passes the connection's options. */
    constructor(options: unknown) {
      const o = options as RedisOptions;
      super(o.disconnectTimeout ?? 2000);
      this.options = o;
    }

    connect(): Promise<Stream> {
      const node = nodes[next++ % nodes.length];
      this.connecting = true;
      return new Promise((resolve, reject) => {
        // Like ioredis' own connector: a disconnect() before the next tick cancels the attempt.
        process.nextTick(() => {
          if (!this.connecting) {
            reject(new Error('Connection is closed.'));
            return;
          }
          let stream: Stream;
          try {
            stream = this.options.tls
              ? tls.connect({ ...this.options.tls, host: node.host, port: node.port })
              : net.createConnection({ host: node.host, port: node.port });
          } catch (err) {
            reject(err instanceof Error ? err : new Error(String(err)));
            return;
          }
          this.stream = stream;
          stream.once('error', (err: Error) => {
            this.firstError = err;
          });
          resolve(stream);
        });
      });
    }
  };
}
