import { AppError, isEnded, newId } from '@switchboard/contracts';
import { auditInsert } from './audit-log';
import { json, ofTenant, sql, type SqlRunner, type SqlTransactor } from './sql';
import { ENDED, HOLDS_SESSION } from './turn/statuses';
import type { CommittedEvent } from './turn-store';

/**
 * Fork and rewind (issue 34, docs/adr/0053-fork-and-rewind.md).
 *
 * A fork is a new session of the same tenant and agent whose transcript is a prefix of another's: the
 * ended turns up to the fork point are copied (new ids, `copied_from_turn_id` set, usage and cost zero
 * so nothing counts twice, their tool calls not copied) with their messages (new ids, the same turn
 * seq and position), and nothing runs. A rewind marks a session's turns from one turn on `rewound_at`:
 * they stay in the journal and the transcript, the claim leaves them out of the model's history, and
 * memory recall leaves out what the post-turn hooks derived from them.
 *
 * Both are one transaction that locks the session row first (`FOR UPDATE`), as every statement that
 * changes a session's turns does (admission, the claim, a cancel): a refusal throws before anything is
 * written, and the transaction rolls back whatever a failure left half done.
 */

/** A session's own agent settings (docs/adr/0053): every turn of the session runs with them. */
export interface SessionOverrides {
  /** A model reference (`<provider>/<model>` or `hint:<route>`) over the agent's model and fallbacks. */
  model?: string;
  /** Instructions over the agent's: the system prompt is rendered with them on the session's first turn. */
  instructions?: string;
}

/** Where a fork starts: after the turn (it is copied) or before it (it is not). */
export type ForkPosition = 'after' | 'before';

export interface ForkSession {
  tenantId: string;
  sessionId: string;
  /** The fork point: an ended turn of the session. */
  turnId: string;
  position: ForkPosition;
  /** Over the parent session's own overrides (a fork inherits them). */
  overrides?: SessionOverrides;
  /**
   * The agent version the fork is pinned to (docs/adr/0061); absent: the parent's pin. A version the
   * agent does not have is a 400.
   */
  agentVersion?: number;
  /** The fork's title; default the parent's. */
  title?: string | null;
  /** Who asked, for the audit log (docs/adr/0030); absent: no entry (the caller writes its own). */
  actor?: string;
}

export interface ForkResult {
  /** The new session. */
  sessionId: string;
  /** The last turn seq of the copied prefix (the fork's `last_turn_seq`): its next turn takes the seq after. */
  forkedAtTurnSeq: number;
  /** The fork point's own seq in the parent. */
  turnSeq: number;
  /** The parent's session (as given). */
  parentSessionId: string;
  /** The copies, in seq order, and the turn each copies. */
  copiedTurns: { turnId: string; copiedFromTurnId: string; seq: number }[];
  /** Journaled: `session_forked` in the fork (its seq 1) and `session_fork_created` in the parent. */
  events: { fork: CommittedEvent[]; parent: CommittedEvent[] };
}

export interface RewindSession {
  tenantId: string;
  sessionId: string;
  /** The first turn left out: it and every later turn of the session are rewound. */
  turnId: string;
  /** Who asked, for the audit log; absent: no entry. */
  actor?: string;
}

export interface RewindResult {
  /** The turns rewound by this call, in seq order (the given one first). */
  rewoundTurnIds: string[];
  /** The session's compaction cut fell inside the rewound turns and was cleared. */
  compactionCleared: boolean;
  /** Journaled: `session_rewound`. */
  events: CommittedEvent[];
}

/** A session's lineage (GET /v1/sessions/:id/lineage). */
export interface SessionLineage {
  /**
   * The sessions it descends from, nearest first: each with the turn of that session the next one
   * down was forked at. A parent that no longer exists ends the chain (`missing: true`).
   */
  ancestors: {
    sessionId: string;
    forkedAtTurnId: string | null;
    forkedAtTurnSeq: number | null;
    createdAt: Date | null;
    missing: boolean;
  }[];
  /** Its forks, oldest first (at most `LINEAGE_CHILDREN_MAX`). */
  children: {
    sessionId: string;
    forkedAtTurnId: string | null;
    forkedAtTurnSeq: number | null;
    createdAt: Date;
  }[];
}

