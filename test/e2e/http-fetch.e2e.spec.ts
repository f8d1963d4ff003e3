import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import {
  createTestEnv,
  FakeLlmServer,
  scripted,
  spawnApp,
  waitFor,
  type AppProcess,
  type TestEnv,
} from '@switchboard/testing';
import { newTenant, type Api } from '../support/api';
import { startGateway, type Running } from '../support/stack';

jest.setTimeout(90_000);

/**
 * `http_fetch` through real processes (docs/adr/0021): a harness worker process whose allowlist
 * names `localhost` fetches a local page and the model gets its text; the metadata address and a
 * loopback literal the allowlist does not name are refused with a classified failure, and no
 * request reaches the local server.
 */
describe('http_fetch', () => {
  let env: TestEnv;
  let llm: FakeLlmServer;
  let gateway: Running & { url: string };
  let harness: AppProcess;
  let site: Server;
  let port: number;
  let api: Api;
  let agentId: string;
  const hits: string[] = [];

  beforeAll(async () => {
    env = await createTestEnv();
    llm = await FakeLlmServer.start();
    site = createServer((req, res) => {
      hits.push(req.url ?? '');
      res.writeHead(200, { 'content-type': 'text/plain; charset=utf-8' });
      res.end(`The page says: tulips bloom in April. key=${String(req.headers['idempotency-key'])}`);
    });
    await new Promise<void>((resolve) => site.listen(0, '127.0.0.1', resolve));
    port = (site.address() as AddressInfo).port;
    const settings = { ...llm.providerEnv, HTTP_FETCH_ALLOW_HOSTS: 'localhost' };
    gateway = await startGateway(env.config(settings));
    harness = await spawnApp('harness-worker', env.processEnv(settings));
    ({ api } = await newTenant(gateway.url, 'test-admin-token-0123456789'));
    const agent = await api.post('/v1/agents', {
      name: 'fetcher',
      model: 'openai-chat/gpt-4o-mini',
      tools: ['http_fetch'],
    });
    expect(agent.status).toBe(201);
    agentId = agent.body.id;
  });

  afterAll(async () => {
    await harness?.kill('SIGKILL');
    await gateway?.close();
    await llm?.close();
    site?.closeAllConnections();
    await new Promise((resolve) => (site ? site.close(resolve) : resolve(undefined)));
    await env?.cleanup();
  });

  /** One turn whose model fetches `url` and then answers; the turn and the tool message the model got. */
  async function fetchTurn(url: string) {
    llm.enqueue(scripted.toolCall('http_fetch', { url }, { id: 'call_f' }), scripted.text('Done.'));
    const before = llm.requests.length;
    const session = (await api.post('/v1/sessions', { agentId })).body.id as string;
    const admitted = await api.post(`/v1/sessions/${session}/messages`, { content: `fetch ${url}` });
    expect(admitted.status).toBe(202);
    const turn = await waitFor(
      async () => {
        const r = await api.get(`/v1/turns/${admitted.body.turnId}`);
        return ['completed', 'failed'].includes(r.body.status) ? r.body : undefined;
      },
      { what: 'the turn ended', timeoutMs: 60_000 },
    );
    const [first, second] = llm.requests.slice(before);
    const tools = (first.body as { tools: { function: { name: string } }[] }).tools;
    // tokenjuice_retrieve: offered to every agent with tools whose results TokenJuice compacts (ADR 0033).
    expect(tools.map((t) => t.function.name)).toEqual(['http_fetch', 'tokenjuice_retrieve']);
    const messages = (second.body as { messages: { role: string; content: string }[] }).messages;
    const toolMessage = JSON.parse(messages.find((m) => m.role === 'tool')!.content) as Record<string, any>;
    return { turn, toolMessage, session };
  }

  it('fetches an allowlisted local page and the model gets its text', async () => {
    const url = `http://localhost:${port}/tulips`;
    const { turn, toolMessage } = await fetchTurn(url);
    expect(turn.status).toBe('completed');
    expect(toolMessage).toMatchObject({
      ok: true,
      result: { url, status: 200, contentType: 'text/plain; charset=utf-8', truncated: false },
    });
    // The call's idempotency key (turn id + call id) went out as the Idempotency-Key header.
    expect(toolMessage.result.text).toBe(`The page says: tulips bloom in April. key=${turn.id}:call_f`);
    expect(turn.toolCalls).toEqual([
      expect.objectContaining({ name: 'http_fetch', sideEffect: 'network', status: 'completed' }),
    ]);
  });

  it.each([
    ['the cloud metadata address', 'http://169.254.169.254/latest/meta-data/'],
    ['a loopback literal the allowlist does not name', () => `http://127.0.0.1:${port}/secret`],
  ])('refuses %s with a classified failure', async (_label, target) => {
    const url = typeof target === 'function' ? target() : target;
    const seen = hits.length;
    const { turn, toolMessage, session } = await fetchTurn(url);
    expect(turn.status).toBe('completed');
    expect(toolMessage).toMatchObject({
      ok: false,
      tool_name: 'http_fetch',
      kind: 'blocked_address',
      retryable: false,
      message: expect.stringContaining('refused to fetch'),
    });
    expect(hits.length).toBe(seen);
    const events = (await api.get(`/v1/sessions/${session}/events`)).body.data as {
      type: string;
      data: { failure?: { class: string; category: string } };
    }[];
    const completed = events.find((e) => e.type === 'tool_call_completed');
    expect(completed?.data.failure).toMatchObject({
      class: 'BlockedByPolicy',
      category: 'blocked_by_policy',
    });
  });
});
