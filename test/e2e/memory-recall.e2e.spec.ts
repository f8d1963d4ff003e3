import { createServer } from 'node:net';
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

jest.setTimeout(90_000);

/** A port nothing listens on now, for the gateway process. */
function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      server.close(() => resolve(typeof address === 'object' && address ? address.port : 0));
    });
  });
}

/** What the user says in session 1, and the part of it that must come back in session 2. */
const SAID = 'Please remember this: my deploy window is Tuesdays 14:00 UTC.';
const FACT = 'Tuesdays 14:00 UTC';
const ASKED = 'When is my deploy window?';
/** A preference the archivist marks in the same turn (docs/adr/0052). */
const PREFERENCE = 'The user wants answers in French.';
/** The context pack's one evidence block in a model request's user content. */
const packsOf = (r: RecordedRequest): string[] => {
  const messages = (r.body as { messages: { role: string; content: unknown }[] }).messages;
  const text = messages
    .filter((m) => m.role === 'user')
    .map((m) => (typeof m.content === 'string' ? m.content : JSON.stringify(m.content)))
    .join('\n');
  return text.match(/<evidence kind="context_pack">[\s\S]*?<\/evidence>/g) ?? [];
};
/** Said in a turn that is cancelled while the model is still thinking. */
const ROTATION = 'our on-call rotation starts Mondays 09:00 CET';

/**
 * Memory across sessions (issue 13), with the gateway, a harness worker and a hooks worker as real
 * processes (as production starts them) and the fake LLM behind the real provider SDKs: a fact said in session 1 is distilled by the archivist
 * into the agent's memory, with provenance pointing at session 1's turn, and recalled into the
 * model's request in session 2 of the same agent. Another tenant's agent, asked the same thing,
 * never sees it: not in its model request, not in its memory.
 */
