import net from 'node:net';
import OpenAI, { NotFoundError, PermissionDeniedError } from 'openai';
import WebSocket from 'ws';
import {
  createTestEnv,
  crossRealmSafeFetch,
  FakeLlmServer,
  spawnApp,
  waitFor,
  type AppProcess,
  type TestEnv,
} from '@switchboard/testing';
import { Api, newTenant } from '../support/api';

/**
 * Scoped keys (issue 36, docs/adr/0066) through a real gateway process and the public HTTP API: a
 * key per role on one route of each family (allowed and refused), the protocols with the stock
 * `openai` client, keys limited to agents, expiry, and key creation's bad input.
 */
jest.setTimeout(90_000);

const ADMIN = 'test-admin-token-0123456789';
type Role = 'admin' | 'developer' | 'approver' | 'reader' | 'ingest';

describe('scoped keys and roles', () => {
  let env: TestEnv;
  let llm: FakeLlmServer;
  const processes: AppProcess[] = [];
  let url: string;
  let admin: Api;
  let other: Api;
  let agentA: string;
  let agentB: string;
  let sessionB: string;
  let otherSession: string;
  const keys = {} as Record<Role, { id: string; api: Api; key: string }>;

  async function gatewayProcess(): Promise<string> {
    const server = net.createServer();
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const { port } = server.address() as net.AddressInfo;
    await new Promise((resolve) => server.close(resolve));
    processes.push(
      await spawnApp(
        'gateway',
        env.processEnv({
          ...llm.providerEnv,
          PORT: String(port),
          HOST: '127.0.0.1',
          API_KEY_CACHE_MS: '600000',
        }),
        { readyPattern: /Server listening at|successfully started/ },
      ),
    );
    const base = `http://127.0.0.1:${port}`;
    await waitFor(async () => (await fetch(`${base}/healthz`)).ok, { what: 'the gateway to listen' });
    return base;
  }

  const newKey = async (body: Record<string, unknown>) => {
    const res = await admin.post('/v1/api-keys', body);
    expect(res.status).toBe(201);
    return {
      id: res.body.id as string,
      key: res.body.key as string,
      api: admin.withKey(res.body.key),
      body: res.body,
    };
  };

  const openai = (key: string) =>
    new OpenAI({ baseURL: `${url}/v1`, apiKey: key, fetch: crossRealmSafeFetch, maxRetries: 0 });

  /** A refusal: 403 `insufficient_scope` in the API's error shape, naming the scope. */
  const refused = (res: { status: number; body: any }, scope: string) => {
    expect(res.status).toBe(403);
    expect(res.body.error).toMatchObject({ code: 'insufficient_scope', details: { scope } });
    expect(res.body.error.message).toContain(scope);
  };

  beforeAll(async () => {
    env = await createTestEnv();
    llm = await FakeLlmServer.start();
    const [gateway, harness] = await Promise.all([
      gatewayProcess(),
      spawnApp('harness-worker', env.processEnv(llm.providerEnv)),
    ]);
    processes.push(harness);
    url = gateway;
    ({ api: admin } = await newTenant(url, ADMIN, 'scoped'));
    ({ api: other } = await newTenant(url, ADMIN, 'other'));
    const agent = async (api: Api, name: string) =>
      (await api.post('/v1/agents', { name, model: 'openai-chat/gpt-4o-mini', instructions: 'Be brief.' }))
        .body.id as string;
    agentA = await agent(admin, 'alpha');
    agentB = await agent(admin, 'beta');
    sessionB = (await admin.post('/v1/sessions', { agentId: agentB })).body.id;
    otherSession = (await other.post('/v1/sessions', { agentId: await agent(other, 'theirs') })).body.id;
    for (const role of ['admin', 'developer', 'approver', 'reader', 'ingest'] as Role[])
      keys[role] = await newKey({ name: role, role });
  });

  afterAll(async () => {
    await Promise.all(processes.map((p) => p.kill('SIGTERM')));
    await llm?.close();
    await env?.cleanup();
  });

  it('keys carry their role; existing keys are admin keys; GET shows role, agentIds, expiresAt', async () => {
    const list = await admin.get('/v1/api-keys?limit=200');
    expect(list.status).toBe(200);
    const byName = new Map(list.body.data.map((k: any) => [k.name, k]));
    expect(byName.get('reader')).toMatchObject({ role: 'reader', agentIds: null, expiresAt: null });
    // The tenant's first key, made before any role was asked for, is an admin key.
    expect(list.body.data[0]).toMatchObject({ role: 'admin', agentIds: null, expiresAt: null });
    expect(list.body.data[0].key).toBeUndefined();
  });

  it('agents: developers and admins write, readers and approvers read, ingest keys neither', async () => {
    const body = { name: 'made-by-dev', model: 'openai-chat/gpt-4o-mini' };
    expect((await keys.developer.api.post('/v1/agents', body)).status).toBe(201);
    for (const role of ['approver', 'reader', 'ingest'] as Role[])
      refused(await keys[role].api.post('/v1/agents', { ...body, name: `by-${role}` }), 'agents:write');
    for (const role of ['admin', 'developer', 'approver', 'reader'] as Role[])
      expect((await keys[role].api.get(`/v1/agents/${agentA}`)).status).toBe(200);
    refused(await keys.ingest.api.get(`/v1/agents/${agentA}`), 'read');
    // Nothing was written by the refused calls.
    const names = (await admin.get('/v1/agents?limit=200')).body.data.map((a: any) => a.name);
    expect(names).not.toEqual(expect.arrayContaining(['by-reader']));
    expect(names.filter((n: string) => n.startsWith('by-'))).toEqual([]);
  });

  it('the audit log names the key that acted (api_key:<id>)', async () => {
    const res = await keys.reader.api.get('/v1/audit-events?limit=200');
    expect(res.status).toBe(200);
    const created = res.body.data.find(
      (e: any) => e.action === 'api_key.created' && e.targetId === keys.reader.id,
    );
    expect(created).toMatchObject({ details: { role: 'reader' } });
    expect(res.body.data.some((e: any) => e.actor === `api_key:${keys.developer.id}`)).toBe(true);
  });

  it('memory: developers write blocks, readers only read them', async () => {
    expect(
      (
        await keys.developer.api.request('PUT', `/v1/agents/${agentA}/blocks/notes`, {
          body: { content: 'x' },
        })
      ).status,
    ).toBeLessThan(300);
    refused(
      await keys.reader.api.request('PUT', `/v1/agents/${agentA}/blocks/notes`, { body: { content: 'y' } }),
      'memory:write',
    );
    expect((await keys.reader.api.get(`/v1/agents/${agentA}/blocks/notes`)).body.content).toBe('x');
  });

  it('sessions and messages: ingest keys send, readers cannot', async () => {
    const session = await keys.ingest.api.post('/v1/sessions', { agentId: agentA });
    expect(session.status).toBe(201);
    llm.enqueue({ kind: 'message', text: 'ok' });
    const sent = await keys.ingest.api.post(`/v1/sessions/${session.body.id}/messages`, { content: 'hello' });
    expect(sent.status).toBeLessThan(300);
    refused(
      await keys.reader.api.post(`/v1/sessions/${session.body.id}/messages`, { content: 'no' }),
      'messages:send',
    );
    refused(await keys.reader.api.post('/v1/sessions', { agentId: agentA }), 'messages:send');
    refused(await keys.ingest.api.get(`/v1/sessions/${session.body.id}`), 'read');
    expect((await keys.reader.api.get(`/v1/sessions/${session.body.id}`)).status).toBe(200);
  });

  it('approvals: approvers decide, readers and ingest keys cannot; the scope is checked before the lookup', async () => {
    const missing = '01a20360-0000-7000-8000-0000000000ff';
    // An approver reaches the lookup: an approval that is not the tenant's is absent.
    expect((await keys.approver.api.post(`/v1/approvals/${missing}`, { decision: 'approve' })).status).toBe(
      404,
    );
    // A reader is refused whether or not the object exists: the refusal tells nothing of it.
    refused(
      await keys.reader.api.post(`/v1/approvals/${missing}`, { decision: 'approve' }),
      'approvals:decide',
    );
    refused(
      await keys.ingest.api.post(`/v1/approvals/${missing}`, { decision: 'approve' }),
      'approvals:decide',
    );
    expect((await keys.approver.api.get('/v1/approvals')).status).toBe(200);
  });

  it("another tenant's object stays 404 for every role that may read it", async () => {
    for (const role of ['admin', 'developer', 'approver', 'reader'] as Role[])
      expect((await keys[role].api.get(`/v1/sessions/${otherSession}`)).status).toBe(404);
    refused(await keys.ingest.api.get(`/v1/sessions/${otherSession}`), 'read');
  });

  it('keys and settings: admin keys only', async () => {
    for (const role of ['developer', 'approver', 'reader', 'ingest'] as Role[]) {
      refused(await keys[role].api.post('/v1/api-keys', { name: 'nope' }), 'keys:manage');
      refused(await keys[role].api.get('/v1/api-keys'), 'keys:manage');
      refused(await keys[role].api.delete(`/v1/api-keys/${keys.admin.id}`), 'keys:manage');
      refused(await keys[role].api.patch('/v1/settings', {}), 'settings:write');
    }
    expect((await keys.reader.api.get('/v1/settings')).status).toBe(200);
    // The refused revocations changed nothing.
    expect((await keys.admin.api.get('/v1/agents')).status).toBe(200);
  });

  it('Chat Completions and Responses (the openai client): a reader cannot start a run, an ingest key can', async () => {
    const reader = openai(keys.reader.key);
    const err = await reader.chat.completions
      .create({ model: 'alpha', messages: [{ role: 'user', content: 'hi' }] })
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(PermissionDeniedError);
    expect((err as PermissionDeniedError).status).toBe(403);
    expect((err as PermissionDeniedError).code).toBe('insufficient_scope');
    const rerr = await reader.responses.create({ model: 'alpha', input: 'hi' }).catch((e: unknown) => e);
    expect(rerr).toBeInstanceOf(PermissionDeniedError);

    llm.enqueue({ kind: 'message', text: 'Hello from alpha.' });
    const answer = await openai(keys.ingest.key).chat.completions.create({
      model: 'alpha',
      messages: [{ role: 'user', content: 'hi' }],
    });
    expect(answer.choices[0].message.content).toBe('Hello from alpha.');
  });

  it("Responses' WebSocket mode: the upgrade needs messages:send", async () => {
    const upgrade = (key: string) =>
      new Promise<{ status: number; body: string }>((resolve) => {
        const ws = new WebSocket(`${url.replace(/^http/, 'ws')}/v1/responses`, {
          headers: { authorization: `Bearer ${key}` },
        });
        ws.once('unexpected-response', (_req, res) => {
          let body = '';
          res.on('data', (d: Buffer) => (body += d.toString()));
          res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
        });
        ws.once('open', () => {
          ws.close();
          resolve({ status: 101, body: '' });
        });
      });
    const refusedUpgrade = await upgrade(keys.reader.key);
    expect(refusedUpgrade.status).toBe(403);
    expect(JSON.parse(refusedUpgrade.body).error.code).toBe('insufficient_scope');
    expect((await upgrade(keys.ingest.key)).status).toBe(101);
  });

  it('LangGraph, A2A and MCP honour the same scopes', async () => {
    const thread = await keys.developer.api.post('/langgraph/threads', {
      metadata: { assistant_id: 'alpha' },
    });
    expect(thread.status).toBe(200);
    const run = await keys.reader.api.post(`/langgraph/threads/${thread.body.thread_id}/runs/wait`, {
      assistant_id: 'alpha',
      input: { messages: [{ role: 'user', content: 'hi' }] },
    });
    expect(run.status).toBe(403);
    expect((await keys.reader.api.get(`/langgraph/threads/${thread.body.thread_id}`)).status).toBe(200);

    const a2a = await keys.reader.api.post(`/a2a/${agentA}`, {
      jsonrpc: '2.0',
      id: 1,
      method: 'SendMessage',
      params: { message: { messageId: 'm1', role: 'ROLE_USER', parts: [{ text: 'hi' }] } },
    });
    expect(a2a.status).toBe(403);
    expect(a2a.body).toMatchObject({ jsonrpc: '2.0', error: { data: { code: 'insufficient_scope' } } });

    const mcp = await keys.reader.api.post(
      '/mcp',
      {
        jsonrpc: '2.0',
        id: 1,
        method: 'tools/call',
        params: { name: 'alpha', arguments: { message: 'hi' } },
      },
      { accept: 'application/json, text/event-stream' },
    );
    expect(mcp.status).toBe(403);
    expect(mcp.body).toMatchObject({ error: { data: { code: 'insufficient_scope' } } });
  });

  it('per protocol: ingest keys send but do not read back; readers read but neither send nor change; approvers do not send', async () => {
    const rpc = (
      api: Api,
      path: string,
      method: string,
      params: unknown,
      headers: Record<string, string> = {},
    ) => api.post(path, { jsonrpc: '2.0', id: 1, method, params }, { 'a2a-version': '1.0', ...headers });
    const mcp = async (key: string, method: string, params?: unknown) => {
      const res = await fetch(`${url}/mcp`, {
        method: 'POST',
        headers: {
          authorization: `Bearer ${key}`,
          'content-type': 'application/json',
          accept: 'application/json, text/event-stream',
        },
        body: JSON.stringify({ jsonrpc: '2.0', id: 1, method, ...(params ? { params } : {}) }),
      });
      const text = await res.text();
      return { status: res.status, body: JSON.parse(text.match(/^data: (.*)$/m)?.[1] ?? text) };
    };
    const jsonRpcRefused = (res: { status: number; body: any }, scope: string) => {
      expect(res.status).toBe(403);
      expect(res.body).toMatchObject({
        jsonrpc: '2.0',
        error: { data: { code: 'insufficient_scope' } },
      });
      expect(JSON.stringify(res.body.error)).toContain(`\\"${scope}\\"`);
    };

    // Chat Completions and Responses: an ingest key's response is its own answer, not a read of the store.
    llm.enqueue({ kind: 'message', text: 'stored answer' });
    const created = await openai(keys.ingest.key).responses.create({ model: 'alpha', input: 'remember me' });
    expect(created.output_text).toBe('stored answer');
    for (const path of [`/v1/responses/${created.id}`, `/v1/responses/${created.id}/input_items`]) {
      const res = await keys.ingest.api.get(path);
      expect([res.status, res.body.error.code]).toEqual([403, 'insufficient_scope']);
      expect((await keys.reader.api.get(path)).status).toBe(200);
    }
    const cancel = await keys.reader.api.post(`/v1/responses/${created.id}/cancel`, {});
    expect([cancel.status, cancel.body.error.code]).toEqual([403, 'insufficient_scope']);
    const approverErr = await openai(keys.approver.key)
      .chat.completions.create({ model: 'alpha', messages: [{ role: 'user', content: 'hi' }] })
      .catch((e: unknown) => e);
    expect(approverErr).toBeInstanceOf(PermissionDeniedError);

    // LangGraph: an ingest key opens a thread but reads neither its state nor its history; a reader
    // reads them but neither changes the state nor cancels a run.
    const thread = await keys.ingest.api.post('/langgraph/threads', { metadata: { assistant_id: 'alpha' } });
    expect(thread.status).toBe(200);
    const threadId = thread.body.thread_id as string;
    for (const path of [`/langgraph/threads/${threadId}/state`, `/langgraph/threads/${threadId}/history`]) {
      const res = await keys.ingest.api.get(path);
      expect(res.status).toBe(403);
      expect(res.body.detail).toContain('lacks the scope "read"');
      expect((await keys.reader.api.get(path)).status).toBe(200);
    }
    expect(
      (await keys.reader.api.post(`/langgraph/threads/${threadId}/state`, { values: { messages: [] } }))
        .status,
    ).toBe(403);
    expect(
      (await keys.reader.api.post(`/langgraph/threads/${threadId}/runs/${sessionB}/cancel`, {})).status,
    ).toBe(403);

    // A2A: an ingest key sends; reading a task back is `read`, cancelling it `sessions:write`.
    llm.enqueue({ kind: 'message', text: 'a2a answer' });
    const sent = await rpc(keys.ingest.api, `/a2a/${agentA}`, 'SendMessage', {
      message: { messageId: 'm-ingest', role: 'ROLE_USER', parts: [{ text: 'hi' }] },
    });
    expect(sent.status).toBe(200);
    const taskId = (sent.body.result?.task?.id ?? sent.body.result?.id) as string;
    expect(taskId).toEqual(expect.any(String));
    jsonRpcRefused(await rpc(keys.ingest.api, `/a2a/${agentA}`, 'GetTask', { id: taskId }), 'read');
    expect((await rpc(keys.reader.api, `/a2a/${agentA}`, 'GetTask', { id: taskId })).status).toBe(200);
    jsonRpcRefused(
      await rpc(keys.reader.api, `/a2a/${agentA}`, 'CancelTask', { id: taskId }),
      'sessions:write',
    );

    // MCP: any key may shake hands; an ingest key lists the tools it may call and calls one; a
    // reader lists them but may not call.
    const init = await mcp(keys.ingest.key, 'initialize', {
      protocolVersion: '2025-11-25',
      capabilities: {},
      clientInfo: { name: 'scoped', version: '1' },
    });
    expect(init.status).toBe(200);
    const tools = await mcp(keys.ingest.key, 'tools/list');
    expect(tools.body.result.tools.map((t: any) => t.name)).toEqual(
      expect.arrayContaining(['alpha', 'beta']),
    );
    expect((await mcp(keys.reader.key, 'tools/list')).body.result.tools.length).toBeGreaterThan(1);
    llm.enqueue({ kind: 'message', text: 'mcp answer' });
    const called = await mcp(keys.ingest.key, 'tools/call', { name: 'alpha', arguments: { message: 'hi' } });
    expect(JSON.stringify(called.body.result)).toContain('mcp answer');
    jsonRpcRefused(await mcp(keys.ingest.key, 'resources/list'), 'read');
  });

  describe('keys limited to agents', () => {
    let limited: Api;
    let limitedKey: string;
    beforeAll(async () => {
      ({ api: limited, key: limitedKey } = await newKey({
        name: 'alpha-only',
        role: 'developer',
        agentIds: [agentA],
      }));
    });

    it('the protocols see another agent as unknown: model_not_found, assistant not found, A2A 404', async () => {
      const client = openai(limitedKey);
      const err = await client.chat.completions
        .create({ model: 'beta', messages: [{ role: 'user', content: 'hi' }] })
        .catch((e: unknown) => e);
      expect(err).toBeInstanceOf(NotFoundError);
      expect((err as NotFoundError).code).toBe('model_not_found');
      const rerr = await client.responses.create({ model: 'beta', input: 'hi' }).catch((e: unknown) => e);
      expect((rerr as NotFoundError).code).toBe('model_not_found');
      llm.enqueue({ kind: 'message', text: 'alpha here' });
      const ok = await client.chat.completions.create({
        model: 'alpha',
        messages: [{ role: 'user', content: 'hi' }],
      });
      expect(ok.choices[0].message.content).toBe('alpha here');

      const thread = await limited.post('/langgraph/threads', { metadata: { assistant_id: 'beta' } });
      expect(thread).toMatchObject({ status: 404, body: { detail: 'assistant beta not found' } });
      const a2a = await limited.post(`/a2a/${agentB}`, {
        jsonrpc: '2.0',
        id: 1,
        method: 'GetTask',
        params: { id: '01a20360-0000-7000-8000-0000000000aa' },
      });
      expect(a2a.status).toBe(404);
    });

    it('see their agents only: another agent and its objects are 404, never 403', async () => {
      const list = (await limited.get('/v1/agents?limit=200')).body.data.map((a: any) => a.id);
      expect(list).toEqual([agentA]);
      expect((await limited.get(`/v1/agents/${agentA}`)).status).toBe(200);
      expect((await limited.get(`/v1/agents/${agentB}`)).status).toBe(404);
      expect((await limited.get(`/v1/agents/${agentB}/blocks`)).status).toBe(404);
      expect((await limited.get(`/v1/sessions/${sessionB}`)).status).toBe(404);
      expect((await limited.get(`/v1/sessions/${sessionB}/messages`)).status).toBe(404);
      expect((await limited.post('/v1/sessions', { agentId: agentB })).status).toBe(404);
      expect((await limited.get(`/v1/sessions?agentId=${agentB}`)).status).toBe(404);
      expect((await limited.get(`/v1/sessions?agentId=${agentA}`)).status).toBe(200);
      expect((await limited.get('/v1/sessions')).status).toBe(400);
      expect((await limited.post('/v1/sessions', { agentId: agentA })).status).toBe(201);
      const approvals = await limited.get('/v1/approvals');
      expect(approvals.status).toBe(200);
      for (const a of approvals.body.data) expect(a.agentId).toBe(agentA);
    });

    it("Responses' WebSocket mode: another agent is no model to the limited key", async () => {
      const first = (key: string, data: unknown) =>
        new Promise<any>((resolve, reject) => {
          const ws = new WebSocket(`${url.replace(/^http/, 'ws')}/v1/responses`, {
            headers: { authorization: `Bearer ${key}` },
          });
          ws.once('open', () => ws.send(JSON.stringify(data)));
          ws.once('message', (raw: Buffer) => {
            ws.close();
            resolve(JSON.parse(raw.toString()));
          });
          ws.once('error', reject);
        });
      const beta = await first(limitedKey, { type: 'response.create', model: 'beta', input: 'hi' });
      const nobody = await first(limitedKey, { type: 'response.create', model: 'nobody', input: 'hi' });
      expect(beta).toMatchObject({ type: 'error', error: { code: 'model_not_found' } });
      expect(JSON.stringify(beta).replace('beta', '<m>')).toBe(
        JSON.stringify(nobody).replace('nobody', '<m>'),
      );
    });

    it('cannot create agents', async () => {
      const res = await limited.post('/v1/agents', { name: 'sneaky', model: 'openai-chat/gpt-4o-mini' });
      expect(res.status).toBe(403);
      expect(res.body.error.code).toBe('insufficient_scope');
    });
  });

  it('an expired key is refused like an unknown one (401), cached or not', async () => {
    const { api } = await newKey({
      name: 'brief',
      role: 'reader',
      expiresAt: new Date(Date.now() + 3000).toISOString(),
    });
    expect((await api.get('/v1/agents')).status).toBe(200);
    await waitFor(async () => (await api.get('/v1/agents')).status === 401, { what: 'the key to expire' });
    const res = await api.get('/v1/agents');
    expect(res.body.error.code).toBe('unauthorized');
  });

  it('bad input on key creation: 400, nothing written', async () => {
    const count = async () => (await admin.get('/v1/api-keys?limit=200')).body.data.length;
    const before = await count();
    const theirAgent = (await other.get('/v1/agents')).body.data[0].id;
    for (const body of [
      { role: 'owner' },
      { agentIds: [theirAgent] },
      { agentIds: ['01a20360-0000-7000-8000-0000000000ee'] },
      { agentIds: [] },
      { agentIds: ['not-a-uuid'] },
      { expiresAt: new Date(Date.now() - 60_000).toISOString() },
      { expiresAt: 'tomorrow' },
    ]) {
      const res = await admin.post('/v1/api-keys', { name: 'bad', ...body });
      expect([res.status, res.body.error?.code]).toEqual([
        400,
        expect.stringMatching(/bad_request|validation_failed/),
      ]);
    }
    expect(await count()).toBe(before);
  });
});
