import { z } from 'zod';
import { newId } from '@switchboard/contracts';
import { poolOf } from '@switchboard/database';
import { TurnEngine } from '@switchboard/engine';
import { recordLearning, SqlDb } from '@switchboard/store';
import { Metrics } from '@switchboard/observability';
import {
  ProviderRegistry,
  type ModelProvider,
  type ModelRequest,
  type ModelResponse,
  type ToolCallRequest,
} from '@switchboard/providers';
import {
  cancelLeftovers,
  seedSession,
  seedTenantSession,
  startHarness,
  waitFor,
  type HarnessFixture,
} from '@switchboard/testing';
import { defineTool, ToolRegistry, type ToolDefinition } from '@switchboard/tools';
import { TurnRunner } from './runner';

/**
 * Replay turns against real Postgres (docs/adr/0054): the claim loads the original's recorded side
 * effects, a matched call's tool_calls row commits `completed` with the original's result and the
 * original's id in `replayed_from_tool_call_id` (never executed), and that decision is read back by
 * a run that resumes the turn after its worker was lost: an original call answers one call at most.
 */
jest.setTimeout(120_000);

const USAGE = { inputTokens: 10, outputTokens: 5, cachedTokens: 0 };

/** What the model asks for in round n of the current turn; a round may hang until its request aborts. */
type Round = ToolCallRequest[] | 'hang';
let script: Round[] = [];

class Model implements ModelProvider {
  readonly name = 'openai-chat';
  async complete(r: ModelRequest): Promise<ModelResponse> {
    const lastUser = r.messages.map((m) => m.role).lastIndexOf('user');
    const round = r.messages.slice(lastUser).filter((m) => m.role === 'assistant').length;
    const calls = script[round] ?? [];
    if (calls === 'hang') {
      return new Promise((_, reject) => {
        const stop = () => reject(new Error('aborted'));
        if (r.signal?.aborted) stop();
        r.signal?.addEventListener('abort', stop, { once: true });
      });
    }
    return calls.length > 0
      ? { text: '', toolCalls: calls, usage: USAGE, finishReason: 'tool_calls' }
      : { text: `done after ${round} rounds`, toolCalls: [], usage: USAGE, finishReason: 'stop' };
  }
}

/** Every real execution of `send`. */
const executions: string[] = [];
const send = defineTool({
  name: 'send',
  description: 'Sends a message (network effect)',
  schema: z.strictObject({ to: z.string() }),
  sideEffect: 'network',
  timeoutMs: 2_000,
  needsApproval: false,
  execute: async ({ to }) => {
    executions.push(to);
    return { sentTo: to, n: executions.length };
  },
}) as ToolDefinition;
const look = defineTool({
  name: 'look',
  description: 'Reads something',
  schema: z.strictObject({ q: z.string() }),
  sideEffect: 'read_only',
  timeoutMs: 2_000,
  needsApproval: false,
  execute: async ({ q }) => ({ looked: q }),
}) as ToolDefinition;
const tools = new ToolRegistry([send, look]);

const c = (id: string, name: string, args: unknown): ToolCallRequest => ({
  id,
  name,
  arguments: JSON.stringify(args),
});

