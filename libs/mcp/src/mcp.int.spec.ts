import { waitFor } from '@switchboard/testing';
import { ToolError } from '@switchboard/tools';
import { startMcpServer, type TestMcpServer } from '../../../test/support/mcp-server';
import { McpClients, type McpConnection } from './clients';
import { IDEMPOTENCY_META_KEY, mcpToolDefinition } from './tools';

jest.setTimeout(120_000);

const ctx = (signal = new AbortController().signal) => ({
  tenantId: 't',
  sessionId: 's',
  turnId: 'turn1',
  callId: 'call1',
  idempotencyKey: 'turn1:call1',
  signal,
  resumed: false,
  writeGate: { isOpen: () => true },
});

/** McpClients and the tool adapter against a real MCP server built with the SDK (docs/adr/0023). */
describe('MCP client against a real server', () => {
  let server: TestMcpServer;
  let clients: McpClients;
  let conn: McpConnection;

  beforeAll(async () => {
    server = await startMcpServer({ token: 's3cret' });
    clients = new McpClients({ allowHosts: ['127.0.0.1'] });
    conn = {
      id: 'srv-1',
      name: 'srv',
      url: server.url,
      headers: { Authorization: 'Bearer s3cret' },
      // Roomy: connecting and listing on a loaded machine can take more than a second. The slow
      // server's test gives its call a short timeout of its own.
      timeoutMs: 10_000,
      version: 'v1',
    };
  });

  afterAll(async () => {
    await clients.close();
    await server.close();
  });

  const tool = async (name: string, timeoutMs = conn.timeoutMs) => {
    const entry = (await clients.listTools(conn)).find((t) => t.name === name)!;
    return mcpToolDefinition({ ...conn, timeoutMs }, { idempotencyKeys: false }, entry, clients);
  };

  it('lists the tools with their schemas and annotations', async () => {
    const tools = await clients.listTools(conn);
    expect(tools.map((t) => t.name).sort()).toEqual(['add', 'append_note', 'delete_item', 'fail', 'slow']);
    const add = tools.find((t) => t.name === 'add')!;
    expect(add.annotations).toMatchObject({ readOnlyHint: true });
    expect(add.inputSchema).toMatchObject({ type: 'object', properties: { a: { type: 'number' } } });
  });

  it('maps annotations to side-effect classes, approval and idempotency', async () => {
    const add = await tool('add');
    expect(add).toMatchObject({ name: 'srv__add', sideEffect: 'read_only', needsApproval: false });
    expect(add.parameters).toMatchObject({ type: 'object', required: ['a', 'b'] });
    const del = await tool('delete_item');
    expect(del).toMatchObject({
      sideEffect: 'destructive',
      needsApproval: true,
      honoursIdempotencyKey: false,
    });
    const note = await tool('append_note');
    expect(note).toMatchObject({
      sideEffect: 'local_write',
      needsApproval: true,
      honoursIdempotencyKey: true,
    });
  });

  it('validates arguments against the JSON Schema', async () => {
    const add = await tool('add');
    expect(add.schema.safeParse({ a: 1, b: 2 }).success).toBe(true);
    const bad = add.schema.safeParse({ a: 'x', b: 2 });
    expect(bad.success).toBe(false);
    expect(bad.error?.issues[0]).toMatchObject({ path: ['a'] });
    expect(add.schema.safeParse({ a: 1 }).success).toBe(false);
  });

  it('calls a read-only tool without a key and a destructive one with the key in _meta', async () => {
    const add = await tool('add');
    await expect(add.execute({ a: 2, b: 3 }, ctx())).resolves.toEqual({
      content: [{ type: 'text', text: '5' }],
    });
    expect(server.calls.at(-1)).toMatchObject({ tool: 'add', args: { a: 2, b: 3 } });
    expect(server.calls.at(-1)?.meta?.[IDEMPOTENCY_META_KEY]).toBeUndefined();
    const del = await tool('delete_item');
    await del.execute({ id: 'x1' }, ctx());
    expect(server.calls.at(-1)).toMatchObject({
      tool: 'delete_item',
      meta: { [IDEMPOTENCY_META_KEY]: 'turn1:call1' },
    });
  });

  it('an isError result is mcp_tool_error', async () => {
    const fail = await tool('fail');
    await expect(fail.execute({}, ctx())).rejects.toMatchObject({
      kind: 'mcp_tool_error',
      message: 'the widget is jammed',
      retryable: false,
    });
  });

  it('a call the server refuses marks its tool list stale', async () => {
    const changed = jest.fn();
    const gone = mcpToolDefinition(
      conn,
      { idempotencyKeys: false },
      { name: 'gone', inputSchema: { type: 'object' }, annotations: { readOnlyHint: true } },
      clients,
      changed,
    );
    // The SDK's server answers an unknown tool with an isError result (others send a JSON-RPC error).
    await expect(gone.execute({}, ctx())).rejects.toMatchObject({
      kind: 'mcp_tool_error',
      message: expect.stringContaining('gone not found'),
    });
    expect(changed).toHaveBeenCalledTimes(1);
  });

  it('a slow server is mcp_timeout after the server timeout', async () => {
    const slow = await tool('slow', 1_000);
    const started = Date.now();
    await expect(slow.execute({ ms: 5_000 }, ctx())).rejects.toMatchObject({
      kind: 'mcp_timeout',
      retryable: true,
    });
    expect(Date.now() - started).toBeLessThan(3_000);
    // The connection is still good afterwards.
    await expect((await tool('add')).execute({ a: 1, b: 1 }, ctx())).resolves.toBeDefined();
  });

  it('the call signal aborts the request', async () => {
    const slow = await tool('slow');
    const ac = new AbortController();
    const p = slow.execute({ ms: 5_000 }, ctx(ac.signal));
    setTimeout(() => ac.abort(new Error('stop')), 100);
    await expect(p).rejects.toBeDefined();
  });

  it('a wrong secret is mcp_auth_failed', async () => {
    const bad = new McpClients({ allowHosts: ['127.0.0.1'] });
    try {
      await expect(
        bad.listTools({ ...conn, id: 'srv-bad', headers: { Authorization: 'Bearer nope' } }),
      ).rejects.toMatchObject({ kind: 'mcp_auth_failed' });
    } finally {
      await bad.close();
    }
  });

  it('reaches a server by a host name the deployment allows (checked at connect)', async () => {
    const named = new McpClients({ allowHosts: ['localhost'] });
    try {
      const url = server.url.replace('127.0.0.1', 'localhost');
      await expect(named.listTools({ ...conn, id: 'srv-named', url })).resolves.toHaveLength(5);
    } finally {
      await named.close();
    }
  });

  it('a loopback server is refused without an allowlist entry', async () => {
    const strict = new McpClients();
    try {
      const err = await strict.listTools({ ...conn, id: 'srv-strict' }).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(ToolError);
      expect(err).toMatchObject({ kind: 'blocked_address' });
    } finally {
      await strict.close();
    }
  });

  it('hears tools/list_changed from a stateful server', async () => {
    const stateful = await startMcpServer({ stateful: true });
    const changed: string[] = [];
    const listening = new McpClients({ allowHosts: ['127.0.0.1'], onToolsChanged: (id) => changed.push(id) });
    try {
      const c = { ...conn, id: 'srv-sf', url: stateful.url, headers: {}, timeoutMs: 5_000 };
      expect((await listening.listTools(c)).map((t) => t.name)).not.toContain('fresh');
      stateful.addTool('fresh', 'new');
      await waitFor(() => changed.includes('srv-sf'), { what: 'list_changed heard', timeoutMs: 5_000 });
      expect((await listening.listTools(c)).map((t) => t.name)).toContain('fresh');
    } finally {
      await listening.close();
      await stateful.close();
    }
  });

  it('a stopped server is mcp_unavailable, and a restarted one is reached again', async () => {
    const other = await startMcpServer();
    const c = { ...conn, id: 'srv-2', url: other.url, headers: {} };
    await clients.listTools(c);
    await other.close();
    await expect(clients.listTools(c)).rejects.toMatchObject({ kind: 'mcp_unavailable', retryable: true });
    const again = await startMcpServer({ port: other.port });
    try {
      await expect(clients.listTools(c)).resolves.toHaveLength(5);
    } finally {
      await again.close();
    }
  });
});
