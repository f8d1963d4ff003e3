import 'reflect-metadata';
import { Controller, Get, Module, Post, type INestApplicationContext } from '@nestjs/common';
import { DiscoveryModule, NestFactory } from '@nestjs/core';
import type { FastifyRequest } from 'fastify';
import { Public } from './guard';
import {
  grants,
  resolveRouteScopes,
  ROLE_SCOPES,
  ROUTE_SCOPES,
  RouteScopes,
  routeKey,
  SCOPES,
  scopesOf,
  type ScopeRule,
} from './scopes';

@Controller('v1/widgets')
class WidgetsController {
  @Get()
  list(): string[] {
    return [];
  }

  @Post(':id/spin')
  spin(): void {}

  @Public()
  @Get('public')
  open(): void {}
}

/** RouteScopes checking a table of the test's. */
const scopesWith = (table: Record<string, ScopeRule>) =>
  class extends RouteScopes {
    protected override table(): Record<string, ScopeRule> {
      return table;
    }
  };

/** Boots a Nest application context with the widgets controller and RouteScopes over `table`. */
async function boot(table: Record<string, ScopeRule>): Promise<INestApplicationContext> {
  @Module({
    imports: [DiscoveryModule],
    controllers: [WidgetsController],
    providers: [{ provide: RouteScopes, useClass: scopesWith(table) }],
  })
  class AppModule {}
  return NestFactory.createApplicationContext(AppModule, { logger: false, abortOnError: false });
}

describe('route scopes (docs/adr/0066)', () => {
  it('a tenant route without a declared scope fails the boot, naming it', async () => {
    await expect(boot({ 'GET /v1/widgets': 'read' })).rejects.toThrow(
      /tenant routes without a declared scope.*POST \/v1\/widgets\/:id\/spin/,
    );
  });

  it('a line naming no route fails the boot too (a typo would otherwise leave a route unguarded)', async () => {
    await expect(
      boot({
        'GET /v1/widgets': 'read',
        'POST /v1/widgets/:id/spin': 'agents:write',
        'GET /v1/gone': 'read',
      }),
    ).rejects.toThrow(/naming no route: GET \/v1\/gone/);
  });

  it('boots when every tenant route is declared (public routes need none), and answers rules by handler', async () => {
    const app = await boot({ 'GET /v1/widgets': 'read', 'POST /v1/widgets/:id/spin': 'agents:write' });
    const scopes = app.get(RouteScopes);
    // The handlers as Nest registered them (the prototype's functions), by name.
    const handler = (name: 'spin' | 'open') =>
      Object.getOwnPropertyDescriptor(WidgetsController.prototype, name)!.value as object;
    expect(scopes.ruleOf(handler('spin'))).toEqual({
      key: 'POST /v1/widgets/:id/spin',
      rule: 'agents:write',
    });
    expect(scopes.ruleOf(handler('open'))).toBeUndefined();
    await app.close();
  });

  it('resolveRouteScopes: missing and stale lines', () => {
    const h = {};
    expect(() => resolveRouteScopes([{ key: 'GET /a', tenant: true, handler: h }], {})).toThrow(/GET \/a/);
    expect(resolveRouteScopes([{ key: 'GET /a', tenant: false, handler: h }], {}).size).toBe(0);
    expect(
      resolveRouteScopes([{ key: 'GET /a', tenant: true, handler: h }], { 'GET /a': 'read' }).get(h),
    ).toEqual({ key: 'GET /a', rule: 'read' });
  });

  it('routeKey joins paths as Fastify registers them', () => {
    expect(routeKey(0, 'v1/agents', '')).toBe('GET /v1/agents');
    expect(routeKey(1, 'v1/agents', ':id/pause')).toBe('POST /v1/agents/:id/pause');
    expect(routeKey(0, '/', 'mcp')).toBe('GET /mcp');
  });

  it('roles grant what ADR 0066 says', () => {
    expect(ROLE_SCOPES.admin).toEqual(SCOPES);
    expect(SCOPES.filter((s) => grants('developer', s))).not.toContain('keys:manage');
    expect(SCOPES.filter((s) => grants('developer', s))).not.toContain('settings:write');
    // The tenant's whole export (docs/adr/0068): admin keys only.
    expect(SCOPES.filter((s) => grants('developer', s))).not.toContain('data:export');
    expect(ROUTE_SCOPES['POST /v1/export']).toBe('data:export');
    expect(SCOPES.filter((s) => grants('approver', s))).toEqual(['read', 'approvals:decide']);
    expect(SCOPES.filter((s) => grants('reader', s))).toEqual(['read']);
    expect(SCOPES.filter((s) => grants('ingest', s))).toEqual(['messages:send']);
    expect(grants('nonsense', 'read')).toBe(false);
  });

  it('every line of the table names a known scope', () => {
    for (const rule of Object.values(ROUTE_SCOPES))
      if (typeof rule === 'string') expect(SCOPES).toContain(rule);
  });

  it('JSON-RPC routes need the scope of each method of the request', () => {
    const req = (body: unknown) => ({ body }) as FastifyRequest;
    const a2a = ROUTE_SCOPES['POST /a2a/:agentId'];
    const mcp = ROUTE_SCOPES['POST /mcp'];
    expect(scopesOf(a2a, req({ jsonrpc: '2.0', id: 1, method: 'SendMessage' }))).toEqual(['messages:send']);
    expect(scopesOf(a2a, req({ jsonrpc: '2.0', id: 1, method: 'message/send' }))).toEqual(['messages:send']);
    expect(scopesOf(a2a, req({ jsonrpc: '2.0', id: 1, method: 'GetTask' }))).toEqual(['read']);
    expect(scopesOf(a2a, req({ jsonrpc: '2.0', id: 1, method: 'tasks/cancel' }))).toEqual(['sessions:write']);
    expect(scopesOf(mcp, req({ jsonrpc: '2.0', id: 1, method: 'tools/list' }))).toEqual(['read']);
    expect(scopesOf(mcp, req({ jsonrpc: '2.0', id: 1, method: 'tools/call' }))).toEqual(['messages:send']);
    expect(
      scopesOf(mcp, req([{ method: 'tools/list' }, { method: 'tools/call' }, { method: 'ping' }])).sort(),
    ).toEqual(['messages:send', 'read']);
    // A body without a method (a malformed call) still needs something: the least, `read`, for MCP.
    expect(scopesOf(mcp, req(undefined))).toEqual(['read']);
  });

  it("MCP's handshake needs no scope; tools/list is messages:send for a key that may send but not read", () => {
    const req = (body: unknown, apiKeyRole?: string) => ({ body, apiKeyRole }) as unknown as FastifyRequest;
    const mcp = ROUTE_SCOPES['POST /mcp'];
    for (const method of ['initialize', 'ping', 'server/discover', 'notifications/initialized'])
      expect(scopesOf(mcp, req({ jsonrpc: '2.0', method }, 'ingest'))).toEqual([]);
    expect(scopesOf(mcp, req({ jsonrpc: '2.0', id: 1, method: 'tools/list' }, 'ingest'))).toEqual([
      'messages:send',
    ]);
    expect(scopesOf(mcp, req({ jsonrpc: '2.0', id: 1, method: 'tools/list' }, 'reader'))).toEqual(['read']);
    // Anything else an ingest key sends still needs `read`, which it lacks.
    expect(scopesOf(mcp, req({ jsonrpc: '2.0', id: 1, method: 'resources/list' }, 'ingest'))).toEqual([
      'read',
    ]);
  });
});
