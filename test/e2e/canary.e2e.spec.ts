import { newId } from '@switchboard/contracts';
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

jest.setTimeout(180_000);

const ADMIN = 'test-admin-token-0123456789';

type Chat = { role: string; content: unknown };
const text = (c: unknown) => (typeof c === 'string' ? c : JSON.stringify(c));
const systemOf = (r: RecordedRequest) =>
  text((r.body as { messages: Chat[] }).messages.find((m) => m.role === 'system')?.content ?? '');

/**
 * The canary (docs/adr/0064) through real processes (a gateway, a harness worker, a hooks worker with a
 * short CANARY_EVAL_INTERVAL_MS, the fake LLM): a 20% canary pins 20% ± 5% of 500 new sessions to the
 * candidate; a candidate whose answers score lower is rolled back by the hooks worker's sweep, its
 * sessions re-pinned to the baseline, audited; promote and stop; bad input is a 4xx that writes nothing.
 *
 * The scores: the agent's rule scorer (docs/adr/0062), run on every ended turn by the hooks worker's
 * `scoring` post-turn hook.
 */
describe('canary', () => {
  let env: TestEnv;
  let llm: FakeLlmServer;
  let api: Api;
  let other: Api;
  const workers: AppProcess[] = [];

  beforeAll(async () => {
    env = await createTestEnv();
    llm = await FakeLlmServer.start();
    // The candidate's instructions make the fake model answer badly.
    llm.setDefault((r) =>
      scripted.text(systemOf(r).includes('CANDIDATE') ? 'a wrong answer' : 'the right answer'),
    );
    const port = await freePort();
    workers.push(
      await spawnApp(
        'gateway',
        env.processEnv({ ...llm.providerEnv, PORT: String(port), HOST: '127.0.0.1' }),
      ),
    );
    workers.push(await spawnApp('harness-worker', env.processEnv(llm.providerEnv)));
    workers.push(
      await spawnApp('hooks-worker', env.processEnv({ ...llm.providerEnv, CANARY_EVAL_INTERVAL_MS: '200' })),
    );
    const url = `http://127.0.0.1:${port}`;
    ({ api } = await newTenant(url, ADMIN, 'canary'));
    ({ api: other } = await newTenant(url, ADMIN, 'canary-other'));
    expect((await api.patch('/v1/settings', { archivist: { mode: 'off' } })).status).toBe(200);
  });

  afterAll(async () => {
    await Promise.all(workers.map((w) => w.kill('SIGKILL')));
    await llm?.close();
    await env?.cleanup();
  });

  const put = (a: Api, path: string, body: unknown) => a.request('PUT', path, { body });

  /** An agent with version 1 (BASELINE instructions) and version 2 (CANDIDATE), current 2. */
  async function agentWithCandidate(name: string, scorers: unknown[] = []): Promise<string> {
    const created = await api.post('/v1/agents', {
      name,
      model: 'openai-chat/chat-mini',
      instructions: 'You are the BASELINE.',
      scorers,
    });
    expect(created.status).toBe(201);
    const v2 = await api.patch(`/v1/agents/${created.body.id}`, { instructions: 'You are the CANDIDATE.' });
    expect(v2.body.version).toBe(2);
    return created.body.id;
  }

  it('pins 20% ± 5% of 500 new sessions to the candidate of a 20% canary', async () => {
    const agentId = await agentWithCandidate('canary-share');
    const started = await put(api, `/v1/agents/${agentId}/canary`, {
      candidateVersion: 2,
      baselineVersion: 1,
      sharePercent: 20,
    });
    expect(started.status).toBe(200);
    expect(started.body).toMatchObject({
      status: 'running',
      baselineVersion: 1,
      candidateVersion: 2,
      sharePercent: 20,
    });
    const versions: number[] = [];
    for (let batch = 0; batch < 10; batch++) {
      const made = await Promise.all(Array.from({ length: 50 }, () => api.post('/v1/sessions', { agentId })));
      for (const m of made) {
        expect(m.status).toBe(201);
        versions.push(m.body.agentVersion);
      }
    }
    expect(versions).toHaveLength(500);
    expect(new Set(versions)).toEqual(new Set([1, 2]));
    const candidate = versions.filter((v) => v === 2).length;
    expect(candidate).toBeGreaterThanOrEqual(75);
    expect(candidate).toBeLessThanOrEqual(125);

    const agent = await api.get(`/v1/agents/${agentId}`);
    expect(agent.body.canary).toMatchObject({ status: 'running', candidateVersion: 2 });

    // Stopped: new sessions get the current version again; audited.
    const stopped = await api.delete(`/v1/agents/${agentId}/canary`);
    expect(stopped.status).toBe(200);
    expect(stopped.body).toMatchObject({ status: 'stopped', decision: { outcome: 'stopped' } });
    expect((await api.post('/v1/sessions', { agentId })).body.agentVersion).toBe(2);
    expect((await api.delete(`/v1/agents/${agentId}/canary`)).status).toBe(409);
    const audit = await api.get('/v1/audit-events?limit=200');
    const actions = (audit.body.data as { action: string; targetId: string }[])
      .filter((e) => e.targetId === agentId && e.action.startsWith('agent.canary'))
      .map((e) => e.action);
    expect(actions).toEqual(['agent.canary_stopped', 'agent.canary_started']);
  });

  it('rolls back a candidate whose answers score lower and re-pins its sessions to the baseline', async () => {
    // Both versions score every answer with one rule: does it say the right answer? (ADR 0062)
    const agentId = await agentWithCandidate('canary-rollback', [
      { name: 'answer', kind: 'rule', check: 'regex', pattern: 'right answer', samplePercent: 100 },
    ]);
    const started = await put(api, `/v1/agents/${agentId}/canary`, {
      candidateVersion: 2,
      baselineVersion: 1,
      sharePercent: 50,
      minScored: 3,
      margin: 0.3,
    });
    expect(started.status).toBe(200);
    const sessions = await Promise.all(
      Array.from({ length: 16 }, () => api.post('/v1/sessions', { agentId })),
    );
    const byVersion = (v: number) => sessions.map((s) => s.body).filter((s) => s.agentVersion === v);
    // 16 sessions at 50%: both sides hold at least 3 (the chance they do not is below 0.5%; ids are random).
    expect(byVersion(1).length).toBeGreaterThanOrEqual(3);
    expect(byVersion(2).length).toBeGreaterThanOrEqual(3);

    const turns = await Promise.all(
      sessions.map(async (s) => {
        const res = await api.post(`/v1/sessions/${s.body.id}/messages`, {
          content: 'what is the answer?',
          wait: 60,
        });
        expect(res.status).toBe(200);
        expect(res.body.status).toBe('completed');
        return (await api.get(`/v1/turns/${res.body.id}`)).body as {
          id: string;
          sessionId: string;
          agentVersion: number;
          finalText: string | null;
        };
      }),
    );
    // The scoring hook scores each ended turn with the version's rule; the sweep reads those scores.
    const agent = await api.get(`/v1/agents/${agentId}`);
    expect(['running', 'rolled_back']).toContain(agent.body.canary.status);
    for (const t of turns) expect(t.finalText?.includes('right answer')).toBe(t.agentVersion === 1);

    // The hooks worker's sweep decides.
    const decided = await waitFor(
      async () => {
        const c = await api.get(`/v1/agents/${agentId}/canary`);
        return c.body.status === 'rolled_back' ? c.body : undefined;
      },
      { timeoutMs: 30_000, what: 'the canary rolled back' },
    );
    expect(decided.decision).toMatchObject({
      outcome: 'rolled_back',
      by: 'canary',
      baselineMean: 1,
      candidateMean: 0,
    });
    // Decided once each side had its minimum of scored turns (the hook may still be scoring the rest).
    expect(decided.decision.n.baseline).toBeGreaterThanOrEqual(3);
    expect(decided.decision.n.candidate).toBeGreaterThanOrEqual(3);
    const scored = await waitFor(
      async () => {
        const all = await Promise.all(turns.map((t) => api.get(`/v1/turns/${t.id}`)));
        const scores = all.map((r) => (r.body.scores ?? []) as { scorer: string; score: number }[]);
        return scores.every((x) => x.length === 1)
          ? all.map((r, i) => [r.body, scores[i][0]] as const)
          : undefined;
      },
      { timeoutMs: 30_000, what: 'every turn scored by the rule' },
    );
    for (const [turn, score] of scored)
      expect(score).toMatchObject({ scorer: 'answer', score: turn.agentVersion === 1 ? 1 : 0 });
    for (const s of byVersion(2)) {
      expect((await api.get(`/v1/sessions/${s.id}`)).body.agentVersion).toBe(1);
    }
    // A re-pinned session's next turn runs on the baseline's instructions.
    const next = await api.post(`/v1/sessions/${byVersion(2)[0].id}/messages`, {
      content: 'again?',
      wait: 60,
    });
    expect(next.body.status).toBe('completed');
    const again = (await api.get(`/v1/turns/${next.body.id}`)).body;
    expect(again.agentVersion).toBe(1);
    expect(again.finalText).toContain('right answer');
    // New sessions get the agent's current version; the rollback is in the audit log.
    expect((await api.post('/v1/sessions', { agentId })).body.agentVersion).toBe(2);
    const audit = await api.get('/v1/audit-events?action=agent.canary_rolled_back');
    expect(audit.body.data).toEqual([
      expect.objectContaining({ actor: 'canary', targetId: agentId, action: 'agent.canary_rolled_back' }),
    ]);
    expect((await api.post(`/v1/agents/${agentId}/canary/promote`)).status).toBe(409);
  });

  it('promotes the candidate: the agent becomes it as a new version', async () => {
    const agentId = await agentWithCandidate('canary-promote');
    // Back to the baseline (v3 = v1), then a canary of v2 against it.
    expect((await api.post(`/v1/agents/${agentId}/rollback`, { version: 1 })).body.version).toBe(3);
    expect(
      (await put(api, `/v1/agents/${agentId}/canary`, { candidateVersion: 2, sharePercent: 10 })).body,
    ).toMatchObject({ baselineVersion: 3, candidateVersion: 2 });
    const promoted = await api.post(`/v1/agents/${agentId}/canary/promote`);
    expect(promoted.status).toBe(200);
    expect(promoted.body).toMatchObject({
      status: 'promoted',
      decision: { outcome: 'promoted', promotedAs: 4 },
    });
    const agent = await api.get(`/v1/agents/${agentId}`);
    expect(agent.body).toMatchObject({ version: 4, instructions: 'You are the CANDIDATE.' });
    expect(agent.body.canary.status).toBe('promoted');
    expect((await api.post('/v1/sessions', { agentId })).body.agentVersion).toBe(4);
  });

  it('refuses bad input with 4xx and writes nothing', async () => {
    const agentId = await agentWithCandidate('canary-bad');
    const path = `/v1/agents/${agentId}/canary`;
    expect((await api.get(`/v1/agents/${agentId}`)).body.canary).toBeNull();
    expect((await api.get(path)).status).toBe(404);
    for (const body of [
      { candidateVersion: 1, sharePercent: 101 },
      { candidateVersion: 1, sharePercent: -1 },
      { candidateVersion: 1 },
      { candidateVersion: 1, sharePercent: 10, margin: 2 },
      { candidateVersion: 1, sharePercent: 10, minScored: 0 },
      { candidateVersion: 1, sharePercent: 10, scorer: 'Not A Name' },
      { candidateVersion: 1, sharePercent: 10, surprise: true },
      { candidateVersion: 9, sharePercent: 10 },
      { candidateVersion: 1, baselineVersion: 9, sharePercent: 10 },
      { candidateVersion: 2, sharePercent: 10 },
    ]) {
      const res = await put(api, path, body);
      expect({ body, status: res.status }).toEqual({ body, status: 400 });
    }
    // Another tenant's agent, an unknown agent: 404.
    expect((await put(other, path, { candidateVersion: 1, sharePercent: 10 })).status).toBe(404);
    expect((await other.get(path)).status).toBe(404);
    expect((await other.delete(path)).status).toBe(404);
    expect((await other.post(`${path}/promote`)).status).toBe(404);
    expect(
      (await put(api, `/v1/agents/${newId()}/canary`, { candidateVersion: 1, sharePercent: 10 })).status,
    ).toBe(404);
    // Nothing to stop or promote.
    expect((await api.delete(path)).status).toBe(404);
    expect((await api.post(`${path}/promote`)).status).toBe(404);
    expect((await api.get(path)).status).toBe(404);
    expect(await env.db.agentCanary.count({ where: { agentId } })).toBe(0);
    const audit = await api.get('/v1/audit-events?limit=200');
    expect(
      (audit.body.data as { targetId: string; action: string }[]).filter(
        (e) => e.targetId === agentId && e.action.startsWith('agent.canary'),
      ),
    ).toEqual([]);

    // A second canary while one runs: 409, the first stays.
    expect((await put(api, path, { candidateVersion: 1, sharePercent: 10 })).status).toBe(200);
    expect((await put(other, path, { candidateVersion: 1, sharePercent: 10 })).status).toBe(404);
    const second = await put(api, path, { candidateVersion: 1, sharePercent: 90 });
    expect(second.status).toBe(409);
    expect((await api.get(path)).body.sharePercent).toBe(10);
    // Another tenant cannot stop it.
    expect((await other.delete(path)).status).toBe(404);
    expect((await api.get(path)).body.status).toBe('running');
  });
});
