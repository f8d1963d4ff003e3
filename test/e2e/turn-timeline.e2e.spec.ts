import { randomUUID } from 'node:crypto';
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
const JAEGER = 'http://jaeger.test:16686';

interface WireMessage {
  role: string;
  content?: unknown;
  tool_calls?: { id: string; function: { name: string; arguments: string } }[];
  tool_call_id?: string;
}
interface WireBody {
  messages: WireMessage[];
  tools?: { function: { name: string; description: string; parameters: unknown } }[];
}

interface ContextMessage {
  role: string;
  content: string;
  toolCalls?: { id: string; name: string; arguments: string }[];
  toolCallId?: string;
  source: string;
  tokens: number;
}

/** The agent a request is from (its system prompt names it) and its tool results so far. */
function ask(req: RecordedRequest): { agent: string; results: number } {
  const messages = (req.body as WireBody).messages;
  const content = messages.find((m) => m.role === 'system')?.content;
  const system = typeof content === 'string' ? content : JSON.stringify(content ?? '');
  let last = -1;
  messages.forEach((m, i) => {
    if (m.role === 'user') last = i;
  });
  return {
    agent: /You are the agent "([^"]+)"/.exec(system)?.[1] ?? '?',
    results: messages.slice(last + 1).filter((m) => m.role === 'tool').length,
  };
}

/** A round context's messages as the OpenAI chat wire carries them (libs/providers openai-chat.ts). */
function toWire(system: string, messages: ContextMessage[]): WireMessage[] {
  return [
    { role: 'system', content: system },
    ...messages.map((m): WireMessage => {
      if (m.role === 'assistant')
        return {
          role: 'assistant',
          content: m.content || null,
          ...(m.toolCalls?.length
            ? {
                tool_calls: m.toolCalls.map((c) => ({
                  id: c.id,
                  type: 'function',
                  function: { name: c.name, arguments: c.arguments },
                })),
              }
            : {}),
        };
      if (m.role === 'tool') return { role: 'tool', tool_call_id: m.toolCallId, content: m.content };
      return { role: m.role, content: m.content };
    }),
  ];
}

/**
 * The turn timeline and "what the model saw" (docs/adr/0045) through a real gateway, a harness
 * worker process and the fake model server: a turn whose first attempt got a 429, then spawned a
 * blocking sub-agent and called a tool. Its timeline shows the retry, the calls and the child with
 * its cost; each round's recorded context is exactly what the fake server received.
 */
