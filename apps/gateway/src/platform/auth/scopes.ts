import { Inject, Injectable, type OnModuleInit } from '@nestjs/common';
import { PATH_METADATA, METHOD_METADATA } from '@nestjs/common/constants';
import { RequestMethod } from '@nestjs/common';
import { DiscoveryService, MetadataScanner, Reflector } from '@nestjs/core';
import type { FastifyRequest } from 'fastify';
import { AppError, type ApiKeyRole } from '@switchboard/contracts';

/**
 * What a route needs of the API key that calls it (docs/adr/0066). A key's role grants a set of
 * scopes (ROLE_SCOPES); a tenant route names the one it needs in ROUTE_SCOPES, the one table.
 */
export const SCOPES = [
  /** Every read of the tenant's data (GETs, searches, streams). */
  'read',
  /** Create, change or delete agents and their configuration (versions, canaries, lifecycle, MCP servers, schedules, triggers, work items). */
  'agents:write',
  /** Change sessions and turns (fork, rewind, cancel, replay, client tool results, LangGraph thread state). */
  'sessions:write',
  /** Write an agent's memory and memory blocks. */
  'memory:write',
  /** Send input: a message, a chat completion, a response, a LangGraph run, an A2A message, an MCP tool call. */
  'messages:send',
  /** Decide an approval. */
  'approvals:decide',
  /** Create, list and revoke the tenant's API keys. */
  'keys:manage',
  /** Change the tenant's settings. */
  'settings:write',
  /** Export everything the tenant has (POST /v1/export, docs/adr/0068): admin keys only. */
  'data:export',
] as const;
export type Scope = (typeof SCOPES)[number];

/** What each role grants. `admin` (every key made before roles) grants everything. */
export const ROLE_SCOPES: Record<ApiKeyRole, readonly Scope[]> = {
  admin: SCOPES,
  developer: ['read', 'agents:write', 'sessions:write', 'memory:write', 'messages:send', 'approvals:decide'],
  approver: ['read', 'approvals:decide'],
  reader: ['read'],
  ingest: ['messages:send'],
};

/** A route's need: one scope, or (JSON-RPC routes) the scopes the request's methods need. */
export type ScopeRule = Scope | ((req: FastifyRequest) => Scope[]);

/** The JSON-RPC methods of a body (one request or a batch). */
function rpcMethods(req: FastifyRequest): string[] {
  const body = req.body;
  const calls = Array.isArray(body) ? body : [body];
  return calls.map((c) =>
    c && typeof c === 'object' && typeof (c as { method?: unknown }).method === 'string'
      ? (c as { method: string }).method
      : '',
  );
}

const A2A_READS = new Set([
  'tasks/get',
  'tasks/resubscribe',
  'tasks/pushNotificationConfig/get',
  'tasks/pushNotificationConfig/list',
  'GetTask',
  'ListTasks',
  'SubscribeToTask',
  'GetTaskPushNotificationConfig',
  'ListTaskPushNotificationConfig',
  'GetExtendedAgentCard',
  'agent/getAuthenticatedExtendedCard',
]);
const A2A_CANCELS = new Set(['tasks/cancel', 'CancelTask']);

/** A2A: reads are `read`, a cancel `sessions:write`, anything else (send, push configs) `messages:send`. */
const a2aScopes = (req: FastifyRequest): Scope[] =>
  rpcMethods(req).map((m) =>
    A2A_READS.has(m) ? 'read' : A2A_CANCELS.has(m) ? 'sessions:write' : 'messages:send',
  );

/** MCP's handshake and keep-alive: they tell nothing of the tenant's data, so any key may send them. */
const MCP_HANDSHAKE = new Set(['initialize', 'ping', 'server/discover']);

/**
 * MCP: a tool call (a message to an agent) is `messages:send`; the handshake (initialize, pings,
 * notifications) needs no scope; `tools/list` (the agents' names) is `read`, or `messages:send` for a
 * key that may send but not read (an ingest key must find the tool it calls); the rest is `read`.
 */
const mcpScopes = (req: FastifyRequest): Scope[] => {
  const role = (req as { apiKeyRole?: string }).apiKeyRole ?? 'admin';
  return rpcMethods(req).flatMap((m): Scope[] => {
    if (m === 'tools/call') return ['messages:send'];
    if (MCP_HANDSHAKE.has(m) || m.startsWith('notifications/')) return [];
    if (m === 'tools/list' && !grants(role, 'read') && grants(role, 'messages:send'))
      return ['messages:send'];
    return ['read'];
  });
};

/**
 * THE table: every tenant route (`METHOD /path` as its controller declares it) and the scope it
 * needs. The gateway refuses to start when a tenant route is missing here, or a line names no route
 * (RouteScopes). Adding a route: add its line here.
 */
