import {
  createParamDecorator,
  Inject,
  Injectable,
  SetMetadata,
  type CanActivate,
  type ExecutionContext,
} from '@nestjs/common';
import { Reflector } from '@nestjs/core';
import type { FastifyRequest } from 'fastify';
import { AppError, isUuid, notFound } from '@switchboard/contracts';
import type { Config } from '@switchboard/config';
import { CONFIG } from '@switchboard/platform';
import {
  ApiKeysRepository,
  apiKeyActor,
  OPERATOR_ACTOR,
  TenantsRepository,
  type AgentOwnedKind,
} from '@switchboard/store';
import { AgentsRepository } from '@switchboard/subagents';
import type { ErrorShapeConfig } from '../errors';
import { API_KEY_CACHE, type ApiKeyCache, type CachedKey } from './key-cache';
import { AGENT_CREATING_ROUTES, grants, insufficientScope, RouteScopes, scopesOf } from './scopes';
import { KEY_USAGE, type KeyUsage } from './key-usage';
import { bearer, constantTimeEquals, hashApiKey } from './keys';

export type Access = 'public' | 'admin' | 'tenant' | 'any';
const ACCESS = 'switchboard:access';
/** No credentials needed (health, metrics, docs). */
export const Public = () => SetMetadata(ACCESS, 'public' satisfies Access);
/** Guarded by ADMIN_TOKEN instead of an API key. */
export const AdminOnly = () => SetMetadata(ACCESS, 'admin' satisfies Access);
/**
 * Either credential: an API key (the request is its tenant's) or ADMIN_TOKEN (the operator's, acting
 * as a tenant when it names one). GET /v1/whoami, which tells a client which it holds.
 */
export const AnyCredential = () => SetMetadata(ACCESS, 'any' satisfies Access);

/**
 * The header with which the operator's ADMIN_TOKEN acts as a tenant on tenant routes (the console's
 * "open tenant view"). Ignored nowhere: with any other credential it is a 401.
 */
export const ACTING_TENANT_HEADER = 'x-switchboard-tenant';

export interface AuthedRequest extends FastifyRequest {
  tenantId?: string;
  apiKeyId?: string;
  /** The API key's role (docs/adr/0066); unset for the operator. */
  apiKeyRole?: string;
  /** The agents the API key is limited to; unset: every agent. */
  agentIds?: string[];
  /** ADMIN_TOKEN made the request (acting as `tenantId` when set). */
  operator?: boolean;
}

/** The authenticated tenant of the request. */
export const TenantId = createParamDecorator((_: unknown, ctx: ExecutionContext): string => {
  const tenantId = ctx.switchToHttp().getRequest<AuthedRequest>().tenantId;
  if (!tenantId) throw new AppError('unauthorized', 'missing tenant');
  return tenantId;
});

/** The agents the request's API key is limited to (docs/adr/0066); undefined: every agent. */
export const KeyAgents = createParamDecorator(
  (_: unknown, ctx: ExecutionContext): string[] | undefined =>
    ctx.switchToHttp().getRequest<AuthedRequest>().agentIds,
);

/** The API key that made the request (who decided an approval); `operator` for the operator acting as the tenant. */
export const ApiKeyId = createParamDecorator((_: unknown, ctx: ExecutionContext): string => {
  const req = ctx.switchToHttp().getRequest<AuthedRequest>();
  return req.apiKeyId ?? (req.operator ? OPERATOR_ACTOR : 'api');
});

/**
 * Who made the request, as the audit log names it (docs/adr/0030): `api_key:<id>`, or `operator`
 * when ADMIN_TOKEN acts as the tenant.
 */
export const Actor = createParamDecorator((_: unknown, ctx: ExecutionContext): string => {
  const req = ctx.switchToHttp().getRequest<AuthedRequest>();
  if (req.operator) return OPERATOR_ACTOR;
  if (!req.apiKeyId) throw new AppError('unauthorized', 'missing API key');
  return apiKeyActor(req.apiKeyId);
});

/** Who may call the route: a tenant (an API key) unless marked otherwise. */
export const accessOf = (reflector: Reflector, ctx: ExecutionContext): Access =>
  reflector.getAllAndOverride<Access | undefined>(ACCESS, [ctx.getHandler(), ctx.getClass()]) ?? 'tenant';

/**
 * The operator's check: `token` must be ADMIN_TOKEN (compared in constant time); no ADMIN_TOKEN
 * disables the operator's routes. Throws a 401 `unauthorized`. The admin API and the queue board
 * (`/admin/queues`) share it.
 */
