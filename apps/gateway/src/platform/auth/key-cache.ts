import { LRUCache } from 'lru-cache';

export const API_KEY_CACHE = Symbol('API_KEY_CACHE');

/** What a request needs from its key once it is known to be valid. */
export interface CachedKey {
  keyId: string;
  tenantId: string;
  /** admin | developer | approver | reader | ingest (docs/adr/0066). */
  role: string;
  /** The agents the key is limited to; null: every agent. */
  agentIds: string[] | null;
  /** Epoch ms after which the key is refused (401); null: never. */
  expiresAt: number | null;
}

/**
 * Valid API keys this gateway looked up recently, by key hash (docs/adr/0017), so a request costs
 * no Postgres transaction for its key. Only valid keys are kept: an unknown or revoked key is looked
 * up every time, so a client spraying guesses grows nothing. Bounded by `max` (least recently used
 * out first) and by `ttlMs`, the longest a gateway may keep honouring a key revoked where it did not
 * hear of it (KeyRevocations tells every gateway of a revoke made through the API). `ttlMs` 0 disables it.
 */
export class ApiKeyCache {
  private readonly cache?: LRUCache<string, CachedKey>;

  constructor(o: { ttlMs: number; max?: number; now?: () => number }) {
    if (o.ttlMs > 0)
      this.cache = new LRUCache({
        max: o.max ?? 10_000,
        ttl: o.ttlMs,
        ttlResolution: 0,
        ...(o.now ? { perf: { now: o.now } } : {}),
      });
  }

  get(hash: string): CachedKey | undefined {
    return this.cache?.get(hash);
  }

  set(hash: string, key: CachedKey): void {
    this.cache?.set(hash, key);
  }

  /** A key was revoked: the next request with it is looked up (and refused). */
  evict(hash: string): void {
    this.cache?.delete(hash);
  }

  /** Forget every key (revocations may have gone unheard). */
  clear(): void {
    this.cache?.clear();
  }

  get size(): number {
    return this.cache?.size ?? 0;
  }
}
