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

const ADMIN = 'test-admin-token-0123456789';

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

type Chat = { role: string; content: unknown };
const messagesOf = (r: RecordedRequest): Chat[] => (r.body as { messages: Chat[] }).messages;
const text = (c: unknown) => (typeof c === 'string' ? c : JSON.stringify(c));
const lastUser = (r: RecordedRequest) =>
  text([...messagesOf(r)].reverse().find((m) => m.role === 'user')?.content ?? '');
/** The conversation a request carried, without its system prompt: `role: text` per message. */
const conversation = (r: RecordedRequest) =>
  messagesOf(r)
    .filter((m) => m.role !== 'system')
    .map((m) => `${m.role}: ${text(m.content)}`);
/** The input a request answers: the last line of its last user message (after any recalled context). */
const said = (r: RecordedRequest) => lastUser(r).split('\n').at(-1) ?? '';
const systemOf = (r: RecordedRequest) => text(messagesOf(r).find((m) => m.role === 'system')?.content ?? '');

/**
 * Fork and rewind (issue 34, docs/adr/0053) through real processes: a gateway, a harness worker and a
 * hooks worker, with the fake LLM behind the real OpenAI SDK. A fork's next turn sends the provider
 * exactly the copied prefix (and its model and instructions overrides); a rewind's next turn leaves
 * the rewound turns out, while GET …/turns and the journal keep them; the original session's
 * transcript is byte for byte what it was; bad input is a 4xx that writes nothing; a rewind while a
 * turn runs is a 409 and a fork from an ended turn is allowed.
 */