export function checkAdminToken(admin: string | undefined, token: string | undefined): void {
  if (!admin) throw new AppError('unauthorized', 'the admin API is disabled: set ADMIN_TOKEN');
  if (!token || !constantTimeEquals(token, admin)) throw new AppError('unauthorized', 'invalid admin token');
}

/**
 * The `x-api-key` header, on routes that accept it (the LangGraph adapter's: its SDK sends the key
 * there, docs/adr/0038).
 */
export function apiKeyHeader(req: FastifyRequest): string | undefined {
  const config = req.routeOptions?.config as ErrorShapeConfig | undefined;
  if (!config?.apiKeyHeader) return undefined;
  const value = req.headers['x-api-key'];
  return typeof value === 'string' && value.trim() !== '' ? value.trim() : undefined;
}

/** The acting tenant the header names: undefined without it, 400 when it is not one uuid. */
export function actingTenantHeader(req: FastifyRequest): string | undefined {
  const value = req.headers[ACTING_TENANT_HEADER];
  if (value === undefined) return undefined;
  if (typeof value !== 'string' || !isUuid(value.trim()))
    throw new AppError('bad_request', 'X-Switchboard-Tenant must be a tenant id (a uuid)');
  return value.trim().toLowerCase();
}

/**
 * Every route needs an API key unless marked otherwise. On a tenant route the operator's
 * ADMIN_TOKEN with `X-Switchboard-Tenant: <tenant id>` runs the request as that tenant (the
 * console's operator view opens a tenant's so): it is logged and audited as `operator`, and not
 * counted in the tenant's rate limits. ADMIN_TOKEN without the header is no tenant's key (401).
 */
@Injectable()
export class AuthGuard implements CanActivate {
  constructor(
    private readonly reflector: Reflector,
    @Inject(ApiKeysRepository) private readonly apiKeys: ApiKeysRepository,
    @Inject(TenantsRepository) private readonly tenants: TenantsRepository,
    @Inject(CONFIG) private readonly config: Config,
    @Inject(API_KEY_CACHE) private readonly keys: ApiKeyCache,
    @Inject(KEY_USAGE) private readonly usage: KeyUsage,
    @Inject(RouteScopes) private readonly scopes: RouteScopes,
    @Inject(AgentsRepository) private readonly agents: AgentsRepository,
  ) {}

  async canActivate(ctx: ExecutionContext): Promise<boolean> {
    const access = accessOf(this.reflector, ctx);
    if (access === 'public') return true;
    const req = ctx.switchToHttp().getRequest<AuthedRequest>();
    const token = bearer(req.headers.authorization) ?? apiKeyHeader(req);
    if (access === 'admin') {
      checkAdminToken(this.config.ADMIN_TOKEN, token);
      req.operator = true;
      return true;
    }
    const acting = req.headers[ACTING_TENANT_HEADER] !== undefined;
    if (access === 'any' && !acting && this.isAdminToken(token)) {
      req.operator = true;
      return true;
    }
    if (acting) {
      // Only the operator may name the tenant: a tenant's key sending it is refused, not ignored.
      checkAdminToken(this.config.ADMIN_TOKEN, token);
      const tenantId = actingTenantHeader(req);
      if (!tenantId || !(await this.tenants.settings(tenantId))) throw notFound('tenant');
      req.operator = true;
      req.tenantId = tenantId;
      return true;
    }
    const key = await this.apiKey(token);
    req.tenantId = key.tenantId;
    req.apiKeyId = key.keyId;
    req.apiKeyRole = key.role;
    if (key.agentIds) req.agentIds = key.agentIds;
    await this.checkScope(ctx, req, key);
    return true;
  }

