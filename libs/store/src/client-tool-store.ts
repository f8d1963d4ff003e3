import { isUuid, newId } from '@switchboard/contracts';
import { sealText } from '@switchboard/database';
import { queueWhenSettled } from './approval-store';
import { json, sql, type SqlDb, type SqlRunner } from './sql';
import type { CommittedEvent } from './turn-store';

/**
 * Client tool waits (docs/adr/0047): approvals rows of kind `client_tool`, written by the wait
 * checkpoint, answered here. The id the client sees for a call is the row's (`call_<uuid without
 * dashes>`): unique across tenants and turns, so a stateless request carrying it finds its turn.
 * An answer locks the session row first, as every statement changing a turn's status does.
 */

/** The call id handed to the client for a client tool wait row. */
export const clientCallId = (waitId: string): string => `call_${waitId.replace(/-/g, '')}`;

/** The wait row a client call id names; undefined for an id that is not one of ours. */
export function waitIdOf(callId: string): string | undefined {
  const m = /^call_([0-9a-f]{32})$/.exec(callId);
  if (!m) return undefined;
  const h = m[1];
  const id = `${h.slice(0, 8)}-${h.slice(8, 12)}-${h.slice(12, 16)}-${h.slice(16, 20)}-${h.slice(20)}`;
  return isUuid(id) ? id : undefined;
}

/** One pending (or answered) client tool call, as a protocol hands it out. */
export interface ClientToolCall {
  /** The id the client answers (`call_…`). */
  callId: string;
  /** The model's own id of the call. */
  modelCallId: string;
  name: string;
  /** The JSON arguments as the model wrote them. */
  arguments: string;
  status: string;
  expiresAt: Date;
}

export type AnswerOutcome =
  /** Answered now; `resumed` when nothing else of the turn is pending (the turn is `queued` again). */
  | {
      kind: 'answered';
      tenantId: string;
      sessionId: string;
      turnId: string;
      resumed: boolean;
      /** A wait row settled now: the resume job's id suffix (unique: a row is settled once). */
      resumeId: string;
      priority: string;
      traceContext: unknown;
      events: CommittedEvent[];
    }
  /**
   * The same outputs were stored before (a replayed request): nothing changed. `afterSeq`: the
   * journal seq that answer committed (its last `client_tool_answered`), what a first answer gave.
   */
  | { kind: 'replayed'; turnId: string; sessionId: string; afterSeq: number }
  /** Ids that are not a pending or answered call of the tenant (or of the named turn). */
  | { kind: 'unknown'; callIds: string[] }
  /** Pending calls of the turn the answer left out: all of them are answered at once. */
  | { kind: 'missing'; callIds: string[] }
  /** The ids belong to different turns. */
  | { kind: 'several_turns'; callIds: string[] }
  /** Answered before with another output, expired, cancelled, or the turn no longer waits. */
  | {
      kind: 'conflict';
      callIds: string[];
      why: 'answered_otherwise' | 'expired' | 'cancelled' | 'turn_not_waiting';
    };

interface WaitRow {
  id: string;
  tenant_id: string;
  session_id: string;
  turn_id: string;
  call_id: string;
  tool_name: string;
  arguments: unknown;
  status: string;
  output: string | null;
  expires_at: Date;
  expired: boolean;
  turn_status: string;
  priority: string;
  trace_context: unknown;
}

/** A turn that waits on the client (alone or beside a person's decision). */
const CLIENT_WAITING = ['awaiting_client_tool', 'awaiting_approval'];

export class ClientToolStore {
  constructor(readonly db: SqlDb) {}

  /** The client tool calls of a turn (pending first), for a protocol to hand out. */
  async calls(tenantId: string, turnId: string): Promise<ClientToolCall[]> {
    if (!isUuid(turnId)) return [];
    const rows = await this.db.rows<WaitRow>(sql`
      SELECT id, call_id, tool_name, arguments, status, expires_at FROM approvals
      WHERE turn_id = ${turnId}::uuid AND tenant_id = ${tenantId}::uuid AND kind = 'client_tool'
      ORDER BY created_at, id`);
    return rows.map(toCall);
  }

