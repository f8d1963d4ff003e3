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

const ADMIN = 'test-admin-token-0123456789';
const MODEL = 'openai-chat/gpt-4o-mini';

type Llm = { role: string; content: string | null }[];

/**
 * Agent memory through real processes (docs/adr/0022): the gateway's /v1/agents/:id/memory API
 * (add, list, search, read, forget; another tenant gets 404 and never sees a record), the
 * memory_search and memory_get tools in a turn run by a harness worker process, and recall: the
 * prompt the model receives carries the agent's matching records as evidence, and no other agent's.
 */
describe('agent memory', () => {
  let env: TestEnv;
  let llm: FakeLlmServer;
  let gateway: Running & { url: string };
  let harness: AppProcess;
  let api: Api;
  let other: Api;

  beforeAll(async () => {
    env = await createTestEnv();
    llm = await FakeLlmServer.start();
    // The recall budget is generous here: these tests check what recall brings, not its deadline
    // (the unit tests do), and a loaded CI machine must not turn that into a flaky miss.
    const settings = { ...llm.providerEnv, RECALL_TIMEOUT_MS: '5000' };
    gateway = await startGateway(env.config(settings));
    harness = await spawnApp('harness-worker', env.processEnv(settings));
    ({ api } = await newTenant(gateway.url, ADMIN, 'mine'));
    ({ api: other } = await newTenant(gateway.url, ADMIN, 'theirs'));
  });

  afterAll(async () => {
    await harness?.kill('SIGKILL');
    await gateway?.close();
    await llm?.close();
    await env?.cleanup();
  });

  async function agent(client: Api, name: string, tools: string[] = []): Promise<string> {
    const res = await client.post('/v1/agents', { name, model: MODEL, tools });
    expect(res.status).toBe(201);
    return res.body.id as string;
  }

  /** One turn of `agentId` on `input`; the ended turn, its session and the requests the model got. */
  async function turn(client: Api, agentId: string, input: string) {
    const before = llm.requests.length;
    const session = (await client.post('/v1/sessions', { agentId })).body.id as string;
    const admitted = await client.post(`/v1/sessions/${session}/messages`, { content: input });
    expect(admitted.status).toBe(202);
    const ended = await waitFor(
      async () => {
        const r = await client.get(`/v1/turns/${admitted.body.turnId}`);
        return ['completed', 'failed', 'cancelled'].includes(r.body.status) ? r.body : undefined;
      },
      { what: 'the turn ended', timeoutMs: 60_000 },
    );
    const requests = llm.requests.slice(before).map((r) => (r.body as { messages: Llm }).messages);
    return { turn: ended, session, requests };
  }

  it('adds, lists, searches, reads and forgets records over the API, and only for their tenant', async () => {
    const id = await agent(api, 'archivist-api');
    const base = `/v1/agents/${id}/memory`;
    const note = await api.post(base, { content: 'Standup moves to 9:30 on Mondays.\nSecond line.' });
    expect(note.status).toBe(201);
    expect(note.body).toMatchObject({
      kind: 'note',
      title: 'Standup moves to 9:30 on Mondays.',
      content: 'Standup moves to 9:30 on Mondays.\nSecond line.',
      truncated: false,
      provenance: { source: 'api' },
    });
    const fact = await api.post(base, { content: '用户喜欢机器学习和统计学。', title: '兴趣', kind: 'fact' });
    expect(fact.status).toBe(201);
    const long = await api.post(base, { content: `${'数据 '.repeat(5000)}END`, kind: 'note' });
    expect(long.status).toBe(201);

    // Newest first, in pages.
    const page1 = await api.get(`${base}?limit=2`);
    expect(page1.status).toBe(200);
    expect(page1.body.data.map((r: { sourceRef: string }) => r.sourceRef)).toEqual([
      long.body.sourceRef,
      fact.body.sourceRef,
    ]);
    expect(page1.body.data[0].score).toBeNull();
    const page2 = await api.get(`${base}?limit=2&cursor=${page1.body.nextCursor}`);
    expect(page2.body).toMatchObject({ data: [{ sourceRef: note.body.sourceRef }], nextCursor: null });
    expect((await api.get(`${base}?kind=fact`)).body.data).toHaveLength(1);

    // Search, Latin and Chinese.
    const standup = await api.get(`${base}?q=${encodeURIComponent('when is standup')}`);
    expect(standup.body.data).toEqual([
      expect.objectContaining({ sourceRef: note.body.sourceRef, score: expect.any(Number) }),
    ]);
    const cjk = await api.get(`${base}?q=${encodeURIComponent('机器学习')}`);
    expect(cjk.body.data.map((r: { title: string }) => r.title)).toEqual(['兴趣']);
    expect(cjk.body.data[0].snippet).toContain('机器学习');

    // Exact content, bounded.
    const doc = await api.get(`${base}/${long.body.sourceRef}`);
    expect(doc.body).toMatchObject({ truncated: true, totalChars: 15_003 });
    expect(doc.body.content).toHaveLength(12_000);
    const whole = await api.get(`${base}/${long.body.sourceRef}?maxChars=50000`);
    expect(whole.body).toMatchObject({ truncated: false, content: `${'数据 '.repeat(5000)}END` });

    // Another tenant: its key gets 404 for this agent, whatever it asks; its own agent sees nothing.
    for (const res of [
      await other.get(base),
      await other.get(`${base}?q=standup`),
      await other.get(`${base}/${note.body.sourceRef}`),
      await other.post(base, { content: 'planted' }),
      await other.delete(`${base}/${note.body.sourceRef}`),
    ]) {
      expect(res.status).toBe(404);
      expect(res.body.error.code).toBe('not_found');
    }
    const theirs = await agent(other, 'theirs-api');
    expect((await other.get(`/v1/agents/${theirs}/memory?q=standup`)).body.data).toEqual([]);
    expect((await other.get(`/v1/agents/${theirs}/memory`)).body.data).toEqual([]);
    expect((await other.get(`/v1/agents/${theirs}/memory/${note.body.sourceRef}`)).status).toBe(404);
    // Nor does another agent of the same tenant.
    const sibling = await agent(api, 'sibling-api');
    expect((await api.get(`/v1/agents/${sibling}/memory/${note.body.sourceRef}`)).status).toBe(404);
    expect((await api.get(`/v1/agents/${sibling}/memory?q=standup`)).body.data).toEqual([]);

    // Forget.
    expect((await api.delete(`${base}/${note.body.sourceRef}`)).status).toBe(204);
    expect((await api.get(`${base}/${note.body.sourceRef}`)).status).toBe(404);
    expect((await api.delete(`${base}/${note.body.sourceRef}`)).status).toBe(404);
    expect((await api.get(`${base}?q=standup`)).body.data).toEqual([]);
  });

  it('memory_search then memory_get in a turn: the tool results carry the record', async () => {
    const id = await agent(api, 'searcher', ['memory_search', 'memory_get']);
    const added = await api.post(`/v1/agents/${id}/memory`, {
      content: 'Deploys happen on Thursdays after the 14:00 review.',
      title: 'Deploy day',
      kind: 'fact',
    });
    const ref = added.body.sourceRef as string;
    llm.enqueue(
      scripted.toolCall('memory_search', { query: 'deploy day' }, { id: 'call_s' }),
      scripted.toolCall('memory_get', { source_ref: ref, max_chars: 7 }, { id: 'call_g' }),
      scripted.text('Thursdays.'),
    );
    const { turn: ended, session, requests } = await turn(api, id, 'Which day do we deploy?');
    expect(ended.status).toBe('completed');
    expect(requests).toHaveLength(3);
    const toolResults = requests[2]
      .filter((m) => m.role === 'tool')
      .map((m) => JSON.parse(m.content ?? '') as { ok: boolean; result: Record<string, any> });
    expect(toolResults[0]).toMatchObject({
      ok: true,
      result: {
        results: [
          {
            source_ref: ref,
            kind: 'fact',
            title: 'Deploy day',
            snippet: 'Deploys happen on Thursdays after the 14:00 review.',
            score: expect.any(Number),
            updated_at: added.body.updatedAt,
          },
        ],
      },
    });
    expect(toolResults[1]).toMatchObject({
      ok: true,
      result: { source_ref: ref, content: 'Deploys', truncated: true, total_chars: 51 },
    });
    // The transcript keeps the tool results.
    const transcript = (await api.get(`/v1/sessions/${session}/messages`)).body.data as {
      role: string;
      body: { type: string; text?: string; value?: unknown };
    }[];
    const tools = transcript.filter((m) => m.role === 'tool').map((m) => JSON.stringify(m.body));
    expect(tools).toHaveLength(2);
    expect(tools[0]).toContain(ref);
    expect(tools[0]).toContain('Deploy day');
  });

  it('recalls the agent’s matching records into the prompt as evidence, and no other agent’s', async () => {
    const mine = await agent(api, 'recaller');
    const sibling = await agent(api, 'sibling');
    const theirs = await agent(other, 'recaller');
    const added = await api.post(`/v1/agents/${mine}/memory`, {
      content: "The user's favourite colour is teal.",
      title: 'Favourite colour',
      kind: 'fact',
    });
    await other.post(`/v1/agents/${theirs}/memory`, {
      content: "Their user's favourite colour is amber.",
      kind: 'fact',
    });

    llm.enqueue(scripted.text('Teal.'));
    const recalled = await turn(api, mine, 'What is my favourite colour?');
    expect(recalled.turn.status).toBe('completed');
    const input = recalled.requests[0].filter((m) => m.role === 'user').pop()?.content ?? '';
    // A fact is the context pack's (seed 001, docs/adr/0052): one evidence block, the record by its ref.
    expect(input).toContain('<evidence kind="context_pack">');
    expect(input).toContain(
      `[${added.body.sourceRef}] Favourite colour: The user's favourite colour is teal.`,
    );
    expect(input).toContain("The user's favourite colour is teal.");
    expect(input).not.toContain('amber');
    expect(input.endsWith('What is my favourite colour?')).toBe(true);

    for (const [client, id] of [
      [api, sibling],
      [other, theirs],
    ] as const) {
      llm.enqueue(scripted.text('No idea.'));
      const { turn: ended, requests } = await turn(client, id, 'What is my favourite colour?');
      expect(ended.status).toBe('completed');
      const prompt = JSON.stringify(requests[0]);
      expect(prompt).not.toContain('teal');
      if (id === sibling) expect(prompt).not.toContain('<evidence kind=\\"context_pack\\">');
    }
    // A turn with nothing to recall has no memory block and no pack at all.
    llm.enqueue(scripted.text('Hello.'));
    const plain = await turn(api, mine, 'Good morning!');
    expect(JSON.stringify(plain.requests[0])).not.toContain('kind=\\"memory\\"');
    expect(JSON.stringify(plain.requests[0])).not.toContain('kind=\\"context_pack\\"');
  });
});
