import { sealJson } from '@switchboard/database';
import { json, ofTenant, sql, type Sql, type SqlDb, type SqlRunner } from './sql';
import { HOLDS_SESSION } from './turn/statuses';

/**
 * Admission's statements (docs/adr/0004, 0010): the message, its queued turn with the next
 * per-session seq, the `message_admitted` journal event and the session's counters, committed
 * together under the session row lock.
 *
 * - `multitask: enqueue` (the common case) is ONE statement in its own transaction, with or without
 *   an Idempotency-Key: the key's advisory lock and its earlier admission are looked up in the same
 *   statement, and the session UPDATE that takes the row lock gives the seqs the INSERTs use. Every
 *   refusal (unknown or foreign session, closed, key in flight, key already used) writes nothing
 *   and is told apart from the returned row.
 * - `multitask: reject` needs the busy check to see turns committed while it waited for the session
 *   lock, which one statement's snapshot cannot: BEGIN, [key lock], `FOR UPDATE`, the same
 *   statement with the busy check, COMMIT.
 *
 * The tenant's kill switch (the operator's pause, docs/adr/0030) is read by the same statement: a
 * paused tenant's input is refused (`paused`) and nothing is written, at no extra round trip. So is
 * the session's agent's lifecycle (docs/adr/0031): a stopped agent's input is refused (`stopped`).
 */

export interface AdmissionInsert {
  tenantId: string;
  sessionId: string;
  messageId: string;
  turnId: string;
  /** The `message_admitted` event's id. */
  eventId: string;
  kind: string;
  origin: unknown;
  trust: string;
  authorityClass: string;
  priority: string;
  deliverySurface: string;
  admissionContext: string;
  body: unknown;
  metadata: Record<string, unknown>;
  correlationId: string | null;
  causationId: string | null;
  /** Seed 002 `sourceRefs` (docs/adr/0060); absent: none. */
  sourceRefs?: Record<string, string>;
  idempotency?: { key: string; fingerprint: string };
  /** The admission's W3C trace context, stored on the turn so the worker joins its trace. */
  traceContext: unknown;
  /** `multitask: reject`: refuse while a turn of the session is queued or running. */
  rejectIfBusy: boolean;
  /** The structured output the turn's answer must have (docs/adr/0048); null or absent: text. */
  responseFormat?: unknown;
  /** Tools the request declared for the client to run (docs/adr/0047), kept with the turn. */
  clientTools?: unknown[];
  /** The tool choice forced for the turn's first round (docs/adr/0047); absent: auto. */
  toolChoice?: unknown;
  /** The turn this one replays (docs/adr/0054); absent for every other turn. */
  replayOfTurnId?: string;
}

/** The admission an earlier request with the same Idempotency-Key made. */
export interface PriorAdmission {
  messageId: string;
  turnId: string;
  status: string;
  /** Null for messages admitted before fingerprints were stored. */
  fingerprint: string | null;
}

export type AdmissionOutcome =
  | {
      kind: 'admitted';
      seq: number;
      eventSeq: number;
      agentId: string;
      /** The `message_admitted` event as journaled, for the live channel (docs/adr/0015). */
      event: { data: Record<string, unknown>; createdAt: string };
    }
  | { kind: 'prior'; prior: PriorAdmission }
  | { kind: 'in_flight' }
  /** The operator paused the tenant (docs/adr/0030): nothing was written. */
  | { kind: 'paused' }
  /** The session's agent is stopped (docs/adr/0031): nothing was written. */
  | { kind: 'stopped'; agentId: string }
  | { kind: 'not_found' }
  | { kind: 'closed' }
  | { kind: 'busy' };

interface AdmitRow {
  locked: boolean;
  prior: PriorAdmission | null;
  seq: number | null;
  event_seq: number | null;
  agent_id: string | null;
  created_at: Date;
  session_status: string | null;
  paused: boolean;
  stopped_agent: string | null;
}

/** The advisory lock of one key in one session, held by the admitting transaction. */
const keyLock = (sessionId: string, key: string) =>
  sql`pg_try_advisory_xact_lock(hashtextextended(${`idempotency:${sessionId}:${key}`}, 0))`;

const priorOf = (a: { tenantId: string; sessionId: string }, key: string) => sql`
  SELECT m.id AS "messageId", t.id AS "turnId", t.status, m.idempotency_fingerprint AS fingerprint
  FROM messages m JOIN turns t ON t.input_message_id = m.id
  WHERE m.session_id = ${a.sessionId}::uuid AND m.tenant_id = ${a.tenantId}::uuid
    AND m.idempotency_key = ${key}`;