export const ROUTE_SCOPES: Record<string, ScopeRule> = {
  // Identity: any key may ask who it is.
  'GET /v1/whoami': 'read',
  'GET /v1/console/config': 'read',

  // Agents
  'GET /v1/agents': 'read',
  'POST /v1/agents': 'agents:write',
  'GET /v1/agents/:id': 'read',
  'PATCH /v1/agents/:id': 'agents:write',
  'DELETE /v1/agents/:id': 'agents:write',
  'GET /v1/agents/:id/versions': 'read',
  'GET /v1/agents/:id/versions/diff': 'read',
  'GET /v1/agents/:id/versions/:version': 'read',
  'POST /v1/agents/:id/rollback': 'agents:write',
  'GET /v1/agents/:id/canary': 'read',
  'PUT /v1/agents/:id/canary': 'agents:write',
  'DELETE /v1/agents/:id/canary': 'agents:write',
  'POST /v1/agents/:id/canary/promote': 'agents:write',
  'GET /v1/agents/:id/scores': 'read',
  // Datasets and experiments (docs/adr/0063): building them is changing how agents are judged.
  'GET /v1/datasets': 'read',
  'GET /v1/datasets/:id': 'read',
  'GET /v1/datasets/:id/items': 'read',
  'POST /v1/datasets': 'agents:write',
  'DELETE /v1/datasets/:id': 'agents:write',
  'POST /v1/datasets/:id/items': 'agents:write',
  'POST /v1/datasets/:id/items/from-turn': 'agents:write',
  'GET /v1/experiments': 'read',
  'GET /v1/experiments/:id': 'read',
  'POST /v1/experiments': 'agents:write',
  'POST /v1/agents/:id/pause': 'agents:write',
  'POST /v1/agents/:id/resume': 'agents:write',
  'POST /v1/agents/:id/stop': 'agents:write',
  'GET /v1/archetypes': 'read',
  'GET /v1/models': 'read',
  'GET /v1/models/:model': 'read',

  // Work items
  'GET /v1/agents/:id/work-items': 'read',
  'POST /v1/agents/:id/work-items': 'agents:write',
  'GET /v1/agents/:id/work-items/:itemId': 'read',
  'POST /v1/agents/:id/work-items/:itemId/cancel': 'agents:write',
  'POST /v1/agents/:id/work-items/:itemId/complete': 'agents:write',

  // Memory
  'GET /v1/agents/:id/memory': 'read',
  'POST /v1/agents/:id/memory': 'memory:write',
  'GET /v1/agents/:id/memory/embeddings': 'read',
  'GET /v1/agents/:id/memory/:sourceRef': 'read',
  'DELETE /v1/agents/:id/memory/:sourceRef': 'memory:write',
  'GET /v1/agents/:id/blocks': 'read',
  'GET /v1/agents/:id/blocks/:name': 'read',
  'PUT /v1/agents/:id/blocks/:name': 'memory:write',
  'DELETE /v1/agents/:id/blocks/:name': 'memory:write',
  'GET /v1/agents/:id/blocks/:name/versions': 'read',

  // Sessions, turns, tasks
  'GET /v1/sessions': 'read',
  'POST /v1/sessions': 'messages:send',
  'GET /v1/sessions/:id': 'read',
  'PATCH /v1/sessions/:id': 'sessions:write',
  'DELETE /v1/sessions/:id': 'sessions:write',
  'POST /v1/sessions/:id/messages': 'messages:send',
  'GET /v1/sessions/:id/messages': 'read',
  'GET /v1/sessions/:id/turns': 'read',
  'GET /v1/sessions/:id/events': 'read',
  'GET /v1/sessions/:id/lineage': 'read',
  'GET /v1/sessions/:id/stream': 'read',
  'POST /v1/sessions/:id/fork': 'sessions:write',
  'POST /v1/sessions/:id/rewind': 'sessions:write',
  'GET /v1/turns': 'read',
  'GET /v1/turns/:id': 'read',
  // Feedback and outcomes (docs/adr/0062) arrive from the tenant's own product, like its users' messages.
  'POST /v1/turns/:id/feedback': 'messages:send',
  'GET /v1/turns/:id/stream': 'read',
  'GET /v1/turns/:id/timeline': 'read',
  'GET /v1/turns/:id/comparison': 'read',
  'GET /v1/turns/:id/rounds/:index/context': 'read',
  'POST /v1/turns/:id/cancel': 'sessions:write',
  'POST /v1/turns/:id/replay': 'sessions:write',
  'POST /v1/turns/:id/client-tool-results': 'sessions:write',
  'GET /v1/tasks/:id': 'read',
  'POST /v1/tasks/:id/answer': 'sessions:write',
  'POST /v1/tasks/:id/cancel': 'sessions:write',
  'GET /v1/tool-results/:id': 'read',

  // Approvals
  'GET /v1/approvals': 'read',
  'GET /v1/approvals/:id': 'read',
  'POST /v1/approvals/:id': 'approvals:decide',

  // Integrations: MCP servers, schedules, triggers
  'GET /v1/mcp-servers': 'read',
  'POST /v1/mcp-servers': 'agents:write',
  'GET /v1/mcp-servers/:id': 'read',
  'PATCH /v1/mcp-servers/:id': 'agents:write',
  'DELETE /v1/mcp-servers/:id': 'agents:write',
  'POST /v1/mcp-servers/:id/refresh': 'agents:write',
  'GET /v1/schedules': 'read',
  'POST /v1/schedules': 'agents:write',
  'GET /v1/schedules/:id': 'read',
  'PATCH /v1/schedules/:id': 'agents:write',
  'DELETE /v1/schedules/:id': 'agents:write',
  'GET /v1/triggers': 'read',
  'POST /v1/triggers': 'agents:write',
  'GET /v1/triggers/:id': 'read',
  'DELETE /v1/triggers/:id': 'agents:write',
  'POST /v1/triggers/:id/rotate': 'agents:write',
  'GET /v1/triggers/:id/deliveries': 'read',

  // The tenant: keys, settings, usage, audit
  'GET /v1/api-keys': 'keys:manage',
  'POST /v1/api-keys': 'keys:manage',
  'DELETE /v1/api-keys/:id': 'keys:manage',
  'GET /v1/settings': 'read',
  'PATCH /v1/settings': 'settings:write',
  'GET /v1/usage': 'read',
  'GET /v1/usage/daily': 'read',
  'GET /v1/audit-events': 'read',
  'POST /v1/export': 'data:export',

  // OpenAI Chat Completions and Responses
  'POST /v1/chat/completions': 'messages:send',
  'POST /v1/responses': 'messages:send',
  'POST /v1/responses/compact': 'messages:send',
  'GET /v1/responses/:id': 'read',
  'GET /v1/responses/:id/input_items': 'read',
  'POST /v1/responses/:id/cancel': 'sessions:write',

  // LangGraph
  'GET /langgraph/assistants/:assistant_id': 'read',
  'POST /langgraph/assistants/search': 'read',
  'POST /langgraph/threads': 'messages:send',
  'POST /langgraph/threads/search': 'read',
  'GET /langgraph/threads/:thread_id': 'read',
  'POST /langgraph/threads/:thread_id/copy': 'sessions:write',
  'GET /langgraph/threads/:thread_id/history': 'read',
  'POST /langgraph/threads/:thread_id/history': 'read',
  'GET /langgraph/threads/:thread_id/state': 'read',
  'POST /langgraph/threads/:thread_id/state': 'sessions:write',
  'GET /langgraph/threads/:thread_id/state/:checkpoint_id': 'read',
  'POST /langgraph/threads/:thread_id/state/checkpoint': 'read',
  'GET /langgraph/threads/:thread_id/runs': 'read',
  'POST /langgraph/threads/:thread_id/runs': 'messages:send',
  'POST /langgraph/threads/:thread_id/runs/stream': 'messages:send',
  'POST /langgraph/threads/:thread_id/runs/wait': 'messages:send',
  'GET /langgraph/threads/:thread_id/runs/:run_id': 'read',
  'GET /langgraph/threads/:thread_id/runs/:run_id/join': 'read',
  'GET /langgraph/threads/:thread_id/runs/:run_id/stream': 'read',
  'POST /langgraph/threads/:thread_id/runs/:run_id/cancel': 'sessions:write',

  // A2A and MCP (JSON-RPC: by method)
  'GET /a2a/:agentId/.well-known/agent-card.json': 'read',
  'POST /a2a/:agentId': a2aScopes,
  'GET /mcp': 'read',
  'POST /mcp': mcpScopes,
  'DELETE /mcp': 'read',
};

