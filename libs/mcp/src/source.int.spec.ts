import { newId } from '@switchboard/contracts';
import type { Db, Prisma } from '@switchboard/database';
import { createTestEnv, type TestEnv } from '@switchboard/testing';
import { startMcpServer, type TestMcpServer } from '../../../test/support/mcp-server';
import { McpClients, type McpToolEntry } from './clients';
import { McpToolSource, unknownMcpTools } from './source';

jest.setTimeout(120_000);

const ctx = {
  tenantId: 't',
  sessionId: 's',
  turnId: 'turn1',
  callId: 'call1',
  idempotencyKey: 'turn1:call1',
  signal: new AbortController().signal,
  resumed: false,
  writeGate: { isOpen: () => true },
};

/** Per-turn resolution of an agent's MCP tools (docs/adr/0023) against Postgres and a real server. */
describe('McpToolSource', () => {
  let env: TestEnv;
  let server: TestMcpServer;
  let clients: McpClients;
  const tenantA = newId();
  const tenantB = newId();
  const now = Date.now();

  beforeAll(async () => {
    env = await createTestEnv();
    server = await startMcpServer();
    clients = new McpClients({ allowHosts: ['127.0.0.1'] });
    for (const [id, name] of [
      [tenantA, 'a'],
      [tenantB, 'b'],
    ]) {
      await env.db.tenant.create({ data: { id, name } });
    }
  });

  afterAll(async () => {
    await clients.close();
    await server.close();
    await env.cleanup();
  });

  const source = (db: Db = env.db, ttlMs = 60_000) =>
    new McpToolSource({ db, clients, openSecret: (s) => s, ttlMs, now: () => now });

  const register = (
    tenantId: string,
    name: string,
    url: string,
    tools?: McpToolEntry[],
    fetchedAt?: Date,
    approval?: string,
  ) =>
    env.db.mcpServer.create({
      data: {
        id: newId(),
        tenantId,
        name,
        url,
        timeoutMs: 1_000,
        ...(approval ? { approval } : {}),
        ...(tools
          ? {
              tools: tools as unknown as Prisma.InputJsonValue,
              toolsFetchedAt: fetchedAt ?? new Date(),
              status: 'ok',
            }
          : {}),
      },
    });

  it('makes no query for an agent without MCP tools', async () => {
    const noDb = new Proxy({} as Db, {
      get: () => {
        throw new Error('no query expected');
      },
    });
    await expect(source(noDb).forTurn(tenantA, ['word_count', 'current_time'])).resolves.toEqual([]);
  });

  it('uses a fresh stored list without contacting the server', async () => {
    // Nobody listens on port 9: a live listing would fail.
    await register(tenantA, 'cached', 'http://127.0.0.1:9/mcp', [
      {
        name: 'echo',
        description: 'Echoes.',
        inputSchema: { type: 'object' },
        annotations: { readOnlyHint: true },
      },
    ]);
    const tools = await source().forTurn(tenantA, ['cached__echo', 'cached__other', 'word_count']);
    expect(tools.map((t) => [t.name, t.sideEffect])).toEqual([['cached__echo', 'read_only']]);
  });

  it('lists a stale server again and stores the list; the worker then keeps it for the TTL', async () => {
    const row = await register(tenantA, 'live', server.url, [], new Date(now - 120_000));
    const s = source();
    const tools = await s.forTurn(tenantA, ['live__add', 'live__delete_item']);
    expect(tools.map((t) => [t.name, t.sideEffect, t.needsApproval])).toEqual([
      ['live__add', 'read_only', false],
      ['live__delete_item', 'destructive', true],
    ]);
    const stored = await env.db.mcpServer.findUniqueOrThrow({ where: { id: row.id } });
    expect(stored.status).toBe('ok');
    expect((stored.tools as unknown as McpToolEntry[]).map((t) => t.name)).toContain('add');
    await expect(tools[0].execute({ a: 1, b: 2 }, ctx)).resolves.toEqual({
      content: [{ type: 'text', text: '3' }],
    });
    // Cached in memory: a stopped server does not stop the turn from getting its tools.
    await env.db.mcpServer.update({
      where: { id: row.id },
      data: { url: 'http://127.0.0.1:9/mcp', updatedAt: stored.updatedAt },
    });
    expect((await s.forTurn(tenantA, ['live__add'])).map((t) => t.name)).toEqual(['live__add']);
  });

  it('applies the server’s approval setting to the tools it resolves; the column admits only the three', async () => {
    const names = ['add', 'append_note', 'delete_item'];
    const needs = async (approval: string) => {
      await register(
        tenantA,
        `appr-${approval}`.replace('_', '-'),
        server.url,
        undefined,
        undefined,
        approval,
      );
      const tools = await source().forTurn(
        tenantA,
        names.map((n) => `appr-${approval}`.replace('_', '-') + `__${n}`),
      );
      return tools.map((t) => [t.sideEffect, t.needsApproval, t.honoursIdempotencyKey ?? false]);
    };
    expect(await needs('side_effects')).toEqual([
      ['read_only', false, false],
      ['local_write', true, true],
      ['destructive', true, false],
    ]);
    expect(await needs('destructive_only')).toEqual([
      ['read_only', false, false],
      ['local_write', false, true],
      ['destructive', true, false],
    ]);
    expect(await needs('none')).toEqual([
      ['read_only', false, false],
      ['local_write', false, true],
      ['destructive', false, false],
    ]);
    await expect(
      register(tenantA, 'appr-bad', server.url, undefined, undefined, 'sometimes'),
    ).rejects.toThrow(/mcp_servers_approval_check/);
  });

  it('a server never listed and unreachable gives a tool that answers mcp_unavailable', async () => {
    await register(tenantA, 'down', 'http://127.0.0.1:9/mcp');
    const [tool] = await source().forTurn(tenantA, ['down__anything']);
    expect(tool.name).toBe('down__anything');
    await expect(tool.execute({}, ctx)).rejects.toMatchObject({ kind: 'mcp_unavailable', retryable: true });
  });

  it('resolves only the tenant’s own live servers', async () => {
    await register(tenantB, 'theirs', server.url);
    expect(await source().forTurn(tenantA, ['theirs__add'])).toEqual([]);
    const gone = await register(tenantA, 'gone', server.url);
    await env.db.mcpServer.update({ where: { id: gone.id }, data: { deletedAt: new Date() } });
    expect(await source().forTurn(tenantA, ['gone__add'])).toEqual([]);
    expect(
      await unknownMcpTools(env.db, tenantA, [
        'theirs__add',
        'gone__add',
        'cached__echo',
        'cached__nope',
        'down__x',
        'word_count',
      ]),
    ).toEqual(['theirs__add', 'gone__add', 'cached__nope']);
  });
});