/** How many forks of a session the lineage lists; how many ancestors it follows. */
export const LINEAGE_CHILDREN_MAX = 500;
export const LINEAGE_ANCESTORS_MAX = 100;

interface LockedSession {
  id: string;
  agent_id: string;
  status: string;
  title: string | null;
  metadata: unknown;
  system_prompt: string | null;
  compaction: unknown;
  overrides: SessionOverrides | null;
  /** The session's pin (docs/adr/0061); null: the agent's latest, `agent_latest`. */
  agent_version: number | null;
  agent_latest: number;
  created_at: Date;
}

interface FoundTurn {
  id: string;
  seq: number;
  status: string;
  rewound_at: Date | null;
}

/** The session row, locked; a 404 when it is not the tenant's. */
async function lockSession(tx: SqlRunner, tenantId: string, sessionId: string): Promise<LockedSession> {
  const session = await tx.first<LockedSession>(sql`
    SELECT id, agent_id, status, title, metadata, system_prompt, compaction, overrides, agent_version,
      (SELECT a.version FROM agents a WHERE a.id = sessions.agent_id) AS agent_latest, created_at
    FROM sessions WHERE id = ${sessionId}::uuid AND ${ofTenant('tenant_id', tenantId)}
    FOR UPDATE`);
  if (!session) throw new AppError('not_found', 'session not found');
  return session;
}

/** The turn of the (locked) session, read after the lock; a 404 when it is not one of its turns. */
async function turnOf(tx: SqlRunner, sessionId: string, turnId: string): Promise<FoundTurn> {
  const turn = await tx.first<FoundTurn>(sql`
    SELECT id, seq, status, rewound_at FROM turns
    WHERE id = ${turnId}::uuid AND session_id = ${sessionId}::uuid`);
  if (!turn) throw new AppError('not_found', 'turn not found in this session', { turnId });
  return turn;
}

/** The stored compaction's cut (history.ts `StoredCompaction`), when it is one. */
function compactionCut(c: unknown): { headThroughSeq: number; keepFromSeq: number } | null {
  const v = c as { headThroughSeq?: unknown; keepFromSeq?: unknown } | null;
  if (!v || !Number.isInteger(v.headThroughSeq) || !Number.isInteger(v.keepFromSeq)) return null;
  return { headThroughSeq: v.headThroughSeq as number, keepFromSeq: v.keepFromSeq as number };
}

const EVENT_COLUMNS = sql`id, seq, type, turn_id AS "turnId", data, created_at AS "createdAt"`;

interface EventRow {
  id: string;
  seq: number;
  type: string;
  turnId: string | null;
  data: Record<string, unknown>;
  createdAt: Date;
}

const committed = (e: EventRow): CommittedEvent => ({
  id: e.id,
  seq: e.seq,
  type: e.type,
  turnId: e.turnId,
  data: e.data,
  createdAt: new Date(e.createdAt).toISOString(),
});

/** One event journaled in the (locked) session at its next seq. */
async function journal(
  tx: SqlRunner,
  a: {
    tenantId: string;
    sessionId: string;
    turnId: string | null;
    type: string;
    data: Record<string, unknown>;
  },
): Promise<CommittedEvent> {
  const row = await tx.first<EventRow>(sql`
    WITH s AS (
      UPDATE sessions SET last_event_seq = last_event_seq + 1, updated_at = now()
      WHERE id = ${a.sessionId}::uuid RETURNING last_event_seq AS seq
    )
    INSERT INTO events (id, tenant_id, session_id, turn_id, seq, type, data)
    SELECT ${newId()}::uuid, ${a.tenantId}::uuid, ${a.sessionId}::uuid, ${a.turnId}::uuid, s.seq, ${a.type},
      ${json(a.data)}::jsonb
    FROM s
    RETURNING ${EVENT_COLUMNS}`);
  if (!row) throw new Error(`journaling ${a.type} found no session ${a.sessionId}`);
  return committed(row);
}

