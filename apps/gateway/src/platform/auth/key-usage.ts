import { LRUCache } from 'lru-cache';
import type { Logger } from '@switchboard/observability';
import { recordKeyUse, type SqlRunner } from '@switchboard/store';

export const KEY_USAGE = Symbol('KEY_USAGE');

/**
 * When each API key was last used (`lastUsedAt` in GET /v1/api-keys), coarse-grained and off the
 * request's path: at most one write per key per `intervalMs` from this process (recordKeyUse guards
 * the row against the other gateways), not awaited by the request; a failed write is logged and
 * the request goes on. Bounded: the least recently recorded keys are forgotten first, which at
 * worst costs one more guarded UPDATE.
 */
export class KeyUsage {
  private readonly recorded: LRUCache<string, true>;

  constructor(
    private readonly db: SqlRunner,
    private readonly logger: Logger,
    private readonly intervalMs = 60_000,
    o: { max?: number; now?: () => number } = {},
  ) {
    this.recorded = new LRUCache({
      max: o.max ?? 10_000,
      ttl: intervalMs,
      ttlResolution: 0,
      ...(o.now ? { perf: { now: o.now } } : {}),
    });
  }

  /** Records a request made with `keyId`; returns at once. */
  touch(keyId: string): void {
    if (this.recorded.has(keyId)) return;
    this.recorded.set(keyId, true);
    recordKeyUse(this.db, keyId, this.intervalMs).catch((err: unknown) =>
      this.logger.warn({ err, keyId }, "could not record the API key's last use"),
    );
  }
}