  /**
   * The key's role must grant the scope the route declares (ROUTE_SCOPES), checked before any
   * lookup so a refusal says nothing of the object (403 `insufficient_scope`). A key limited to
   * agents then sees another agent named in the path or body as absent (404), and may not create
   * one. A route the start-up check did not see is refused (it cannot happen: the boot fails).
   */
  private async checkScope(ctx: ExecutionContext, req: AuthedRequest, key: CachedKey): Promise<void> {
    const declared = this.scopes.ruleOf(ctx.getHandler());
    if (!declared) throw new AppError('internal', 'route without a declared scope');
    for (const scope of scopesOf(declared.rule, req))
      if (!grants(key.role, scope)) throw insufficientScope(scope, key.role);
    if (!key.agentIds) return;
    if (AGENT_CREATING_ROUTES.has(declared.key))
      throw new AppError('insufficient_scope', 'a key limited to agents cannot create agents', {
        scope: 'agents:write',
        role: key.role,
      });
    const wide = tenantWide(declared.key);
    if (wide)
      throw new AppError(
        'insufficient_scope',
        `a key limited to agents cannot reach ${wide}: they belong to no one agent`,
        { scope: scopesOf(declared.rule, req)[0], role: key.role },
      );
    const named = namedAgents(declared.key, req);
    for (const agentId of named) if (!key.agentIds.includes(agentId.toLowerCase())) throw notFound('agent');
    if (AGENT_FILTERED_LISTS.has(declared.key) && named.length === 0)
      throw new AppError('bad_request', 'a key limited to agents lists by agent: pass agentId');
    // An agent LangGraph names by name or id (`assistant_id`): another agent is as unknown.
    const model = modelNamed(declared.key, req);
    if (model) {
      const agentId = await this.agents.idByModel(key.tenantId, model.name);
      if (agentId && !key.agentIds.includes(agentId.toLowerCase())) throw model.absent();
    }
    // An object of another agent is as absent as another tenant's (the handler 404s a missing one).
    // So is one named in the body or the query (a schedule's session, a dataset item's turn).
    for (const owned of ownedObjects(declared.key, req)) {
      const agentId = await this.apiKeys.agentOf(key.tenantId, owned.kind, owned.id);
      if (agentId && !key.agentIds.includes(agentId.toLowerCase()))
        throw new AppError('not_found', `${owned.label} not found`);
    }
  }

  /**
   * The tenant and key of an API key (a 401 `unauthorized` otherwise), its use counted. Routes get it
   * through `canActivate`; WebSocket mode on /v1/responses calls it at the upgrade (docs/adr/0035).
   */
  async apiKey(token: string | undefined): Promise<CachedKey> {
    if (!token) throw new AppError('unauthorized', 'missing API key: send "Authorization: Bearer <key>"');
    const hash = hashApiKey(token);
    let key = this.keys.get(hash);
    if (!key) {
      const row = await this.apiKeys.byHash(hash);
      // Only valid keys are cached: a guessed or revoked key is looked up every time (docs/adr/0017).
      if (!row || row.revokedAt) throw new AppError('unauthorized', 'invalid or revoked API key');
      key = {
        keyId: row.id,
        tenantId: row.tenantId,
        role: row.role,
        agentIds: row.agentIds.length > 0 ? row.agentIds.map((a) => a.toLowerCase()) : null,
        expiresAt: row.expiresAt ? row.expiresAt.getTime() : null,
      };
      this.keys.set(hash, key);
    }
    // An expired key is refused like an unknown one (docs/adr/0066), cached or not.
    if (key.expiresAt !== null && key.expiresAt <= Date.now())
      throw new AppError('unauthorized', 'invalid or revoked API key');
    this.usage.touch(key.keyId);
    return key;
  }

  private isAdminToken(token: string | undefined): boolean {
    const admin = this.config.ADMIN_TOKEN;
    return !!admin && !!token && constantTimeEquals(token, admin);
  }
}

/**
 * The agents a request names where a key limited to agents must own them: the path's agent (the
 * agents routes' `:id`, A2A's `:agentId`) and a body's `agentId` (a new session, schedule, trigger).
 */
function namedAgents(routeKey: string, req: FastifyRequest): string[] {
  const params = (req.params ?? {}) as Record<string, string | undefined>;
  const out: string[] = [];
  const path = routeKey.slice(routeKey.indexOf(' ') + 1);
  if (path.startsWith('/v1/agents/:id') && params.id) out.push(params.id);
  if (path.startsWith('/a2a/:agentId') && params.agentId) out.push(params.agentId);
  const query = (req.query ?? {}) as Record<string, unknown>;
  if (typeof query.agentId === 'string') out.push(query.agentId);
  const body = req.body as { agentId?: unknown } | undefined;
  if (body && typeof body === 'object' && !Array.isArray(body) && typeof body.agentId === 'string')
    out.push(body.agentId);
  return out;
}

/**
 * The agent a LangGraph request names by name or id (`assistant_id`, or a new thread's
 * `metadata.assistant_id` / `graph_id`), and the 404 its handler gives an unknown one (the
 * OpenAI-compatible routes check their `model` themselves: their 404 is OpenAI's `model_not_found`).
 */
function modelNamed(
  routeKey: string,
  req: FastifyRequest,
): { name: string; absent: () => Error } | undefined {
  const params = (req.params ?? {}) as { assistant_id?: unknown };
  const body = (req.body ?? {}) as { assistant_id?: unknown; metadata?: unknown };
  // A search's filter is the handler's to narrow: another agent there finds nothing, as an unknown one.
  const searching = routeKey.endsWith('/search');
  if (!routeKey.includes(' /langgraph/') || searching || typeof body !== 'object' || Array.isArray(body))
    return undefined;
  const metadata = (body.metadata ?? {}) as { assistant_id?: unknown; graph_id?: unknown };
  const name = [params.assistant_id, body.assistant_id, metadata.assistant_id, metadata.graph_id].find(
    (v) => typeof v === 'string',
  );
  if (typeof name !== 'string') return undefined;
  return { name, absent: () => new AppError('not_found', `assistant ${name} not found`) };
}