/**
 * Forks the session at an ended turn (docs/adr/0053): a new session whose transcript is the prefix,
 * lineage recorded on it and journaled on both. The prefix is the session's ended turns with a seq up
 * to the fork point's (`after`) or below it (`before`), that were in the session's history then (not
 * rewound; at a rewound turn, those rewound with it or later). A turn of the prefix that has not ended
 * (a later-admitted turn of a higher priority band may have run first) is not copied. Allowed while
 * the session has a running turn: the fork point itself must have ended (else 409).
 *
 * Throws `AppError`: 404 for a session that is not the tenant's or a turn not in it, 409 for a fork
 * point that has not ended. Nothing is written then. `db` may be the pool or the caller's open
 * transaction (`within(tx)`): a replay forks and admits in one.
 */
export async function forkSession(db: SqlTransactor, a: ForkSession): Promise<ForkResult> {
  return db.transaction(async (tx) => {
    const parent = await lockSession(tx, a.tenantId, a.sessionId);
    const point = await turnOf(tx, parent.id, a.turnId);
    if (!isEnded(point.status)) {
      throw new AppError(
        'conflict',
        `the fork point must be a turn that has ended; this one is ${point.status}`,
        { reason: 'turn_not_ended', turnId: point.id, status: point.status },
      );
    }
    const boundary = a.position === 'after' ? point.seq : point.seq - 1;
    // What was the session's history at the fork point: not rewound, or (at a rewound turn) rewound
    // with it or after it (a turn rewound before it was no part of its history).
    const inHistory = point.rewound_at
      ? sql`(rewound_at IS NULL OR rewound_at >= ${point.rewound_at}::timestamptz)`
      : sql`rewound_at IS NULL`;
    const prefix = await tx.rows<{ id: string; seq: number; input_message_id: string }>(sql`
      SELECT id, seq, input_message_id FROM turns
      WHERE session_id = ${parent.id}::uuid AND seq <= ${boundary}::int AND status IN ${ENDED} AND ${inHistory}
      ORDER BY seq`);
    const turnIds = new Map(prefix.map((t) => [t.id, newId()]));
    const seqs = prefix.map((t) => t.seq);
    const inputs = prefix.map((t) => t.input_message_id);
    // The prefix's messages: every entry at a copied turn's seq, and each copied turn's input (an
    // interjection's input lives in the turn it was delivered into). Messages are written after their
    // session (the claim's margin): older partitions are not read (docs/adr/0044).
    const messages = await tx.rows<{ id: string }>(sql`
      SELECT id FROM messages
      WHERE session_id = ${parent.id}::uuid AND created_at >= ${parent.created_at}::timestamptz - interval '1 day'
        AND (turn_seq = ANY(${seqs}::int[]) OR id = ANY(${inputs}::uuid[]))`);
    const messageIds = new Map(messages.map((m) => [m.id, newId()]));
    const missing = prefix.find((t) => !messageIds.has(t.input_message_id));
    if (missing) {
      // Retention detached the partition that held it (docs/adr/0044): the prefix cannot be copied whole.
      throw new AppError('conflict', 'the transcript of the fork point is no longer held (retention)', {
        reason: 'transcript_retired',
        turnId: missing.id,
      });
    }

    const overrides = mergeOverrides(parent.overrides, a.overrides);
    const cut = compactionCut(parent.compaction);
    // The compaction's cut carries over when it lies wholly inside the prefix and the prefix is the
    // parent's current history (a rewound fork point's history had no such cut recorded).
    const compaction = cut && !point.rewound_at && cut.keepFromSeq <= boundary ? parent.compaction : null;
    // The fork keeps the parent's pin (docs/adr/0061) unless told another version; a fork that runs on
    // another version than the parent renders its system prompt again, with that version's instructions.
    const pin = a.agentVersion ?? parent.agent_version;
    if (a.agentVersion !== undefined) {
      const known = await tx.first<{ version: number }>(sql`
        SELECT version FROM agent_versions WHERE agent_id = ${parent.agent_id}::uuid AND version = ${a.agentVersion}::int`);
      if (!known) {
        const message = `unknown agent version: ${a.agentVersion}`;
        throw new AppError('validation_failed', message, { issues: [{ path: 'agentVersion', message }] });
      }
    }
    const otherVersion = (pin ?? parent.agent_latest) !== (parent.agent_version ?? parent.agent_latest);
    const forkId = newId();
    await tx.execute(sql`
      INSERT INTO sessions (id, tenant_id, agent_id, status, title, metadata, system_prompt, last_turn_seq,
        last_event_seq, compaction, forked_from_session_id, forked_at_turn_id, forked_at_turn_seq, overrides,
        agent_version, created_at, updated_at)
      VALUES (${forkId}::uuid, ${a.tenantId}::uuid, ${parent.agent_id}::uuid, 'active',
        ${a.title === undefined ? parent.title : a.title}, ${json(parent.metadata ?? {})}::jsonb,
        ${a.overrides?.instructions !== undefined || otherVersion ? null : parent.system_prompt}, ${boundary}::int, 0,
        ${json(compaction)}::jsonb, ${parent.id}::uuid, ${point.id}::uuid, ${boundary}::int,
        ${json(overrides)}::jsonb, ${pin}::int, now(), now())`);

    if (prefix.length > 0) {
      const oldTurns = [...turnIds.keys()];
      const newTurns = [...turnIds.values()];
      // Usage and cost are the original's (ADR 0007: counted once); the copy's hooks are settled and
      // its spend rolled up at once, so no post-turn hook or spend roll-up ever runs for it.
      await tx.execute(sql`
        INSERT INTO turns (id, tenant_id, session_id, agent_id, seq, input_message_id, status, priority, model,
          stop_reason, final_text, iterations, tool_call_count, failure, decision, run_count, client_tools,
          tool_choice, response_format, cancel_requested_at, cancel_reason, cancel_note, closure, continuation, created_at, started_at,
          completed_at, spend_rolled_up_at, hooks_settled_at, copied_from_turn_id, agent_version)
        SELECT m.new_id, t.tenant_id, ${forkId}::uuid, t.agent_id, t.seq, mi.new_id, t.status, t.priority, t.model,
          t.stop_reason, t.final_text, t.iterations, t.tool_call_count, t.failure, t.decision, t.run_count,
          t.client_tools, t.tool_choice, t.response_format, t.cancel_requested_at, t.cancel_reason, t.cancel_note,
          t.closure, t.continuation,
          t.created_at, t.started_at, t.completed_at, now(), now(), t.id, t.agent_version
        FROM unnest(${oldTurns}::uuid[], ${newTurns}::uuid[]) AS m(old_id, new_id)
          JOIN turns t ON t.id = m.old_id
          JOIN unnest(${[...messageIds.keys()]}::uuid[], ${[...messageIds.values()]}::uuid[]) AS mi(old_id, new_id)
            ON mi.old_id = t.input_message_id`);
      await tx.execute(sql`
        INSERT INTO messages (id, tenant_id, agent_id, session_id, turn_id, turn_seq, position, role, kind, origin,
          trust, authority_class, priority, delivery_surface, admission_context, body, tool_calls, tool_call_id,
          metadata, correlation_id, causation_id, work_item_id, source_refs, created_at)
        SELECT mi.new_id, m.tenant_id, m.agent_id, ${forkId}::uuid, tm.new_id, m.turn_seq, m.position, m.role,
          m.kind, m.origin, m.trust, m.authority_class, m.priority, m.delivery_surface, m.admission_context, m.body,
          m.tool_calls, m.tool_call_id, m.metadata || jsonb_build_object('copiedFrom', m.id::text),
          m.correlation_id, m.causation_id, m.work_item_id, m.source_refs, now()
        FROM unnest(${[...messageIds.keys()]}::uuid[], ${[...messageIds.values()]}::uuid[]) AS mi(old_id, new_id)
          JOIN messages m ON m.id = mi.old_id AND m.session_id = ${parent.id}::uuid
            AND m.created_at >= ${parent.created_at}::timestamptz - interval '1 day'
          LEFT JOIN unnest(${oldTurns}::uuid[], ${newTurns}::uuid[]) AS tm(old_id, new_id) ON tm.old_id = m.turn_id`);
    }

    const data = {
      fromSessionId: parent.id,
      fromTurnId: point.id,
      position: a.position,
      forkedAtTurnSeq: boundary,
      copiedTurns: prefix.length,
      ...(overrides?.model ? { model: overrides.model } : {}),
      ...(overrides?.instructions !== undefined ? { instructionsOverridden: true } : {}),
    };
    const forkEvent = await journal(tx, {
      tenantId: a.tenantId,
      sessionId: forkId,
      turnId: null,
      type: 'session_forked',
      data,
    });
    const parentEvent = await journal(tx, {
      tenantId: a.tenantId,
      sessionId: parent.id,
      turnId: point.id,
      type: 'session_fork_created',
      data: { forkSessionId: forkId, position: a.position, forkedAtTurnSeq: boundary },
    });
    if (a.actor) {
      await tx.execute(
        auditInsert({
          tenantId: a.tenantId,
          actor: a.actor,
          action: 'session.forked',
          targetType: 'session',
          targetId: forkId,
          details: {
            fromSessionId: parent.id,
            turnId: point.id,
            position: a.position,
            forkedAtTurnSeq: boundary,
            copiedTurns: prefix.length,
            overrides: Object.keys(a.overrides ?? {}),
          },
        }),
      );
    }
    return {
      sessionId: forkId,
      forkedAtTurnSeq: boundary,
      turnSeq: point.seq,
      parentSessionId: parent.id,
      copiedTurns: prefix.map((t) => ({ turnId: turnIds.get(t.id)!, copiedFromTurnId: t.id, seq: t.seq })),
      events: { fork: [forkEvent], parent: [parentEvent] },
    };
  });
}

