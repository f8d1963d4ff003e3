import {
  createTestEnv,
  FakeLlmServer,
  scripted,
  spawnApp,
  waitFor,
  type AppProcess,
  type RecordedRequest,
  type ScriptedReply,
  type TestEnv,
} from '@switchboard/testing';
import { newTenant, type Api } from '../support/api';
import { startGateway, type Running } from '../support/stack';

jest.setTimeout(120_000);

const ADMIN = 'test-admin-token-0123456789';
const MODEL = 'openai-chat/gpt-4o-mini';
/** What the reflection model writes in turn 1: it must reach turn 2's provider request. */
const LESSON = 'LESSON-7f3: word_count needs a "text" argument; pass the words to count.';

type Sent = { role: string; content: string | null }[];
const messagesOf = (r: RecordedRequest) => (r.body as { messages: Sent }).messages;

/**
 * Learning feedback, the runtime-metadata message, the vision route and the effective model through
 * real processes (docs/adr/0059): gateway, harness worker and hooks worker, with the fake model server
 * recording every provider request. A turn whose tool call fails reflects; the `learning` post-turn
 * hook keeps that reflection and the tool's failure; the agent's next turn — in another session —
 * carries both, framed as evidence in its input, and every round's system message ends with the
 * session, provider, model and today's UTC date after the stored prompt.
 */
