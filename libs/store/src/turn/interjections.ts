import { json, sql, type SqlDb, type SqlRunner } from '../sql';
import type { CommittedEvent } from './checkpoint-rows';
import { leaseExpiry, type Lease } from './lease';
import { PENDING_INTERJECTION } from './statuses';

/** An interjection delivered into a running turn: its message, now part of that turn's transcript. */
export interface DeliveredInterjection {
  messageId: string;
  kind: string;
  origin: unknown;
  trust: string;
  authorityClass: string;
  priority: string;
  body: unknown;
  metadata: unknown;
}

export interface DeliverInterjections {
  tenantId: string;
  sessionId: string;
  turnId: string;
  turnSeq: number;
  lease: Lease;
  fromPosition: number;
}

/**
 * Delivers the session's pending interjections into its running turn (docs/adr/0014), in one
 * transaction fenced by the lease: each interject turn (queued, never started, not cancelled) ends
 * `completed` with stop reason `interjected`, its input message moves into the running turn's
 * transcript at `fromPosition` onwards (so the next provider call, and any resumed run, sees it), and
 * `interjection_delivered` (on the running turn) and the interject turn's `turn_completed` are
 * journaled. Returns the delivered messages in order and the committed events; null when the lease
 * was lost.
 */
export async function deliverInterjections(
  db: SqlDb,
  a: DeliverInterjections,
): Promise<{ messages: DeliveredInterjection[]; events: CommittedEvent[] } | null> {
  return db.transaction(async (tx) => {
    const fenced = await tx.execute(sql`
      UPDATE sessions SET lease_expires_at = ${leaseExpiry(a.lease)}
      WHERE id = ${a.sessionId}::uuid AND lease_token = ${a.lease.token}::uuid`);
    if (fenced !== 1) return null;
    // The session row is locked: a cancel of an interject turn (which locks it first) cannot race this.
    const pending = await tx.rows<DeliveredInterjection & { interjectTurnId: string }>(sql`
      SELECT t.id AS "interjectTurnId", m.id AS "messageId", m.kind, m.origin, m.trust,
        m.authority_class AS "authorityClass", m.priority, m.body, m.metadata
      FROM turns t JOIN messages m ON m.id = t.input_message_id
      WHERE t.session_id = ${a.sessionId}::uuid AND ${PENDING_INTERJECTION(sql`t`)}
      ORDER BY t.seq FOR UPDATE OF t`);
    if (pending.length === 0) return { messages: [], events: [] };
    const n = pending.length;
    const seqRow = await tx.first<{ base: number }>(sql`
      UPDATE sessions SET last_event_seq = last_event_seq + ${2 * n}::int WHERE id = ${a.sessionId}::uuid
      RETURNING last_event_seq - ${2 * n}::int AS base`);
    const base = seqRow!.base;
    const events: CommittedEvent[] = [];
    for (const [i, p] of pending.entries()) {
      const position = a.fromPosition + i;
      events.push(...(await deliverOne(tx, a, p, position, base + 2 * i)));
    }
    return { messages: pending.map(({ interjectTurnId: _, ...m }) => m), events };
  });
}

/** One interjection: its message moved, its turn ended `interjected`, and its two events at `seq + 1`, `seq + 2`. */
async function deliverOne(
  tx: SqlRunner,
  a: DeliverInterjections,
  p: DeliveredInterjection & { interjectTurnId: string },
  position: number,
  seq: number,
): Promise<CommittedEvent[]> {
  await tx.execute(sql`
    UPDATE messages SET turn_id = ${a.turnId}::uuid, turn_seq = ${a.turnSeq}::int, position = ${position}::int,
      metadata = metadata || jsonb_build_object('interjectedFrom', ${p.interjectTurnId}::text)
    WHERE id = ${p.messageId}::uuid`);
  await tx.execute(sql`
    UPDATE turns SET status = 'completed', stop_reason = 'interjected', final_text = '',
      completed_at = now(), started_at = coalesce(started_at, now()),
      decision = jsonb_build_object('strategy', 'interjected', 'intoTurnId', ${a.turnId}::text,
        'iterations', 0, 'toolCalls', 0, 'stopReason', 'interjected')
    WHERE id = ${p.interjectTurnId}::uuid`);
  const delivered = { messageId: p.messageId, interjectTurnId: p.interjectTurnId, position };
  const completed = { stopReason: 'interjected', intoTurnId: a.turnId, iterations: 0, toolCalls: 0 };
  const rows = await tx.rows<CommittedEvent>(sql`
    INSERT INTO events (id, tenant_id, session_id, turn_id, seq, type, data) VALUES
      (gen_random_uuid(), ${a.tenantId}::uuid, ${a.sessionId}::uuid, ${a.turnId}::uuid, ${seq + 1}::int,
        'interjection_delivered', ${json(delivered)}::jsonb),
      (gen_random_uuid(), ${a.tenantId}::uuid, ${a.sessionId}::uuid, ${p.interjectTurnId}::uuid,
        ${seq + 2}::int, 'turn_completed', ${json(completed)}::jsonb)
    RETURNING id, seq, type, turn_id AS "turnId", data, created_at AS "createdAt"`);
  return rows.sort((x, y) => x.seq - y.seq);
}

/** Interjections already delivered into a turn at `fromPosition` or later, in order. */
export async function interjectedSince(
  db: SqlRunner,
  turnId: string,
  fromPosition: number,
): Promise<DeliveredInterjection[]> {
  return db.rows<DeliveredInterjection>(sql`
    SELECT id AS "messageId", kind, origin, trust, authority_class AS "authorityClass", priority, body, metadata
    FROM messages
    WHERE turn_id = ${turnId}::uuid AND position >= ${fromPosition}::int AND metadata ? 'interjectedFrom'
    ORDER BY position`);
}