/** A key limited to agents may not create one (docs/adr/0066). */
export const AGENT_CREATING_ROUTES = new Set(['POST /v1/agents']);

/** The scopes a rule asks of this request. */
export const scopesOf = (rule: ScopeRule, req: FastifyRequest): Scope[] =>
  typeof rule === 'string' ? [rule] : [...new Set(rule(req))];

/** The 403 of a key whose role lacks `scope`: it names the scope (and says nothing of the object). */
export const insufficientScope = (scope: Scope, role: string) =>
  new AppError(
    'insufficient_scope',
    `this API key (role ${role}) lacks the scope "${scope}" this route needs`,
    {
      scope,
      role,
    },
  );

export const grants = (role: string, scope: Scope): boolean =>
  (ROLE_SCOPES[role as ApiKeyRole] ?? []).includes(scope);

/** A route as the start-up check sees it. */
export interface DeclaredRoute {
  key: string;
  /** Whether an API key may call it (a tenant route, or one taking either credential). */
  tenant: boolean;
  handler: object;
  /** Its controller class and who may call it (the early rate-limit refusal reads them, docs/adr/0078). */
  controller?: object;
  access?: string;
}

/**
 * Every tenant route's rule by its handler, or the error that stops the gateway: a tenant route
 * without a line, or a line naming no route.
 */
