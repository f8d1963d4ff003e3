import {
  RateLimiterMemory,
  RateLimiterRedis,
  RateLimiterRes,
  type RateLimiterAbstract,
} from 'rate-limiter-flexible';
import type { RateLimitBucket, RateLimitOverrides } from '@switchboard/contracts';
import type { RedisConnection } from '@switchboard/queue';

/**
 * Rate limits of the HTTP API (docs/adr/0028): fixed one-minute windows counted in Redis, so every
 * gateway replica shares one count per tenant (and per API key, and per trigger for webhooks).
 * Plain TypeScript: the gateway's guard and the hooks controller call it.
 */

/** The window every bucket counts over, in seconds. */
export const RATE_LIMIT_WINDOW_S = 60;

/** Requests per minute per tenant, by bucket (0 = unlimited): the deployment's defaults. */
export type RateLimitDefaults = Record<RateLimitBucket, number>;

/**
 * What a bucket does while Redis cannot be reached (docs/adr/0028). `memory`: each gateway counts
 * alone, in process, with the same quota (admission and writes stay bounded, at worst by the number
 * of replicas times the quota, and keep working: Postgres is what admits, ADR 0003); `open`: no limit
 * (reads are cheap and a 429 would only hurt; webhook replays are deduplicated in Postgres, and a
 * refused sender retries, which adds load).
 */
export const REDIS_DOWN: Record<RateLimitBucket, 'memory' | 'open'> = {
  admission: 'memory',
  writes: 'memory',
  reads: 'open',
  webhooks: 'open',
};

/** The limits in force for one tenant: its overrides over the defaults, per tenant and per key. */
export type EffectiveLimits = Record<
  RateLimitBucket | 'admissionPerKey' | 'readsPerKey' | 'writesPerKey',
  number
>;

export function effectiveLimits(
  defaults: RateLimitDefaults,
  overrides: RateLimitOverrides = {},
): EffectiveLimits {
  const admission = overrides.admission ?? defaults.admission;
  const reads = overrides.reads ?? defaults.reads;
  const writes = overrides.writes ?? defaults.writes;
  return {
    admission,
    reads,
    writes,
    webhooks: overrides.webhooks ?? defaults.webhooks,
    // A key may use its whole tenant's allowance unless the operator set less.
    admissionPerKey: overrides.admissionPerKey ?? admission,
    readsPerKey: overrides.readsPerKey ?? reads,
    writesPerKey: overrides.writesPerKey ?? writes,
  };
}

/** The bucket a request counts in: declared by its route, else by its method. */
export function bucketFor(method: string, declared?: RateLimitBucket): RateLimitBucket {
  if (declared) return declared;
  return method === 'GET' || method === 'HEAD' ? 'reads' : 'writes';
}

/**
 * `RateLimit-Policy` (draft-ietf-httpapi-ratelimit-headers-10, §3): a structured-field list item,
 * the policy's name as a string with its quota `q` and window `w` in seconds.
 */
export function formatPolicy(name: string, quota: number, windowS = RATE_LIMIT_WINDOW_S): string {
  return `"${name}";q=${quota};w=${windowS}`;
}

/**
 * `RateLimit` (the same draft, §4): the policy's name with the remaining quota `r` and the seconds
 * `t` until the window resets (never negative; rounded up so a client waiting `t` finds room).
 */
export function formatRateLimit(name: string, remaining: number, resetMs: number): string {
  return `"${name}";r=${Math.max(0, Math.floor(remaining))};t=${Math.max(0, Math.ceil(resetMs / 1000))}`;
}

/** What to count a request against: who, and with which quota (0 = not counted). */
export interface Subject {
  /** The policy's name in the headers, e.g. `admission` or `admission-key`. */
  policy: string;
  /** The counter's key, e.g. `t:<tenantId>`. */
  key: string;
  quota: number;
}

/** The subjects one request is counted against in `bucket`. */
export function subjectsFor(
  bucket: RateLimitBucket,
  limits: EffectiveLimits,
  who: { tenantId?: string; apiKeyId?: string; triggerId?: string },
): Subject[] {
  if (bucket === 'webhooks') {
    return who.triggerId && limits.webhooks > 0
      ? [{ policy: 'webhooks', key: `trigger:${who.triggerId}`, quota: limits.webhooks }]
      : [];
  }
  const subjects: Subject[] = [];
  const quota = limits[bucket];
  if (who.tenantId) subjects.push({ policy: bucket, key: `t:${who.tenantId}`, quota });
  const perKey = limits[`${bucket}PerKey`];
  // A key's count can only matter when its quota is below its tenant's (or the tenant's is off).
  if (who.apiKeyId && perKey > 0 && (quota === 0 || perKey < quota)) {
    subjects.push({ policy: `${bucket}-key`, key: `k:${who.apiKeyId}`, quota: perKey });
  }
  return subjects.filter((s) => s.quota > 0);
}

/** The answer for one request: allowed or not, and the headers to send either way. */
export interface RateLimitDecision {
  allowed: boolean;
  /** The policy that decided (the one with the least left). */
  policy: string;
  headers: Record<string, string>;
  /** Counted by each gateway alone: Redis could not be reached. */
  degraded: boolean;
}

export interface RateLimitsOptions {
  /** Key prefix (the deployment's QUEUE_PREFIX): test environments and deployments share no count. */
  prefix: string;
  /** Longest a count may take in Redis before the bucket's Redis-down behaviour applies. */
  timeoutMs?: number;
  onRedisError?: (err: unknown, bucket: RateLimitBucket) => void;
}

