import type { ExecutionContext } from '@nestjs/common';
import type { Reflector } from '@nestjs/core';
import { AppError } from '@switchboard/contracts';
import type { Config } from '@switchboard/config';
import type { ApiKeysRepository, TenantsRepository } from '@switchboard/store';
import type { FastifyRequest } from 'fastify';
import { AuthGuard, ownedObjects, tenantWide, type Access, type AuthedRequest } from './guard';
import type { ApiKeyCache } from './key-cache';
import type { KeyUsage } from './key-usage';
import { hashApiKey } from './keys';
import type { RouteScopes } from './scopes';
import type { AgentsRepository } from '@switchboard/subagents';

const ADMIN = 'admin-token-0123456789';
const TENANT = '01a20360-0000-7000-8000-000000000001';
const OTHER = '01a20360-0000-7000-8000-000000000002';
const KEY = 'sk_live_tenant_key';

function guard() {
  const apiKeys = {
    byHash: async (hash: string) =>
      hash === hashApiKey(KEY)
        ? { id: 'key-1', tenantId: TENANT, revokedAt: null, role: 'admin', agentIds: [], expiresAt: null }
        : null,
  } as unknown as ApiKeysRepository;
  const tenants = {
    settings: async (id: string) => (id === TENANT ? { settings: {} } : undefined),
  } as unknown as TenantsRepository;
  const cache = { get: () => undefined, set: () => undefined } as unknown as ApiKeyCache;
  const usage = { touch: () => undefined } as unknown as KeyUsage;
  const config = { ADMIN_TOKEN: ADMIN } as Config;
  return (access: Access) =>
    new AuthGuard(
      { getAllAndOverride: () => access } as unknown as Reflector,
      apiKeys,
      tenants,
      config,
      cache,
      usage,
      { ruleOf: () => ({ key: 'GET /v1/agents', rule: 'read' }) } as unknown as RouteScopes,
      {} as AgentsRepository,
    );
}

/** Runs the guard on a request with these headers; the request as the guard left it, or its error. */
async function run(access: Access, headers: Record<string, string>) {
  const req = { headers, routeOptions: {} } as unknown as AuthedRequest;
  const ctx = {
    getHandler: () => undefined,
    getClass: () => undefined,
    switchToHttp: () => ({ getRequest: () => req }),
  } as unknown as ExecutionContext;
  try {
    await guard()(access).canActivate(ctx);
    return { req };
  } catch (err) {
    return { error: err as AppError };
  }
}

const status = async (access: Access, headers: Record<string, string>) =>
  (await run(access, headers)).error?.status ?? 200;

describe('AuthGuard: the operator acting as a tenant', () => {
  it('runs a tenant route as the tenant X-Switchboard-Tenant names, as the operator', async () => {
    const { req } = await run('tenant', {
      authorization: `Bearer ${ADMIN}`,
      'x-switchboard-tenant': TENANT.toUpperCase(),
    });
    expect(req).toMatchObject({ tenantId: TENANT, operator: true });
    expect(req?.apiKeyId).toBeUndefined();
  });

  it('404s an unknown tenant and 400s a malformed header', async () => {
    const admin = { authorization: `Bearer ${ADMIN}` };
    expect(await run('tenant', { ...admin, 'x-switchboard-tenant': OTHER })).toMatchObject({
      error: { status: 404, code: 'not_found' },
    });
    expect(await run('tenant', { ...admin, 'x-switchboard-tenant': 'not-a-uuid' })).toMatchObject({
      error: { status: 400, code: 'bad_request' },
    });
  });

  it('keeps ADMIN_TOKEN alone out of tenant routes, and the header away from anything but ADMIN_TOKEN', async () => {
    expect(await status('tenant', { authorization: `Bearer ${ADMIN}` })).toBe(401);
    expect(await status('tenant', { authorization: `Bearer ${KEY}`, 'x-switchboard-tenant': TENANT })).toBe(
      401,
    );
    expect(await status('tenant', { 'x-switchboard-tenant': TENANT })).toBe(401);
    expect(await status('tenant', { authorization: 'Bearer wrong', 'x-switchboard-tenant': TENANT })).toBe(
      401,
    );
  });

  it('leaves tenant keys and the admin routes as they were', async () => {
    expect((await run('tenant', { authorization: `Bearer ${KEY}` })).req).toMatchObject({
      tenantId: TENANT,
      apiKeyId: 'key-1',
    });
    expect(await status('admin', { authorization: `Bearer ${ADMIN}` })).toBe(200);
    expect(await status('admin', { authorization: `Bearer ${KEY}` })).toBe(401);
  });

  it('lets either credential through on a route open to both, telling them apart', async () => {
    expect((await run('any', { authorization: `Bearer ${ADMIN}` })).req).toMatchObject({ operator: true });
    expect(
      (await run('any', { authorization: `Bearer ${ADMIN}`, 'x-switchboard-tenant': TENANT })).req,
    ).toMatchObject({
      operator: true,
      tenantId: TENANT,
    });
    const tenant = (await run('any', { authorization: `Bearer ${KEY}` })).req;
    expect(tenant).toMatchObject({ tenantId: TENANT, apiKeyId: 'key-1' });
    expect(tenant?.operator).toBeUndefined();
    expect(await status('any', { authorization: 'Bearer revoked-or-wrong' })).toBe(401);
  });
});