  /**
   * Answers client tool calls with their outputs, all or nothing: every id must be a call of the
   * tenant (of `turnId` when given), all of one turn, and every pending call of that turn answered.
   * The same outputs again answer `replayed`; another output for an answered call is a conflict.
   */
  async answer(a: {
    tenantId: string;
    turnId?: string;
    /** The calls must be of this session's turn (a request that names its session). */
    sessionId?: string;
    results: { callId: string; output: string }[];
    answeredBy: string;
  }): Promise<AnswerOutcome> {
    const ids = a.results.map((r) => r.callId);
    const waitIds = new Map(ids.map((id) => [id, waitIdOf(id)]));
    const unparsed = ids.filter((id) => waitIds.get(id) === undefined);
    if (unparsed.length > 0) return { kind: 'unknown', callIds: unparsed };
    return this.db.transaction(async (tx) => {
      const found = await tx.rows<{ id: string; session_id: string; turn_id: string }>(sql`
        SELECT id, session_id, turn_id FROM approvals
        WHERE id = ANY(${[...waitIds.values()] as string[]}::uuid[]) AND tenant_id = ${a.tenantId}::uuid
          AND kind = 'client_tool' ${a.turnId ? sql`AND turn_id = ${a.turnId}::uuid` : sql``}
          ${a.sessionId ? sql`AND session_id = ${a.sessionId}::uuid` : sql``}`);
      const foundIds = new Set(found.map((r) => r.id));
      const unknown = ids.filter((id) => !foundIds.has(waitIds.get(id) as string));
      if (unknown.length > 0) return { kind: 'unknown', callIds: unknown };
      const turns = new Set(found.map((r) => r.turn_id));
      if (turns.size > 1) return { kind: 'several_turns', callIds: ids };
      const { session_id: sessionId, turn_id: turnId } = found[0];
      await tx.execute(sql`SELECT 1 FROM sessions WHERE id = ${sessionId}::uuid FOR UPDATE`);
      // A new statement after the lock: it sees whatever committed before the lock was granted.
      const rows = await lockedRows(tx, turnId);
      const byId = new Map(rows.map((r) => [r.id, r]));
      const answers = a.results.map((r) => ({
        ...r,
        row: byId.get(waitIds.get(r.callId) as string) as WaitRow,
      }));
      const settled = answers.filter((x) => x.row.status !== 'pending');
      if (settled.length > 0) {
        const otherwise = settled.filter((x) => x.row.status !== 'answered' || x.row.output !== x.output);
        if (otherwise.length === 0 && settled.length === answers.length) {
          const answeredAt = await tx.first<{ seq: number | null }>(sql`
            SELECT max(seq)::int AS seq FROM events
            WHERE session_id = ${sessionId}::uuid AND turn_id = ${turnId}::uuid
              AND type = 'client_tool_answered' AND data->>'callId' = ANY(${ids}::text[])`);
          return { kind: 'replayed', turnId, sessionId, afterSeq: answeredAt?.seq ?? 0 };
        }
        const expired = settled.filter((x) => x.row.status === 'expired');
        const cancelled = settled.filter((x) => x.row.status === 'cancelled');
        if (expired.length > 0) return conflict(expired, 'expired');
        if (cancelled.length > 0) return conflict(cancelled, 'cancelled');
        return conflict(otherwise.length > 0 ? otherwise : settled, 'answered_otherwise');
      }
      const turn = rows[0];
      if (!CLIENT_WAITING.includes(turn.turn_status)) return conflict(answers, 'turn_not_waiting');
      const late = answers.filter((x) => x.row.expired);
      if (late.length > 0) return conflict(late, 'expired');
      const answered = new Set(answers.map((x) => x.row.id));
      const missing = rows.filter((r) => r.status === 'pending' && !answered.has(r.id));
      if (missing.length > 0) return { kind: 'missing', callIds: missing.map((r) => clientCallId(r.id)) };
      const outcome = await settle(
        tx,
        turn,
        answers.map((x) => ({ row: x.row, output: x.output })),
        'answered',
        a.answeredBy,
      );
      return { kind: 'answered', ...outcome };
    });
  }

  /** Turns with a pending client tool call past its expiry, oldest first: what the maintenance sweep expires. */
  async due(limit = 100): Promise<string[]> {
    const rows = await this.db.rows<{ turn_id: string }>(sql`
      SELECT ap.turn_id FROM approvals ap JOIN turns t ON t.id = ap.turn_id
      WHERE ap.status = 'pending' AND ap.kind = 'client_tool' AND ap.expires_at <= now()
        AND t.status IN ('awaiting_client_tool', 'awaiting_approval')
      GROUP BY ap.turn_id ORDER BY min(ap.expires_at) LIMIT ${limit}::int`);
    return rows.map((r) => r.turn_id);
  }