/** The insert with its content sealed for the tenant (docs/adr/0067); itself when the mode is off. */
async function sealedInsert(a: AdmissionInsert): Promise<AdmissionInsert> {
  const body = await sealJson(a.tenantId, a.body);
  return body === a.body ? a : { ...a, body };
}

function admitStatement(a: AdmissionInsert, o: { takeKeyLock: boolean }): Sql {
  const key = a.idempotency?.key;
  const lock = key && o.takeKeyLock ? keyLock(a.sessionId, key) : sql`true`;
  const prior = key ? priorOf(a, key) : sql`SELECT NULL::uuid AS "messageId" WHERE false`;
  // A turn waiting on an approval keeps the session busy: it resumes before anything admitted now.
  const busy = a.rejectIfBusy
    ? sql`AND NOT EXISTS (SELECT 1 FROM turns WHERE session_id = ${a.sessionId}::uuid
        AND status IN ${HOLDS_SESSION})`
    : sql``;
  const event = admittedEvent(a);
  const paused = sql`EXISTS (SELECT 1 FROM tenants WHERE id = ${a.tenantId}::uuid AND kill_switch)`;
  // The stopped boundary (docs/adr/0031): a stopped agent's session admits nothing.
  const stoppedAgent = sql`(SELECT ag.id FROM sessions ss JOIN agents ag ON ag.id = ss.agent_id
    WHERE ss.id = ${a.sessionId}::uuid AND ${ofTenant('ss.tenant_id', a.tenantId)} AND ag.lifecycle = 'stopped')`;
  // The UPDATE's row lock orders admissions of one session; its RETURNING gives the INSERTs their
  // seqs. The lock CTE runs once (a volatile function is never inlined), before the row is locked.
  return sql`
    WITH l AS (SELECT ${lock} AS locked),
    prior AS (${prior}),
    s AS (
      UPDATE sessions SET last_turn_seq = last_turn_seq + 1, last_event_seq = last_event_seq + 1,
        updated_at = now()
      WHERE id = ${a.sessionId}::uuid AND ${ofTenant('tenant_id', a.tenantId)} AND status = 'active'
        AND (SELECT locked FROM l) AND NOT EXISTS (SELECT 1 FROM prior) AND NOT ${paused}
        AND ${stoppedAgent} IS NULL ${busy}
      RETURNING last_turn_seq AS seq, last_event_seq AS event_seq, agent_id
    ),
    m AS (
      INSERT INTO messages (id, tenant_id, agent_id, session_id, turn_id, turn_seq, position, role, kind, origin,
        trust, authority_class, priority, delivery_surface, admission_context, body, metadata, correlation_id,
        causation_id, idempotency_key, idempotency_fingerprint, source_refs)
      SELECT ${a.messageId}::uuid, ${a.tenantId}::uuid, s.agent_id, ${a.sessionId}::uuid, ${a.turnId}::uuid, s.seq,
        0, 'user', ${a.kind}, ${json(a.origin)}::jsonb, ${a.trust}, ${a.authorityClass}, ${a.priority},
        ${a.deliverySurface}, ${a.admissionContext}, ${json(a.body)}::jsonb, ${json(a.metadata)}::jsonb,
        ${a.correlationId}, ${a.causationId}, ${key ?? null}, ${a.idempotency?.fingerprint ?? null},
        ${json(a.sourceRefs ?? {})}::jsonb
      FROM s
    ),
    t AS (
      INSERT INTO turns (id, tenant_id, session_id, agent_id, seq, input_message_id, status, priority, trace_context,
        response_format, client_tools, tool_choice, replay_of_turn_id)
      SELECT ${a.turnId}::uuid, ${a.tenantId}::uuid, ${a.sessionId}::uuid, s.agent_id, s.seq, ${a.messageId}::uuid,
        'queued', ${a.priority}, ${json(a.traceContext ?? {})}::jsonb,
        ${a.responseFormat == null ? null : json(a.responseFormat)}::jsonb,
        ${a.clientTools?.length ? json(a.clientTools) : null}::jsonb,
        ${a.toolChoice == null ? null : json(a.toolChoice)}::jsonb, ${a.replayOfTurnId ?? null}::uuid
      FROM s
    ),
    e AS (
      INSERT INTO events (id, tenant_id, session_id, turn_id, seq, type, data)
      SELECT ${a.eventId}::uuid, ${a.tenantId}::uuid, ${a.sessionId}::uuid, ${a.turnId}::uuid, s.event_seq,
        'message_admitted', ${json(event)}::jsonb
      FROM s
    )
    SELECT (SELECT locked FROM l) AS locked,
      (SELECT row_to_json(prior) FROM prior LIMIT 1) AS prior,
      s.seq, s.event_seq, s.agent_id, now()::timestamptz(3) AS created_at,
      (SELECT status FROM sessions WHERE id = ${a.sessionId}::uuid AND ${ofTenant('tenant_id', a.tenantId)})
        AS session_status,
      ${paused} AS paused, ${stoppedAgent} AS stopped_agent
    FROM (SELECT 1) AS one LEFT JOIN s ON true`;
}

