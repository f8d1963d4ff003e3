import { LRUCache } from 'lru-cache';
import type { Logger } from '@switchboard/observability';
import { sql, type SqlRunner } from '@switchboard/store';

export const KEY_USAGE = Symbol('KEY_USAGE');

/**
 * Sets `api_keys.last_used_at` to now unless it is already within `intervalMs` of now: however many
 * gateways record a key's use, the row is written at most about once per interval. Resolves with
 * the number of rows written (0 or 1).
 */
export function recordKeyUse(db: SqlRunner, keyId: string, intervalMs: number): Promise<number> {
  return db.execute(sql`
    UPDATE api_keys SET last_used_at = now()
    WHERE id = ${keyId}::uuid
      AND (last_used_at IS NULL OR last_used_at < now() - ${intervalMs}::int * interval '1 millisecond')`);
}

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
