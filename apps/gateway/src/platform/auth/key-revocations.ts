import type IORedis from 'ioredis';
import type { RedisOptions } from 'ioredis';
import type { Logger } from '@switchboard/observability';
import { createSubscriberRedis, type RedisConnection, type RedisTarget } from '@switchboard/queue';
import type { ApiKeyCache } from './key-cache';

export const KEY_REVOCATIONS = Symbol('KEY_REVOCATIONS');

/** Where gateways tell each other that a key was revoked: the message is the key's hash. */
export function revocationChannel(prefix: string): string {
  return `${prefix}:auth:revoked`;
}

/**
 * Spreads API-key revocations to every gateway's cache (docs/adr/0017). The revoking gateway evicts
 * at once and publishes the key's hash; every gateway evicts what it hears. Pub/sub is at most once,
 * so it only shortens the window the cache's TTL already bounds: a gateway whose subscriber
 * connection dropped empties its cache once it is subscribed again (what was published meanwhile
 * is lost), and a revoke outside the API (`npm run admin`, SQL) publishes nothing.
 */
export class KeyRevocations {
  private closed = false;

  private constructor(
    private readonly cache: ApiKeyCache,
    private readonly publisher: RedisConnection,
    private readonly subscriber: IORedis | undefined,
    private readonly o: { prefix: string; logger: Logger },
  ) {}

  /**
   * `publisher` is a command connection the gateway already has; the subscription gets a connection
   * of its own (none when the cache is off: nothing to evict).
   */
  static connect(
    target: string | RedisTarget,
    cache: ApiKeyCache,
    publisher: RedisConnection,
    o: { prefix: string; logger: Logger; enabled: boolean },
    redisOptions: RedisOptions = {},
  ): KeyRevocations {
    if (!o.enabled) return new KeyRevocations(cache, publisher, undefined, o);
    const channel = revocationChannel(o.prefix);
    const subscriber = createSubscriberRedis(target, {
      maxRetriesPerRequest: null,
      ...redisOptions,
      // Resubscribed by hand below, so the cache is emptied once the subscription is back.
      autoResubscribe: false,
      enableReadyCheck: false,
      connectionName: 'switchboard-key-revocations',
    });
    const revocations = new KeyRevocations(cache, publisher, subscriber, o);
    subscriber.on('message', (ch: string, hash: string) => {
      if (ch === channel) cache.evict(hash);
    });
    subscriber.on('ready', () => {
      subscriber.subscribe(channel).then(
        // Anything revoked while unsubscribed went unheard: forget every key (the first time it is empty).
        () => cache.clear(),
        (err: unknown) =>
          revocations.closed ||
          o.logger.warn({ err }, 'key revocation channel subscription failed; the cache TTL still applies'),
      );
    });
    subscriber.on('error', (err: Error) =>
      o.logger.debug({ err }, 'key revocation subscriber connection error'),
    );
    return revocations;
  }

  /**
   * A key was revoked through this gateway: evict it here and tell the others. Never throws (the
   * revoke is committed; a gateway that does not hear of it drops the key within the TTL).
   */
  async revoked(hash: string): Promise<void> {
    this.cache.evict(hash);
    if (!this.subscriber) return;
    if (this.publisher.status !== 'ready') {
      this.o.logger.warn('key revocation not published: Redis is not connected; the cache TTL applies');
      return;
    }
    let timer: NodeJS.Timeout | undefined;
    try {
      await Promise.race([
        this.publisher.publish(revocationChannel(this.o.prefix), hash),
        new Promise<never>((_, reject) => {
          timer = setTimeout(() => reject(new Error('PUBLISH timed out')), 1000);
        }),
      ]);
    } catch (err) {
      this.o.logger.warn({ err }, 'key revocation not published; the cache TTL applies');
    } finally {
      clearTimeout(timer);
    }
  }

  /** Nest calls this at shutdown; the subscriber connection is ours to close. */
  onApplicationShutdown(): void {
    this.closed = true;
    this.subscriber?.disconnect();
  }
}
