import { randomUUID } from 'node:crypto';
import { createTestEnv, FakeLlmServer, scripted, spawnGateway, type TestEnv } from '@switchboard/testing';
import { Api, newTenant } from '../support/api';

jest.setTimeout(120_000);

const ADMIN = 'test-admin-token-0123456789';

/**
 * A stopped agent (docs/adr/0031) is refused on every way in before anything is written (issue 30,
 * defect 1): the native message, a chat completion with earlier messages, a response with input
 * items, a LangGraph run on a new thread, A2A message/send and an MCP tool call each answer their
 * protocol's refusal, and the tenant's sessions and messages stay as they were — no new session
 * holding the request's messages behind.
 */
describe('a stopped agent on every admission path', () => {
  let env: TestEnv;
  let llm: FakeLlmServer;
  let gateway: Awaited<ReturnType<typeof spawnGateway>>;
  let api: Api;
  let url: string;
  let tenantId: string;
  let agentId: string;
  let sessionId: string;

  beforeAll(async () => {
    env = await createTestEnv();
    llm = await FakeLlmServer.start();
    llm.setDefault(() => scripted.text('ok'));
    gateway = await spawnGateway(env.processEnv(llm.providerEnv));
    url = gateway.url;
    ({ api, tenantId } = await newTenant(url, ADMIN, 'stopped'));
    agentId = (await api.post('/v1/agents', { name: 'stopped', model: 'openai-chat/stopped' })).body.id;
    sessionId = (await api.post('/v1/sessions', { agentId })).body.id;
    const stopped = await api.post(`/v1/agents/${agentId}/stop`, { reason: 'incident 30' });
    expect(stopped.body).toMatchObject({ state: 'stopped' });
  });

  afterAll(async () => {
    await gateway?.kill('SIGKILL');
    await llm?.close();
    await env?.cleanup();
  });

  /** What the tenant has stored: its sessions, messages and turns. */
  const stored = async () => ({
    sessions: await env.db.session.count({ where: { tenantId } }),
    messages: await env.db.message.count({ where: { tenantId } }),
    turns: await env.db.turn.count({ where: { tenantId } }),
  });

  /** Runs a request and checks it stored nothing; its answer for the refusal's checks. */
  async function refusedWithNothingStored<T>(request: () => Promise<T>): Promise<T> {
    const before = await stored();
    const answer = await request();
    expect(await stored()).toEqual(before);
    return answer;
  }

  it('the native message: 409 agent_stopped', async () => {
    const res = await refusedWithNothingStored(() =>
      api.post(`/v1/sessions/${sessionId}/messages`, { content: 'hello?' }),
    );
    expect(res.status).toBe(409);
    expect(res.body.error.code).toBe('agent_stopped');
  });

  it('a chat completion with earlier messages: 409 agent_stopped, no seeded session', async () => {
    const res = await refusedWithNothingStored(() =>
      api.post('/v1/chat/completions', {
        model: 'stopped',
        messages: [
          { role: 'user', content: 'earlier' },
          { role: 'assistant', content: 'an earlier answer' },
          { role: 'user', content: 'now' },
        ],
      }),
    );
    expect(res.status).toBe(409);
    expect(res.body.error.code).toBe('agent_stopped');
  });

  it('a chat completion with an Idempotency-Key: refused the same, and its retry too', async () => {
    const key = randomUUID();
    const body = {
      model: 'stopped',
      messages: [
        { role: 'user', content: 'earlier' },
        { role: 'assistant', content: 'an earlier answer' },
        { role: 'user', content: 'now' },
      ],
    };
    for (let i = 0; i < 2; i++) {
      const res = await refusedWithNothingStored(() =>
        api.post('/v1/chat/completions', body, { 'idempotency-key': key }),
      );
      expect(res.status).toBe(409);
    }
  });

  it('a response with input items: 409 agent_stopped, no seeded session', async () => {
    const res = await refusedWithNothingStored(() =>
      api.post('/v1/responses', {
        model: 'stopped',
        input: [
          { role: 'user', content: 'earlier' },
          { role: 'assistant', content: 'an earlier answer' },
          { role: 'user', content: 'now' },
        ],
      }),
    );
    expect(res.status).toBe(409);
    expect(res.body.error.code).toBe('agent_stopped');
  });

  it('a LangGraph run on a new thread: 409, no thread made', async () => {
    const res = await refusedWithNothingStored(() =>
      api.post(`/langgraph/threads/${randomUUID()}/runs/wait`, {
        assistant_id: 'stopped',
        input: { messages: [{ role: 'user', content: 'hi' }] },
        if_not_exists: 'create',
      }),
    );
    expect(res.status).toBe(409);
    expect(JSON.stringify(res.body)).toContain('stopped');
  });

  it('A2A message/send: a JSON-RPC server error that says the agent is stopped, no context made', async () => {
    const res = await refusedWithNothingStored(async () => {
      const r = await fetch(`${url}/a2a/${agentId}`, {
        method: 'POST',
        headers: { authorization: `Bearer ${api.key}`, 'content-type': 'application/json' },
        body: JSON.stringify({
          jsonrpc: '2.0',
          id: 'stopped',
          method: 'message/send',
          params: {
            message: {
              kind: 'message',
              messageId: randomUUID(),
              role: 'user',
              parts: [{ kind: 'text', text: 'hi' }],
            },
          },
        }),
      });
      return (await r.json()) as { result?: unknown; error?: { code: number; message: string } };
    });
    expect(res.result).toBeUndefined();
    // Not -32602 "invalid params": the request was valid; the agent is stopped (docs/adr/0037).
    expect(res.error?.code).toBe(-32050);
    expect(res.error?.message).toContain('stopped');
    expect(res.error?.message).toContain(`/v1/agents/${agentId}/resume`);
  });

  it('an MCP tool call: a tool error that says the agent is stopped, no session made', async () => {
    const text = await refusedWithNothingStored(async () => {
      const r = await fetch(`${url}/mcp`, {
        method: 'POST',
        headers: {
          authorization: `Bearer ${api.key}`,
          'content-type': 'application/json',
          accept: 'application/json, text/event-stream',
        },
        body: JSON.stringify({
          jsonrpc: '2.0',
          id: 1,
          method: 'tools/call',
          params: { name: 'stopped', arguments: { message: 'hi' } },
        }),
      });
      return r.text();
    });
    expect(text).toContain('"isError":true');
    expect(text).toContain('stopped');
  });
});
