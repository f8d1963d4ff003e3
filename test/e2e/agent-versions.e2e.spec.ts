import {
  createTestEnv,
  freePort,
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

const ADMIN = 'test-admin-token-0123456789';

type Chat = { role: string; content: unknown };
const messagesOf = (r: RecordedRequest): Chat[] => (r.body as { messages: Chat[] }).messages;
const text = (c: unknown) => (typeof c === 'string' ? c : JSON.stringify(c));
const lastUser = (r: RecordedRequest) =>
  text([...messagesOf(r)].reverse().find((m) => m.role === 'user')?.content ?? '');
const said = (r: RecordedRequest) => lastUser(r).split('\n').at(-1) ?? '';
const systemOf = (r: RecordedRequest) => text(messagesOf(r).find((m) => m.role === 'system')?.content ?? '');

/**
 * Versioned agent configuration (docs/adr/0061) through real processes (a gateway, a harness worker,
 * the fake LLM behind the real OpenAI SDK): a session keeps the version it started with after the agent
 * changes, a new session gets the new version, a rollback is a new version equal to the old one, a
 * re-pin moves a session, a replay can run on a chosen version; bad input is a 4xx that writes nothing.
 */
describe('agent versions', () => {
  let env: TestEnv;
  let llm: FakeLlmServer;
  let api: Api;
  let other: Api;
  const workers: AppProcess[] = [];

  beforeAll(async () => {
    env = await createTestEnv();
    llm = await FakeLlmServer.start();
    llm.setDefault((r) => scripted.text(`reply to ${said(r)}`));
    const port = await freePort();
    workers.push(
      await spawnApp(
        'gateway',
        env.processEnv({ ...llm.providerEnv, PORT: String(port), HOST: '127.0.0.1' }),
      ),
    );
    workers.push(await spawnApp('harness-worker', env.processEnv(llm.providerEnv)));
    const url = `http://127.0.0.1:${port}`;
    ({ api } = await newTenant(url, ADMIN, 'versions'));
    ({ api: other } = await newTenant(url, ADMIN, 'versions-other'));
    expect((await api.patch('/v1/settings', { archivist: { mode: 'off' } })).status).toBe(200);
  });

  afterAll(async () => {
    await Promise.all(workers.map((w) => w.kill('SIGKILL')));
    await llm?.close();
    await env?.cleanup();
  });

  /** Says `content` in the session, waits for its turn, and returns it with the model request it made. */
  async function say(sessionId: string, content: string) {
    const before = llm.requests.length;
    const res = await api.post(`/v1/sessions/${sessionId}/messages`, { content, wait: 60 });
    expect(res.status).toBe(200);
    expect(res.body.status).toBe('completed');
    const request = llm.requests.slice(before).find((r) => said(r) === content);
    expect(request).toBeDefined();
    return { turn: res.body as { id: string }, system: systemOf(request!) };
  }

  it('pins sessions, versions each change, diffs, rolls back and re-pins', async () => {
    const created = await api.post('/v1/agents', {
      name: 'versioned',
      model: 'openai-chat/chat-mini',
      instructions: 'You are VERSION-ONE.',
    });
    expect(created.status).toBe(201);
    expect(created.body.version).toBe(1);
    const agentId: string = created.body.id;

    const s1 = await api.post('/v1/sessions', { agentId });
    expect(s1.status).toBe(201);
    expect(s1.body.agentVersion).toBe(1);
    const first = await say(s1.body.id, 'hello one');
    expect(first.system).toContain('VERSION-ONE');

    // v2: new instructions. A PATCH that changes nothing makes no version.
    const v2 = await api.patch(`/v1/agents/${agentId}`, { instructions: 'You are VERSION-TWO.' });
    expect(v2.status).toBe(200);
    expect(v2.body.version).toBe(2);
    const same = await api.patch(`/v1/agents/${agentId}`, { instructions: 'You are VERSION-TWO.' });
    expect(same.body.version).toBe(2);

    // The pinned session keeps v1; a new session gets v2.
    const again = await say(s1.body.id, 'hello again');
    expect(again.system).toContain('VERSION-ONE');
    expect(again.system).not.toContain('VERSION-TWO');
    const s2 = await api.post('/v1/sessions', { agentId });
    expect(s2.body.agentVersion).toBe(2);
    const second = await say(s2.body.id, 'hello two');
    expect(second.system).toContain('VERSION-TWO');
    expect((await api.get(`/v1/turns/${again.turn.id}`)).body.agentVersion).toBe(1);
    expect((await api.get(`/v1/turns/${second.turn.id}`)).body.agentVersion).toBe(2);

    // The list (newest first, paged), one version, the diff.
    const list = await api.get(`/v1/agents/${agentId}/versions?limit=1`);
    expect(list.status).toBe(200);
    expect(list.body.data.map((v: { version: number }) => v.version)).toEqual([2]);
    const rest = await api.get(`/v1/agents/${agentId}/versions?limit=1&cursor=${list.body.nextCursor}`);
    expect(rest.body.data.map((v: { version: number }) => v.version)).toEqual([1]);
    expect(rest.body.nextCursor).toBeNull();
    const one = await api.get(`/v1/agents/${agentId}/versions/1`);
    expect(one.status).toBe(200);
    expect(one.body.config.instructions).toBe('You are VERSION-ONE.');
    expect(one.body.createdBy).toMatch(/^api_key:/);
    const diff = await api.get(`/v1/agents/${agentId}/versions/diff?from=1&to=2`);
    expect(diff.status).toBe(200);
    expect(diff.body.changes).toEqual([
      { path: 'instructions', before: 'You are VERSION-ONE.', after: 'You are VERSION-TWO.' },
    ]);

    // Rollback: v3 equal to v1, audited; the new session follows it.
    const rolled = await api.post(`/v1/agents/${agentId}/rollback`, { version: 1, note: 'too chatty' });
    expect(rolled.status).toBe(200);
    expect(rolled.body.version).toBe(3);
    expect(rolled.body.instructions).toBe('You are VERSION-ONE.');
    const v3 = await api.get(`/v1/agents/${agentId}/versions/3`);
    expect(v3.body.config).toEqual(one.body.config);
    expect((await api.get(`/v1/agents/${agentId}/versions/diff?from=1&to=3`)).body.changes).toEqual([]);
    const audit = await api.get('/v1/audit-events?action=agent.rolled_back');
    expect(audit.status).toBe(200);
    expect(audit.body.data[0]).toMatchObject({ targetId: agentId, details: { version: 3, rolledBackTo: 1 } });

    // Re-pin the v2 session to v1 and the v1 session to the latest (v3 = v1's instructions).
    const repin = await api.patch(`/v1/sessions/${s2.body.id}`, { agentVersion: 1 });
    expect(repin.status).toBe(200);
    expect(repin.body.agentVersion).toBe(1);
    const moved = await say(s2.body.id, 'hello moved');
    expect(moved.system).toContain('VERSION-ONE');
    const toLatest = await api.patch(`/v1/sessions/${s2.body.id}`, { agentVersion: 'latest' });
    expect(toLatest.body.agentVersion).toBeNull();
    const latest = await say(s2.body.id, 'hello latest');
    expect((await api.get(`/v1/turns/${latest.turn.id}`)).body.agentVersion).toBe(3);

    // A replay on version 2 runs with v2's instructions in its fork.
    const before = llm.requests.length;
    const replay = await api.post(`/v1/turns/${first.turn.id}/replay`, { agentVersion: 2 });
    expect(replay.status).toBe(202);
    const fork = await api.get(`/v1/sessions/${replay.body.replay.sessionId}`);
    expect(fork.body.agentVersion).toBe(2);
    const replayed = await waitFor(
      async () => {
        const t = await api.get(`/v1/turns/${replay.body.replay.turnId}`);
        return t.body.status === 'completed' ? t.body : undefined;
      },
      { what: 'the replay turn to complete', timeoutMs: 60_000 },
    );
    expect(replayed.agentVersion).toBe(2);
    const replayRequest = llm.requests.slice(before).find((r) => said(r) === 'hello one');
    expect(replayRequest && systemOf(replayRequest)).toContain('VERSION-TWO');
  });

  it('refuses bad input with 400/404 and writes nothing', async () => {
    const created = await api.post('/v1/agents', { name: 'strict', model: 'openai-chat/chat-mini' });
    const agentId: string = created.body.id;
    const session = await api.post('/v1/sessions', { agentId });
    const sessionId: string = session.body.id;
    const versionsOf = () => env.db.agentVersion.count({ where: { agentId } });
    expect(await versionsOf()).toBe(1);

    for (const bad of ['abc', '0', '-1', '1.5']) {
      const r = await api.get(`/v1/agents/${agentId}/versions/${bad}`);
      expect(r.status).toBe(400);
      expect(r.body.error.code).toBe('validation_failed');
    }
    const missing = await api.get(`/v1/agents/${agentId}/versions/9`);
    expect(missing.status).toBe(404);
    expect(missing.body.error.code).toBe('not_found');
    expect((await api.get(`/v1/agents/${agentId}/versions/diff?from=1&to=x`)).status).toBe(400);
    expect((await api.get(`/v1/agents/${agentId}/versions/diff?from=1`)).status).toBe(400);
    expect((await api.get(`/v1/agents/${agentId}/versions/diff?from=1&to=7`)).status).toBe(404);

    for (const body of [
      {},
      { version: 'one' },
      { version: 0 },
      { version: 1.5 },
      { version: 1, extra: true },
    ]) {
      expect((await api.post(`/v1/agents/${agentId}/rollback`, body)).status).toBe(400);
    }
    expect((await api.post(`/v1/agents/${agentId}/rollback`, { version: 5 })).status).toBe(404);

    for (const body of [{}, { agentVersion: 0 }, { agentVersion: 'newest' }, { agentVersion: 9 }]) {
      const r = await api.patch(`/v1/sessions/${sessionId}`, body);
      expect(r.status).toBe(400);
      expect(r.body.error.code).toBe('validation_failed');
    }
    const replayBad = await api.post(`/v1/turns/00000000-0000-7000-8000-000000000000/replay`, {
      agentVersion: 0,
    });
    expect(replayBad.status).toBe(400);

    // Another tenant: 404 everywhere, nothing written.
    expect((await other.get(`/v1/agents/${agentId}/versions`)).status).toBe(404);
    expect((await other.get(`/v1/agents/${agentId}/versions/1`)).status).toBe(404);
    expect((await other.get(`/v1/agents/${agentId}/versions/diff?from=1&to=1`)).status).toBe(404);
    expect((await other.post(`/v1/agents/${agentId}/rollback`, { version: 1 })).status).toBe(404);
    expect((await other.patch(`/v1/sessions/${sessionId}`, { agentVersion: 1 })).status).toBe(404);

    expect(await versionsOf()).toBe(1);
    expect((await env.db.agent.findUnique({ where: { id: agentId } }))!.version).toBe(1);
    expect((await env.db.session.findUnique({ where: { id: sessionId } }))!.agentVersion).toBe(1);
  });
});
