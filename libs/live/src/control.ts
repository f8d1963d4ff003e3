import type IORedis from 'ioredis';
import type { RedisOptions } from 'ioredis';
import type { Logger } from '@switchboard/observability';
import { createSubscriberRedis, type RedisConnection, type RedisTarget } from '@switchboard/queue';

/**
 * The control channel (docs/adr/0014): signals that must reach whichever harness process holds a
 * turn — cancel, an interjection waiting for it. One pub/sub channel per worker,
 * `<QUEUE_PREFIX>:control:worker:<workerId>`, named by `sessions.lease_owner`: a worker subscribes
 * once when it starts, so claiming a turn costs no SUBSCRIBE. Delivery is at most once; the request
 * itself is in Postgres, and the running turn's heartbeat (and, for a cancel, every checkpoint) reads
 * it there, so a lost message only delays the stop.
 */

export type ControlMessage =
  /** Stop the turn at its next safe point (the request is on the turn row). */
  | { v: 1; type: 'cancel'; turnId: string; sessionId: string }
  /** An interjection is queued for the session's running turn: deliver it at the next safe point. */
  | { v: 1; type: 'interject'; sessionId: string };

export function controlChannel(prefix: string, workerId: string): string {
  return `${prefix}:control:worker:${workerId}`;
}

/** Parses a control message; undefined for anything else (a newer version, garbage). */
export function decodeControl(raw: string): ControlMessage | undefined {
  try {
    const m = JSON.parse(raw) as Partial<ControlMessage>;
    if (m?.v !== 1 || typeof m.sessionId !== 'string') return undefined;
    if (m.type === 'cancel' && typeof m.turnId === 'string') return m as ControlMessage;
    if (m.type === 'interject') return m as ControlMessage;
  } catch {
    // Not ours.
  }
  return undefined;
}

/**
 * Sends a control message to a worker on an existing command connection. Never throws: the request
 * is durable in Postgres already, and the worker's heartbeat finds it.
 */
export async function sendControl(
  redis: RedisConnection,
  o: { prefix: string; logger: Logger; timeoutMs?: number },
  workerId: string,
  message: ControlMessage,
): Promise<boolean> {
  if (redis.status !== 'ready') {
    o.logger.warn({ workerId, type: message.type }, 'control message not sent: Redis is not connected');
    return false;
  }
  let timer: NodeJS.Timeout | undefined;
  try {
    await Promise.race([
      redis.publish(controlChannel(o.prefix, workerId), JSON.stringify(message)),
      new Promise<never>((_, reject) => {
        timer = setTimeout(() => reject(new Error('PUBLISH timed out')), o.timeoutMs ?? 1000);
      }),
    ]);
    return true;
  } catch (err) {
    o.logger.warn({ err, workerId, type: message.type }, 'control message not sent; the heartbeat finds it');
    return false;
  } finally {
    clearTimeout(timer);
  }
}

/**
 * A worker's control subscription, on a connection of its own (subscriber mode allows no other
 * commands). ioredis resubscribes after a reconnect; what was sent meanwhile is found by the heartbeat.
 */
export class ControlSubscriber {
  private constructor(
    private readonly redis: IORedis,
    readonly ready: Promise<void>,
  ) {}

  /** `target`: REDIS_URL, or the deployment's target (a cluster: any node hears every PUBLISH). */
  static connect(
    target: string | RedisTarget,
    o: { prefix: string; workerId: string; logger: Logger },
    onMessage: (m: ControlMessage) => void,
    redisOptions: RedisOptions = {},
  ): ControlSubscriber {
    const redis = createSubscriberRedis(target, {
      maxRetriesPerRequest: null,
      ...redisOptions,
      connectionName: 'switchboard-control',
    });
    const channel = controlChannel(o.prefix, o.workerId);
    redis.on('message', (ch: string, raw: string) => {
      if (ch !== channel) return;
      const m = decodeControl(raw);
      if (m) onMessage(m);
    });
    redis.on('error', (err: Error) => o.logger.debug({ err }, 'control subscriber connection error'));
    const ready = redis.subscribe(channel).then(
      () => undefined,
      (err: unknown) =>
        o.logger.warn({ err }, 'control channel subscription failed; heartbeats still stop turns'),
    );
    return new ControlSubscriber(redis, ready);
  }

  /** Never waits on a Redis that is away (a QUIT would be queued until it is back). */
  async close(): Promise<void> {
    if (this.redis.status !== 'ready') {
      this.redis.disconnect();
      return;
    }
    await this.redis.quit().catch(() => this.redis.disconnect());
  }
}