/** The parent's overrides with the given ones over them; null when neither sets anything. */
export function mergeOverrides(
  parent: SessionOverrides | null | undefined,
  given: SessionOverrides | undefined,
): SessionOverrides | null {
  const merged: SessionOverrides = {};
  for (const source of [parent ?? {}, given ?? {}]) {
    if (typeof source.model === 'string') merged.model = source.model;
    if (typeof source.instructions === 'string') merged.instructions = source.instructions;
  }
  return Object.keys(merged).length > 0 ? merged : null;
}

/**
 * Rewinds the session to before a turn (docs/adr/0053): that turn and every later one are marked
 * `rewound_at` (never deleted), `session_rewound` is journaled, and a compaction cut inside them is
 * cleared. The session's turn seq goes on: a turn admitted after it takes the next seq, and its
 * history skips the rewound ones.
 *
 * Throws `AppError`: 404 for a session that is not the tenant's or a turn not in it; 409
 * `session_busy` while the session has a turn that has not ended (queued, running, waiting), since a
 * running turn's history already holds the turns to be left out; 409 for a turn already rewound or a
 * closed session. Nothing is written then.
 */
export async function rewindSession(db: SqlTransactor, a: RewindSession): Promise<RewindResult> {
  return db.transaction(async (tx) => {
    const session = await lockSession(tx, a.tenantId, a.sessionId);
    const turn = await turnOf(tx, session.id, a.turnId);
    if (session.status !== 'active') {
      throw new AppError('conflict', 'the session is closed: it cannot be rewound', {
        reason: 'session_closed',
      });
    }
    if (turn.rewound_at) {
      throw new AppError('conflict', 'the turn was already rewound', {
        reason: 'turn_rewound',
        turnId: turn.id,
        rewoundAt: turn.rewound_at.toISOString(),
      });
    }
    // A new statement after the lock: it sees every turn committed before the lock was granted.
    const busy = await tx.rows<{ id: string; status: string }>(sql`
      SELECT id, status FROM turns WHERE session_id = ${session.id}::uuid AND status IN ${HOLDS_SESSION}
      ORDER BY seq LIMIT 10`);
    if (busy.length > 0) {
      throw new AppError(
        'session_busy',
        'the session has a turn that has not ended: wait for it or cancel it, then rewind',
        { turns: busy.map((t) => ({ turnId: t.id, status: t.status })) },
      );
    }
    const rewound = await tx.rows<{ id: string; seq: number }>(sql`
      UPDATE turns SET rewound_at = now()
      WHERE session_id = ${session.id}::uuid AND seq >= ${turn.seq}::int AND rewound_at IS NULL
      RETURNING id, seq`);
    rewound.sort((x, y) => x.seq - y.seq);
    // The compaction's middle (between its head and its kept turns) was summarised from the history
    // then: a cut whose kept turns start after the rewind point summarised or kept rewound turns.
    const cut = compactionCut(session.compaction);
    const compactionCleared = cut !== null && cut.keepFromSeq > turn.seq;
    if (compactionCleared) {
      await tx.execute(sql`UPDATE sessions SET compaction = NULL WHERE id = ${session.id}::uuid`);
    }
    const event = await journal(tx, {
      tenantId: a.tenantId,
      sessionId: session.id,
      turnId: turn.id,
      type: 'session_rewound',
      data: {
        turnId: turn.id,
        seq: turn.seq,
        rewoundTurnIds: rewound.map((t) => t.id),
        ...(compactionCleared ? { compactionCleared: true } : {}),
      },
    });
    if (a.actor) {
      await tx.execute(
        auditInsert({
          tenantId: a.tenantId,
          actor: a.actor,
          action: 'session.rewound',
          targetType: 'session',
          targetId: session.id,
          details: { turnId: turn.id, seq: turn.seq, rewoundTurns: rewound.length },
        }),
      );
    }
    return { rewoundTurnIds: rewound.map((t) => t.id), compactionCleared, events: [event] };
  });
}