describe('what a key limited to agents is checked against (docs/adr/0066)', () => {
  const S = '01a20360-0000-7000-8000-0000000000a1';
  const T = '01a20360-0000-7000-8000-0000000000b2';
  const req = (params: object, body?: unknown, query: object = {}) =>
    ({ params, body, query }) as unknown as FastifyRequest;

  it('tenant-wide routes are named; agents’ routes are not', () => {
    expect(tenantWide('GET /v1/datasets')).toBe("the tenant's datasets");
    expect(tenantWide('POST /v1/datasets/:id/items/from-turn')).toBe("the tenant's datasets");
    expect(tenantWide('GET /v1/mcp-servers/:id')).toBe("the tenant's MCP servers");
    expect(tenantWide('GET /v1/usage/daily')).toBe("the tenant's daily spend");
    expect(tenantWide('DELETE /v1/api-keys/:id')).toBe("the tenant's API keys");
    expect(tenantWide('PATCH /v1/settings')).toBe("the tenant's settings");
    for (const key of ['GET /v1/settings', 'GET /v1/usage', 'GET /v1/experiments', 'GET /v1/datasetsx'])
      expect(tenantWide(key)).toBeUndefined();
  });

  it('objects by id in the path, with the 404 their handler gives; ids in a REST body or query', () => {
    expect(ownedObjects('GET /v1/experiments/:id', req({ id: S }))).toEqual([
      { kind: 'experiment', id: S, label: 'experiment' },
    ]);
    expect(ownedObjects('GET /v1/turns/:id/comparison', req({ id: T }))).toEqual([
      { kind: 'turn', id: T, label: 'replay turn' },
    ]);
    expect(ownedObjects('GET /v1/tool-results/:id', req({ id: 'a'.repeat(24) }))).toEqual([
      { kind: 'toolResult', id: 'a'.repeat(24), label: 'tool result' },
    ]);
    expect(ownedObjects('GET /langgraph/threads/:thread_id/state', req({ thread_id: S }))).toEqual([
      { kind: 'session', id: S, label: `thread ${S}` },
    ]);
    expect(ownedObjects('POST /v1/schedules', req({}, { agentId: T, sessionId: S }))).toEqual([
      { kind: 'session', id: S, label: 'session' },
    ]);
    expect(ownedObjects('POST /v1/sessions/:id/fork', req({ id: S }, { turnId: T }))).toEqual([
      { kind: 'session', id: S, label: 'session' },
      { kind: 'turn', id: T, label: 'turn' },
    ]);
    expect(ownedObjects('GET /v1/turns', req({}, undefined, { sessionId: S }))).toEqual([
      { kind: 'session', id: S, label: 'session' },
    ]);
    // Not an id (left to the handler, which 404s it), and the protocols' bodies (their handlers check).
    expect(ownedObjects('GET /v1/sessions/:id', req({ id: 'nope' }))).toEqual([]);
    expect(ownedObjects('POST /langgraph/threads', req({}, { sessionId: S }))).toEqual([]);
  });
});
