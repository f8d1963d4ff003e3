import { createSwitchboardClient } from '@switchboard/client';
import {
  createTestEnv,
  FakeLlmServer,
  spawnApp,
  waitFor,
  type AppProcess,
  type TestEnv,
} from '@switchboard/testing';
import { newTenant, type Api } from '../support/api';
import { startGateway, type Running } from '../support/stack';

jest.setTimeout(90_000);

const ADMIN = 'test-admin-token-0123456789';

/**
 * Vector memory through real processes (docs/adr/0050): an agent given an embedder over the API, a
 * record added over the API embedded by a hooks worker process (progress on
 * /memory/embeddings), and a search with `mode=hybrid` through the stock typed client finding a
 * record by vector that full-text does not find. Bad input is refused with 400 and writes nothing.
 * An `openai/*` embedder (the fake model server's /v1/embeddings) books the job's spend in the
 * ledger, which GET /v1/usage shows under the embedder's model (issue 33).
 */
describe('vector memory and hybrid search', () => {
  let env: TestEnv;
  let gateway: Running & { url: string };
  let hooks: AppProcess;
  let api: Api;
  let llm: FakeLlmServer;

  beforeAll(async () => {
    env = await createTestEnv();
    llm = await FakeLlmServer.start();
    gateway = await startGateway(env.config(llm.providerEnv));
    hooks = await spawnApp('hooks-worker', env.processEnv(llm.providerEnv));
    ({ api } = await newTenant(gateway.url, ADMIN, 'vectors'));
  });

  afterAll(async () => {
    await hooks?.kill('SIGKILL');
    await gateway?.close();
    await llm?.close();
    await env?.cleanup();
  });

  it('refuses an unknown embedder and malformed filters with 400, writing nothing', async () => {
    const before = (await api.get('/v1/agents')).body.data.length;
    const unknown = await api.post('/v1/agents', { name: 'x', embedder: 'local/none' });
    expect(unknown.status).toBe(400);
    expect(JSON.stringify(unknown.body)).toContain('unknown embedder');
    for (const body of [
      { embedder: 'no-slash' },
      { embedder: 'nobody/none' },
      { memory: { recall: 'semantic' } },
      { memory: { recall: 'fts', extra: 1 } },
      { memory: { embedder: 'local/hash-256' } },
    ]) {
      expect((await api.post('/v1/agents', { name: 'x', ...body })).status).toBe(400);
    }
    expect((await api.get('/v1/agents')).body.data.length).toBe(before);

    const created = await api.post('/v1/agents', { name: 'plain' });
    const id = created.body.id as string;
    expect(created.body.memory).toEqual({});
    const patched = await api.patch(`/v1/agents/${id}`, { embedder: 'local/nope' });
    expect(patched.status).toBe(400);
    expect((await api.get(`/v1/agents/${id}`)).body).toMatchObject({ memory: {}, embedder: null });

    const base = `/v1/agents/${id}/memory`;
    for (const query of [
      'q=x&since=yesterday',
      'q=x&until=2026-13-01T00:00:00Z',
      'q=x&since=2026-02-01T00:00:00Z&until=2026-01-01T00:00:00Z',
      'q=x&tags=has%20space',
      'q=x&mode=semantic',
      'mode=hybrid',
    ]) {
      expect([query, (await api.get(`${base}?${query}`)).status]).toEqual([query, 400]);
    }
    const badTags = await api.post(base, { content: 'Tagged badly', tags: ['ok', 'not ok'] });
    expect(badTags.status).toBe(400);
    expect((await api.get(base)).body.data).toEqual([]);
  });

  it('embeds records in the hooks worker and finds one by vector that full-text does not (mode=hybrid)', async () => {
    const sb = createSwitchboardClient({ baseUrl: gateway.url, apiKey: api.key });
    const created = await sb.api.POST('/v1/agents', {
      body: { name: 'semantic', embedder: 'local/hash-256' },
    });
    expect(created.response.status).toBe(201);
    expect(created.data).toMatchObject({ embedder: 'local/hash-256', memory: {} });
    const id = created.data!.id;
    for (const [content, tags] of [
      ['Release schedule\nDeployments happen on Tuesdays at noon.', ['ops']],
      ['Pets\nThe user has two cats named Miso and Tofu.', ['home']],
      ['Lunch\nThe team eats pizza on Fridays.', ['ops']],
    ] as const) {
      const added = await sb.api.POST('/v1/agents/{id}/memory', {
        params: { path: { id } },
        body: { content, tags: [...tags] },
      });
      expect(added.response.status).toBe(201);
      expect(added.data!.tags).toEqual(tags);
    }
    // The hooks worker embeds them; the set becomes the one recall compares.
    const status = await waitFor(async () => {
      const r = await sb.api.GET('/v1/agents/{id}/memory/embeddings', { params: { path: { id } } });
      return r.data?.complete ? r.data : undefined;
    });
    expect(status).toEqual({
      model: 'local/hash-256',
      target: 'local/hash-256',
      embedded: 3,
      total: 3,
      complete: true,
    });

    // Misspelt words: no full-text match, a close vector (the lexical embedder's trigrams).
    const search = (mode: 'fts' | 'hybrid', extra: { tags?: string } = {}) =>
      sb.api.GET('/v1/agents/{id}/memory', {
        params: { path: { id }, query: { q: 'deploymnt tuesdys', mode, ...extra } },
      });
    const fts = await search('fts');
    expect(fts.response.status).toBe(200);
    expect(fts.data!.data).toEqual([]);
    const hybrid = await search('hybrid');
    expect(hybrid.response.status).toBe(200);
    expect(hybrid.data!.search).toEqual({ mode: 'hybrid', used: 'hybrid', warning: null });
    expect(hybrid.data!.data[0]).toMatchObject({ title: 'Release schedule', path: 'vector', tags: ['ops'] });
    // Filtered by tags on the vector path too.
    const home = await search('hybrid', { tags: 'home' });
    expect(home.data!.data.map((h) => h.title)).toEqual(['Pets']);
  });

  it('books the embedding job of an openai embedder to the ledger, shown by GET /v1/usage under its model', async () => {
    const sb = createSwitchboardClient({ baseUrl: gateway.url, apiKey: api.key });
    const created = await sb.api.POST('/v1/agents', {
      body: { name: 'priced', embedder: 'openai/text-embedding-3-small' },
    });
    expect(created.response.status).toBe(201);
    const id = created.data!.id;
    for (const content of ['Release schedule\nDeploys are on Tuesdays.', 'Pets\nTwo cats.']) {
      const added = await sb.api.POST('/v1/agents/{id}/memory', {
        params: { path: { id } },
        body: { content },
      });
      expect(added.response.status).toBe(201);
    }
    await waitFor(async () => {
      const r = await sb.api.GET('/v1/agents/{id}/memory/embeddings', { params: { path: { id } } });
      return r.data?.complete ? r.data : undefined;
    });
    const billed = llm.requests
      .filter((r) => r.endpoint === 'openai.embeddings')
      .flatMap((r) => (r.body as { input: string[] }).input)
      .reduce((n, text) => n + Math.ceil(text.length / 4), 0);
    const usage = await sb.api.GET('/v1/usage', { params: { query: { groupBy: 'model,kind,session' } } });
    expect(usage.response.status).toBe(200);
    expect(usage.data!.groups).toEqual([
      expect.objectContaining({
        model: 'openai/text-embedding-3-small',
        kind: 'embedding',
        sessionId: null,
        inputTokens: billed,
        outputTokens: 0,
      }),
    ]);
    expect(Number(usage.data!.groups[0].costUsd)).toBeCloseTo((billed * 0.02) / 1e6, 10);
    expect(usage.data!.totals.costUsd).toBe(usage.data!.groups[0].costUsd);
    // A groupBy naming an unknown dimension is refused.
    expect((await api.get('/v1/usage?groupBy=model,flavour')).status).toBe(400);
  });
});