describe('fork and rewind', () => {
  let env: TestEnv;
  let llm: FakeLlmServer;
  let api: Api;
  let other: Api;
  const workers: AppProcess[] = [];

  beforeAll(async () => {
    env = await createTestEnv();
    llm = await FakeLlmServer.start();
    // Every answer names the input it answers; an input asking to hang never gets one.
    llm.setDefault((r) =>
      lastUser(r).includes('HANG') ? scripted.hang() : scripted.text(`reply to ${said(r)}`),
    );
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
    ({ api } = await newTenant(url, ADMIN, 'fork'));
    ({ api: other } = await newTenant(url, ADMIN, 'fork-other'));
    // No archivist model calls: the episodic hook's records are the memory here.
    expect((await api.patch('/v1/settings', { archivist: { mode: 'off' } })).status).toBe(200);
  });

  afterAll(async () => {
    await Promise.all(workers.map((w) => w.kill('SIGKILL')));
    await llm?.close();
    await env?.cleanup();
  });

  let agents = 0;
  /** A new agent (its memory its own: no recall across the tests' sessions) and a session of it. */
  async function newSession(): Promise<{ agentId: string; sessionId: string }> {
    const agent = await api.post('/v1/agents', {
      name: `helper-${++agents}`,
      model: 'openai-chat/chat-mini',
      instructions: 'Be brief.',
    });
    expect(agent.status).toBe(201);
    const session = await api.post('/v1/sessions', { agentId: agent.body.id });
    expect(session.status).toBe(201);
    return { agentId: agent.body.id, sessionId: session.body.id };
  }

  /** Says `content` in the session, waits for its turn to complete, and returns it with its model request. */
  async function say(sessionId: string, content: string) {
    const before = llm.requests.length;
    const res = await api.post(`/v1/sessions/${sessionId}/messages`, { content, wait: 60 });
    expect(res.status).toBe(200);
    expect(res.body.status).toBe('completed');
    const request = llm.requests.slice(before).find((r) => said(r) === content);
    expect(request).toBeDefined();
    return { turn: res.body as { id: string; seq: number }, request: request! };
  }

  /** A session with three completed turns; their episodic records written. */
  async function threeTurns(words: [string, string, string] = ['alpha', 'bravo', 'charlie']) {
    const s = await newSession();
    const turns: { id: string; seq: number }[] = [];
    for (const w of words) turns.push((await say(s.sessionId, w)).turn);
    await waitFor(
      async () => {
        const n = await env.db.hookRun.count({
          where: { turnId: { in: turns.map((t) => t.id) }, hook: 'episodic-index' },
        });
        return n === 3 ? n : undefined;
      },
      { what: 'the episodic records of the three turns', timeoutMs: 30_000 },
    );
    return { ...s, turns };
  }

  /** The whole transcript of a session as the API answers it (every page). */
  async function transcript(sessionId: string, on = api): Promise<string> {
    const pages: unknown[] = [];
    let cursor: string | null = null;
    do {
      const res: { status: number; body: { data: unknown[]; nextCursor: string | null } } = await on.get(
        `/v1/sessions/${sessionId}/messages?limit=200${cursor ? `&cursor=${cursor}` : ''}`,
      );
      expect(res.status).toBe(200);
      pages.push(res.body.data);
      cursor = res.body.nextCursor;
    } while (cursor);
    return JSON.stringify(pages);
  }

  const eventsOf = async (sessionId: string) =>
    (await api.get(`/v1/sessions/${sessionId}/events?limit=500`)).body.data as {
      seq: number;
      type: string;
      turnId: string | null;
      data: Record<string, unknown>;
    }[];

  /** What fork and rewind write, counted in the database. */
  const written = async () => ({
    sessions: await env.db.session.count(),
    turns: await env.db.turn.count(),
    messages: await env.db.message.count(),
    events: await env.db.event.count({
      where: { type: { in: ['session_forked', 'session_fork_created', 'session_rewound'] } },
    }),
    audit: await env.db.auditEvent.count({
      where: { action: { in: ['session.forked', 'session.rewound'] } },
    }),
    rewound: await env.db.turn.count({ where: { rewoundAt: { not: null } } }),
  });

  it("forks at turn 2: the fork's next turn sends exactly turns 1-2, the original untouched, lineage on both", async () => {
    const s = await threeTurns();
    const original = await transcript(s.sessionId);
    const [t1, t2, t3] = s.turns;

    const forked = await api.post(`/v1/sessions/${s.sessionId}/fork`, { turnId: t2.id });
    expect(forked.status).toBe(201);
    const fork = forked.body.session;
    expect(fork).toMatchObject({
      agentId: s.agentId,
      status: 'active',
      forkedFrom: { sessionId: s.sessionId, turnId: t2.id, turnSeq: 2 },
      overrides: null,
      usage: { inputTokens: 0, outputTokens: 0, costUsd: '0' },
    });
    expect(forked.body.forkPoint).toEqual({
      sessionId: s.sessionId,
      turnId: t2.id,
      turnSeq: 2,
      position: 'after',
      forkedAtTurnSeq: 2,
      copiedTurns: 2,
    });

    // The fork's turns: copies of 1 and 2, usage zero, no tool calls of their own.
    const copies = (await api.get(`/v1/sessions/${fork.id}/turns`)).body.data;
    expect(copies.map((t: { seq: number; copiedFromTurnId: string }) => [t.seq, t.copiedFromTurnId])).toEqual(
      [
        [1, t1.id],
        [2, t2.id],
      ],
    );
    for (const c of copies) {
      expect(c).toMatchObject({ status: 'completed', costUsd: '0', rewoundAt: null, toolCalls: [] });
      expect(c.usage).toEqual({ inputTokens: 0, outputTokens: 0, cachedTokens: 0, cacheWriteTokens: 0 });
    }
    // The original turns keep their cost.
    expect(Number((await api.get(`/v1/turns/${t2.id}`)).body.usage.inputTokens)).toBeGreaterThan(0);

    // The fork takes messages: its next turn (seq 3) sends exactly turns 1-2, then its input.
    const next = await say(fork.id, 'delta');
    expect(next.turn.seq).toBe(3);
    expect(conversation(next.request)).toEqual([
      'user: alpha',
      'assistant: reply to alpha',
      'user: bravo',
      'assistant: reply to bravo',
      'user: delta',
    ]);
    expect(systemOf(next.request)).toContain('Be brief.');

    // The original's transcript is byte for byte what it was; its next turn still sees all three.
    expect(await transcript(s.sessionId)).toBe(original);
    const onward = await say(s.sessionId, 'echo');
    expect(conversation(onward.request)).toEqual([
      'user: alpha',
      'assistant: reply to alpha',
      'user: bravo',
      'assistant: reply to bravo',
      'user: charlie',
      'assistant: reply to charlie',
      'user: echo',
    ]);

    // Journaled on both sides.
    const forkEvents = await eventsOf(fork.id);
    expect(forkEvents[0]).toMatchObject({
      seq: 1,
      type: 'session_forked',
      turnId: null,
      data: {
        fromSessionId: s.sessionId,
        fromTurnId: t2.id,
        position: 'after',
        forkedAtTurnSeq: 2,
        copiedTurns: 2,
      },
    });
    const created = (await eventsOf(s.sessionId)).filter((e) => e.type === 'session_fork_created');
    expect(created).toEqual([
      expect.objectContaining({
        turnId: t2.id,
        data: { forkSessionId: fork.id, position: 'after', forkedAtTurnSeq: 2 },
      }),
    ]);

    // At an end event's seq: turn 1's turn_completed.
    const ended = (await eventsOf(s.sessionId)).find(
      (e) => e.type === 'turn_completed' && e.turnId === t1.id,
    )!;
    const byEvent = await api.post(`/v1/sessions/${s.sessionId}/fork`, {
      eventSeq: ended.seq,
      position: 'after',
    });
    expect(byEvent.status).toBe(201);
    expect(byEvent.body.session.forkedFrom).toEqual({ sessionId: s.sessionId, turnId: t1.id, turnSeq: 1 });

    // Lineage both ways; audited.
    const up = await api.get(`/v1/sessions/${fork.id}/lineage`);
    expect(up.status).toBe(200);
    expect(up.body).toMatchObject({
      sessionId: fork.id,
      ancestors: [{ sessionId: s.sessionId, forkedAtTurnId: t2.id, forkedAtTurnSeq: 2, missing: false }],
      children: [],
    });
    const down = (await api.get(`/v1/sessions/${s.sessionId}/lineage`)).body;
    expect(down.ancestors).toEqual([]);
    expect(
      down.children.map((c: { sessionId: string; forkedAtTurnId: string }) => [
        c.sessionId,
        c.forkedAtTurnId,
      ]),
    ).toEqual([
      [fork.id, t2.id],
      [byEvent.body.session.id, t1.id],
    ]);
    const audit = await api.get('/v1/audit-events?action=session.forked');
    expect(audit.body.data.map((a: { targetId: string }) => a.targetId)).toEqual(
      expect.arrayContaining([fork.id, byEvent.body.session.id]),
    );
    expect(t3.seq).toBe(3);
  });

  it('forks with a model and instructions override: every turn of the fork sends them', async () => {
    const s = await threeTurns(['kilo', 'lima', 'mike']);
    const forked = await api.post(`/v1/sessions/${s.sessionId}/fork`, {
      turnId: s.turns[0].id,
      model: 'openai-chat/other-mini',
      instructions: 'Answer like a pirate.',
      title: 'pirate branch',
    });
    expect(forked.status).toBe(201);
    expect(forked.body.session).toMatchObject({
      title: 'pirate branch',
      overrides: { model: 'openai-chat/other-mini', instructions: 'Answer like a pirate.' },
    });
    const forkId = forked.body.session.id as string;
    for (const input of ['november', 'oscar']) {
      const { request } = await say(forkId, input);
      expect((request.body as { model: string }).model).toBe('other-mini');
      expect(systemOf(request)).toContain('Answer like a pirate.');
      expect(systemOf(request)).not.toContain('Be brief.');
      expect(conversation(request)[0]).toBe('user: kilo');
    }
    // The turn answered with the override's model.
    const turns = (await api.get(`/v1/sessions/${forkId}/turns`)).body.data;
    expect(turns.at(-1).model).toBe('openai-chat/other-mini');

    // Before the first turn: nothing copied; the original's agent settings unchanged.
    const empty = await api.post(`/v1/sessions/${s.sessionId}/fork`, {
      turnId: s.turns[0].id,
      position: 'before',
    });
    expect(empty.status).toBe(201);
    expect(empty.body.forkPoint).toMatchObject({ forkedAtTurnSeq: 0, copiedTurns: 0 });
    const first = await say(empty.body.session.id, 'papa');
    expect(first.turn.seq).toBe(1);
    expect(conversation(first.request)).toEqual(['user: papa']);
    expect((first.request.body as { model: string }).model).toBe('chat-mini');
    const onward = await say(s.sessionId, 'quebec');
    expect((onward.request.body as { model: string }).model).toBe('chat-mini');
    expect(systemOf(onward.request)).toContain('Be brief.');
  });

  it('rewinds to turn 2: the next turn sends only turn 1, the rewound turns kept and marked, their memory left out', async () => {
    const s = await threeTurns(['romeo', 'sierra', 'tango']);
    const [t1, t2, t3] = s.turns;
    const searchMemory = async (q: string) =>
      (await api.get(`/v1/agents/${s.agentId}/memory?q=${q}`)).body.data.map(
        (r: { title: string }) => r.title,
      );
    expect(await searchMemory('sierra')).toEqual(['sierra']);
    const transcriptBefore = await transcript(s.sessionId);

    const rewound = await api.post(`/v1/sessions/${s.sessionId}/rewind`, { turnId: t2.id });
    expect(rewound.status).toBe(200);
    expect(rewound.body).toEqual({
      sessionId: s.sessionId,
      rewoundTurnIds: [t2.id, t3.id],
      compactionCleared: false,
    });

    // Never deleted: the turns are listed, marked; the transcript is as it was; the journal says so.
    const turns = (await api.get(`/v1/sessions/${s.sessionId}/turns`)).body.data;
    expect(turns.map((t: { id: string; rewoundAt: string | null }) => [t.id, t.rewoundAt !== null])).toEqual([
      [t1.id, false],
      [t2.id, true],
      [t3.id, true],
    ]);
    expect((await api.get(`/v1/turns/${t3.id}`)).body.rewoundAt).toEqual(expect.any(String));
    expect(await transcript(s.sessionId)).toBe(transcriptBefore);
    const events = await eventsOf(s.sessionId);
    expect(events.at(-1)).toMatchObject({
      type: 'session_rewound',
      turnId: t2.id,
      data: { turnId: t2.id, seq: 2, rewoundTurnIds: [t2.id, t3.id] },
    });
    // The turns' own events stay in the journal.
    expect(events.filter((e) => e.type === 'turn_completed').map((e) => e.turnId)).toEqual([
      t1.id,
      t2.id,
      t3.id,
    ]);

    // The session goes on: seq 4, its history turn 1 only.
    const next = await say(s.sessionId, 'uniform');
    expect(next.turn.seq).toBe(4);
    expect(conversation(next.request)).toEqual(['user: romeo', 'assistant: reply to romeo', 'user: uniform']);
    // What the hooks derived from the rewound turns is left out of search (and recall), not deleted.
    expect(await searchMemory('sierra')).toEqual([]);
    expect(await searchMemory('tango')).toEqual([]);
    expect(await searchMemory('romeo')).toEqual(['romeo']);
    const listed = (await api.get(`/v1/agents/${s.agentId}/memory?kind=episode`)).body.data;
    expect(listed.map((r: { title: string }) => r.title)).toEqual(expect.arrayContaining(['sierra']));

    // A rewind again of a rewound turn: 409, nothing written.
    const before = await written();
    const again = await api.post(`/v1/sessions/${s.sessionId}/rewind`, { turnId: t3.id });
    expect(again.status).toBe(409);
    expect(again.body.error.details).toMatchObject({ reason: 'turn_rewound' });
    expect(await written()).toEqual(before);
    expect((await api.get('/v1/audit-events?action=session.rewound')).body.data[0]).toMatchObject({
      targetId: s.sessionId,
      details: { turnId: t2.id, seq: 2, rewoundTurns: 2 },
    });
  });

  it('refuses bad input with a 4xx and writes nothing', async () => {
    const s = await threeTurns(['victor', 'whiskey', 'xray']);
    const sibling = await newSession();
    const siblingTurn = (await say(sibling.sessionId, 'yankee')).turn;
    const admitted = (await eventsOf(s.sessionId)).find((e) => e.type === 'message_admitted')!;
    const fork = (body: unknown, on = api, id = s.sessionId) => on.post(`/v1/sessions/${id}/fork`, body);
    const rewind = (body: unknown, on = api, id = s.sessionId) => on.post(`/v1/sessions/${id}/rewind`, body);
    const t1 = s.turns[0].id;
    const before = await written();
    const cases: [string, Promise<{ status: number; body: { error: { code: string } } }>, number][] = [
      ['no fork point', fork({}), 400],
      ['both fork points', fork({ turnId: t1, eventSeq: 3 }), 400],
      ['a turnId that is no uuid', fork({ turnId: 'turn-1' }), 400],
      ['a position that is none', fork({ turnId: t1, position: 'middle' }), 400],
      ['a model that is no model', fork({ turnId: t1, model: 'gpt-4' }), 400],
      ['an unknown field', fork({ turnId: t1, branch: 'x' }), 400],
      ['a turn of another session', fork({ turnId: siblingTurn.id }), 404],
      ['an unknown turn', fork({ turnId: '01900000-0000-7000-8000-000000000001' }), 404],
      ['an event that is no turn end', fork({ eventSeq: admitted.seq }), 400],
      ['an event seq the session lacks', fork({ eventSeq: 99_999 }), 404],
      ["another tenant's session", fork({ turnId: t1 }, other), 404],
      ["another tenant's session by event", fork({ eventSeq: admitted.seq }, other), 404],
      ['a session id that is no uuid', fork({ turnId: t1 }, api, 'nope'), 404],
      ['rewind: no turn', rewind({}), 400],
      [
        'rewind: an unknown turn (past the start)',
        rewind({ turnId: '01900000-0000-7000-8000-000000000001' }),
        404,
      ],
      ['rewind: a turn of another session', rewind({ turnId: siblingTurn.id }), 404],
      ["rewind: another tenant's session", rewind({ turnId: t1 }, other), 404],
    ];
    for (const [what, response, status] of cases) {
      const res = await response;
      expect({ what, status: res.status }).toEqual({ what, status });
      expect(res.body.error.code).toEqual(expect.any(String));
    }
    expect(await written()).toEqual(before);
  });

  it('refuses a rewind while a turn runs (409 session_busy, nothing written), allows a fork from an ended turn', async () => {
    const s = await newSession();
    const done = (await say(s.sessionId, 'zulu')).turn;
    const before = llm.requests.length;
    const running = await api.post(`/v1/sessions/${s.sessionId}/messages`, { content: 'HANG on' });
    expect(running.status).toBe(202);
    await waitFor(() => llm.requests.slice(before).find((r) => said(r) === 'HANG on'), {
      what: 'the running turn at the provider',
      timeoutMs: 30_000,
    });

    const counted = await written();
    const busy = await api.post(`/v1/sessions/${s.sessionId}/rewind`, { turnId: done.id });
    expect(busy.status).toBe(409);
    expect(busy.body.error).toMatchObject({
      code: 'session_busy',
      details: { turns: [{ turnId: running.body.turnId, status: 'running' }] },
    });
    // Forking at the running turn: 409 too.
    const atRunning = await api.post(`/v1/sessions/${s.sessionId}/fork`, { turnId: running.body.turnId });
    expect(atRunning.status).toBe(409);
    expect(await written()).toEqual(counted);

    // From the ended turn: allowed while the other one runs.
    const forked = await api.post(`/v1/sessions/${s.sessionId}/fork`, { turnId: done.id });
    expect(forked.status).toBe(201);
    expect(forked.body.forkPoint.copiedTurns).toBe(1);
    expect((await api.get(`/v1/turns/${running.body.turnId}`)).body.status).toBe('running');

    // Once it has ended, the rewind goes through.
    expect((await api.post(`/v1/turns/${running.body.turnId}/cancel`, {})).status).toBeLessThan(300);
    await waitFor(
      async () =>
        (await api.get(`/v1/turns/${running.body.turnId}`)).body.status === 'cancelled' ? true : undefined,
      { what: 'the running turn cancelled', timeoutMs: 30_000 },
    );
    const rewound = await api.post(`/v1/sessions/${s.sessionId}/rewind`, { turnId: running.body.turnId });
    expect(rewound.status).toBe(200);
    expect(rewound.body.rewoundTurnIds).toEqual([running.body.turnId]);
  });
});
