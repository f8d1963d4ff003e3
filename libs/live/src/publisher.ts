import type { Logger } from '@switchboard/observability';
import type { RedisConnection } from '@switchboard/queue';
import { channelFor, encode, type LiveEphemeralEvent, type LiveEvent } from './channel';

type WithOptionalTime<T extends { createdAt: string }> = Omit<T, 'createdAt'> & { createdAt?: string };

/** An event as its writer has it: the live copy's `createdAt` is optional (publishing time). */
export type PublishableEvent = WithOptionalTime<LiveEvent> | WithOptionalTime<LiveEphemeralEvent>;

/**
 * Pushes events a writer has just committed to the session's live channel. Called after the
 * commit, never inside the transaction: a subscriber that hears of an event can read it.
 */
export interface LivePublisher {
  /**
   * One PUBLISH for the batch: on the session's channel when it settles a turn (a terminal event,
   * an approval or client tools requested), on its progress channel otherwise (docs/adr/0072).
   * Never throws and never waits long: a failure is logged and the
   * journal in Postgres, which readers fall back to, is the truth.
   */
  publish(sessionId: string, events: readonly PublishableEvent[]): Promise<void>;
  /**
   * The same, resolving to the number of processes subscribed to the channel that received the
   * batch (undefined when it was not published). On the progress channel that is how many
   * processes stream the session: a writer of ephemeral events skips them while nobody watches
   * (docs/adr/0015, 0072).
   */
  publishCounted?(sessionId: string, events: readonly PublishableEvent[]): Promise<number | undefined>;
}

/** For processes and tests without a live channel. */
export const noLivePublisher: LivePublisher = { publish: async () => undefined };

export interface RedisLivePublisherOptions {
  /** The deployment's key prefix (QUEUE_PREFIX). */
  prefix: string;
  logger: Logger;
  /** Longest a PUBLISH may take before it is given up (default 1000 ms). */
  timeoutMs?: number;
}

/**
 * Publishes on an existing command connection (the process's shared one: PUBLISH needs no
 * connection of its own). While that connection is not ready the batch is dropped at once rather
 * than queued: a reader resynchronises from Postgres when its own subscription comes back.
 */
export class RedisLivePublisher implements LivePublisher {
  constructor(
    private readonly redis: RedisConnection,
    private readonly options: RedisLivePublisherOptions,
  ) {}

  async publish(sessionId: string, events: readonly PublishableEvent[]): Promise<void> {
    await this.publishCounted(sessionId, events);
  }

  async publishCounted(sessionId: string, events: readonly PublishableEvent[]): Promise<number | undefined> {
    if (events.length === 0) return undefined;
    const { logger, prefix } = this.options;
    if (this.redis.status !== 'ready') {
      logger.warn(
        { sessionId, redis: this.redis.status, events: events.length },
        'live events not published: Redis is not connected; readers fall back to the journal',
      );
      return undefined;
    }
    const now = new Date().toISOString();
    const payload = encode(
      sessionId,
      events.map((e) => ({ ...e, createdAt: e.createdAt ?? now })),
    );
    let timer: NodeJS.Timeout | undefined;
    try {
      return await Promise.race([
        this.redis.publish(channelFor(prefix, sessionId, events), payload),
        new Promise<never>((_, reject) => {
          timer = setTimeout(
            () => reject(new Error(`PUBLISH timed out after ${this.options.timeoutMs ?? 1000} ms`)),
            this.options.timeoutMs ?? 1000,
          );
        }),
      ]);
    } catch (err) {
      logger.warn({ err, sessionId }, 'live events not published; readers fall back to the journal');
      return undefined;
    } finally {
      clearTimeout(timer);
    }
  }
}
