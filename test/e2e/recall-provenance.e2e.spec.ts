import { createServer } from 'node:net';
import {
  createTestEnv,
  FakeLlmServer,
  scripted,
  spawnApp,
  waitFor,
  type AppProcess,
  type RecordedRequest,
  type TestEnv,
} from '@switchboard/testing';
import { newTenant, type Api } from '../support/api';

jest.setTimeout(120_000);

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

interface Recalled {
  ref: string;
  kind: string;
  title: string;
  score: number | null;
  path: string | null;
  via: string;
  source: string | null;
}

/**
 * Recall provenance (issue 38, docs/adr/0060) with the gateway and a harness worker as real processes
 * and the fake LLM behind the real provider SDK: records added to an agent's memory are recalled into
 * a turn; the turn lists them (GET /v1/turns/:id `recalled`), the journal has a `memory_recalled`
 * event naming the same records, the decision record says `retrieval_augmented`, and with
 * `memory.citations` the final text lists them after the answer. A record that does not match is not
 * listed; a turn that recalls nothing has no event and an empty list.
 */
describe('recall provenance', () => {
  let env: TestEnv;
  let llm: FakeLlmServer;
  let api: Api;
  const workers: AppProcess[] = [];

  beforeAll(async () => {
    env = await createTestEnv();
    llm = await FakeLlmServer.start();
    llm.setDefault((r: RecordedRequest) =>
      scripted.text(r.rawBody.includes('Kestrel') ? 'The deploy window is Tuesdays.' : 'Hello.'),
    );
    const port = await freePort();
    workers.push(
      await spawnApp(
        'gateway',
        env.processEnv({ ...llm.providerEnv, PORT: String(port), HOST: '127.0.0.1' }),
      ),
      await spawnApp('harness-worker', env.processEnv(llm.providerEnv)),
    );
    ({ api } = await newTenant(`http://127.0.0.1:${port}`, 'test-admin-token-0123456789', 'provenance'));
  });

  afterAll(async () => {
    await Promise.all(workers.map((w) => w.kill('SIGKILL')));
    await llm?.close();
    await env?.cleanup();
  });

  async function ask(agentId: string, content: string) {
    const session = await api.post('/v1/sessions', { agentId });
    expect(session.status).toBe(201);
    const admitted = await api.post(`/v1/sessions/${session.body.id}/messages`, { content });
    expect(admitted.status).toBe(202);
    const turnId = admitted.body.turnId as string;
    const turn = await waitFor(
      async () => {
        const t = (await api.get(`/v1/turns/${turnId}`)).body;
        return ['completed', 'failed', 'cancelled'].includes(t.status) ? t : undefined;
      },
      { what: `turn ${turnId} ended`, timeoutMs: 30_000 },
    );
    expect(turn.status).toBe('completed');
    const events = (await api.get(`/v1/sessions/${session.body.id}/events?limit=500`)).body.data as {
      type: string;
      turnId: string | null;
      data: { records?: Recalled[] };
    }[];
    return { turn, events, sessionId: session.body.id as string };
  }

  it('lists the recalled records on the turn and in the journal, and cites them when asked', async () => {
    const agent = await api.post('/v1/agents', { name: 'ops', model: 'openai-chat/chat-mini' });
    expect(agent.status).toBe(201);
    const agentId = agent.body.id as string;
    const fact = await api.post(`/v1/agents/${agentId}/memory`, {
      kind: 'fact',
      title: 'Kestrel deploy window',
      content: 'The Kestrel service deploys on Tuesdays at 14:00 UTC.',
    });
    expect(fact.status).toBe(201);
    const note = await api.post(`/v1/agents/${agentId}/memory`, {
      kind: 'note',
      title: 'Kestrel owners',
      content: 'Kestrel deploys are approved by the platform team.',
    });
    expect(note.status).toBe(201);
    const unrelated = await api.post(`/v1/agents/${agentId}/memory`, {
      kind: 'note',
      title: 'Lunch',
      content: 'The cafeteria serves soup on Fridays.',
    });
    expect(unrelated.status).toBe(201);

    const first = await ask(agentId, 'When does Kestrel deploy?');
    const refs = (first.turn.recalled as Recalled[]).map((r) => r.ref).sort();
    expect(refs).toEqual([fact.body.sourceRef, note.body.sourceRef].sort());
    expect(first.turn.recalled).toEqual(
      expect.arrayContaining([
        expect.objectContaining({
          ref: fact.body.sourceRef,
          kind: 'fact',
          title: 'Kestrel deploy window',
          via: 'facts',
          source: 'api',
          score: expect.any(Number),
          path: 'fts',
        }),
        expect.objectContaining({ ref: note.body.sourceRef, kind: 'note', via: 'episodic' }),
      ]),
    );
    const recalledEvents = first.events.filter((e) => e.type === 'memory_recalled');
    expect(recalledEvents).toHaveLength(1);
    expect(recalledEvents[0].turnId).toBe(first.turn.id);
    expect(recalledEvents[0].data.records!.map((r) => r.ref).sort()).toEqual(refs);
    expect(first.turn.decision).toMatchObject({ strategy: 'retrieval_augmented', recalledRecords: 2 });
    // Citations are opt-in: the answer is the model's own words.
    expect(first.turn.finalText).toBe('The deploy window is Tuesdays.');

    // Opting in: the same question's answer lists the records after the text.
    const bad = await api.patch(`/v1/agents/${agentId}`, { memory: { citations: 'yes' } });
    expect(bad.status).toBe(400);
    expect((await api.get(`/v1/agents/${agentId}`)).body.memory).toEqual({});
    const on = await api.patch(`/v1/agents/${agentId}`, { memory: { citations: true } });
    expect(on.status).toBe(200);
    expect(on.body.memory).toEqual({ citations: true });
    const cited = await ask(agentId, 'When does Kestrel deploy?');
    expect(cited.turn.finalText).toContain('The deploy window is Tuesdays.\n\nSources from memory:');
    expect(cited.turn.finalText).toContain(`- [${fact.body.sourceRef}] Kestrel deploy window`);
    expect(cited.turn.finalText).toContain(`- [${note.body.sourceRef}] Kestrel owners`);
    expect(cited.turn.finalText).not.toContain(unrelated.body.sourceRef);

    // Nothing matching: no event, an empty list, a direct answer.
    const none = await ask(agentId, 'Hello there');
    expect(none.turn.recalled).toEqual([]);
    expect(none.events.filter((e) => e.type === 'memory_recalled')).toHaveLength(0);
    expect(none.turn.decision).toMatchObject({ strategy: 'direct_answer' });
    expect(none.turn.finalText).toBe('Hello.');
  });
});
