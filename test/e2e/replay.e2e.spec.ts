import { randomUUID } from 'node:crypto';
import net from 'node:net';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
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
import { EFFECT_TOOLS_MODULE, lines } from '../support/effect-tools';
import { newTenant, type Api } from '../support/api';

jest.setTimeout(180_000);

const ADMIN = 'test-admin-token-0123456789';

interface ChatMsg {
  role: string;
  content?: unknown;
  tool_calls?: unknown[];
}
const text = (c: unknown): string =>
  typeof c === 'string' ? c : Array.isArray(c) ? c.map((p: { text?: string }) => p.text ?? '').join('') : '';

/**
 * What a model request is about: the model, whether the system prompt asks for the other write
 * (`USE-C`, the changed prompt), the path prefix the user's message names, and how many tool results
 * the current turn has so far (its round).
 */
function ask(req: RecordedRequest) {
  const body = req.body as { model?: string; messages?: ChatMsg[] };
  const messages = body.messages ?? [];
  const system = text(messages.find((m) => m.role === 'system' || m.role === 'developer')?.content);
  const lastUser = messages.map((m) => m.role).lastIndexOf('user');
  const prefix = /\/[^\s<>"']+/.exec(text(messages[lastUser]?.content))?.[0];
  const round = messages.slice(lastUser).filter((m) => m.role === 'assistant').length;
  return { model: body.model ?? '?', useC: system.includes('USE-C'), prefix, round };
}

const effect = (id: string, p: string) => ({
  id,
  name: 'effect_once',
  arguments: JSON.stringify({ path: p }),
});

/**
 * Replay without repeating side effects (issue 34, docs/adr/0054), through gateway, harness and
 * hooks-worker processes and a fake LLM. The agent's turn counts words (read-only) and makes two writes
 * with a test tool that records every real execution in a file (as the crash tests count effects):
 * a replay on another model runs the read-only call again and answers both writes from the recorded
 * results (zero extra executions, each marked replayed); a replay whose changed prompt makes the
 * model ask for another write waits for a person (rejected: never run; approved: run exactly once);
 * a replay whose worker is SIGKILLed mid-way and finished by another runs nothing extra; the original
 * session's transcript is untouched; the comparison; and bad input is refused with nothing written.
 */
describe('replaying a turn without repeating its side effects (docs/adr/0054)', () => {
  let env: TestEnv;
  let llm: FakeLlmServer;
  let api: Api;
  let other: Api;
  let dir: string;
  let harness: AppProcess;
  const workers: AppProcess[] = [];
  /** Path prefixes whose replay's second round on `fake-b` hangs once (the SIGKILL test). */
  const hangOnce = new Set<string>();
  /** Path prefixes whose every round hangs (a turn kept running). */
  const hangAlways = new Set<string>();

  /** The scripted model: count words and write `a`, then write `b` (or `c` with `USE-C`), then answer. */
  function reply(req: RecordedRequest): ScriptedReply {
    const a = ask(req);
    if (!a.prefix) return scripted.text(`hello from ${a.model}`);
    if (hangAlways.has(a.prefix)) return scripted.hang();
    const cost = { costUsd: a.model === 'fake-b' ? 0.001 : 0.003 };
    if (a.round === 0) {
      return {
        kind: 'message',
        toolCalls: [
          { id: 'call_count', name: 'word_count', arguments: JSON.stringify({ text: 'one two three' }) },
          effect('call_a', `${a.prefix}-a`),
        ],
        ...cost,
      };
    }
    if (a.round === 1) {
      if (a.model === 'fake-b' && hangOnce.delete(a.prefix)) return scripted.hang();
      return { kind: 'message', toolCalls: [effect('call_b', `${a.prefix}-${a.useC ? 'c' : 'b'}`)], ...cost };
    }
    return scripted.text(`done by ${a.model}`, cost);
  }

  /** The processes' environment: the fake LLM and the counting write tool. */
  const processEnv = (extra: Record<string, string> = {}) =>
    env.processEnv({ ...llm.providerEnv, EXTRA_TOOL_MODULES: EFFECT_TOOLS_MODULE, ...extra });
  const spawnHarness = async () => {
    const w = await spawnApp('harness-worker', processEnv());
    workers.push(w);
    return w;
  };

  beforeAll(async () => {
    env = await createTestEnv();
    llm = await FakeLlmServer.start();
    llm.setDefault(reply);
    const server = net.createServer();
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const { port } = server.address() as net.AddressInfo;
    await new Promise((resolve) => server.close(resolve));
    const [gateway, hooks] = await Promise.all([
      spawnApp('gateway', processEnv({ PORT: String(port), HOST: '127.0.0.1' }), {
        readyPattern: /Server listening at|successfully started/,
      }),
      spawnApp('hooks-worker', processEnv()),
    ]);
    workers.push(gateway, hooks);
    const url = `http://127.0.0.1:${port}`;
    await waitFor(async () => (await fetch(`${url}/healthz`)).ok, { what: 'the gateway to listen' });
    ({ api } = await newTenant(url, ADMIN, 'replay'));
    ({ api: other } = await newTenant(url, ADMIN, 'someone-else'));
    dir = mkdtempSync(path.join(tmpdir(), 'sb-replay-'));
    harness = await spawnHarness();
  });

  afterAll(async () => {
    await Promise.all(workers.map((w) => w.kill('SIGKILL')));
    await llm?.close();
    await env?.cleanup();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  const turn = async (id: string) => {
    const r = await api.get(`/v1/turns/${id}`);
    expect(r.status).toBe(200);
    return r.body;
  };
  const until = (id: string, statuses: string[]) =>
    waitFor(
      async () => {
        const t = await turn(id);
        return statuses.includes(t.status as string) ? t : undefined;
      },
      { what: `turn ${id} ${statuses.join('|')}`, timeoutMs: 60_000 },
    );
  /** Real executions of the write to `<prefix>-<which>`. */
  const runs = (prefix: string, which: string) => lines(`${prefix}-${which}`, 'runs').length;

  /**
   * A session of a new agent on `fake-a`: a first turn that only talks, then the turn to replay, which
   * counts words and writes `a` and `b` once each.
   */
  async function original() {
    const agent = await api.post('/v1/agents', {
      name: `writer-${randomUUID().slice(0, 8)}`,
      model: 'openai-chat/fake-a',
      instructions: 'You write files when asked.',
      tools: ['effect_once', 'word_count'],
    });
    expect(agent.status).toBe(201);
    const sessionId = (await api.post('/v1/sessions', { agentId: agent.body.id })).body.id as string;
    const first = await api.post(`/v1/sessions/${sessionId}/messages`, { content: 'hello there' });
    expect(first.status).toBe(202);
    await until(first.body.turnId, ['completed']);
    const prefix = path.join(dir, randomUUID());
    // The writes never wait: each tool run finds its release file.
    for (const which of ['a', 'b', 'c']) writeFileSync(`${prefix}-${which}.release`, '');
    const second = await api.post(`/v1/sessions/${sessionId}/messages`, { content: `write to ${prefix}` });
    const done = await until(second.body.turnId, ['completed']);
    expect(done.finalText).toBe('done by fake-a');
    expect([runs(prefix, 'a'), runs(prefix, 'b')]).toEqual([1, 1]);
    return {
      agentId: agent.body.id as string,
      sessionId,
      turnId: second.body.turnId as string,
      firstTurnId: first.body.turnId as string,
      prefix,
    };
  }

  /** What must not change in the original session: its transcript, its turns, their tool calls. */
  const snapshot = async (sessionId: string) => ({
    messages: await env.db.message.findMany({
      where: { sessionId },
      orderBy: [{ turnSeq: 'asc' }, { position: 'asc' }],
    }),
    // What the post-turn hooks settle after a turn's end (spend roll-up, hook reconcile) may land any time.
    turns: (await env.db.turn.findMany({ where: { sessionId }, orderBy: { seq: 'asc' } })).map(
      ({ spendRolledUpAt: _s, hooksSettledAt: _h, ...t }) => t,
    ),
    toolCalls: await env.db.toolCall.findMany({ where: { sessionId }, orderBy: { id: 'asc' } }),
  });

  const replay = (turnId: string, body?: unknown) => api.post(`/v1/turns/${turnId}/replay`, body);

  const pendingApproval = (turnId: string) =>
    waitFor(
      async () => {
        const r = await api.get('/v1/approvals?status=pending&limit=200');
        return (r.body.data as { id: string; turnId: string }[]).find((x) => x.turnId === turnId);
      },
      { what: `a pending approval of ${turnId}` },
    );

  it('a replay on another model runs the read-only call again and answers both writes from the record: zero extra executions', async () => {
    const orig = await original();
    const before = await snapshot(orig.sessionId);
    const originalCalls = before.toolCalls.filter((c) => c.turnId === orig.turnId);

    const res = await replay(orig.turnId, { model: 'openai-chat/fake-b' });
    expect(res.status).toBe(202);
    expect(res.body).toEqual({
      replay: {
        turnId: expect.any(String),
        sessionId: expect.any(String),
        originalTurnId: orig.turnId,
        status: 'queued',
      },
    });
    const { turnId, sessionId } = res.body.replay as { turnId: string; sessionId: string };
    expect(sessionId).not.toBe(orig.sessionId);

    const done = await until(turnId, ['completed']);
    expect(done).toMatchObject({
      replayOfTurnId: orig.turnId,
      model: 'openai-chat/fake-b',
      finalText: 'done by fake-b',
    });
    // Nothing was written twice; the read-only count ran again on the replay's model.
    expect([runs(orig.prefix, 'a'), runs(orig.prefix, 'b')]).toEqual([1, 1]);
    const byName = <T extends { name: string }>(name: string, calls: T[]) =>
      calls.filter((c) => c.name === name);
    const writes = byName('effect_once', done.toolCalls);
    expect(
      writes.map((c: Record<string, unknown>) => [c.status, c.replayedFromToolCallId, c.result]),
    ).toEqual(byName('effect_once', originalCalls).map((c) => ['completed', c.id, c.result]));
    expect(byName('word_count', done.toolCalls)).toEqual([
      expect.objectContaining({ status: 'completed', replayedFromToolCallId: null }),
    ]);
    expect(
      llm.requests.filter((r) => ask(r).prefix === orig.prefix && ask(r).model === 'fake-b'),
    ).toHaveLength(3);

    // The journal marks each replayed call, start and end.
    const events = (await api.get(`/v1/sessions/${sessionId}/events?limit=500`)).body.data as {
      type: string;
      turnId: string;
      data: Record<string, unknown>;
    }[];
    const calls = events.filter((e) => e.turnId === turnId && e.type.startsWith('tool_call_'));
    expect(calls.map((e) => [e.type, e.data.name, e.data.replayed ?? false])).toEqual([
      ['tool_call_started', 'word_count', false],
      ['tool_call_completed', 'word_count', false],
      ['tool_call_started', 'effect_once', true],
      ['tool_call_completed', 'effect_once', true],
      ['tool_call_started', 'effect_once', true],
      ['tool_call_completed', 'effect_once', true],
    ]);
    // The fork holds a copy of the turn before the replayed one, then the replay.
    const forkTurns = await env.db.turn.findMany({ where: { sessionId }, orderBy: { seq: 'asc' } });
    expect(forkTurns.map((t) => [t.seq, t.copiedFromTurnId, t.replayOfTurnId])).toEqual([
      [1, orig.firstTurnId, null],
      [2, null, orig.turnId],
    ]);
    const transcript = (await api.get(`/v1/sessions/${sessionId}/messages`)).body.data as {
      role: string;
      turnId: string;
    }[];
    expect(transcript.map((m) => [m.turnId === turnId ? 'replay' : 'copy', m.role])).toEqual([
      ['copy', 'user'],
      ['copy', 'assistant'],
      ['replay', 'user'],
      ['replay', 'assistant'],
      ['replay', 'tool'],
      ['replay', 'tool'],
      ['replay', 'assistant'],
      ['replay', 'tool'],
      ['replay', 'assistant'],
    ]);

    // The original session's transcript, turns and tool calls are untouched.
    expect(await snapshot(orig.sessionId)).toEqual(before);

    // The comparison, side by side.
    const cmp = await api.get(`/v1/turns/${turnId}/comparison`);
    expect(cmp.status).toBe(200);
    const { original: o, replay: r, diff } = cmp.body;
    expect(o).toMatchObject({
      turnId: orig.turnId,
      sessionId: orig.sessionId,
      status: 'completed',
      model: 'openai-chat/fake-a',
      finalText: 'done by fake-a',
      latencyMs: expect.any(Number),
    });
    expect(r).toMatchObject({
      turnId,
      sessionId,
      status: 'completed',
      model: 'openai-chat/fake-b',
      finalText: 'done by fake-b',
    });
    const shape = (s: { toolCalls: Record<string, unknown>[] }) =>
      s.toolCalls.map((c) => [c.name, c.arguments, c.sideEffect, c.status, c.replayed]);
    expect(shape(o)).toEqual([
      ['word_count', { text: 'one two three' }, 'read_only', 'completed', false],
      ['effect_once', { path: `${orig.prefix}-a` }, 'local_write', 'completed', false],
      ['effect_once', { path: `${orig.prefix}-b` }, 'local_write', 'completed', false],
    ]);
    expect(shape(r)).toEqual([
      ['word_count', { text: 'one two three' }, 'read_only', 'completed', false],
      ['effect_once', { path: `${orig.prefix}-a` }, 'local_write', 'completed', true],
      ['effect_once', { path: `${orig.prefix}-b` }, 'local_write', 'completed', true],
    ]);
    const originalTurn = await turn(orig.turnId);
    expect(o).toMatchObject({
      inputTokens: originalTurn.usage.inputTokens,
      outputTokens: originalTurn.usage.outputTokens,
      costUsd: originalTurn.costUsd,
    });
    expect(r).toMatchObject({ inputTokens: done.usage.inputTokens, costUsd: done.costUsd });
    expect(diff).toEqual({
      finalTextEqual: false,
      toolCallsEqual: true,
      inputTokensDelta: r.inputTokens - o.inputTokens,
      outputTokensDelta: r.outputTokens - o.outputTokens,
      costDeltaUsd: expect.stringMatching(/^-?\d+(\.\d+)?$/),
      latencyDeltaMs: r.latencyMs - o.latencyMs,
    });
    // Three rounds at 0.003 against three at 0.001 (the provider reports each call's cost).
    expect([o.costUsd, r.costUsd, diff.costDeltaUsd]).toEqual(['0.009', '0.003', '-0.006']);

    // The post-turn hooks ran for the replay; the agent's tool statistics count executions only: the
    // count twice (original and replay), each write once (the replay's answers ran nothing).
    await waitFor(
      async () =>
        (await env.db.hookRun.count({
          where: { turnId: { in: [orig.turnId, turnId] }, hook: 'learning' },
        })) === 2 || undefined,
      { what: 'the learning hook of both turns' },
    );
    const stats = (await api.get(`/v1/agents/${orig.agentId}`)).body.status.tools as {
      tool: string;
      calls: number;
    }[];
    expect(stats.map((t) => [t.tool, t.calls]).sort()).toEqual([
      ['effect_once', 2],
      ['word_count', 2],
    ]);

    // Audited, as every replay.
    const audit = await api.get('/v1/audit-events?action=turn.replayed');
    expect(audit.body.data).toEqual(
      expect.arrayContaining([
        expect.objectContaining({
          action: 'turn.replayed',
          targetId: turnId,
          details: expect.objectContaining({ originalTurnId: orig.turnId, forkSessionId: sessionId }),
        }),
      ]),
    );
  });

  it('a changed prompt that asks for another write waits for a person: rejected it never runs, approved it runs once', async () => {
    const orig = await original();
    const before = await snapshot(orig.sessionId);
    const changed = { instructions: 'USE-C. You write files when asked.' };

    const rejected = await replay(orig.turnId, changed);
    expect(rejected.status).toBe(202);
    const r1 = rejected.body.replay.turnId as string;
    await until(r1, ['awaiting_approval']);
    const approval = await pendingApproval(r1);
    expect(approval).toMatchObject({
      toolName: 'effect_once',
      sideEffect: 'local_write',
      policy: 'replay_unrecorded_side_effect',
      arguments: { path: `${orig.prefix}-c` },
    });
    // The first write matched the record; the other one has not run.
    expect([runs(orig.prefix, 'a'), runs(orig.prefix, 'b'), runs(orig.prefix, 'c')]).toEqual([1, 1, 0]);
    const no = await api.post(`/v1/approvals/${approval.id}`, { decision: 'reject' });
    expect(no.status).toBe(200);
    const refused = await until(r1, ['completed']);
    expect(runs(orig.prefix, 'c')).toBe(0);
    expect(
      refused.toolCalls.find((c: { arguments: { path?: string } }) => c.arguments.path?.endsWith('-c')),
    ).toMatchObject({
      status: 'failed',
      error: expect.objectContaining({ kind: 'approval_rejected' }),
      replayedFromToolCallId: null,
    });

    const approved = await replay(orig.turnId, changed);
    const r2 = approved.body.replay.turnId as string;
    await until(r2, ['awaiting_approval']);
    const second = await pendingApproval(r2);
    expect((await api.post(`/v1/approvals/${second.id}`, { decision: 'approve' })).status).toBe(200);
    await until(r2, ['completed']);
    // Executed exactly once, with the replay turn's own idempotency key; nothing else ran again.
    expect([runs(orig.prefix, 'a'), runs(orig.prefix, 'b'), runs(orig.prefix, 'c')]).toEqual([1, 1, 1]);
    expect(lines(`${orig.prefix}-c`, 'effects')).toEqual([expect.stringMatching(new RegExp(`^${r2}:`))]);

    const cmp = (await api.get(`/v1/turns/${r2}/comparison`)).body;
    // The same model and answer; another write.
    expect(cmp.diff).toMatchObject({ toolCallsEqual: false, finalTextEqual: true });
    expect(cmp.replay.toolCalls.map((c: { replayed: boolean }) => c.replayed)).toEqual([false, true, false]);
    expect(await snapshot(orig.sessionId)).toEqual(before);
  });

  it('a replay whose worker is SIGKILLed mid-way and finished by another executes nothing extra', async () => {
    const orig = await original();
    const before = await snapshot(orig.sessionId);
    hangOnce.add(orig.prefix);

    const res = await replay(orig.turnId, { model: 'openai-chat/fake-b' });
    const turnId = res.body.replay.turnId as string;
    // The first round's answers are committed (the write matched the record); the worker now waits
    // on the model's second round.
    await waitFor(
      () =>
        llm.requests.some(
          (r) => ask(r).prefix === orig.prefix && ask(r).model === 'fake-b' && ask(r).round === 1,
        ) || undefined,
      { what: "the replay's second round asked", timeoutMs: 30_000 },
    );
    const mid = await turn(turnId);
    expect(mid.status).toBe('running');
    expect(
      mid.toolCalls.map((c: Record<string, unknown>) => [c.name, c.replayedFromToolCallId !== null]),
    ).toEqual([
      ['word_count', false],
      ['effect_once', true],
    ]);
    expect(await harness.kill('SIGKILL')).toBeNull();

    harness = await spawnHarness();
    const done = await until(turnId, ['completed']);
    expect(done.finalText).toBe('done by fake-b');
    expect([runs(orig.prefix, 'a'), runs(orig.prefix, 'b')]).toEqual([1, 1]);
    expect(
      done.toolCalls
        .filter((c: { name: string }) => c.name === 'effect_once')
        .map((c: { replayedFromToolCallId: string | null }) => c.replayedFromToolCallId),
    ).toEqual(
      before.toolCalls.filter((c) => c.turnId === orig.turnId && c.name === 'effect_once').map((c) => c.id),
    );
    const row = await env.db.turn.findUniqueOrThrow({ where: { id: turnId } });
    expect(row.runCount).toBe(2);
    expect(await snapshot(orig.sessionId)).toEqual(before);
  });

  it('refuses bad input with nothing written: a turn still running, another tenant’s turn, a malformed body', async () => {
    const orig = await original();
    // A turn kept running: its model never answers.
    const prefix = path.join(dir, randomUUID());
    hangAlways.add(prefix);
    const running = await api.post(`/v1/sessions/${orig.sessionId}/messages`, {
      content: `write to ${prefix}`,
    });
    await until(running.body.turnId, ['running']);

    const counts = async () => ({
      sessions: await env.db.session.count(),
      turns: await env.db.turn.count(),
      messages: await env.db.message.count(),
      audit: await env.db.auditEvent.count(),
    });
    const before = await counts();

    const busy = await replay(running.body.turnId);
    expect(busy.status).toBe(409);
    expect(busy.body.error).toMatchObject({ code: 'conflict', details: { reason: 'turn_not_ended' } });
    expect((await other.post(`/v1/turns/${orig.turnId}/replay`)).status).toBe(404);
    expect((await replay(randomUUID())).status).toBe(404);
    expect((await replay('not-a-turn')).status).toBe(404);
    for (const body of [{ model: 42 }, { model: '' }, { extra: true }, { instructions: ['no'] }, []]) {
      const bad = await replay(orig.turnId, body);
      expect([bad.status, bad.body.error?.code]).toEqual([400, 'validation_failed']);
    }
    const notJson = await api.request('POST', `/v1/turns/${orig.turnId}/replay`, {
      raw: '{"model":',
      headers: { 'content-type': 'application/json' },
    });
    expect(notJson.status).toBe(400);
    expect(await counts()).toEqual(before);

    // A turn that is not a replay has no comparison; another tenant's replay is not found either.
    expect((await api.get(`/v1/turns/${orig.turnId}/comparison`)).status).toBe(404);
    const mine = await replay(orig.turnId, { model: 'openai-chat/fake-b' });
    expect(mine.status).toBe(202);
    const replayId = mine.body.replay.turnId as string;
    expect((await other.get(`/v1/turns/${replayId}/comparison`)).status).toBe(404);
    // While the replay has not ended, the comparison shows it as it stands, without a diff.
    // (It is queued behind nothing in its fork; read it at once.)
    const early = await api.get(`/v1/turns/${replayId}/comparison`);
    expect(early.status).toBe(200);
    if (early.body.replay.status !== 'completed') expect(early.body.diff).toBeNull();
    await until(replayId, ['completed']);

    // A replay of a replay: its original is the replay.
    const again = await replay(replayId);
    expect(again.status).toBe(202);
    expect(again.body.replay.originalTurnId).toBe(replayId);
    await until(again.body.replay.turnId, ['completed']);
    expect([runs(orig.prefix, 'a'), runs(orig.prefix, 'b')]).toEqual([1, 1]);

    await api.post(`/v1/turns/${running.body.turnId}/cancel`);
    await until(running.body.turnId, ['cancelled']);
  });
});
