import { AppError, newId } from '@switchboard/contracts';
import { poolOf } from '@switchboard/database';
import {
  createTestEnv,
  seedTenantSession,
  seedTurn,
  transcriptMessage,
  type SessionIds,
  type TestEnv,
} from '@switchboard/testing';
import { AdmissionStore, type AdmissionInsert } from './admission-store';
import { forkSession, readLineage, rewindSession } from './fork-store';
import { SqlDb, sql } from './sql';
import { claimNext } from './turn/claim';

/**
 * Fork and rewind on real Postgres (docs/adr/0053): what a fork copies (the ended prefix, usage zero,
 * tool calls not), its counters and lineage, the original left as it was; a rewind's turns left out of
 * the next claim's history while the seq goes on; every refusal writing nothing; a rewind racing an
 * admission under the session row's lock.
 */
jest.setTimeout(120_000);

describe('fork and rewind (store)', () => {
  let env: TestEnv;
  let db: SqlDb;

  beforeAll(async () => {
    env = await createTestEnv();
    db = new SqlDb(poolOf(env.db));
  });

  afterAll(async () => {
    await env?.cleanup();
  });

  /** A completed turn with its input, an assistant tool call, its result and the answer; its cost booked. */
  async function exchange(
    s: SessionIds,
    n: number,
    status: 'completed' | 'failed' | 'cancelled' = 'completed',
  ) {
    const inputMessageId = newId();
    const turn = await seedTurn(env.db, s, {
      inputMessageId,
      status,
      finalText: `answer ${n}`,
      startedAt: new Date(),
      completedAt: new Date(),
      inputTokens: 100 * n,
      outputTokens: 10 * n,
      costUsd: '0.5',
      costStatus: 'priced',
      attempts: [{ round: 0, model: 'm', attempt: 1, outcome: 'succeeded' }],
    });
    const call = { id: `call-${n}`, name: 'word_count', arguments: '{"text":"a b"}' };
    await env.db.message.createMany({
      data: [
        { ...transcriptMessage(s, turn, 0, 'user', `question ${n}`), id: inputMessageId },
        { ...transcriptMessage(s, turn, 1, 'assistant', ''), toolCalls: [call] },
        {
          ...transcriptMessage(s, turn, 2, 'tool', '{"words":2}'),
          toolCallId: call.id,
          metadata: { tool: 'word_count' },
        },
        transcriptMessage(s, turn, 3, 'assistant', `answer ${n}`),
      ],
    });
    await env.db.toolCall.create({
      data: {
        id: newId(),
        tenantId: s.tenantId,
        sessionId: s.sessionId,
        turnId: turn.id,
        callId: call.id,
        name: call.name,
        arguments: { text: 'a b' },
        sideEffect: 'read_only',
        status: 'completed',
        result: { words: 2 },
        idempotencyKey: `${turn.id}:${call.id}`,
      },
    });
    await env.db.session.update({
      where: { id: s.sessionId },
      data: { lastTurnSeq: turn.seq, systemPrompt: 'You are the original.' },
    });
    return turn;
  }

  async function sessionWith(
    turns: number,
    name = 'fork',
  ): Promise<SessionIds & { turns: { id: string; seq: number }[] }> {
    const s = await seedTenantSession(env.db, name);
    const made = [];
    for (let n = 1; n <= turns; n++) made.push(await exchange(s, n));
    return { ...s, turns: made };
  }

  const admission = () => new AdmissionStore(db);
  const admitInput = (s: SessionIds, text: string, o: Partial<AdmissionInsert> = {}): AdmissionInsert => ({
    tenantId: s.tenantId,
    sessionId: s.sessionId,
    messageId: newId(),
    turnId: newId(),
    eventId: newId(),
    kind: 'operator_prompt',
    origin: { kind: 'operator' },
    trust: 'trusted',
    authorityClass: 'operator_direct',
    priority: 'normal',
    deliverySurface: 'http_public_enqueue',
    admissionContext: 'control_authenticated',
    body: { type: 'text', text },
    metadata: {},
    correlationId: null,
    causationId: null,
    traceContext: {},
    rejectIfBusy: false,
    ...o,
  });

  /** The history the next claim of `turnId` loads: each earlier entry as `seq:role:text`. */
  async function historyOf(s: SessionIds, turnId: string): Promise<string[]> {
    const claim = await claimNext(db, {
      sessionId: s.sessionId,
      turnId,
      tenantId: s.tenantId,
      owner: 'test',
      lease: { token: newId(), ms: 10_000 },
    });
    expect(claim.next?.turn.id).toBe(turnId);
    return claim.next!.earlier.map((m) => {
      const body = m.body as { text?: string };
      return `${m.turnSeq}:${m.role}:${body.text ?? ''}`;
    });
  }

  /** Every row of the session a fork or rewind could touch, for byte-for-byte comparison. */
  async function snapshot(sessionId: string) {
    const q = (text: string) =>
      poolOf(env.db)
        .query(text, [sessionId])
        .then((r) => r.rows);
    return {
      messages: await q('SELECT * FROM messages WHERE session_id = $1 ORDER BY turn_seq, position'),
      turns: await q('SELECT * FROM turns WHERE session_id = $1 ORDER BY seq'),
      toolCalls: await q('SELECT * FROM tool_calls WHERE session_id = $1 ORDER BY id'),
    };
  }

  /** How many rows the tables a fork or rewind writes hold, and every turn's rewound mark. */
  async function counts() {
    const [row] = (
      await poolOf(env.db).query(`SELECT
        (SELECT count(*) FROM sessions)::int AS sessions, (SELECT count(*) FROM turns)::int AS turns,
        (SELECT count(*) FROM messages)::int AS messages, (SELECT count(*) FROM events)::int AS events,
        (SELECT count(*) FROM audit_events)::int AS audit,
        (SELECT count(*) FROM turns WHERE rewound_at IS NOT NULL)::int AS rewound,
        (SELECT coalesce(sum(last_event_seq), 0) FROM sessions)::int AS "eventSeqs"`)
    ).rows;
    return row as Record<string, number>;
  }

  async function refused(p: Promise<unknown>, status: number, code?: string): Promise<AppError> {
    const err = await p.then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(AppError);
    expect((err as AppError).status).toBe(status);
    if (code) expect((err as AppError).code).toBe(code);
    return err as AppError;
  }

  it('forks after a turn: the ended prefix copied with new ids and zero usage, counters and lineage set, the original untouched', async () => {
    const s = await sessionWith(3);
    const before = await snapshot(s.sessionId);
    const parentRow = await env.db.session.findUniqueOrThrow({ where: { id: s.sessionId } });

    const fork = await forkSession(db, {
      tenantId: s.tenantId,
      sessionId: s.sessionId,
      turnId: s.turns[1].id,
      position: 'after',
      actor: 'api_key:k1',
    });
    expect(fork).toMatchObject({ forkedAtTurnSeq: 2, turnSeq: 2, parentSessionId: s.sessionId });
    expect(fork.copiedTurns.map((t) => [t.seq, t.copiedFromTurnId])).toEqual([
      [1, s.turns[0].id],
      [2, s.turns[1].id],
    ]);

    // The original's transcript, turns and tool calls are byte for byte what they were.
    expect(await snapshot(s.sessionId)).toEqual(before);

    const f = await env.db.session.findUniqueOrThrow({ where: { id: fork.sessionId } });
    expect(f).toMatchObject({
      tenantId: s.tenantId,
      agentId: s.agentId,
      status: 'active',
      lastTurnSeq: 2,
      lastEventSeq: 1,
      forkedFromSessionId: s.sessionId,
      forkedAtTurnId: s.turns[1].id,
      forkedAtTurnSeq: 2,
      overrides: null,
      systemPrompt: 'You are the original.',
      inputTokens: 0,
      outputTokens: 0,
      parentSessionId: null,
    });
    expect(f.costUsd.toFixed()).toBe('0');

    const copies = await env.db.turn.findMany({
      where: { sessionId: fork.sessionId },
      orderBy: { seq: 'asc' },
    });
    expect(copies.map((t) => t.seq)).toEqual([1, 2]);
    for (const [i, c] of copies.entries()) {
      const orig = before.turns[i] as Record<string, unknown>;
      expect(c.id).not.toBe(orig.id);
      expect(c.copiedFromTurnId).toBe(orig.id);
      expect([c.status, c.finalText, c.stopReason]).toEqual([orig.status, orig.final_text, orig.stop_reason]);
      // Usage counted once: the original keeps it.
      expect([c.inputTokens, c.outputTokens, c.costUsd.toFixed(), c.costStatus, c.attempts]).toEqual([
        0,
        0,
        '0',
        null,
        [],
      ]);
      // No hook or spend roll-up will ever run for a copy.
      expect(c.hooksSettledAt).not.toBeNull();
      expect(c.spendRolledUpAt).not.toBeNull();
    }
    // Tool calls are not copied: the original turn's stay authoritative.
    expect(await env.db.toolCall.count({ where: { sessionId: fork.sessionId } })).toBe(0);

    const copied = await env.db.message.findMany({
      where: { sessionId: fork.sessionId },
      orderBy: [{ turnSeq: 'asc' }, { position: 'asc' }],
    });
    const originals = (before.messages as Record<string, unknown>[]).filter(
      (m) => (m.turn_seq as number) <= 2,
    );
    expect(copied).toHaveLength(originals.length);
    for (const [i, m] of copied.entries()) {
      const o = originals[i];
      expect(m.id).not.toBe(o.id);
      expect([m.turnSeq, m.position, m.role, m.body, m.toolCalls, m.toolCallId]).toEqual([
        o.turn_seq,
        o.position,
        o.role,
        o.body,
        o.tool_calls,
        o.tool_call_id,
      ]);
      expect(m.turnId).toBe(copies[m.turnSeq - 1].id);
      expect(m.metadata).toMatchObject({ copiedFrom: o.id });
      expect(m.idempotencyKey).toBeNull();
    }
    // Each copied turn's input is its own copy of the original's input.
    expect(copies.map((c) => copied.find((m) => m.id === c.inputMessageId)?.position)).toEqual([0, 0]);

    // Journaled on both sides; audited.
    const forkEvents = await env.db.event.findMany({ where: { sessionId: fork.sessionId } });
    expect(forkEvents.map((e) => [e.seq, e.type, e.turnId])).toEqual([[1, 'session_forked', null]]);
    expect(forkEvents[0].data).toMatchObject({
      fromSessionId: s.sessionId,
      fromTurnId: s.turns[1].id,
      position: 'after',
      forkedAtTurnSeq: 2,
      copiedTurns: 2,
    });
    const parentEvents = await env.db.event.findMany({ where: { sessionId: s.sessionId } });
    expect(parentEvents.map((e) => [e.seq, e.type, e.turnId])).toEqual([
      [parentRow.lastEventSeq + 1, 'session_fork_created', s.turns[1].id],
    ]);
    const audit = await env.db.auditEvent.findMany({ where: { tenantId: s.tenantId } });
    expect(audit.map((a) => [a.action, a.actor, a.targetId])).toEqual([
      ['session.forked', 'api_key:k1', fork.sessionId],
    ]);

    // The fork takes messages like any session: the next turn is seq 3 and sees exactly turns 1-2.
    const next = admitInput({ ...s, sessionId: fork.sessionId }, 'question in the fork');
    expect(await admission().admit(next)).toMatchObject({ kind: 'admitted', seq: 3 });
    expect(await historyOf({ ...s, sessionId: fork.sessionId }, next.turnId)).toEqual([
      '1:user:question 1',
      '1:assistant:',
      '1:tool:{"words":2}',
      '1:assistant:answer 1',
      '2:user:question 2',
      '2:assistant:',
      '2:tool:{"words":2}',
      '2:assistant:answer 2',
    ]);

    expect(await readLineage(db, s.tenantId, fork.sessionId)).toEqual({
      ancestors: [
        {
          sessionId: s.sessionId,
          forkedAtTurnId: s.turns[1].id,
          forkedAtTurnSeq: 2,
          createdAt: parentRow.createdAt,
          missing: false,
        },
      ],
      children: [],
    });
    expect(await readLineage(db, s.tenantId, s.sessionId)).toEqual({
      ancestors: [],
      children: [
        {
          sessionId: fork.sessionId,
          forkedAtTurnId: s.turns[1].id,
          forkedAtTurnSeq: 2,
          createdAt: f.createdAt,
        },
      ],
    });
    // Another tenant sees no lineage of it.
    const other = await seedTenantSession(env.db, 'fork-other');
    expect(await readLineage(db, other.tenantId, s.sessionId)).toBeUndefined();
  });

  it('forks before a turn with overrides: the turn left out, the prompt rendered again, the overrides inherited by a fork of the fork', async () => {
    const s = await sessionWith(3, 'fork-before');
    const fork = await forkSession(db, {
      tenantId: s.tenantId,
      sessionId: s.sessionId,
      turnId: s.turns[1].id,
      position: 'before',
      overrides: { model: 'scripted/other', instructions: 'Answer in haiku.' },
      title: 'haiku branch',
    });
    expect(fork.forkedAtTurnSeq).toBe(1);
    const f = await env.db.session.findUniqueOrThrow({ where: { id: fork.sessionId } });
    expect(f).toMatchObject({
      lastTurnSeq: 1,
      title: 'haiku branch',
      systemPrompt: null,
      overrides: { model: 'scripted/other', instructions: 'Answer in haiku.' },
    });
    expect(await env.db.turn.count({ where: { sessionId: fork.sessionId } })).toBe(1);

    const next = admitInput({ ...s, sessionId: fork.sessionId }, 'again');
    expect(await admission().admit(next)).toMatchObject({ kind: 'admitted', seq: 2 });
    const claim = await claimNext(db, {
      sessionId: fork.sessionId,
      turnId: next.turnId,
      tenantId: s.tenantId,
      owner: 'test',
      lease: { token: newId(), ms: 10_000 },
    });
    expect(claim.next?.session.overrides).toEqual({
      model: 'scripted/other',
      instructions: 'Answer in haiku.',
    });
    expect(claim.next?.earlier.map((m) => m.turnSeq)).toEqual([1, 1, 1, 1]);

    // Before the first turn: nothing copied, seq 0.
    const empty = await forkSession(db, {
      tenantId: s.tenantId,
      sessionId: fork.sessionId,
      turnId: (await env.db.turn.findFirstOrThrow({ where: { sessionId: fork.sessionId, seq: 1 } })).id,
      position: 'before',
      overrides: { model: 'scripted/third' },
    });
    expect(empty.forkedAtTurnSeq).toBe(0);
    const e = await env.db.session.findUniqueOrThrow({ where: { id: empty.sessionId } });
    // The parent's instructions stay; the model given wins.
    expect(e.overrides).toEqual({ model: 'scripted/third', instructions: 'Answer in haiku.' });
    expect(await env.db.turn.count({ where: { sessionId: empty.sessionId } })).toBe(0);
    expect((await readLineage(db, s.tenantId, empty.sessionId))?.ancestors.map((a) => a.sessionId)).toEqual([
      fork.sessionId,
      s.sessionId,
    ]);
  });

  it('copies only ended turns of the prefix, allowed while a turn runs; a fork point that has not ended is refused', async () => {
    const s = await sessionWith(2, 'fork-running');
    const running = await seedTurn(env.db, s, { status: 'running', startedAt: new Date() });
    const c0 = await counts();
    await refused(
      forkSession(db, {
        tenantId: s.tenantId,
        sessionId: s.sessionId,
        turnId: running.id,
        position: 'after',
      }),
      409,
      'conflict',
    );
    expect(await counts()).toEqual(c0);
    // A later-seq turn ended while an earlier one still runs (priority bands): forking after it
    // copies it and leaves the running one out.
    const later = await exchange(s, 4);
    const fork = await forkSession(db, {
      tenantId: s.tenantId,
      sessionId: s.sessionId,
      turnId: later.id,
      position: 'after',
    });
    expect(fork.copiedTurns.map((t) => t.seq)).toEqual([1, 2, 4]);
    expect(fork.forkedAtTurnSeq).toBe(4);
    expect(await env.db.turn.findUniqueOrThrow({ where: { id: running.id } })).toMatchObject({
      status: 'running',
    });
  });

  it('rewinds: the turns from the given one left out of the next history, the seq going on, the journal and transcript kept', async () => {
    const s = await sessionWith(3, 'rewind');
    const before = await snapshot(s.sessionId);
    const result = await rewindSession(db, {
      tenantId: s.tenantId,
      sessionId: s.sessionId,
      turnId: s.turns[1].id,
      actor: 'api_key:k2',
    });
    expect(result.rewoundTurnIds).toEqual([s.turns[1].id, s.turns[2].id]);
    expect(result.compactionCleared).toBe(false);
    const turns = await env.db.turn.findMany({ where: { sessionId: s.sessionId }, orderBy: { seq: 'asc' } });
    expect(turns.map((t) => t.rewoundAt !== null)).toEqual([false, true, true]);
    // Nothing deleted: the transcript is as it was.
    expect((await snapshot(s.sessionId)).messages).toEqual(before.messages);
    const events = await env.db.event.findMany({ where: { sessionId: s.sessionId } });
    expect(events.map((e) => [e.type, e.turnId])).toEqual([['session_rewound', s.turns[1].id]]);
    expect(events[0].data).toEqual({ turnId: s.turns[1].id, seq: 2, rewoundTurnIds: result.rewoundTurnIds });
    expect(
      (await env.db.auditEvent.findMany({ where: { tenantId: s.tenantId } })).map((a) => a.action),
    ).toEqual(['session.rewound']);

    const next = admitInput(s, 'after the rewind');
    expect(await admission().admit(next)).toMatchObject({ kind: 'admitted', seq: 4 });
    expect(await historyOf(s, next.turnId)).toEqual([
      '1:user:question 1',
      '1:assistant:',
      '1:tool:{"words":2}',
      '1:assistant:answer 1',
    ]);
  });

  it('clears a compaction cut inside the rewound turns and keeps one before them', async () => {
    const s = await sessionWith(5, 'rewind-compaction');
    const cut = { headThroughSeq: 1, keepFromSeq: 3, droppedMessages: 4, summary: 'turn 2 was about words' };
    await env.db.session.update({ where: { id: s.sessionId }, data: { compaction: cut } });
    // The kept turns start at 3, before the rewind point 4: the summary is of turn 2, still history.
    const kept = await rewindSession(db, {
      tenantId: s.tenantId,
      sessionId: s.sessionId,
      turnId: s.turns[3].id,
    });
    expect(kept.compactionCleared).toBe(false);
    expect((await env.db.session.findUniqueOrThrow({ where: { id: s.sessionId } })).compaction).toEqual(cut);
    // Rewinding to 2: the summary stood for a rewound turn.
    const cleared = await rewindSession(db, {
      tenantId: s.tenantId,
      sessionId: s.sessionId,
      turnId: s.turns[1].id,
    });
    expect(cleared).toMatchObject({
      compactionCleared: true,
      rewoundTurnIds: [s.turns[1].id, s.turns[2].id],
    });
    expect((await env.db.session.findUniqueOrThrow({ where: { id: s.sessionId } })).compaction).toBeNull();
    const events = await env.db.event.findMany({
      where: { sessionId: s.sessionId },
      orderBy: { seq: 'asc' },
    });
    expect(events.map((e) => (e.data as { compactionCleared?: boolean }).compactionCleared ?? false)).toEqual(
      [false, true],
    );
  });

  it('forks at a rewound turn with the history it had then', async () => {
    const s = await sessionWith(3, 'fork-rewound');
    await rewindSession(db, { tenantId: s.tenantId, sessionId: s.sessionId, turnId: s.turns[1].id });
    const t4 = await exchange(s, 4);
    const t5 = await exchange(s, 5);
    await rewindSession(db, { tenantId: s.tenantId, sessionId: s.sessionId, turnId: t5.id });
    // Turn 5's history when it ran: 1 and 4 (2 and 3 had been rewound before it), and itself.
    const at5 = await forkSession(db, {
      tenantId: s.tenantId,
      sessionId: s.sessionId,
      turnId: t5.id,
      position: 'after',
    });
    expect(at5.copiedTurns.map((t) => t.copiedFromTurnId)).toEqual([s.turns[0].id, t4.id, t5.id]);
    // Turn 3's: 1, 2 and itself (rewound together).
    const at3 = await forkSession(db, {
      tenantId: s.tenantId,
      sessionId: s.sessionId,
      turnId: s.turns[2].id,
      position: 'after',
    });
    expect(at3.copiedTurns.map((t) => t.copiedFromTurnId)).toEqual(s.turns.map((t) => t.id));
    // The copies are the fork's history: none is rewound there.
    const copies = await env.db.turn.findMany({
      where: { sessionId: { in: [at5.sessionId, at3.sessionId] } },
    });
    expect(copies.every((t) => t.rewoundAt === null)).toBe(true);
    // After turn 4 (not rewound): the session's history up to it, 1 and 4.
    const at4 = await forkSession(db, {
      tenantId: s.tenantId,
      sessionId: s.sessionId,
      turnId: t4.id,
      position: 'after',
    });
    expect(at4.copiedTurns.map((t) => t.seq)).toEqual([1, 4]);
  });

  it('refuses, writing nothing: another tenant, a turn of another session, an unknown turn, a busy session, a turn already rewound, a closed session', async () => {
    const s = await sessionWith(2, 'refuse');
    const sibling = await sessionWith(1, 'refuse-sibling');
    const otherTenant = await seedTenantSession(env.db, 'refuse-other');
    const fork = (over: Partial<Parameters<typeof forkSession>[1]>) =>
      forkSession(db, {
        tenantId: s.tenantId,
        sessionId: s.sessionId,
        turnId: s.turns[0].id,
        position: 'after',
        actor: 'a',
        ...over,
      });
    const rewind = (over: Partial<Parameters<typeof rewindSession>[1]>) =>
      rewindSession(db, {
        tenantId: s.tenantId,
        sessionId: s.sessionId,
        turnId: s.turns[0].id,
        actor: 'a',
        ...over,
      });

    const c0 = await counts();
    await refused(fork({ tenantId: otherTenant.tenantId }), 404);
    await refused(fork({ turnId: sibling.turns[0].id }), 404);
    await refused(fork({ turnId: newId() }), 404);
    await refused(rewind({ tenantId: otherTenant.tenantId }), 404);
    await refused(rewind({ turnId: sibling.turns[0].id }), 404);
    await refused(rewind({ turnId: newId() }), 404);
    expect(await counts()).toEqual(c0);

    // A queued turn (or a running or waiting one): 409 session_busy, nothing rewound.
    const queued = admitInput(s, 'pending');
    await admission().admit(queued);
    const c1 = await counts();
    const busy = await refused(rewind({}), 409, 'session_busy');
    expect(busy.details).toEqual({ turns: [{ turnId: queued.turnId, status: 'queued' }] });
    for (const status of ['running', 'awaiting_approval', 'awaiting_client_tool']) {
      await env.db.turn.update({ where: { id: queued.turnId }, data: { status } });
      await refused(rewind({}), 409, 'session_busy');
    }
    expect(await counts()).toEqual(c1);
    await env.db.turn.update({
      where: { id: queued.turnId },
      data: { status: 'cancelled', completedAt: new Date() },
    });

    await rewind({ turnId: s.turns[1].id });
    const c2 = await counts();
    const again = await refused(rewind({ turnId: s.turns[1].id }), 409, 'conflict');
    expect(again.details).toMatchObject({ reason: 'turn_rewound', turnId: s.turns[1].id });
    await env.db.session.update({ where: { id: s.sessionId }, data: { status: 'closed' } });
    await refused(rewind({}), 409, 'conflict');
    expect(await counts()).toEqual(c2);
  });

  it('orders a rewind and an admission racing for one session under its row lock: never a new turn rewound', async () => {
    for (let round = 0; round < 6; round++) {
      const s = await sessionWith(2, `race-${round}`);
      // Both wait on the session row held here, then go in whichever order Postgres grants it.
      const holder = await poolOf(env.db).connect();
      await holder.query('BEGIN');
      await holder.query('SELECT 1 FROM sessions WHERE id = $1 FOR UPDATE', [s.sessionId]);
      const input = admitInput(s, `racing ${round}`);
      const racers =
        round % 2 === 0
          ? [
              rewindSession(db, { tenantId: s.tenantId, sessionId: s.sessionId, turnId: s.turns[1].id }),
              admission().admit(input),
            ]
          : [
              admission().admit(input),
              rewindSession(db, { tenantId: s.tenantId, sessionId: s.sessionId, turnId: s.turns[1].id }),
            ];
      const settled = Promise.allSettled(racers);
      await new Promise((r) => setTimeout(r, 100));
      await holder.query('COMMIT');
      holder.release();
      const outcomes = await settled;
      const rewindOutcome = outcomes[round % 2 === 0 ? 0 : 1];
      const admitted = await env.db.turn.findUniqueOrThrow({ where: { id: input.turnId } });
      expect(admitted.seq).toBe(3);
      // The admitted turn is never rewound.
      expect(admitted.rewoundAt).toBeNull();
      const rewound = await env.db.turn.findMany({
        where: { sessionId: s.sessionId, rewoundAt: { not: null } },
      });
      if (rewindOutcome.status === 'fulfilled') {
        // The rewind went first: the admission came after it, with the next seq, not rewound.
        expect(rewound.map((t) => t.id)).toEqual([s.turns[1].id]);
      } else {
        // The admission went first: the session was busy, nothing rewound.
        expect((rewindOutcome.reason as AppError).code).toBe('session_busy');
        expect(rewound).toEqual([]);
      }
    }
  });

  it('lists the events of both sides in their own seq order, gap-free', async () => {
    const s = await sessionWith(1, 'seqs');
    await env.db.session.update({ where: { id: s.sessionId }, data: { lastEventSeq: 7 } });
    const f1 = await forkSession(db, {
      tenantId: s.tenantId,
      sessionId: s.sessionId,
      turnId: s.turns[0].id,
      position: 'after',
    });
    const f2 = await forkSession(db, {
      tenantId: s.tenantId,
      sessionId: s.sessionId,
      turnId: s.turns[0].id,
      position: 'before',
    });
    expect(f1.events.parent.map((e) => e.seq)).toEqual([8]);
    expect(f2.events.parent.map((e) => e.seq)).toEqual([9]);
    expect([f1.events.fork[0].seq, f2.events.fork[0].seq]).toEqual([1, 1]);
    const rows = await db.rows<{ seq: number }>(
      sql`SELECT seq FROM events WHERE session_id = ${s.sessionId}::uuid ORDER BY seq`,
    );
    expect(rows.map((r) => r.seq)).toEqual([8, 9]);
  });
});