  /**
   * Expires a turn's pending client tool calls past their time (docs/adr/0047): each is answered
   * `expired`, and the turn, when nothing else is pending, is queued to end `client_tool_timeout`.
   * Undefined when nothing was due any more (answered or cancelled meanwhile).
   */
  async expire(turnId: string): Promise<Extract<AnswerOutcome, { kind: 'answered' }> | undefined> {
    return this.db.transaction(async (tx) => {
      const found = await tx.first<{ session_id: string }>(sql`
        SELECT session_id FROM turns WHERE id = ${turnId}::uuid`);
      if (!found) return undefined;
      await tx.execute(sql`SELECT 1 FROM sessions WHERE id = ${found.session_id}::uuid FOR UPDATE`);
      const rows = await lockedRows(tx, turnId);
      const due = rows.filter((r) => r.status === 'pending' && r.expired);
      if (due.length === 0 || !CLIENT_WAITING.includes(rows[0].turn_status)) return undefined;
      const outcome = await settle(
        tx,
        rows[0],
        due.map((row) => ({ row, output: null })),
        'expired',
        'system',
      );
      return { kind: 'answered', ...outcome };
    });
  }
}

function toCall(
  r: Pick<WaitRow, 'id' | 'call_id' | 'tool_name' | 'arguments' | 'status' | 'expires_at'>,
): ClientToolCall {
  return {
    callId: clientCallId(r.id),
    modelCallId: r.call_id,
    name: r.tool_name,
    arguments: typeof r.arguments === 'string' ? r.arguments : JSON.stringify(r.arguments ?? {}),
    status: r.status,
    expiresAt: new Date(r.expires_at),
  };
}

const conflict = (
  xs: { row: WaitRow }[],
  why: Extract<AnswerOutcome, { kind: 'conflict' }>['why'],
): AnswerOutcome => ({ kind: 'conflict', callIds: xs.map((x) => clientCallId(x.row.id)), why });

/** The turn's client tool rows, locked, with the turn's status. */
function lockedRows(tx: SqlRunner, turnId: string): Promise<WaitRow[]> {
  return tx.rows<WaitRow>(sql`
    SELECT ap.id, ap.tenant_id, ap.session_id, ap.turn_id, ap.call_id, ap.tool_name, ap.arguments, ap.status,
      ap.output, ap.expires_at, ap.expires_at <= now() AS expired, t.status AS turn_status, t.priority,
      t.trace_context
    FROM approvals ap JOIN turns t ON t.id = ap.turn_id
    WHERE ap.turn_id = ${turnId}::uuid AND ap.kind = 'client_tool'
    ORDER BY ap.created_at, ap.id FOR UPDATE OF ap`);
}

/**
 * Stores the answers (or expiries), journals one `client_tool_answered` per call, and when nothing
 * of the turn is pending any more puts it back to `queued` (its run state kept) for one resume job.
 */
async function settle(
  tx: SqlRunner,
  turn: WaitRow,
  answers: { row: WaitRow; output: string | null }[],
  status: 'answered' | 'expired',
  by: string,
): Promise<Omit<Extract<AnswerOutcome, { kind: 'answered' }>, 'kind'>> {
  for (const { row, output } of answers) {
    // The client's result is content: sealed for an encrypting tenant (docs/adr/0067).
    const stored = await sealText(turn.tenant_id, output);
    await tx.execute(sql`
      UPDATE approvals SET status = ${status}, output = ${stored}::text, decided_by = ${by}, decided_at = now()
      WHERE id = ${row.id}::uuid AND status = 'pending'`);
  }
  const resumed = await queueWhenSettled(tx, turn.turn_id);
  const events: CommittedEvent[] = [];
  for (const { row } of answers) {
    const data = {
      callId: clientCallId(row.id),
      modelCallId: row.call_id,
      name: row.tool_name,
      outcome: status,
      resumed,
    };
    events.push(
      ...(await tx.rows<CommittedEvent>(sql`
        WITH s AS (
          UPDATE sessions SET last_event_seq = last_event_seq + 1 WHERE id = ${turn.session_id}::uuid
          RETURNING last_event_seq AS seq
        )
        INSERT INTO events (id, tenant_id, session_id, turn_id, seq, type, data)
        SELECT ${newId()}::uuid, ${turn.tenant_id}::uuid, ${turn.session_id}::uuid, ${turn.turn_id}::uuid, s.seq,
          'client_tool_answered', ${json(data)}::jsonb
        FROM s
        RETURNING id, seq, type, turn_id AS "turnId", data, created_at AS "createdAt"`)),
    );
  }
  return {
    tenantId: turn.tenant_id,
    sessionId: turn.session_id,
    turnId: turn.turn_id,
    resumed,
    resumeId: answers[0].row.id,
    priority: turn.priority,
    traceContext: turn.trace_context,
    events,
  };
}
