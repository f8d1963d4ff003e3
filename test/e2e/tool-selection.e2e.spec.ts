import net from 'node:net';
import OpenAI from 'openai';
import type { ChatCompletionTool } from 'openai/resources/chat/completions';
import {
  createTestEnv,
  crossRealmSafeFetch,
  FakeLlmServer,
  scripted,
  spawnApp,
  waitFor,
  type AppProcess,
  type TestEnv,
} from '@switchboard/testing';
import { newTenant, type Api } from '../support/api';

/**
 * Semantic tool selection (docs/adr/0049) through real processes (a gateway, a harness worker), the
 * public API and the stock openai client: an agent with more tools (its own and the client's) than
 * its `toolSelection.maxPerTurn` is offered, per round, its pinned tools and those most similar to
 * the input, in their usual order and byte for byte the same for the same input; bad settings are
 * refused with 400 and change nothing.
 */
jest.setTimeout(120_000);

const ADMIN = 'test-admin-token-0123456789';

const clientTool = (name: string, description: string): ChatCompletionTool => ({
  type: 'function',
  function: { name, description, parameters: { type: 'object', properties: {} } },
});
const CLIENT_TOOLS = [
  clientTool('get_stock_price', 'The share price of a company on the stock market'),
  clientTool('get_weather', 'The weather forecast for a city: rain, sun, temperature'),
  clientTool('translate_text', 'Translate text into another language'),
  clientTool('send_email', 'Send an email to a recipient'),
];

describe('semantic tool selection', () => {
  let env: TestEnv;
  let llm: FakeLlmServer;
  const processes: AppProcess[] = [];
  let url: string;
  let api: Api;
  let client: OpenAI;

  /** The tools the agent's model was offered in request i, as sent. */
  const offered = (i: number) =>
    ((llm.requests[i].body as { tools?: { function: { name: string } }[] }).tools ?? []).map(
      (t) => t.function.name,
    );

  beforeAll(async () => {
    env = await createTestEnv();
    llm = await FakeLlmServer.start();
    const server = net.createServer();
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const { port } = server.address() as net.AddressInfo;
    await new Promise((resolve) => server.close(resolve));
    processes.push(
      ...(await Promise.all([
        spawnApp('gateway', env.processEnv({ ...llm.providerEnv, PORT: String(port), HOST: '127.0.0.1' }), {
          readyPattern: /Server listening at|successfully started/,
        }),
        spawnApp('harness-worker', env.processEnv({ ...llm.providerEnv })),
      ])),
    );
    url = `http://127.0.0.1:${port}`;
    await waitFor(async () => (await fetch(`${url}/healthz`)).ok, { what: 'the gateway to listen' });
    ({ api } = await newTenant(url, ADMIN));
    client = new OpenAI({
      baseURL: `${url}/v1`,
      apiKey: api.key!,
      fetch: crossRealmSafeFetch,
      maxRetries: 0,
    });
  });

  afterAll(async () => {
    await Promise.all(processes.map((p) => p.kill('SIGTERM')));
    await llm?.close();
    await env?.cleanup();
  });

  it('refuses bad settings with 400 and writes nothing', async () => {
    const base = { model: 'openai-chat/gpt-4o-mini', tools: ['word_count', 'current_time'] };
    const bad: [Record<string, unknown>, string][] = [
      [{ embedder: 'local/nope' }, 'embedder'],
      [{ embedder: 'cohere/embed-v3' }, 'embedder'],
      [{ toolSelection: { maxPerTurn: 0 } }, 'toolSelection.maxPerTurn'],
      [{ toolSelection: { maxPerTurn: 2, pinned: ['no_such_tool'] } }, 'toolSelection.pinned'],
      [{ toolSelection: { maxPerTurn: 2, extra: true } }, 'toolSelection'],
    ];
    for (const [fields, path] of bad) {
      const res = await api.post('/v1/agents', { name: 'bad', ...base, ...fields });
      expect(res.status).toBe(400);
      expect(JSON.stringify(res.body)).toContain(path.split('.').pop());
    }
    expect((await api.get('/v1/agents')).body.data).toEqual([]);

    const created = await api.post('/v1/agents', { name: 'fine', ...base });
    expect(created.status).toBe(201);
    expect(created.body).toMatchObject({ toolSelection: {}, embedder: null });
    const patched = await api.patch(`/v1/agents/${created.body.id}`, { embedder: 'local/nope' });
    expect(patched.status).toBe(400);
    const ok = await api.patch(`/v1/agents/${created.body.id}`, {
      embedder: 'local/hash-256',
      toolSelection: { maxPerTurn: 3, pinned: ['current_time'] },
    });
    expect(ok.status).toBe(200);
    expect((await api.get(`/v1/agents/${created.body.id}`)).body).toMatchObject({
      embedder: 'local/hash-256',
      toolSelection: { maxPerTurn: 3, pinned: ['current_time'] },
    });
  });

  it('offers the pinned tool and the best match, in order, byte-identical for the same input', async () => {
    const created = await api.post('/v1/agents', {
      name: 'picky',
      model: 'openai-chat/gpt-4o-mini',
      tools: ['word_count', 'current_time', 'http_fetch'],
      toolSelection: { maxPerTurn: 2, pinned: ['current_time'] },
    });
    expect(created.status).toBe(201);
    const ask = async () => {
      llm.enqueue(scripted.text('Sunny.'));
      const before = llm.requests.length;
      const reply = await client.chat.completions.create({
        model: 'picky',
        messages: [{ role: 'user', content: 'Will it rain in Paris tomorrow? What is the forecast?' }],
        tools: CLIENT_TOOLS,
      });
      expect(reply.choices[0].message.content).toBe('Sunny.');
      return before;
    };
    const first = await ask();
    // Eight tools, two offered: the pinned one and the weather, in the turn's order (own, then
    // client), and TokenJuice's retrieve tool, pinned on top (a compacted result names it).
    expect(offered(first)).toEqual(['current_time', 'tokenjuice_retrieve', 'get_weather']);
    const second = await ask();
    expect(JSON.stringify((llm.requests[second].body as { tools: unknown }).tools)).toBe(
      JSON.stringify((llm.requests[first].body as { tools: unknown }).tools),
    );

    // Without a selection, every tool is offered.
    await api.post('/v1/agents', {
      name: 'all',
      model: 'openai-chat/gpt-4o-mini',
      tools: ['word_count', 'current_time', 'http_fetch'],
    });
    llm.enqueue(scripted.text('ok'));
    const before = llm.requests.length;
    await client.chat.completions.create({
      model: 'all',
      messages: [{ role: 'user', content: 'Will it rain in Paris tomorrow?' }],
      tools: CLIENT_TOOLS,
    });
    expect(offered(before)).toEqual([
      'word_count',
      'current_time',
      'http_fetch',
      'tokenjuice_retrieve',
      'get_stock_price',
      'get_weather',
      'translate_text',
      'send_email',
    ]);
  });
});