/** The session's lineage; undefined when the session is not the tenant's. */
export async function readLineage(
  db: SqlRunner,
  tenantId: string,
  sessionId: string,
): Promise<SessionLineage | undefined> {
  const row = await db.first<{
    found: boolean;
    ancestors: {
      sessionId: string;
      forkedAtTurnId: string | null;
      forkedAtTurnSeq: number | null;
      createdAt: string | null;
      missing: boolean;
    }[];
    children: {
      sessionId: string;
      forkedAtTurnId: string | null;
      forkedAtTurnSeq: number | null;
      createdAt: string;
    }[];
  }>(sql`
    WITH RECURSIVE me AS (
      SELECT id, tenant_id FROM sessions WHERE id = ${sessionId}::uuid AND ${ofTenant('tenant_id', tenantId)}
    ),
    up AS (
      -- Each step: the session above, and the turn of it the step below was forked at.
      SELECT s.forked_from_session_id AS parent_id, s.forked_at_turn_id AS at_turn, s.forked_at_turn_seq AS at_seq,
        1 AS depth
      FROM sessions s JOIN me ON s.id = me.id WHERE s.forked_from_session_id IS NOT NULL
      UNION ALL
      SELECT p.forked_from_session_id, p.forked_at_turn_id, p.forked_at_turn_seq, up.depth + 1
      FROM up JOIN sessions p ON p.id = up.parent_id AND p.tenant_id = ${tenantId}::uuid
      WHERE p.forked_from_session_id IS NOT NULL AND up.depth < ${LINEAGE_ANCESTORS_MAX}::int
    )
    SELECT EXISTS (SELECT 1 FROM me) AS found,
      (SELECT coalesce(json_agg(json_build_object('sessionId', up.parent_id, 'forkedAtTurnId', up.at_turn,
          'forkedAtTurnSeq', up.at_seq, 'createdAt', p.created_at, 'missing', p.id IS NULL) ORDER BY up.depth), '[]')
        FROM up LEFT JOIN sessions p ON p.id = up.parent_id AND p.tenant_id = ${tenantId}::uuid) AS ancestors,
      (SELECT coalesce(json_agg(json_build_object('sessionId', c.id, 'forkedAtTurnId', c.forked_at_turn_id,
          'forkedAtTurnSeq', c.forked_at_turn_seq, 'createdAt', c.created_at) ORDER BY c.created_at, c.id), '[]')
        FROM (SELECT c.* FROM sessions c JOIN me ON c.forked_from_session_id = me.id AND c.tenant_id = me.tenant_id
              ORDER BY c.created_at, c.id LIMIT ${LINEAGE_CHILDREN_MAX}::int) c) AS children`);
  if (!row?.found) return undefined;
  return {
    ancestors: row.ancestors.map((x) => ({ ...x, createdAt: x.createdAt ? new Date(x.createdAt) : null })),
    children: row.children.map((x) => ({ ...x, createdAt: new Date(x.createdAt) })),
  };
}