/** The `message_admitted` event's data (SPEC §6; libs/contracts events.ts). */
const admittedEvent = (a: AdmissionInsert) => ({
  messageId: a.messageId,
  kind: a.kind,
  authorityClass: a.authorityClass,
  priority: a.priority,
  deliverySurface: a.deliverySurface,
});

function outcome(a: AdmissionInsert, row: AdmitRow | undefined, rejectIfBusy: boolean): AdmissionOutcome {
  if (!row) throw new Error('admission statement returned no row');
  // A committed earlier admission wins over a lock held by a third request: it replays.
  if (row.prior) return { kind: 'prior', prior: row.prior };
  if (row.paused && row.seq === null) return { kind: 'paused' };
  if (row.stopped_agent && row.seq === null) return { kind: 'stopped', agentId: row.stopped_agent };
  if (!row.locked) return { kind: 'in_flight' };
  if (row.seq !== null && row.event_seq !== null && row.agent_id !== null) {
    return {
      kind: 'admitted',
      seq: row.seq,
      eventSeq: row.event_seq,
      agentId: row.agent_id,
      // now() is the transaction's time: the event row's created_at (to the ms, as the column).
      event: { data: admittedEvent(a), createdAt: new Date(row.created_at).toISOString() },
    };
  }
  if (row.session_status === null) return { kind: 'not_found' };
  if (row.session_status !== 'active') return { kind: 'closed' };
  if (rejectIfBusy) return { kind: 'busy' };
  throw new Error('admission wrote nothing for an active session');
}

/**
 * The `enqueue` admission inside the caller's open transaction: a sub-agent's spawn admits its child's
 * message and turn in the same transaction as the task row (docs/adr/0024).
 */
export async function admitWithin(tx: SqlRunner, a: AdmissionInsert): Promise<AdmissionOutcome> {
  const stored = await sealedInsert(a);
  return outcome(a, await tx.first<AdmitRow>(admitStatement(stored, { takeKeyLock: true })), false);
}

export class AdmissionStore {
  constructor(readonly db: SqlDb) {}

  /** Admits, or says why not; a refusal writes nothing. A key admitted meanwhile surfaces as 23505. */
  async admit(a: AdmissionInsert): Promise<AdmissionOutcome> {
    // The body as stored: sealed for the tenant when its encryption mode is on (docs/adr/0067).
    const stored = await sealedInsert(a);
    if (!a.rejectIfBusy) {
      return outcome(a, await this.db.first<AdmitRow>(admitStatement(stored, { takeKeyLock: true })), false);
    }
    return this.db.transaction(async (tx: SqlRunner) => {
      if (a.idempotency) {
        // Before the session lock, so a second request with the key is told "in flight" at once.
        const head = await tx.first<{ locked: boolean; prior: PriorAdmission | null }>(sql`
          SELECT ${keyLock(a.sessionId, a.idempotency.key)} AS locked,
            (SELECT row_to_json(p) FROM (${priorOf(a, a.idempotency.key)}) p LIMIT 1) AS prior`);
        if (head?.prior) return { kind: 'prior', prior: head.prior };
        if (!head?.locked) return { kind: 'in_flight' };
      }
      await tx.execute(sql`
        SELECT 1 FROM sessions WHERE id = ${a.sessionId}::uuid AND ${ofTenant('tenant_id', a.tenantId)} FOR UPDATE`);
      // A new statement: its snapshot sees every turn committed before the lock was granted.
      return outcome(a, await tx.first<AdmitRow>(admitStatement(stored, { takeKeyLock: false })), true);
    });
  }

  /** The admission made with this key in this session, if any. */
  async findByKey(
    a: { tenantId: string; sessionId: string },
    key: string,
  ): Promise<PriorAdmission | undefined> {
    return this.db.first<PriorAdmission>(priorOf(a, key));
  }
}