describe('memory recall across sessions', () => {
  let env: TestEnv;
  let llm: FakeLlmServer;
  let api: Api;
  let other: Api;
  const workers: AppProcess[] = [];

  const isArchivist = (r: RecordedRequest) => r.rawBody.includes('You are the archivist');
  const model = (r: RecordedRequest) => (r.body as { model: string }).model;

  /** The archivist distils the deploy window from the turn that states it, and nothing from others. */
  const reply = (r: RecordedRequest): ScriptedReply => {
    if (!isArchivist(r)) {
      // The cancelled turn: one tool round, then a model call that never answers.
      if (r.rawBody.includes(ROTATION)) {
        return r.rawBody.includes('"role":"tool"')
          ? { kind: 'hang' }
          : scripted.toolCall('word_count', { text: 'on-call rotation' });
      }
      return scripted.text('Noted.', { usage: { input: 120, output: 4 } });
    }
    const facts = r.rawBody.includes('my deploy window is Tuesdays 14:00 UTC')
      ? [
          { title: 'Deploy window', content: `The user's deploy window is ${FACT}.` },
          { title: 'Answer language', content: PREFERENCE, preference: true },
        ]
      : r.rawBody.includes(ROTATION)
        ? [{ title: 'On-call rotation', content: 'The on-call rotation starts Mondays 09:00 CET.' }]
        : [];
    return scripted.text(JSON.stringify({ facts }), { usage: { input: 300, output: 30 } });
  };

  beforeAll(async () => {
    env = await createTestEnv();
    llm = await FakeLlmServer.start();
    llm.setDefault(reply);
    const port = await freePort();
    workers.push(
      await spawnApp(
        'gateway',
        env.processEnv({ ...llm.providerEnv, PORT: String(port), HOST: '127.0.0.1' }),
      ),
    );
    for (const app of ['harness-worker', 'hooks-worker'] as const) {
      workers.push(await spawnApp(app, env.processEnv(llm.providerEnv)));
    }
    const url = `http://127.0.0.1:${port}`;
    ({ api } = await newTenant(url, 'test-admin-token-0123456789', 'recall'));
    ({ api: other } = await newTenant(url, 'test-admin-token-0123456789', 'other'));
  });

  afterAll(async () => {
    await Promise.all(workers.map((w) => w.kill('SIGKILL')));
    await llm?.close();
    await env?.cleanup();
  });

  /** An agent on the fake LLM whose tenant routes summarization (the archivist) to the fake LLM too. */
  async function agentOf(client: Api): Promise<string> {
    const routed = await client.patch('/v1/settings', {
      modelRoutes: { summarization: 'openai-chat/archivist-mini' },
      // One distillation per turn, at once (the default defers to the session's, docs/adr/0032).
      archivist: { mode: 'every_turn' },
    });
    expect(routed.status).toBe(200);
    const agent = await client.post('/v1/agents', { name: 'ops', model: 'openai-chat/chat-mini' });
    expect(agent.status).toBe(201);
    return agent.body.id as string;
  }

  /** Says `content` in a new session of `agentId` and waits for the turn and its memory hooks to finish. */
  async function say(client: Api, agentId: string, content: string) {
    const session = await client.post('/v1/sessions', { agentId });
    expect(session.status).toBe(201);
    const before = llm.requests.length;
    const admitted = await client.post(`/v1/sessions/${session.body.id}/messages`, { content });
    expect(admitted.status).toBe(202);
    const turnId = admitted.body.turnId as string;
    const turn = await waitFor(
      async () => {
        const t = (await client.get(`/v1/turns/${turnId}`)).body;
        return ['completed', 'failed', 'cancelled'].includes(t.status) ? t : undefined;
      },
      { what: `turn ${turnId} ended`, timeoutMs: 30_000 },
    );
    expect(turn.status).toBe('completed');
    const runs = await waitFor(
      async () => {
        const rows = await env.db.hookRun.findMany({
          where: { turnId, hook: { in: ['archivist', 'episodic-index'] } },
        });
        return rows.length === 2 ? rows : undefined;
      },
      { what: `the memory hooks of turn ${turnId}`, timeoutMs: 30_000 },
    );
    expect(runs.map((r) => r.status)).toEqual(['completed', 'completed']);
    // The model request of the turn itself (not the archivist's), found by its input.
    const request = llm.requests
      .slice(before)
      .find((r) => !isArchivist(r) && r.rawBody.includes(JSON.stringify(content).slice(1, -1)));
    expect(request).toBeDefined();
    return { sessionId: session.body.id as string, turnId, request: request! };
  }

  it('recalls a fact from session 1 in session 2 of the same agent, and never in another tenant', async () => {
    const agentId = await agentOf(api);
    const first = await say(api, agentId, SAID);

    // The archivist called the tenant's summarization route with the turn.
    const archived = llm.requests.filter(
      (r) => isArchivist(r) && r.rawBody.includes('my deploy window is Tuesdays'),
    );
    expect(archived.map(model)).toEqual(['archivist-mini']);

    // The agent's memory shows the fact, with provenance pointing at session 1's turn.
    const memory = await api.get(`/v1/agents/${agentId}/memory`);
    expect(memory.status).toBe(200);
    const fact = memory.body.data.find((r: { title: string }) => r.title === 'Deploy window');
    expect(fact).toMatchObject({
      kind: 'fact',
      title: 'Deploy window',
      provenance: {
        source: 'archivist',
        turnId: first.turnId,
        sessionId: first.sessionId,
        model: 'openai-chat/archivist-mini',
      },
    });
    const doc = await api.get(`/v1/agents/${agentId}/memory/${fact.sourceRef}`);
    expect(doc.body.content).toBe(`The user's deploy window is ${FACT}.`);
    // The episodic index holds the turn as well.
    expect(memory.body.data.map((r: { kind: string }) => r.kind).sort()).toEqual(['episode', 'fact', 'fact']);
    // The preference is a fact the archivist tagged `preference`.
    const preference = memory.body.data.find((r: { title: string }) => r.title === 'Answer language');
    expect(preference.tags).toEqual(['preference']);
    expect(fact.tags).toEqual([]);

    // Session 2 of the same agent: the model's request carries the recalled fact.
    const second = await say(api, agentId, ASKED);
    expect(second.sessionId).not.toBe(first.sessionId);
    expect(second.request.rawBody).toContain(FACT);
    // …through the context pack (seed 001): ONE evidence block with the fact, named by its source_ref,
    // and the preference, which the input does not mention.
    const packs = packsOf(second.request);
    expect(packs).toHaveLength(1);
    expect(packs[0]).toContain(fact.sourceRef);
    expect(packs[0]).toContain(FACT);
    expect(packs[0]).toContain(`${preference.sourceRef}] Answer language: ${PREFERENCE}`);
    expect(packs[0].indexOf(PREFERENCE)).toBeLessThan(packs[0].indexOf(FACT));
    expect(second.request.rawBody.split(PREFERENCE)).toHaveLength(2);

    // Another tenant's agent asked the same: its request lacks the fact, its memory has nothing of it,
    // and the first tenant's agent and records are not found with its key.
    const otherAgentId = await agentOf(other);
    const foreign = await say(other, otherAgentId, ASKED);
    expect(foreign.request.rawBody).not.toContain(FACT);
    expect(foreign.request.rawBody).not.toContain('deploy window is');
    expect(foreign.request.rawBody).not.toContain(PREFERENCE);
    expect(packsOf(foreign.request)).toEqual([]);
    const otherMemory = await other.get(`/v1/agents/${otherAgentId}/memory`);
    expect(otherMemory.status).toBe(200);
    expect(JSON.stringify(otherMemory.body)).not.toContain('Tuesdays');
    const searched = await other.get(
      `/v1/agents/${otherAgentId}/memory?q=${encodeURIComponent('deploy window Tuesdays')}`,
    );
    expect(searched.status).toBe(200);
    expect(searched.body.data.filter((r: { kind: string }) => r.kind === 'fact')).toEqual([]);
    expect((await other.get(`/v1/agents/${agentId}/memory`)).status).toBe(404);
    expect((await other.get(`/v1/agents/${otherAgentId}/memory/${fact.sourceRef}`)).status).toBe(404);
  });

  it('archives a cancelled turn from its partial context: the input, the committed tool round', async () => {
    const agent = await api.post('/v1/agents', {
      name: 'ops-tools',
      model: 'openai-chat/chat-mini',
      tools: ['word_count'],
    });
    expect(agent.status).toBe(201);
    const session = await api.post('/v1/sessions', { agentId: agent.body.id });
    const before = llm.requests.length;
    const admitted = await api.post(`/v1/sessions/${session.body.id}/messages`, {
      content: `FYI ${ROTATION}. Count the words of that.`,
    });
    const turnId = admitted.body.turnId as string;
    // The tool round committed; the second model call hangs until the cancel aborts it.
    await waitFor(
      () => llm.requests.slice(before).find((r) => !isArchivist(r) && r.rawBody.includes('"role":"tool"')),
      { what: 'the model call after the tool round', timeoutMs: 30_000 },
    );
    expect((await api.post(`/v1/turns/${turnId}/cancel`, { reason: 'enough' })).status).toBeLessThan(300);
    const run = await waitFor(
      () => env.db.hookRun.findFirst({ where: { turnId, hook: 'archivist' } }).then((r) => r ?? undefined),
      { what: 'the archivist run of the cancelled turn', timeoutMs: 30_000 },
    );
    expect((await api.get(`/v1/turns/${turnId}`)).body.status).toBe('cancelled');
    expect(run.output).toMatchObject({ facts: 1, turnStatus: 'cancelled' });

    const [archived] = llm.requests.slice(before).filter((r) => isArchivist(r));
    expect(archived.rawBody).toContain('status=\\"cancelled\\"');
    expect(archived.rawBody).toContain('Tool call word_count');
    expect(archived.rawBody).toContain('partial: the turn was cancelled');
    const memory = await api.get(`/v1/agents/${agent.body.id}/memory?kind=fact`);
    expect(memory.body.data).toEqual([
      expect.objectContaining({
        title: 'On-call rotation',
        provenance: expect.objectContaining({ source: 'archivist', turnId, sessionId: session.body.id }),
      }),
    ]);
  });
});