describe('turn timeline', () => {
  let env: TestEnv;
  let llm: FakeLlmServer;
  let gateway: Running & { url: string };
  let api: Api;
  const workers: AppProcess[] = [];
  const scripts = new Map<string, (a: { results: number }) => ScriptedReply>();

  beforeAll(async () => {
    env = await createTestEnv();
    llm = await FakeLlmServer.start();
    llm.setDefault((req) => {
      const a = ask(req);
      return scripts.get(a.agent)?.(a) ?? scripted.text(`no script for ${a.agent}`);
    });
    gateway = await startGateway(env.config({ ...llm.providerEnv, JAEGER_UI_URL: `${JAEGER}/` }));
    ({ api } = await newTenant(gateway.url, ADMIN));
    // A harness worker runs the turns, a hooks worker their post-turn hooks.
    for (const app of ['harness-worker', 'hooks-worker'] as const)
      workers.push(await spawnApp(app, env.processEnv({ ...llm.providerEnv })));
  });

  afterAll(async () => {
    await Promise.all(workers.map((w) => w.kill('SIGKILL')));
    await gateway?.close();
    await llm?.close();
    await env?.cleanup();
  });

  const unique = (name: string) => `${name}-${randomUUID().slice(0, 6)}`;

  async function agent(name: string, tier: string, tools: string[]) {
    const r = await api.post('/v1/agents', { name, tier, model: MODEL, tools });
    expect(r.status).toBe(201);
    return r.body.id as string;
  }

  const ended = (turnId: string) =>
    waitFor(
      async () => {
        const r = await api.get(`/v1/turns/${turnId}`);
        return ['completed', 'failed', 'cancelled'].includes(r.body.status) ? r.body : undefined;
      },
      { what: `turn ${turnId} ended`, timeoutMs: 60_000 },
    );

  it('shows the retry, the tool calls and the child, and each round’s exact context', async () => {
    const boss = unique('boss');
    const helper = unique('helper');
    let limited = false;
    scripts.set(boss, (a) => {
      // The turn's first attempt is refused once: the engine retries it on the same model.
      if (!limited) return ((limited = true), scripted.rateLimited(0));
      if (a.results === 0)
        return scripted.toolCall(
          'spawn_subagent',
          { agent: helper, task: 'count the sheep', blocking: true },
          { id: 'call_spawn' },
        );
      if (a.results === 1)
        return scripted.toolCall('word_count', { text: 'one two three' }, { id: 'call_count' });
      return scripted.text('all done');
    });
    scripts.set(helper, () => scripted.text('there are 42 sheep'));
    await agent(helper, 'worker', []);
    const bossId = await agent(boss, 'chat', ['spawn_subagent', 'word_count']);
    const session = (await api.post('/v1/sessions', { agentId: bossId })).body.id as string;
    const admitted = await api.post(`/v1/sessions/${session}/messages`, { content: 'how many sheep?' });
    expect(admitted.status).toBe(202);
    const turnId = admitted.body.turnId as string;
    const turn = await ended(turnId);
    expect(turn.status).toBe('completed');

    const r = await api.get(`/v1/turns/${turnId}/timeline`);
    expect(r.status).toBe(200);
    const t = r.body;
    expect(t.turn).toMatchObject({ id: turnId, status: 'completed', stopReason: 'final_answer' });
    // Paused for its blocking child and resumed: two runs.
    expect(t.turn.runCount).toBe(2);
    expect(t.phases.admittedAt).toBe(turn.createdAt);
    expect(t.phases.claimedAt).toBe(turn.startedAt);
    expect(t.phases.queueWaitMs).toBe(Date.parse(turn.startedAt) - Date.parse(turn.createdAt));
    expect(t.phases.endedAt).toBe(turn.completedAt);

    // Round 0: a 429, then the retry answered with the spawn.
    expect(t.rounds.map((x: { index: number }) => x.index)).toEqual([0, 1, 2]);
    const [r0, r1, r2] = t.rounds;
    expect(r0.attempts.map((a: { outcome: string; attempt: number }) => [a.attempt, a.outcome])).toEqual([
      [1, 'retrying'],
      [2, 'succeeded'],
    ]);
    expect(r0.attempts[0]).toMatchObject({ failureKind: 'rate_limited', status: 429 });
    expect(r0.model).toBe(MODEL);
    expect(r0.usage.inputTokens).toBeGreaterThan(0);
    expect(r0.toolCalls).toHaveLength(1);
    expect(r0.toolCalls[0]).toMatchObject({
      callId: 'call_spawn',
      name: 'spawn_subagent',
      outcome: 'succeeded',
      approval: null,
      gates: [],
    });
    expect(r0.toolCalls[0].resultBytes).toBeGreaterThan(0);
    expect(r1.toolCalls).toEqual([
      expect.objectContaining({
        callId: 'call_count',
        name: 'word_count',
        arguments: { text: 'one two three' },
        effectClass: 'read_only',
        outcome: 'succeeded',
        compactedBytes: null,
        originalId: null,
      }),
    ]);
    expect(r2.toolCalls).toEqual([]);
    expect(t.rounds.every((x: { contextRecorded: boolean }) => x.contextRecorded)).toBe(true);

    // The child: its turn, status and cost, rolled up into the parent's total.
    expect(t.children).toHaveLength(1);
    const child = t.children[0];
    expect(child).toMatchObject({
      agent: helper,
      callId: 'call_spawn',
      taskStatus: 'completed',
      blocking: true,
    });
    expect(child.childTurnStatus).toBe('completed');
    expect(t.turn.childrenCostUsd).toBe(child.totalCostUsd);
    expect(Number(t.turn.totalCostUsd)).toBeCloseTo(Number(t.turn.costUsd) + Number(child.totalCostUsd), 8);

    // The journal, in order, and the trace link.
    const types = t.events.map((e: { type: string }) => e.type);
    expect(types).toEqual(
      expect.arrayContaining(['turn_started', 'provider_round_completed', 'subagent_spawned']),
    );
    expect(t.events.map((e: { seq: number }) => e.seq)).toEqual(
      [...t.events.map((e: { seq: number }) => e.seq)].sort((a: number, b: number) => a - b),
    );
    expect(t.traceUrl).toBe(t.traceId ? `${JAEGER}/trace/${t.traceId}` : null);

    // Post-turn hooks land after the end: the timeline shows them once they ran.
    const hooks = await waitFor(
      async () => {
        const h = (await api.get(`/v1/turns/${turnId}/timeline`)).body.hooks;
        return h.length > 0 ? h : undefined;
      },
      { what: 'post-turn hooks recorded', timeoutMs: 30_000 },
    );
    expect(hooks[0]).toMatchObject({ status: expect.any(String), attempts: expect.any(Number) });

    // What the model saw: each round's context is the request the fake server answered.
    const bossRequests = llm.requests.filter((q) => q.body && ask(q).agent === boss);
    // Round 0 was sent twice (the 429 and its retry): the same body both times.
    expect(bossRequests).toHaveLength(4);
    expect((bossRequests[0].body as WireBody).messages).toEqual((bossRequests[1].body as WireBody).messages);
    const sent = [bossRequests[1], bossRequests[2], bossRequests[3]].map((q) => q.body as WireBody);
    for (const [index, body] of sent.entries()) {
      const c = await api.get(`/v1/turns/${turnId}/rounds/${index}/context`);
      expect(c.status).toBe(200);
      expect(c.body.round).toBe(index);
      expect(toWire(c.body.system, c.body.messages)).toEqual(body.messages);
      expect(c.body.tools.map((x: { name: string }) => x.name)).toEqual(
        (body.tools ?? []).map((x) => x.function.name),
      );
      expect(c.body.tools.map((x: { parameters: unknown }) => x.parameters)).toEqual(
        (body.tools ?? []).map((x) => x.function.parameters),
      );
      const { tokens } = c.body;
      expect(tokens.total).toBe(tokens.system + tokens.tools + tokens.messages);
      expect(tokens.system).toBeGreaterThan(0);
      expect(c.body.messages[0].source).toBe('transcript');
    }
    const last = (await api.get(`/v1/turns/${turnId}/rounds/2/context`)).body;
    expect(last.messages.map((m: ContextMessage) => m.role)).toEqual([
      'user',
      'assistant',
      'tool',
      'assistant',
      'tool',
    ]);

    // The parts are stored once: three rounds share the system prompt, the tools and the input.
    const parts = await env.db.$queryRaw<{ n: bigint }[]>`
      SELECT count(*) AS n FROM context_parts p
      WHERE p.hash IN (SELECT h FROM turn_round_contexts r, jsonb_array_elements_text(r.parts->'h') h
                       WHERE r.turn_id = ${turnId}::uuid)`;
    // system, tools, input, and per later round the assistant message and its tool result.
    expect(Number(parts[0].n)).toBe(7);
    // A later round is stored as what it adds to the one before it in the same run (docs/adr/0045);
    // round 1 is the first of the run that resumed after the child ended, so it is stored whole.
    const lists = await env.db.$queryRaw<{ round: number; parts: unknown }[]>`
      SELECT round_index AS round, parts FROM turn_round_contexts
      WHERE turn_id = ${turnId}::uuid ORDER BY round_index`;
    expect(lists.map((l) => l.parts)).toEqual([
      { h: expect.any(Array), s: 'yxt' },
      { h: expect.any(Array), s: 'yxttt' },
      { h: expect.any(Array), s: 'tt', p: 1, k: 5 },
    ]);

    // The child's own timeline and context are there too.
    const childTimeline = await api.get(`/v1/turns/${child.childTurnId}/timeline`);
    expect(childTimeline.status).toBe(200);
    expect(childTimeline.body.turn.parentTurnId).toBe(turnId);
    expect((await api.get(`/v1/turns/${child.childTurnId}/rounds/0/context`)).status).toBe(200);
  });

  it('answers 404 for another tenant’s turn, 400 for a bad round index, 404 for an unknown round', async () => {
    const name = unique('solo');
    scripts.set(name, () => scripted.text('hello'));
    const agentId = await agent(name, 'chat', []);
    const session = (await api.post('/v1/sessions', { agentId })).body.id as string;
    const turnId = (await api.post(`/v1/sessions/${session}/messages`, { content: 'hi' })).body
      .turnId as string;
    await ended(turnId);

    const { api: other } = await newTenant(gateway.url, ADMIN, 'other');
    for (const path of [`/v1/turns/${turnId}/timeline`, `/v1/turns/${turnId}/rounds/0/context`]) {
      const r = await other.get(path);
      expect(r.status).toBe(404);
      expect(r.body.error.code).toBe('not_found');
      expect((await api.get(path)).status).toBe(200);
    }
    for (const index of ['-1', 'x', '1.5', '9999999999']) {
      const r = await api.get(`/v1/turns/${turnId}/rounds/${index}/context`);
      expect(r.status).toBe(400);
      expect(r.body.error.code).toBe('validation_failed');
    }
    const unknownRound = await api.get(`/v1/turns/${turnId}/rounds/5/context`);
    expect(unknownRound.status).toBe(404);
    // A malformed turn id is no turn (as GET /v1/turns/:id answers it).
    expect((await api.get('/v1/turns/not-a-uuid/timeline')).status).toBe(404);
    expect((await api.get(`/v1/turns/${randomUUID()}/timeline`)).status).toBe(404);
    expect((await api.get('/v1/tool-results/0123456789abcdef01234567')).status).toBe(404);
    expect((await api.get('/v1/tool-results/nope')).status).toBe(404);
  });
});
