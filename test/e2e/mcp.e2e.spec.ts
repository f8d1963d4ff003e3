import { randomBytes } from 'node:crypto';
import pg from 'pg';
import {
  createTestEnv,
  FakeLlmServer,
  scripted,
  spawnApp,
  waitFor,
  type AppProcess,
  type ScriptedReply,
  type TestEnv,
} from '@switchboard/testing';
import { newTenant, type Api } from '../support/api';
import { startMcpServer, type TestMcpServer } from '../support/mcp-server';
import { startGateway, type Running } from '../support/stack';

jest.setTimeout(120_000);

const ADMIN = 'test-admin-token-0123456789';
const TOKEN = `tok-${randomBytes(12).toString('hex')}`;
const IDEMPOTENCY_META_KEY = 'io.switchboard/idempotency-key';

/**
 * MCP tools a tenant brings (issue 11, docs/adr/0023), through a real harness worker process, the
 * gateway and a real MCP server built with the SDK: registration lists the tools (the auth header's
 * value is never shown), an agent names `srv__add` and the model's call reaches the server; a
 * destructive tool pauses for approval and, approved, runs exactly once with the idempotency key in
 * `_meta`; a tool error, a slow server and a stopped server each give a classified failure and the
 * turn still completes; another tenant sees none of it.
 */