describe('learning feedback and runtime metadata', () => {
  let env: TestEnv;
  let llm: FakeLlmServer;
  let gateway: Running & { url: string };
  const workers: AppProcess[] = [];
  let api: Api;
  let other: Api;

  // The agent's rounds, its reflections and the archivist, told apart by what they were sent.
  const reply = (r: RecordedRequest): ScriptedReply => {
    const messages = messagesOf(r);
    const system = messages[0]?.content ?? '';
    if (system.includes('review an AI agent')) return scripted.text(LESSON);
    if (!system.includes('<runtime_metadata>')) return scripted.text('{"facts": []}');
    const last = messages[messages.length - 1];
    if (last.role === 'user' && (last.content ?? '').endsWith('count my words'))
      return scripted.toolCall('word_count', { nope: 1 });
    return scripted.text('done');
  };

  beforeAll(async () => {
    env = await createTestEnv();
    llm = await FakeLlmServer.start();
    llm.setDefault(reply);
    gateway = await startGateway(env.config(llm.providerEnv));
    for (const app of ['harness-worker', 'hooks-worker'] as const) {
      workers.push(await spawnApp(app, env.processEnv(llm.providerEnv)));
    }
    ({ api } = await newTenant(gateway.url, ADMIN, 'learner'));
    ({ api: other } = await newTenant(gateway.url, ADMIN, 'other'));
  });

  afterAll(async () => {
    for (const w of workers) await w.kill('SIGKILL');
    await gateway?.close();
    await llm?.close();
    await env?.cleanup();
  });

  async function turn(agentId: string, content: string) {
    const session = await api.post('/v1/sessions', { agentId });
    const before = llm.requests.length;
    const res = await api.post(`/v1/sessions/${session.body.id}/messages`, { content, wait: 60 });
    expect(res.status).toBe(200);
    expect(res.body.status).toBe('completed');
    return { sessionId: session.body.id as string, requests: llm.requests.slice(before).map(messagesOf) };
  }

  it('refuses a bad learning switch with 400 and changes nothing', async () => {
    const agent = await api.post('/v1/agents', { name: 'strict', model: MODEL });
    for (const memory of [{ learning: 'yes' }, { learning: 1 }, { learning: true, extra: 1 }]) {
      const res = await api.patch(`/v1/agents/${agent.body.id}`, { memory });
      expect(res.status).toBe(400);
      expect(res.body.error.code).toBe('validation_failed');
    }
    expect((await api.get(`/v1/agents/${agent.body.id}`)).body.memory).toEqual({});
  });

  it("feeds a turn's reflection and its tool failure into the agent's next turn, as evidence in the input", async () => {
    const created = await api.post('/v1/agents', {
      name: 'learner',
      model: MODEL,
      tools: ['word_count'],
      budgets: { maxReflections: 1 },
      memory: { learning: true },
    });
    expect(created.status).toBe(201);
    expect(created.body.memory).toEqual({ learning: true });
    const agentId = created.body.id as string;

    const first = await turn(agentId, 'please count my words');
    // The failed call earned a reflection, which the same turn's next round already read.
    expect(first.requests.some((m) => m.some((x) => (x.content ?? '').includes(LESSON)))).toBe(true);

    // The learning hook (hooks worker) keeps it, and the tool's failure is in the statistics.
    const status = await waitFor(async () => {
      const s = (await api.get(`/v1/agents/${agentId}`)).body.status;
      return s.learning.reflections.length > 0 && s.tools.length > 0 ? s : undefined;
    });
    expect(status.learning).toMatchObject({
      enabled: true,
      reflections: [{ text: LESSON, sessionId: first.sessionId }],
      userProfile: null,
    });
    expect(status.tools[0]).toMatchObject({ tool: 'word_count', calls: 1, failures: 1 });

    // The next turn, in a new session: its provider request carries what was learned.
    const second = await turn(agentId, 'hello again');
    expect(second.requests).toHaveLength(1);
    const [system, ...rest] = second.requests[0];
    const input = rest[rest.length - 1];
    expect(input.role).toBe('user');
    expect(input.content).toContain('<evidence kind="learning">');
    expect(input.content).toContain(LESSON);
    expect(input.content).toContain('- word_count: 1 of 1 calls failed (');
    expect(input.content!.endsWith('\n\nhello again')).toBe(true);
    // Never the system prompt.
    expect(system.content).not.toContain(LESSON);

    // Seed 001 stage 3: the runtime metadata follows the stored prompt, with this session and today.
    const today = new Date().toISOString().slice(0, 10);
    expect(system.content).toContain(
      `\n\n<runtime_metadata>\nsession_id: ${second.sessionId}\nprovider: openai-chat\nmodel: gpt-4o-mini\ntoday: ${today} (UTC)\n</runtime_metadata>`,
    );
    // Byte for byte the same in every round of a session's day (the cached prefix holds).
    const rounds = first.requests.filter((m) => m[0].content!.includes('<runtime_metadata>'));
    expect(rounds.length).toBeGreaterThanOrEqual(2);
    expect(new Set(rounds.map((m) => m[0].content)).size).toBe(1);
  });

  it('feeds nothing back for an agent with learning off', async () => {
    const agent = await api.post('/v1/agents', { name: 'plain', model: MODEL, tools: ['word_count'] });
    await turn(agent.body.id, 'please count my words');
    const second = await turn(agent.body.id, 'hello');
    const input = second.requests[0][second.requests[0].length - 1];
    expect(input).toEqual({ role: 'user', content: 'hello' });
    expect((await api.get(`/v1/agents/${agent.body.id}`)).body.status.learning).toEqual({
      enabled: false,
      reflections: [],
      userProfile: null,
    });
  });

  it('checks the vision route against the capability flags, and shows the effective model on the status', async () => {
    const before = (await api.get('/v1/settings')).body;
    const refused = await api.patch('/v1/settings', {
      modelRoutes: { vision: 'openai-chat/gpt-3.5-turbo', chat: 'openai-chat/gpt-4o' },
    });
    expect(refused.status).toBe(400);
    expect(refused.body.error).toMatchObject({
      code: 'validation_failed',
      details: { issues: [{ path: 'modelRoutes.vision', message: expect.stringContaining('vision') }] },
    });
    expect((await api.get('/v1/settings')).body).toEqual(before);

    const set = await api.patch('/v1/settings', {
      modelRoutes: { vision: 'anthropic/claude-sonnet-4-5', chat: 'openai-chat/gpt-4o' },
    });
    expect(set.status).toBe(200);
    expect(set.body.modelRoutes).toMatchObject({ vision: 'anthropic/claude-sonnet-4-5' });

    const agent = await api.post('/v1/agents', {
      name: 'routed',
      model: 'hint:chat',
      fallbackModels: ['openai-chat/gpt-3.5-turbo'],
    });
    const shown = await api.get(`/v1/agents/${agent.body.id}`);
    expect(shown.body.status.effectiveModel).toEqual({
      model: {
        ref: 'openai-chat/gpt-4o',
        route: 'chat',
        capabilities: { vision: true, tools: true, structuredOutput: true },
      },
      fallbackModels: [
        {
          ref: 'openai-chat/gpt-3.5-turbo',
          route: null,
          capabilities: { vision: false, tools: true, structuredOutput: false },
        },
      ],
      forImages: {
        model: {
          ref: 'anthropic/claude-sonnet-4-5',
          route: 'vision',
          capabilities: { vision: true, tools: true, structuredOutput: true },
        },
        fallbackModels: [
          {
            ref: 'openai-chat/gpt-4o',
            route: 'chat',
            capabilities: { vision: true, tools: true, structuredOutput: true },
          },
        ],
      },
    });
    // Another tenant's agent is not found.
    expect((await other.get(`/v1/agents/${agent.body.id}`)).status).toBe(404);
  });
});
