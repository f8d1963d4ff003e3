import { Inject, Injectable } from '@nestjs/common';
import { Reflector } from '@nestjs/core';
import type { FastifyInstance } from 'fastify';
import { bucketFor } from '@switchboard/platform';
import type { RateLimitBucket } from '@switchboard/contracts';
import type { Logger } from '@switchboard/observability';
import { LOGGER } from '@switchboard/platform';
import { ACTING_TENANT_HEADER, apiKeyHeader, type AuthedRequest } from './auth/guard';
import { API_KEY_CACHE, type ApiKeyCache } from './auth/key-cache';
import { KEY_USAGE, type KeyUsage } from './auth/key-usage';
import { bearer, hashApiKey } from './auth/keys';
import { grants, RouteScopes, type Scope } from './auth/scopes';
import { ErrorShapes, errorShapeOf, send, toErrorAnswer } from './errors';
import { ApiRateLimits, declaredBucket } from './rate-limit';

/** What the early check needs of a tenant route: the bucket it counts in and the scope it asks. */
interface EarlyRoute {
  bucket: RateLimitBucket;
  scope: Scope;
}

/**
 * The early rate-limit refusal (docs/adr/0078). A tenant that has spent its quota keeps sending (a
 * bursting client ignores Retry-After); each of those requests went through the whole pipeline —
 * body parsing, the guards, a Redis count, the exception filter — only to be refused, and the
 * gateway's event loop served them ahead of other tenants' requests. This Fastify `onRequest` hook
 * answers them before any of that: when the route is a tenant route, the API key is one this
 * gateway has cached as valid (no Postgres), its role grants the route's scope, and the rate
 * limiter already knows from Redis that the tenant's (or key's) quota in the route's bucket is spent
 * in this window (no Redis), the request gets the same 429 — body in the route's error shape,
 * `Retry-After`, `RateLimit` and `RateLimit-Policy` — that the RateLimitGuard would have sent.
 * Anything it cannot decide from memory (an unknown key, a key limited to agents, the operator, a
 * scope the role lacks, a tenant whose overrides are not cached, a quota not known spent) goes the
 * usual way, unchanged.
 */
@Injectable()
export class EarlyRateLimitRefusal {
  private routes?: Map<string, EarlyRoute>;

  constructor(
    @Inject(RouteScopes) private readonly scopes: RouteScopes,
    @Inject(Reflector) private readonly reflector: Reflector,
    @Inject(ApiRateLimits) private readonly limits: ApiRateLimits,
    @Inject(API_KEY_CACHE) private readonly keys: ApiKeyCache,
    @Inject(KEY_USAGE) private readonly usage: KeyUsage,
    @Inject(ErrorShapes) private readonly shapes: ErrorShapes,
    @Inject(LOGGER) private readonly logger: Logger,
  ) {}

  /** Adds the hook; register it after the request log and in-flight hooks, so both see the 429. */
  attach(fastify: FastifyInstance): void {
    fastify.addHook('onRequest', async (request, reply) => {
      const refusal = this.refusal(request);
      if (!refusal) return;
      void reply.headers(refusal.headers);
      send(
        reply,
        this.shapes.answer(errorShapeOf(request), refusal.error, (e) => toErrorAnswer(e, this.logger)),
      );
      return reply;
    });
  }

  /** The 429 the request gets without going further, or undefined to let it through. */
  private refusal(req: AuthedRequest): ReturnType<ApiRateLimits['knownRefusal']> {
    const url = req.routeOptions.url;
    if (!url) return undefined;
    const route = this.routeTable().get(`${req.method} ${url}`);
    if (!route) return undefined;
    // The operator acting as a tenant is never counted; the AuthGuard checks its header.
    if (req.headers[ACTING_TENANT_HEADER] !== undefined) return undefined;
    const token = bearer(req.headers.authorization) ?? apiKeyHeader(req);
    if (!token) return undefined;
    const key = this.keys.get(hashApiKey(token));
    // As the AuthGuard would find it: valid, unexpired, and allowed the route (a key limited to
    // agents is checked against the body and the database, so it goes the usual way).
    if (!key || key.agentIds || (key.expiresAt !== null && key.expiresAt <= Date.now())) return undefined;
    if (!grants(key.role, route.scope)) return undefined;
    const refusal = this.limits.knownRefusal(route.bucket, { tenantId: key.tenantId, apiKeyId: key.keyId });
    if (!refusal) return undefined;
    // What the AuthGuard records: the key's use, and the tenant for the request's log line.
    this.usage.touch(key.keyId);
    req.tenantId = key.tenantId;
    req.apiKeyId = key.keyId;
    req.apiKeyRole = key.role;
    return refusal;
  }

  /**
   * Tenant routes with a fixed scope, by `METHOD /path` as Fastify matches them. Built on the first
   * request: the scope table is resolved at module init. Routes whose scope depends on the body
   * (JSON-RPC) are left out: only the guard can tell.
   */
  private routeTable(): Map<string, EarlyRoute> {
    if (this.routes) return this.routes;
    const routes = new Map<string, EarlyRoute>();
    for (const r of this.scopes.routes()) {
      if (r.access !== 'tenant' || !r.controller) continue;
      const rule = this.scopes.ruleOf(r.handler)?.rule;
      if (typeof rule !== 'string') continue;
      const method = r.key.slice(0, r.key.indexOf(' '));
      const bucket = bucketFor(method, declaredBucket(this.reflector, r.handler, r.controller));
      routes.set(r.key, { bucket, scope: rule });
    }
    this.routes = routes;
    return routes;
  }
}