describe('replay turns against Postgres (docs/adr/0054)', () => {
  let h: HarnessFixture;

  const runner = (workerId = 'w1') =>
    new TurnRunner({
      ...h.runnerDeps({ metrics: new Metrics('replay'), workerId }),
      engine: new TurnEngine({ providers: new ProviderRegistry({}, [new Model()]), tools }),
      tools,
      defaultModel: 'openai-chat/default',
    });

  beforeAll(async () => {
    h = await startHarness();
  });

  beforeEach(async () => {
    executions.length = 0;
    await cancelLeftovers(h.env.db);
  });

  afterAll(() => h?.close());

  const db = () => h.env.db;
  const job = (ids: { tenantId: string; sessionId: string }, turnId: string) => ({
    turnId,
    sessionId: ids.sessionId,
    tenantId: ids.tenantId,
    trace: {},
  });
  const admit = async (ids: { tenantId: string; sessionId: string }, text: string) =>
    (
      await h.admission.admit({
        ...ids,
        kind: 'operator_prompt',
        origin: { kind: 'operator' },
        body: { type: 'text', text },
        deliverySurface: 'http_public_enqueue',
        admissionContext: 'control_authenticated',
      })
    ).turnId;
  const turnRow = (id: string) => db().turn.findUniqueOrThrow({ where: { id } });
  const callsOf = (turnId: string) =>
    db().toolCall.findMany({ where: { turnId }, orderBy: [{ startedAt: 'asc' }, { id: 'asc' }] });

  /** An original turn in its own session, run to its end; its tool_calls rows. */
  async function original(rounds: Round[]) {
    const ids = await seedTenantSession(db(), 'replay', { model: 'openai-chat/m', tools: ['send', 'look'] });
    script = rounds;
    const turnId = await admit(ids, 'do the things');
    expect(await runner().handle(job(ids, turnId))).toBe('done');
    expect((await turnRow(turnId)).status).toBe('completed');
    return { ids, turnId, calls: await callsOf(turnId) };
  }

  /** A replay of `of`: the same input admitted in another session of the agent, naming its original. */
  async function replayTurn(ids: { tenantId: string; agentId: string }, of: string) {
    const sessionId = await seedSession(db(), ids.tenantId, ids.agentId);
    const r = { tenantId: ids.tenantId, sessionId };
    const turnId = await admit(r, 'do the things');
    await db().turn.update({ where: { id: turnId }, data: { replayOfTurnId: of } });
    return { r, turnId };
  }

  it('answers matched calls from the recorded results, commits the match with the answer, and a replay of the replay does too', async () => {
    const rounds: Round[] = [
      [c('o1', 'send', { to: 'a' })],
      [c('o2', 'look', { q: 'x' }), c('o3', 'send', { to: 'b' })],
    ];
    const orig = await original(rounds);
    expect(executions).toEqual(['a', 'b']);
    const [sentA, sentB] = orig.calls.filter((x) => x.name === 'send');

    const first = await replayTurn(orig.ids, orig.turnId);
    script = [[c('r1', 'send', { to: 'a' })], [c('r2', 'look', { q: 'x' }), c('r3', 'send', { to: 'b' })]];
    expect(await runner().handle(job(first.r, first.turnId))).toBe('done');
    expect(await turnRow(first.turnId)).toMatchObject({ status: 'completed', replayOfTurnId: orig.turnId });
    expect(executions).toEqual(['a', 'b']);

    const replayed = await callsOf(first.turnId);
    expect(replayed.map((x) => [x.callId, x.status, x.replayedFromToolCallId, x.result])).toEqual([
      ['r1', 'completed', sentA.id, sentA.result],
      ['r2', 'completed', null, { looked: 'x' }],
      ['r3', 'completed', sentB.id, sentB.result],
    ]);
    const events = await db().event.findMany({
      where: { turnId: first.turnId, type: { in: ['tool_call_started', 'tool_call_completed'] } },
      orderBy: { seq: 'asc' },
    });
    expect(
      events.map((e) => [
        e.type,
        (e.data as { callId: string }).callId,
        (e.data as { replayed?: boolean }).replayed ?? false,
      ]),
    ).toEqual([
      ['tool_call_started', 'r1', true],
      ['tool_call_completed', 'r1', true],
      ['tool_call_started', 'r2', false],
      ['tool_call_completed', 'r2', false],
      ['tool_call_started', 'r3', true],
      ['tool_call_completed', 'r3', true],
    ]);
    // The learning hook counts executions only: the replayed answers ran nothing.
    const learned = await recordLearning(new SqlDb(poolOf(db())), {
      id: newId(),
      turnId: first.turnId,
      tenantId: first.r.tenantId,
    });
    expect(learned).toMatchObject({ kind: 'written', tools: [{ tool: 'look', calls: 1 }] });

    // A replay of the replay: the replay's answered calls are what it recorded.
    const second = await replayTurn(orig.ids, first.turnId);
    script = [[c('s1', 'send', { to: 'a' })], [c('s2', 'send', { to: 'b' })]];
    expect(await runner().handle(job(second.r, second.turnId))).toBe('done');
    expect(executions).toEqual(['a', 'b']);
    const again = await callsOf(second.turnId);
    expect(again.map((x) => [x.callId, x.replayedFromToolCallId])).toEqual([
      ['s1', replayed[0].id],
      ['s2', replayed[2].id],
    ]);
  });

  it('a run that resumes a replay after its worker was lost reads the matches back: an original call answers once', async () => {
    const orig = await original([[c('o1', 'send', { to: 'a' })], [c('o2', 'send', { to: 'b' })]]);
    expect(executions).toEqual(['a', 'b']);
    const [sentA] = orig.calls;

    const replay = await replayTurn(orig.ids, orig.turnId);
    // The first worker answers r1 from the record, then hangs in its next model call.
    script = [[c('r1', 'send', { to: 'a' })], 'hang'];
    const lost = runner('lost').handle(job(replay.r, replay.turnId));
    await waitFor(() => db().toolCall.findFirst({ where: { turnId: replay.turnId, callId: 'r1' } }), {
      what: 'r1 answered from the record',
    });
    // The worker is gone: its lease expires and another worker takes the turn over.
    await db().session.update({
      where: { id: replay.r.sessionId },
      data: { leaseExpiresAt: new Date(Date.now() - 1000) },
    });
    // This time the model asks for `send a` again: the recorded `send a` already answered r1.
    script = [[c('r1', 'send', { to: 'a' })], [c('r2', 'send', { to: 'a' })]];
    expect(await runner('next').handle(job(replay.r, replay.turnId))).toBe('done');
    await lost.catch(() => undefined);

    const turn = await turnRow(replay.turnId);
    expect(turn.status).toBe('awaiting_approval');
    expect(turn.runCount).toBe(2);
    const rows = await callsOf(replay.turnId);
    expect(rows.map((x) => [x.callId, x.status, x.replayedFromToolCallId])).toEqual([
      ['r1', 'completed', sentA.id],
    ]);
    const [approval] = await db().approval.findMany({ where: { turnId: replay.turnId } });
    expect(approval).toMatchObject({
      callId: 'r2',
      toolName: 'send',
      status: 'pending',
      policy: 'replay_unrecorded_side_effect',
      arguments: { to: 'a' },
    });
    expect(executions).toEqual(['a', 'b']);
  });

  it('the database refuses a second call of one replay turn answered from the same original call', async () => {
    const orig = await original([[c('o1', 'send', { to: 'a' })]]);
    const replay = await replayTurn(orig.ids, orig.turnId);
    const row = (callId: string) => ({
      id: newId(),
      tenantId: replay.r.tenantId,
      sessionId: replay.r.sessionId,
      turnId: replay.turnId,
      callId,
      name: 'send',
      arguments: { to: 'a' },
      sideEffect: 'network',
      status: 'completed',
      idempotencyKey: `${replay.turnId}:${callId}`,
      replayedFromToolCallId: orig.calls[0].id,
    });
    await db().toolCall.create({ data: row('x1') });
    await expect(db().toolCall.create({ data: row('x2') })).rejects.toMatchObject({ code: 'P2002' });
  });
});