describe('MCP servers', () => {
  let env: TestEnv;
  let llm: FakeLlmServer;
  let mcp: TestMcpServer;
  let gateway: Running & { url: string };
  let harness: AppProcess;
  let api: Api;
  let other: Api;
  let serverId: string;
  let agentId: string;
  /** Every response body the API gave in this file: none may contain the secret. */
  const seen: string[] = [];

  const call = async (
    client: Api,
    method: 'get' | 'post' | 'patch' | 'delete',
    path: string,
    body?: unknown,
  ) => {
    const res =
      method === 'post'
        ? await client.post(path, body)
        : method === 'patch'
          ? await client.patch(path, body)
          : method === 'get'
            ? await client.get(path)
            : await client.delete(path);
    seen.push(JSON.stringify(res.body ?? null));
    return res;
  };

  beforeAll(async () => {
    env = await createTestEnv();
    llm = await FakeLlmServer.start();
    mcp = await startMcpServer({ token: TOKEN });
    const settings = {
      ...llm.providerEnv,
      MCP_ALLOW_HOSTS: '127.0.0.1',
      MCP_SECRET_KEY: randomBytes(32).toString('base64'),
      APPROVAL_TTL_MS: '600000',
    };
    gateway = await startGateway(env.config(settings));
    harness = await spawnApp('harness-worker', env.processEnv(settings));
    ({ api } = await newTenant(gateway.url, ADMIN, 'mcp-a'));
    ({ api: other } = await newTenant(gateway.url, ADMIN, 'mcp-b'));
  });

  afterAll(async () => {
    await harness?.kill('SIGKILL');
    await gateway?.close();
    await llm?.close();
    await mcp?.close();
    await env?.cleanup();
  });

  /** Runs one turn of the agent on `replies`; the turn once it is in one of `until`, and the tool message. */
  async function turn(replies: ScriptedReply[], until = ['completed', 'failed'], agent = agentId) {
    llm.enqueue(...replies);
    const session = (await api.post('/v1/sessions', { agentId: agent })).body.id as string;
    const admitted = await api.post(`/v1/sessions/${session}/messages`, { content: 'go' });
    expect(admitted.status).toBe(202);
    const t = await waitFor(
      async () => {
        const r = await call(api, 'get', `/v1/turns/${admitted.body.turnId}`);
        return until.includes(r.body.status) ? r.body : undefined;
      },
      { what: `the turn reached ${until.join('|')}`, timeoutMs: 60_000 },
    );
    return { turn: t, session };
  }

  /** The tool result the model was sent in the turn's last model request. */
  const lastToolMessage = () => {
    const messages = (llm.requests.at(-1)!.body as { messages: { role: string; content: string }[] })
      .messages;
    return JSON.parse(messages.filter((m) => m.role === 'tool').at(-1)!.content) as Record<string, any>;
  };

  it('registers a server: lists its tools with their classes, never shows the secret', async () => {
    const bad = await call(api, 'post', '/v1/mcp-servers', { name: 'a__b', url: mcp.url });
    expect(bad.status).toBe(400);
    const created = await call(api, 'post', '/v1/mcp-servers', {
      name: 'srv',
      url: mcp.url,
      auth: { header: 'Authorization', value: `Bearer ${TOKEN}` },
      timeoutMs: 1_000,
    });
    expect(created.status).toBe(201);
    serverId = created.body.id;
    expect(created.body).toMatchObject({
      name: 'srv',
      authHeader: 'Authorization',
      status: 'ok',
      lastError: null,
    });
    const tools = Object.fromEntries(
      (created.body.tools as { name: string }[]).map((t) => [t.name, t]),
    ) as Record<string, Record<string, unknown>>;
    expect(tools.srv__add).toMatchObject({ tool: 'add', sideEffect: 'read_only', needsApproval: false });
    expect(tools.srv__delete_item).toMatchObject({ sideEffect: 'destructive', needsApproval: true });
    expect(tools.srv__append_note).toMatchObject({ sideEffect: 'local_write', honoursIdempotencyKey: true });
    expect(mcp.authHeaders).toContain(`Bearer ${TOKEN}`);
    // The same name twice is a conflict; the list and the refresh show the same server.
    expect((await call(api, 'post', '/v1/mcp-servers', { name: 'srv', url: mcp.url })).status).toBe(409);
    const list = await call(api, 'get', '/v1/mcp-servers');
    expect(list.body.data.map((s: { id: string }) => s.id)).toEqual([serverId]);
    expect((await call(api, 'post', `/v1/mcp-servers/${serverId}/refresh`)).body.status).toBe('ok');
    // Sealed at rest.
    const db = new pg.Client({ connectionString: env.databaseUrl });
    await db.connect();
    try {
      const row = await db.query('SELECT auth_header_value FROM mcp_servers WHERE id = $1', [serverId]);
      expect(row.rows[0].auth_header_value).toMatch(/^enc:v1:/);
      expect(row.rows[0].auth_header_value).not.toContain(TOKEN);
    } finally {
      await db.end();
    }
  });

  it('another tenant sees none of it and cannot name its tools', async () => {
    for (const [method, path] of [
      ['get', `/v1/mcp-servers/${serverId}`],
      ['post', `/v1/mcp-servers/${serverId}/refresh`],
      ['delete', `/v1/mcp-servers/${serverId}`],
    ] as const) {
      expect((await call(other, method, path)).status).toBe(404);
    }
    expect((await call(other, 'get', '/v1/mcp-servers')).body.data).toEqual([]);
    const agent = await call(other, 'post', '/v1/agents', { name: 'thief', tools: ['srv__add'] });
    expect(agent.status).toBe(400);
  });

  it('an agent names the tenant’s MCP tools; unknown servers and tools are refused', async () => {
    expect((await call(api, 'post', '/v1/agents', { name: 'x', tools: ['srv__nope'] })).status).toBe(400);
    expect((await call(api, 'post', '/v1/agents', { name: 'y', tools: ['ghost__add'] })).status).toBe(400);
    const agent = await call(api, 'post', '/v1/agents', {
      name: 'mcp-user',
      model: 'openai-chat/gpt-4o-mini',
      tools: ['word_count', 'srv__add', 'srv__delete_item', 'srv__fail', 'srv__slow'],
    });
    expect(agent.status).toBe(201);
    agentId = agent.body.id;
  });

  it('the model calls srv__add and gets the server’s answer', async () => {
    const before = llm.requests.length;
    const { turn: t } = await turn([scripted.toolCall('srv__add', { a: 2, b: 3 }), scripted.text('Five.')]);
    expect(t.status).toBe('completed');
    expect(t.finalText).toBe('Five.');
    const offered = (
      llm.requests[before].body as { tools: { function: { name: string; parameters: any } }[] }
    ).tools;
    expect(offered.map((o) => o.function.name).sort()).toEqual(
      // tokenjuice_retrieve: offered to every agent with tools whose results TokenJuice compacts (ADR 0033).
      ['srv__add', 'srv__delete_item', 'srv__fail', 'srv__slow', 'tokenjuice_retrieve', 'word_count'].sort(),
    );
    expect(offered.find((o) => o.function.name === 'srv__add')!.function.parameters).toMatchObject({
      type: 'object',
      properties: { a: { type: 'number' }, b: { type: 'number' } },
    });
    expect(lastToolMessage()).toMatchObject({ ok: true, result: { content: [{ type: 'text', text: '5' }] } });
    expect(t.toolCalls).toEqual([
      expect.objectContaining({ name: 'srv__add', sideEffect: 'read_only', status: 'completed' }),
    ]);
    expect(mcp.calls.filter((c) => c.tool === 'add')).toHaveLength(1);
  });

  it('a destructive tool waits for approval, then runs exactly once with the idempotency key in _meta', async () => {
    const { turn: paused } = await turn(
      [scripted.toolCall('srv__delete_item', { id: 'x1' }, { id: 'call_del' }), scripted.text('Deleted.')],
      ['awaiting_approval', 'completed', 'failed'],
    );
    expect(paused.status).toBe('awaiting_approval');
    expect(mcp.calls.filter((c) => c.tool === 'delete_item')).toHaveLength(0);
    const pending = (await call(api, 'get', '/v1/approvals?status=pending&limit=200')).body.data as {
      id: string;
      turnId: string;
    }[];
    const approval = pending.find((a) => a.turnId === paused.id)!;
    expect(approval).toMatchObject({
      toolName: 'srv__delete_item',
      sideEffect: 'destructive',
      policy: 'tool',
    });
    expect((await call(api, 'post', `/v1/approvals/${approval.id}`, { decision: 'approve' })).status).toBe(
      200,
    );
    const done = await waitFor(
      async () => {
        const r = await call(api, 'get', `/v1/turns/${paused.id}`);
        return ['completed', 'failed'].includes(r.body.status) ? r.body : undefined;
      },
      { what: 'the approved turn ended', timeoutMs: 60_000 },
    );
    expect(done.status).toBe('completed');
    const deletes = mcp.calls.filter((c) => c.tool === 'delete_item');
    expect(deletes).toHaveLength(1);
    expect(deletes[0].meta?.[IDEMPOTENCY_META_KEY]).toBe(`${paused.id}:call_del`);
  });

  it('a server registered with approval "none" runs a destructive tool at once, still with the key in _meta', async () => {
    const created = await call(api, 'post', '/v1/mcp-servers', {
      name: 'free',
      url: mcp.url,
      auth: { header: 'Authorization', value: `Bearer ${TOKEN}` },
      timeoutMs: 1_000,
      approval: 'none',
    });
    expect(created.status).toBe(201);
    const needs = (body: { tools: { name: string; needsApproval: boolean }[] }) =>
      Object.fromEntries(body.tools.map((t) => [t.name, t.needsApproval]));
    expect(created.body.approval).toBe('none');
    expect(needs(created.body)).toMatchObject({ free__delete_item: false, free__append_note: false });
    // PATCH changes the setting in place; GET shows it; the default is side_effects.
    const patched = await call(api, 'patch', `/v1/mcp-servers/${created.body.id}`, {
      approval: 'destructive_only',
    });
    expect(patched.status).toBe(200);
    expect(needs(patched.body)).toMatchObject({ free__delete_item: true, free__append_note: false });
    expect((await call(api, 'patch', `/v1/mcp-servers/${created.body.id}`, {})).status).toBe(400);
    expect(
      (await call(other, 'patch', `/v1/mcp-servers/${created.body.id}`, { approval: 'none' })).status,
    ).toBe(404);
    await call(api, 'patch', `/v1/mcp-servers/${created.body.id}`, { approval: 'none' });
    expect((await call(api, 'get', `/v1/mcp-servers/${created.body.id}`)).body.approval).toBe('none');
    expect((await call(api, 'get', `/v1/mcp-servers/${serverId}`)).body.approval).toBe('side_effects');

    const agent = await call(api, 'post', '/v1/agents', {
      name: 'mcp-free',
      model: 'openai-chat/gpt-4o-mini',
      tools: ['free__delete_item'],
    });
    expect(agent.status).toBe(201);
    const before = mcp.calls.filter((c) => c.tool === 'delete_item').length;
    const { turn: t } = await turn(
      [scripted.toolCall('free__delete_item', { id: 'x2' }, { id: 'call_free' }), scripted.text('Gone.')],
      ['awaiting_approval', 'completed', 'failed'],
      agent.body.id,
    );
    expect(t.status).toBe('completed');
    const deletes = mcp.calls.filter((c) => c.tool === 'delete_item').slice(before);
    expect(deletes).toHaveLength(1);
    expect(deletes[0].meta?.[IDEMPOTENCY_META_KEY]).toBe(`${t.id}:call_free`);
    const approvals = (await call(api, 'get', '/v1/approvals?limit=200')).body.data as { turnId: string }[];
    expect(approvals.filter((a) => a.turnId === t.id)).toEqual([]);
  });

  it('a tool error is mcp_tool_error and the turn goes on', async () => {
    const { turn: t } = await turn([scripted.toolCall('srv__fail', {}), scripted.text('It failed.')]);
    expect(t.status).toBe('completed');
    expect(lastToolMessage()).toMatchObject({
      ok: false,
      kind: 'mcp_tool_error',
      message: 'the widget is jammed',
    });
  });

  it('a slow server is mcp_timeout after its timeout and the turn goes on', async () => {
    const started = Date.now();
    const { turn: t, session } = await turn([
      scripted.toolCall('srv__slow', { ms: 20_000 }),
      scripted.text('Too slow.'),
    ]);
    expect(t.status).toBe('completed');
    expect(lastToolMessage()).toMatchObject({ ok: false, kind: 'mcp_timeout', retryable: true });
    const events = (await call(api, 'get', `/v1/sessions/${session}/events`)).body.data as {
      type: string;
      data: { failure?: { class: string } };
    }[];
    expect(events.find((e) => e.type === 'tool_call_completed')?.data.failure).toMatchObject({
      class: 'Timeout',
    });
    expect(Date.now() - started).toBeLessThan(15_000);
  });

  it('a stopped server is mcp_unavailable (ServiceUnavailable) and the turn completes', async () => {
    await mcp.close();
    const { turn: t, session } = await turn([
      scripted.toolCall('srv__add', { a: 1, b: 1 }),
      scripted.text('Down.'),
    ]);
    expect(t.status).toBe('completed');
    expect(lastToolMessage()).toMatchObject({ ok: false, kind: 'mcp_unavailable', retryable: true });
    const events = (await call(api, 'get', `/v1/sessions/${session}/events`)).body.data as {
      type: string;
      data: { failure?: { class: string } };
    }[];
    expect(events.find((e) => e.type === 'tool_call_completed')?.data.failure).toMatchObject({
      class: 'ServiceUnavailable',
    });
  });

  it('deletes a server: it is gone from the list and its tools from agents’ reach', async () => {
    // Tenant settings may name MCP tools too (approval, blocking).
    const patch = (body: unknown) => api.patch('/v1/settings', body);
    expect((await patch({ approvalRequired: ['srv__add'], blockedTools: ['srv__fail'] })).status).toBe(200);
    expect((await patch({ approvalRequired: ['ghost__add'] })).status).toBe(400);
    expect((await patch({ approvalRequired: [], blockedTools: [] })).status).toBe(200);
    expect((await call(api, 'delete', `/v1/mcp-servers/${serverId}`)).status).toBe(204);
    expect((await call(api, 'get', `/v1/mcp-servers/${serverId}`)).status).toBe(404);
    expect((await call(api, 'post', '/v1/agents', { name: 'late', tools: ['srv__add'] })).status).toBe(400);
  });

  it('never showed the auth header value in any response', () => {
    expect(seen.length).toBeGreaterThan(20);
    for (const body of seen) expect(body).not.toContain(TOKEN);
  });
});
