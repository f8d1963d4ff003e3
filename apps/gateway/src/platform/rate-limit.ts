import { Inject, Injectable, SetMetadata, type CanActivate, type ExecutionContext } from '@nestjs/common';
import { Reflector } from '@nestjs/core';
import type { FastifyReply } from 'fastify';
import {
  AppError,
  parseRateLimitOverrides,
  type RateLimitBucket,
  type RateLimitOverrides,
} from '@switchboard/contracts';
import type { Config } from '@switchboard/config';
import type { Logger, Metrics } from '@switchboard/observability';
import {
  bucketFor,
  CONFIG,
  effectiveLimits,
  LOGGER,
  METRICS,
  RateLimits,
  REDIS,
  subjectsFor,
  type EffectiveLimits,
  type RateLimitDecision,
  type RateLimitDefaults,
} from '@switchboard/platform';
import { TenantsRepository } from '@switchboard/store';
import { accessOf, type AuthedRequest } from './auth/guard';
import type { RedisConnection } from '@switchboard/queue';

const BUCKET = 'switchboard:rate-limit-bucket';
/** The route counts in `bucket` rather than by its method (GET: reads, others: writes). */
export const RateLimitBucketOf = (bucket: RateLimitBucket) => SetMetadata(BUCKET, bucket);

/** The bucket a route declares (on its handler or its controller), if any. */
export const declaredBucket = (reflector: Reflector, handler: object, controller: object) =>
  reflector.getAllAndOverride<RateLimitBucket | undefined>(BUCKET, [
    handler as () => unknown,
    controller as new () => unknown,
  ]);

/** How long a gateway keeps a tenant's overrides before reading them again. */
const OVERRIDES_TTL_MS = 5_000;

export const defaultsOf = (config: Config): RateLimitDefaults => ({
  admission: config.RATE_LIMIT_ADMISSION_PER_MIN,
  reads: config.RATE_LIMIT_READS_PER_MIN,
  writes: config.RATE_LIMIT_WRITES_PER_MIN,
  webhooks: config.RATE_LIMIT_WEBHOOKS_PER_MIN,
});

/**
 * The gateway's rate limiting (docs/adr/0028): the tenant's overrides (read from its settings,
 * cached for a few seconds), counted in Redis by RateLimits; a 429 in the route's error shape.
 */
@Injectable()
export class ApiRateLimits {
  private readonly limits: RateLimits;
  private readonly defaults: RateLimitDefaults;
  private readonly overrides = new Map<string, { value: RateLimitOverrides; until: number }>();

  constructor(
    @Inject(CONFIG) config: Config,
    @Inject(REDIS) redis: RedisConnection,
    @Inject(TenantsRepository) private readonly tenants: TenantsRepository,
    @Inject(METRICS) private readonly metrics: Metrics,
    @Inject(LOGGER) logger: Logger,
  ) {
    this.defaults = defaultsOf(config);
    let warned = 0;
    this.limits = new RateLimits(redis, {
      prefix: config.QUEUE_PREFIX,
      onRedisError: (err, bucket) => {
        // At most one line a minute: every request would log it while Redis is away.
        if (Date.now() - warned < 60_000) return;
        warned = Date.now();
        logger.warn({ err, bucket }, 'rate limits cannot reach Redis: counting per gateway or not at all');
      },
    });
  }

  async effective(tenantId: string): Promise<EffectiveLimits> {
    return effectiveLimits(this.defaults, await this.overridesOf(tenantId));
  }

  /** Forgets a tenant's cached overrides (the operator changed them through this gateway). */
  forget(tenantId: string): void {
    this.overrides.delete(tenantId);
  }

  /**
   * The refusal this gateway already knows for the request (docs/adr/0078): synchronous, no Redis,
   * no Postgres, nothing counted. Undefined unless the tenant's overrides are cached and one of its
   * quotas in `bucket` was found spent in this window; the caller then goes the usual way.
   */
  knownRefusal(
    bucket: RateLimitBucket,
    who: { tenantId: string; apiKeyId?: string },
  ): { headers: Record<string, string>; error: AppError } | undefined {
    const cached = this.overrides.get(who.tenantId);
    if (!cached || cached.until <= Date.now()) return undefined;
    const decision = this.limits.knownRefusal(
      subjectsFor(bucket, effectiveLimits(this.defaults, cached.value), who),
    );
    if (!decision) return undefined;
    this.metrics.rateLimited.inc({ bucket });
    return { headers: decision.headers, error: rateLimited(decision) };
  }

  private async overridesOf(tenantId: string): Promise<RateLimitOverrides> {
    const cached = this.overrides.get(tenantId);
    if (cached && cached.until > Date.now()) return cached.value;
    const value = parseRateLimitOverrides((await this.tenants.settings(tenantId))?.settings);
    if (this.overrides.size > 10_000) this.overrides.clear();
    this.overrides.set(tenantId, { value, until: Date.now() + OVERRIDES_TTL_MS });
    return value;
  }

  /**
   * Counts the request; sets the RateLimit headers on the reply, and throws `rate_limited` (429,
   * with Retry-After) when a quota is spent.
   */
  async enforce(
    bucket: RateLimitBucket,
    who: { tenantId: string; apiKeyId?: string; triggerId?: string },
    /** Where the RateLimit headers go; none on a WebSocket message (docs/adr/0035). */
    reply: FastifyReply | undefined,
  ): Promise<void> {
    const subjects = subjectsFor(bucket, await this.effective(who.tenantId), who);
    const decision = await this.limits.consume(bucket, subjects);
    if (!decision) return;
    if (reply) void reply.headers(decision.headers);
    if (decision.allowed) return;
    this.metrics.rateLimited.inc({ bucket });
    throw rateLimited(decision);
  }
}

/** The 429 of a refused request, whichever path refused it. */
function rateLimited(decision: RateLimitDecision): AppError {
  const wait = decision.headers['retry-after'];
  return new AppError('rate_limited', `rate limit exceeded (${decision.policy}): retry in ${wait} s`, {
    policy: decision.policy,
    retryAfterSeconds: Number(wait),
  });
}

/**
 * Runs after the AuthGuard: a tenant's request counts in its route's bucket. Public routes (health,
 * metrics, docs, and the hooks, which count per trigger in their controller) and the operator's
 * admin routes are never limited.
 */
@Injectable()
export class RateLimitGuard implements CanActivate {
  constructor(
    private readonly reflector: Reflector,
    @Inject(ApiRateLimits) private readonly limits: ApiRateLimits,
  ) {}

  async canActivate(ctx: ExecutionContext): Promise<boolean> {
    if (accessOf(this.reflector, ctx) !== 'tenant') return true;
    const req = ctx.switchToHttp().getRequest<AuthedRequest>();
    // The operator acting as a tenant (ADMIN_TOKEN + X-Switchboard-Tenant) spends none of its quota.
    if (!req.tenantId || req.operator) return true;
    const declared = declaredBucket(this.reflector, ctx.getHandler(), ctx.getClass());
    await this.limits.enforce(
      bucketFor(req.method, declared),
      { tenantId: req.tenantId, apiKeyId: req.apiKeyId },
      ctx.switchToHttp().getResponse<FastifyReply>(),
    );
    return true;
  }
}
