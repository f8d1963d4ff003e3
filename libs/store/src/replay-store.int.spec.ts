import { AgentStoppedError, AppError, newId, TenantPausedError } from '@switchboard/contracts';
import { poolOf } from '@switchboard/database';
import {
  createTestEnv,
  seedTenantSession,
  seedTurn,
  transcriptMessage,
  type SessionIds,
  type TestEnv,
} from '@switchboard/testing';
import { forkSession } from './fork-store';
import { readComparison, replayTurn } from './replay-store';
import { SqlDb, sql } from './sql';

/**
 * Replay's store on real Postgres (docs/adr/0054): one transaction forks the session before the turn
 * and admits its input as a queued turn naming the original (input envelope, structured output and
 * tool choice kept, client tools not), audited; a fork's copy replays the turn it copies; every
 * refusal writes nothing; the comparison, its order of calls, its deltas and its null diff while the
 * replay has not ended.
 */
jest.setTimeout(120_000);

describe('replay (store)', () => {
  let env: TestEnv;
  let db: SqlDb;

  beforeAll(async () => {
    env = await createTestEnv();
    db = new SqlDb(poolOf(env.db));
  });

  afterAll(async () => {
    await env?.cleanup();
  });

  const at = (s: number) => new Date(Date.UTC(2026, 11, 1, 12, 0, s));

  /** An ended turn: input, a round asking for `calls` (in that order), their rows, the answer. */
  async function ended(
    s: SessionIds,
    o: {
      text: string;
      answer: string;
      calls: { id: string; name: string; args: unknown; sideEffect: string; replayedFrom?: string }[];
      cost: string;
      tokens: [number, number];
      seconds: [number, number];
      replayOf?: string;
      status?: string;
    },
  ) {
    const inputMessageId = newId();
    const turn = await seedTurn(env.db, s, {
      inputMessageId,
      status: o.status ?? 'completed',
      model: 'openai-chat/m',
      finalText: o.answer,
      startedAt: at(o.seconds[0]),
      completedAt: o.status === 'running' ? null : at(o.seconds[1]),
      inputTokens: o.tokens[0],
      outputTokens: o.tokens[1],
      costUsd: o.cost,
      responseFormat: { type: 'json_object' },
      toolChoice: { type: 'required' },
      clientTools: [{ name: 'client_side', description: 'x', parameters: { type: 'object' } }],
      ...(o.replayOf ? { replayOfTurnId: o.replayOf } : {}),
    });
    await env.db.message.createMany({
      data: [
        {
          ...transcriptMessage(s, turn, 0, 'user', o.text),
          id: inputMessageId,
          kind: 'external_evidence',
          origin: { kind: 'webhook', source: 'github', eventType: 'issues' },
          trust: 'untrusted_external',
          authorityClass: 'integration_signal',
          deliverySurface: 'http_webhook',
        },
        {
          ...transcriptMessage(s, turn, 1, 'assistant', ''),
          toolCalls: o.calls.map((c) => ({ id: c.id, name: c.name, arguments: JSON.stringify(c.args) })),
        },
        transcriptMessage(s, turn, 2, 'assistant', o.answer),
      ],
    });
    const rows = [];
    // Rows written in reverse: the comparison orders calls as the model asked, not by row.
    for (const c of [...o.calls].reverse()) {
      const id = newId();
      rows.unshift(id);
      await env.db.toolCall.create({
        data: {
          id,
          tenantId: s.tenantId,
          sessionId: s.sessionId,
          turnId: turn.id,
          callId: c.id,
          name: c.name,
          arguments: c.args as object,
          sideEffect: c.sideEffect,
          status: 'completed',
          result: { ok: c.id },
          idempotencyKey: `${turn.id}:${c.id}`,
          startedAt: at(o.seconds[0]),
          completedAt: at(o.seconds[0]),
          replayedFromToolCallId: c.replayedFrom ?? null,
        },
      });
    }
    await env.db.session.update({ where: { id: s.sessionId }, data: { lastTurnSeq: turn.seq } });
    return { ...turn, inputMessageId, rows };
  }

  const counts = async () => {
    const [r] = await db.rows<Record<string, number>>(sql`SELECT
      (SELECT count(*)::int FROM sessions) AS sessions, (SELECT count(*)::int FROM turns) AS turns,
      (SELECT count(*)::int FROM messages) AS messages, (SELECT count(*)::int FROM events) AS events,
      (SELECT count(*)::int FROM audit_events) AS audit`);
    return r;
  };

  const calls = [
    { id: 'c1', name: 'look', args: { q: 'x' }, sideEffect: 'read_only' },
    { id: 'c2', name: 'send', args: { to: 'a', body: 'hi' }, sideEffect: 'network' },
  ];

  it('forks before the turn and admits its input as a queued replay, in one transaction, audited', async () => {
    const s = await seedTenantSession(env.db, 'replay-store');
    const first = await ended(s, {
      text: 'first',
      answer: 'one',
      calls: [],
      cost: '0',
      tokens: [1, 1],
      seconds: [0, 1],
    });
    const orig = await ended(s, {
      text: 'second',
      answer: 'two',
      calls,
      cost: '0.5',
      tokens: [100, 10],
      seconds: [2, 5],
    });

    const r = await replayTurn(db, {
      tenantId: s.tenantId,
      turnId: orig.id,
      overrides: { model: 'openai-chat/other' },
      actor: 'api_key:k1',
      traceContext: {},
    });
    expect(r).toMatchObject({ originalTurnId: orig.id, replayedTurnId: orig.id, status: 'queued', seq: 2 });

    const fork = await env.db.session.findUniqueOrThrow({ where: { id: r.sessionId } });
    expect(fork).toMatchObject({
      forkedFromSessionId: s.sessionId,
      forkedAtTurnId: orig.id,
      forkedAtTurnSeq: 1,
      overrides: { model: 'openai-chat/other' },
    });
    const turns = await env.db.turn.findMany({ where: { sessionId: r.sessionId }, orderBy: { seq: 'asc' } });
    expect(turns.map((t) => [t.seq, t.status, t.copiedFromTurnId, t.replayOfTurnId])).toEqual([
      [1, 'completed', first.id, null],
      [2, 'queued', null, orig.id],
    ]);
    const replay = turns[1];
    expect(replay).toMatchObject({
      id: r.turnId,
      responseFormat: { type: 'json_object' },
      toolChoice: { type: 'required' },
      clientTools: null,
    });
    const input = await env.db.message.findFirstOrThrow({ where: { id: replay.inputMessageId } });
    expect(input).toMatchObject({
      turnId: r.turnId,
      turnSeq: 2,
      position: 0,
      role: 'user',
      kind: 'external_evidence',
      origin: { kind: 'webhook', source: 'github', eventType: 'issues' },
      trust: 'untrusted_external',
      authorityClass: 'integration_signal',
      deliverySurface: 'http_webhook',
      body: { type: 'text', text: 'second' },
      metadata: { replay: { originalTurnId: orig.id, replayedTurnId: orig.id } },
    });
    expect(r.admitted).toMatchObject({ type: 'message_admitted', turnId: r.turnId });
    const audit = await env.db.auditEvent.findFirstOrThrow({
      where: { action: 'turn.replayed', targetId: r.turnId },
    });
    expect(audit).toMatchObject({
      tenantId: s.tenantId,
      actor: 'api_key:k1',
      targetType: 'turn',
      details: {
        replayedTurnId: orig.id,
        originalTurnId: orig.id,
        fromSessionId: s.sessionId,
        forkSessionId: r.sessionId,
        overrides: ['model'],
      },
    });
    // The original keeps its turns, transcript and tool calls.
    expect(await env.db.turn.count({ where: { sessionId: s.sessionId } })).toBe(2);
    expect(await env.db.toolCall.count({ where: { turnId: orig.id } })).toBe(2);
  });

  it("replays a fork's copy as the turn it copies", async () => {
    const s = await seedTenantSession(env.db, 'replay-copy');
    const orig = await ended(s, {
      text: 'q',
      answer: 'a',
      calls,
      cost: '0.1',
      tokens: [1, 1],
      seconds: [0, 1],
    });
    const f1 = await forkSession(db, {
      tenantId: s.tenantId,
      sessionId: s.sessionId,
      turnId: orig.id,
      position: 'after',
    });
    const f2 = await forkSession(db, {
      tenantId: s.tenantId,
      sessionId: f1.sessionId,
      turnId: f1.copiedTurns[0].turnId,
      position: 'after',
    });
    const copy = f2.copiedTurns[0].turnId;

    const r = await replayTurn(db, { tenantId: s.tenantId, turnId: copy, actor: 'a', traceContext: {} });
    expect(r).toMatchObject({ originalTurnId: orig.id, replayedTurnId: copy });
    const fork = await env.db.session.findUniqueOrThrow({ where: { id: r.sessionId } });
    expect(fork.forkedFromSessionId).toBe(f2.sessionId);
    expect((await env.db.turn.findUniqueOrThrow({ where: { id: r.turnId } })).replayOfTurnId).toBe(orig.id);
  });

  it('writes nothing when it refuses: another tenant, a turn not ended, a paused tenant, a stopped agent', async () => {
    const s = await seedTenantSession(env.db, 'replay-refused');
    const orig = await ended(s, {
      text: 'q',
      answer: 'a',
      calls,
      cost: '0',
      tokens: [1, 1],
      seconds: [0, 1],
    });
    const running = await ended(s, {
      text: 'r',
      answer: '',
      calls: [],
      cost: '0',
      tokens: [0, 0],
      seconds: [2, 2],
      status: 'running',
    });
    const other = await seedTenantSession(env.db, 'someone-else');
    const before = await counts();
    const replay = (tenantId: string, turnId: string) =>
      replayTurn(db, { tenantId, turnId, actor: 'a', traceContext: {} });

    await expect(replay(other.tenantId, orig.id)).rejects.toMatchObject({ code: 'not_found' });
    await expect(replay(s.tenantId, newId())).rejects.toMatchObject({ code: 'not_found' });
    const notEnded = await replay(s.tenantId, running.id).catch((e: unknown) => e);
    expect(notEnded).toBeInstanceOf(AppError);
    expect(notEnded).toMatchObject({
      code: 'conflict',
      details: { reason: 'turn_not_ended', status: 'running' },
    });
    await env.db.tenant.update({ where: { id: s.tenantId }, data: { killSwitch: true } });
    await expect(replay(s.tenantId, orig.id)).rejects.toBeInstanceOf(TenantPausedError);
    await env.db.tenant.update({ where: { id: s.tenantId }, data: { killSwitch: false } });
    await env.db.agent.update({ where: { id: s.agentId }, data: { lifecycle: 'stopped' } });
    await expect(replay(s.tenantId, orig.id)).rejects.toBeInstanceOf(AgentStoppedError);
    await env.db.agent.update({ where: { id: s.agentId }, data: { lifecycle: 'active' } });
    expect(await counts()).toEqual(before);
  });

  it('compares a replay with its original: calls in the order asked, deltas, no diff before it ends', async () => {
    const s = await seedTenantSession(env.db, 'replay-compare');
    const orig = await ended(s, {
      text: 'q',
      answer: 'same',
      calls,
      cost: '0.5',
      tokens: [100, 10],
      seconds: [0, 4],
    });
    // The replay runs in a session of its own (a fork, as far as the comparison cares).
    const forkId = newId();
    await env.db.session.create({ data: { id: forkId, tenantId: s.tenantId, agentId: s.agentId } });
    const fs = { tenantId: s.tenantId, agentId: s.agentId, sessionId: forkId };
    const r = await ended(fs, {
      text: 'q',
      answer: 'same',
      calls: [
        { ...calls[0], id: 'r1' },
        { ...calls[1], id: 'r2', args: { body: 'hi', to: 'a' }, replayedFrom: orig.rows[1] },
      ],
      cost: '0.125',
      tokens: [80, 12],
      seconds: [10, 13],
      replayOf: orig.id,
    });
    // An approval waited on for 1 s does not count as latency.
    await env.db.approval.create({
      data: {
        id: newId(),
        tenantId: s.tenantId,
        sessionId: forkId,
        turnId: r.id,
        callId: 'rx',
        toolName: 'send',
        arguments: {},
        sideEffect: 'network',
        policy: 'replay_unrecorded_side_effect',
        status: 'approved',
        expiresAt: at(60),
        createdAt: at(11),
        decidedAt: at(12),
      },
    });

    const cmp = await readComparison(db, s.tenantId, r.id);
    expect(cmp).toEqual({
      original: {
        turnId: orig.id,
        sessionId: s.sessionId,
        status: 'completed',
        model: 'openai-chat/m',
        finalText: 'same',
        toolCalls: [
          {
            name: 'look',
            arguments: { q: 'x' },
            sideEffect: 'read_only',
            status: 'completed',
            replayed: false,
          },
          {
            name: 'send',
            arguments: { to: 'a', body: 'hi' },
            sideEffect: 'network',
            status: 'completed',
            replayed: false,
          },
        ],
        inputTokens: 100,
        outputTokens: 10,
        costUsd: '0.5',
        latencyMs: 4000,
      },
      replay: {
        turnId: r.id,
        sessionId: forkId,
        status: 'completed',
        model: 'openai-chat/m',
        finalText: 'same',
        toolCalls: [
          {
            name: 'look',
            arguments: { q: 'x' },
            sideEffect: 'read_only',
            status: 'completed',
            replayed: false,
          },
          {
            name: 'send',
            arguments: { body: 'hi', to: 'a' },
            sideEffect: 'network',
            status: 'completed',
            replayed: true,
          },
        ],
        inputTokens: 80,
        outputTokens: 12,
        costUsd: '0.125',
        latencyMs: 2000,
      },
      diff: {
        finalTextEqual: true,
        toolCallsEqual: true,
        inputTokensDelta: -20,
        outputTokensDelta: 2,
        costDeltaUsd: '-0.375',
        latencyDeltaMs: -2000,
      },
    });

    // Not a replay, another tenant's: nothing. A replay still running: as it stands, no diff.
    expect(await readComparison(db, s.tenantId, orig.id)).toBeUndefined();
    const other = await seedTenantSession(env.db, 'someone-else-2');
    expect(await readComparison(db, other.tenantId, r.id)).toBeUndefined();
    await env.db.turn.update({ where: { id: r.id }, data: { status: 'running', completedAt: null } });
    const running = await readComparison(db, s.tenantId, r.id);
    expect(running).toMatchObject({ replay: { status: 'running', latencyMs: null }, diff: null });
  });
});