export function resolveRouteScopes(
  routes: DeclaredRoute[],
  table: Record<string, ScopeRule> = ROUTE_SCOPES,
): Map<object, { key: string; rule: ScopeRule }> {
  const byHandler = new Map<object, { key: string; rule: ScopeRule }>();
  const missing: string[] = [];
  const seen = new Set<string>();
  for (const r of routes) {
    seen.add(r.key);
    if (!r.tenant) continue;
    const rule = table[r.key];
    if (!rule) missing.push(r.key);
    else byHandler.set(r.handler, { key: r.key, rule });
  }
  const stale = Object.keys(table).filter((k) => !seen.has(k));
  if (missing.length > 0 || stale.length > 0)
    throw new Error(
      [
        missing.length > 0
          ? `tenant routes without a declared scope (add them to ROUTE_SCOPES in apps/gateway/src/platform/auth/scopes.ts): ${missing.join(', ')}`
          : '',
        stale.length > 0 ? `ROUTE_SCOPES lines naming no route: ${stale.join(', ')}` : '',
      ]
        .filter(Boolean)
        .join('; '),
    );
  return byHandler;
}

/** `METHOD /path` of a controller path and a handler path, as Fastify registers them. */
export function routeKey(method: RequestMethod, controllerPath: string, handlerPath: string): string {
  const path = `/${controllerPath}/${handlerPath}`.replace(/\/+/g, '/').replace(/(.)\/$/, '$1');
  return `${RequestMethod[method]} ${path}`;
}

const ACCESS = 'switchboard:access';

/**
 * The start-up check (docs/adr/0066): at module init, every route of every controller is found, and
 * a tenant route (neither public nor the operator's) without a line in ROUTE_SCOPES stops the boot.
 * The guard asks it for a request's rule by handler.
 */
@Injectable()
export class RouteScopes implements OnModuleInit {
  private byHandler = new Map<object, { key: string; rule: ScopeRule }>();

  constructor(
    @Inject(DiscoveryService) private readonly discovery: DiscoveryService,
    @Inject(MetadataScanner) private readonly scanner: MetadataScanner,
    @Inject(Reflector) private readonly reflector: Reflector,
  ) {}

  onModuleInit(): void {
    this.byHandler = resolveRouteScopes(this.routes(), this.table());
  }

  /** The table checked (a test may swap it). */
  protected table(): Record<string, ScopeRule> {
    return ROUTE_SCOPES;
  }

  /** Every route of every controller. */
  routes(): DeclaredRoute[] {
    const out: DeclaredRoute[] = [];
    for (const wrapper of this.discovery.getControllers()) {
      const instance = wrapper.instance as object | undefined;
      const cls = wrapper.metatype as (new (...a: never[]) => unknown) | undefined;
      if (!instance || !cls) continue;
      const base = this.reflector.get<string | string[] | undefined>(PATH_METADATA, cls) ?? '';
      const classAccess = this.reflector.get<string | undefined>(ACCESS, cls);
      const proto = Object.getPrototypeOf(instance) as Record<string, unknown>;
      for (const name of this.scanner.getAllMethodNames(proto)) {
        const handler = proto[name] as object;
        const method = this.reflector.get<RequestMethod | undefined>(METHOD_METADATA, handler as never);
        const sub = this.reflector.get<string | string[] | undefined>(PATH_METADATA, handler as never);
        if (method === undefined || sub === undefined) continue;
        const access =
          this.reflector.get<string | undefined>(ACCESS, handler as never) ?? classAccess ?? 'tenant';
        for (const b of Array.isArray(base) ? base : [base])
          for (const p of Array.isArray(sub) ? sub : [sub])
            out.push({
              key: routeKey(method, b, p),
              tenant: access === 'tenant' || access === 'any',
              handler,
              controller: cls,
              access,
            });
      }
    }
    return out;
  }

  /** The rule of the route `handler` serves; undefined for a handler the check did not see. */
  ruleOf(handler: object): { key: string; rule: ScopeRule } | undefined {
    return this.byHandler.get(handler);
  }
}