/**
 * rate-limiter-flexible's in-memory block, read without counting: `getInMemoryBlockMsBeforeExpire`
 * is a plain method of its store limiters (what `consume` itself asks first) that its typings omit.
 */
interface InMemoryBlocks {
  getInMemoryBlockMsBeforeExpire(rlKey: string): number;
}

/** The headers and verdict of one subject's count. */
function decisionOf(
  subject: Subject,
  res: RateLimiterRes,
  allowed: boolean,
  degraded: boolean,
): RateLimitDecision {
  const headers: Record<string, string> = {
    'ratelimit-policy': formatPolicy(subject.policy, subject.quota),
    ratelimit: formatRateLimit(subject.policy, allowed ? res.remainingPoints : 0, res.msBeforeNext),
  };
  if (!allowed) headers['retry-after'] = String(Math.max(1, Math.ceil(res.msBeforeNext / 1000)));
  return { allowed, policy: subject.policy, headers, degraded };
}

/** Counts requests in Redis, one limiter per (bucket, policy, quota), built on first use. */
export class RateLimits {
  private readonly limiters = new Map<string, RateLimiterAbstract>();

  constructor(
    private readonly redis: RedisConnection,
    private readonly options: RateLimitsOptions,
  ) {}

  private limiter(subject: Subject, store: 'redis' | 'memory'): RateLimiterAbstract {
    const id = `${store}|${subject.policy}|${subject.quota}`;
    let limiter = this.limiters.get(id);
    if (!limiter) {
      const common = {
        // The count's key does not depend on the quota: an override changes the limit, not the count.
        keyPrefix: `${this.options.prefix}:rl:${subject.policy}`,
        points: subject.quota,
        duration: RATE_LIMIT_WINDOW_S,
      };
      limiter =
        store === 'memory'
          ? new RateLimiterMemory(common)
          : new RateLimiterRedis({
              ...common,
              storeClient: this.redis,
              // The gateway's connection queues commands while it reconnects: answer at once instead.
              rejectIfRedisNotReady: true,
              // Once Redis says a key has spent its quota, this process refuses it from memory until
              // the window ends (docs/adr/0078): a bursting tenant's refusals cost no Redis round trip,
              // and `knownRefusal` can answer them before the request is parsed. The count in Redis
              // stays the one every replica shares; each replica learns of the spent quota on its
              // next count there.
              inMemoryBlockOnConsumed: subject.quota,
            });
      this.limiters.set(id, limiter);
    }
    return limiter;
  }

  /**
   * Counts one request against each subject. Undefined when nothing limits it (every quota off, or
   * an `open` bucket while Redis is unreachable).
   */
  async consume(bucket: RateLimitBucket, subjects: Subject[]): Promise<RateLimitDecision | undefined> {
    if (subjects.length === 0) return undefined;
    const results = await Promise.all(subjects.map((s) => this.consumeOne(bucket, s)));
    let decided: { subject: Subject; res: RateLimiterRes; allowed: boolean } | undefined;
    for (const [i, r] of results.entries()) {
      if (!r) continue;
      const candidate = { subject: subjects[i], ...r };
      // A refusal decides; among allowed ones, the subject with the least left.
      if (
        !decided ||
        (!candidate.allowed && decided.allowed) ||
        (candidate.allowed === decided.allowed && candidate.res.remainingPoints < decided.res.remainingPoints)
      )
        decided = candidate;
    }
    if (!decided) return undefined;
    return decisionOf(
      decided.subject,
      decided.res,
      decided.allowed,
      results.some((r) => r?.degraded),
    );
  }

  /**
   * The refusal this process already knows of, without counting and without Redis: the first
   * subject whose quota Redis said was spent in this window (the limiter's in-memory block), with
   * the headers `consume` would send for it. Undefined when every subject would have to be counted.
   */
  knownRefusal(subjects: Subject[]): RateLimitDecision | undefined {
    for (const subject of subjects) {
      const limiter = this.limiters.get(`redis|${subject.policy}|${subject.quota}`);
      if (!limiter) continue;
      const ms = (limiter as unknown as InMemoryBlocks).getInMemoryBlockMsBeforeExpire(
        limiter.getKey(subject.key),
      );
      if (ms > 0) return decisionOf(subject, new RateLimiterRes(0, ms), false, false);
    }
    return undefined;
  }

  private async consumeOne(
    bucket: RateLimitBucket,
    subject: Subject,
  ): Promise<{ res: RateLimiterRes; allowed: boolean; degraded: boolean } | undefined> {
    try {
      const res = await withTimeout(
        this.limiter(subject, 'redis').consume(subject.key),
        this.options.timeoutMs ?? 500,
      );
      return { res, allowed: true, degraded: false };
    } catch (err) {
      if (err instanceof RateLimiterRes) return { res: err, allowed: false, degraded: false };
      this.options.onRedisError?.(err, bucket);
      if (REDIS_DOWN[bucket] === 'open') return undefined;
      // Redis failed: this gateway counts alone until it answers again.
      try {
        return {
          res: await this.limiter(subject, 'memory').consume(subject.key),
          allowed: true,
          degraded: true,
        };
      } catch (refused) {
        if (refused instanceof RateLimiterRes) return { res: refused, allowed: false, degraded: true };
        throw refused;
      }
    }
  }
}

function withTimeout<T>(p: Promise<T>, ms: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  return Promise.race([
    p,
    new Promise<T>((_, reject) => {
      timer = setTimeout(() => reject(new Error(`rate limit count took over ${ms} ms`)), ms);
      timer.unref();
    }),
  ]).finally(() => clearTimeout(timer));
}