/** Lists across the tenant's agents that a key limited to agents must narrow with `agentId`. */
const AGENT_FILTERED_LISTS = new Set(['GET /v1/sessions', 'GET /v1/turns']);

/**
 * Routes of what belongs to the tenant as a whole, no one agent (datasets, MCP servers, the daily
 * spend roll-up, its keys and settings): a key limited to agents is refused them (403
 * `insufficient_scope`, before any lookup), as it is refused creating an agent. A limited admin key
 * cannot so mint an unlimited one.
 */
const TENANT_WIDE: [string, string][] = [
  ['/v1/datasets', "the tenant's datasets"],
  ['/v1/mcp-servers', "the tenant's MCP servers"],
  ['/v1/usage/daily', "the tenant's daily spend"],
  ['/v1/api-keys', "the tenant's API keys"],
  ['PATCH /v1/settings', "the tenant's settings"],
  // The tenant's own export (issue 36): everything of the tenant, every agent's.
  ['/v1/export', "the tenant's export"],
];

/** What a tenant-wide route reaches, named for the refusal; undefined for any other route. */
export function tenantWide(routeKey: string): string | undefined {
  const path = routeKey.slice(routeKey.indexOf(' ') + 1);
  return TENANT_WIDE.find(([p]) =>
    p.includes(' ') ? routeKey === p : path === p || path.startsWith(`${p}/`),
  )?.[1];
}

/**
 * Objects by id in the path that belong to one agent: `[path prefix, kind, param, name in the 404]`.
 * The 404 is the handler's for an unknown id, so another agent's object reads as absent.
 */
const OWNED_PREFIXES: [string, AgentOwnedKind, string, string][] = [
  ['/v1/sessions/:id', 'session', 'id', 'session'],
  // A comparison's handler names what it looks for: a replay turn.
  ['/v1/turns/:id/comparison', 'turn', 'id', 'replay turn'],
  ['/v1/turns/:id', 'turn', 'id', 'turn'],
  ['/v1/approvals/:id', 'approval', 'id', 'approval'],
  ['/v1/tasks/:id', 'task', 'id', 'task'],
  ['/v1/schedules/:id', 'schedule', 'id', 'schedule'],
  ['/v1/triggers/:id', 'trigger', 'id', 'trigger'],
  ['/v1/experiments/:id', 'experiment', 'id', 'experiment'],
  ['/v1/tool-results/:id', 'toolResult', 'id', 'tool result'],
  // LangGraph's handler names the thread: `thread <id> not found`.
  ['/langgraph/threads/:thread_id', 'session', 'thread_id', 'thread :id'],
];

/** Ids of agent-owned objects a REST request names in its body or query (`sessionId`, `turnId`). */
const OWNED_FIELDS: [string, AgentOwnedKind][] = [
  ['sessionId', 'session'],
  ['turnId', 'turn'],
];

/** The objects a route reaches by id (path, body, query) whose agent a key limited to agents must own. */
export function ownedObjects(
  routeKey: string,
  req: FastifyRequest,
): { kind: AgentOwnedKind; id: string; label: string }[] {
  const path = routeKey.slice(routeKey.indexOf(' ') + 1);
  const params = (req.params ?? {}) as Record<string, string | undefined>;
  const out: { kind: AgentOwnedKind; id: string; label: string }[] = [];
  for (const [prefix, kind, param, label] of OWNED_PREFIXES) {
    const id = params[param];
    if (path.startsWith(prefix) && id && (kind === 'toolResult' ? /^[0-9a-f]{24}$/.test(id) : isUuid(id))) {
      out.push({ kind, id: id.toLowerCase(), label: label.replace(':id', id) });
      break;
    }
  }
  if (!path.startsWith('/v1/')) return out;
  const body = req.body && typeof req.body === 'object' && !Array.isArray(req.body) ? req.body : {};
  const query = (req.query ?? {}) as Record<string, unknown>;
  for (const source of [body as Record<string, unknown>, query])
    for (const [field, kind] of OWNED_FIELDS) {
      const id = source[field];
      if (typeof id === 'string' && isUuid(id)) out.push({ kind, id: id.toLowerCase(), label: kind });
    }
  return out;
}
