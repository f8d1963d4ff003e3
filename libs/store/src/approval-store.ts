import { sealText } from '@switchboard/database';
import { auditInsert } from './audit-log';
import { json, sql, type SqlDb, type SqlRunner } from './sql';
import type { CommittedEvent } from './turn-store';

/**
 * The approvals' statements (docs/adr/0013). A waiting turn's approval rows are written by its wait
 * checkpoint (`TurnStore.commitCheckpoint`); here they are decided. A decision locks the session row first, as
 * every statement that changes a turn's status does (claim, checkpoint, cancel), so a decision, a
 * cancel and a second decision of the same turn's approvals happen one after the other.
 */

/** What a decision sets: a person approves or rejects; the reconciler expires. */
export type ApprovalVerdict = 'approved' | 'rejected' | 'expired';

export interface ApprovalRow {
  id: string;
  tenantId: string;
  sessionId: string;
  turnId: string;
  callId: string;
  toolName: string;
  status: string;
  reason: string | null;
}

export type DecideOutcome =
  | { kind: 'not_found' }
  /** Decided now; `resumed` when it was the turn's last pending approval (the turn is `queued` again). */
  | {
      kind: 'decided';
      approval: ApprovalRow;
      resumed: boolean;
      priority: string;
      traceContext: unknown;
      events: CommittedEvent[];
    }
  /** The same decision was stored before (a replayed request): nothing changed. */
  | { kind: 'replayed'; approval: ApprovalRow }
  /** Decided otherwise before, expired, or its turn no longer waits (cancelled): nothing changed. */
  | { kind: 'conflict'; approval: ApprovalRow; why: 'decided' | 'expired' | 'turn_not_waiting' };

interface LockedRow {
  id: string;
  tenant_id: string;
  session_id: string;
  turn_id: string;
  call_id: string;
  tool_name: string;
  status: string;
  reason: string | null;
  expired: boolean;
  turn_status: string;
  priority: string;
  trace_context: unknown;
}

const toRow = (r: LockedRow): ApprovalRow => ({
  id: r.id,
  tenantId: r.tenant_id,
  sessionId: r.session_id,
  turnId: r.turn_id,
  callId: r.call_id,
  toolName: r.tool_name,
  status: r.status,
  reason: r.reason,
});

export class ApprovalStore {
  constructor(readonly db: SqlDb) {}

  /**
   * Decides one approval once (compare-and-set on `pending`), journals `approval_decided`, and when it
   * was the turn's last pending approval puts the turn back to `queued` (its run state kept) so a
   * job resumes it. `tenantId` null: the system (expiry) acting on any tenant's approval. With an
   * `actor` (a person's decision, not an expiry) the `approval.decided` audit entry commits with it.
   */
  async decide(a: {
    approvalId: string;
    tenantId: string | null;
    verdict: ApprovalVerdict;
    reason: string | null;
    decidedBy: string;
    eventId: string;
    actor?: string;
  }): Promise<DecideOutcome> {
    return this.db.transaction(async (tx) => {
      const found = await tx.first<{ session_id: string }>(sql`
        SELECT session_id FROM approvals WHERE id = ${a.approvalId}::uuid AND kind = 'approval'
          ${a.tenantId ? sql`AND tenant_id = ${a.tenantId}::uuid` : sql``}`);
      if (!found) return { kind: 'not_found' };
      await tx.execute(sql`SELECT 1 FROM sessions WHERE id = ${found.session_id}::uuid FOR UPDATE`);
      // A new statement after the lock: it sees whatever committed before the lock was granted.
      const row = await tx.first<LockedRow>(sql`
        SELECT ap.id, ap.tenant_id, ap.session_id, ap.turn_id, ap.call_id, ap.tool_name, ap.status, ap.reason,
          ap.expires_at <= now() AS expired, t.status AS turn_status, t.priority, t.trace_context
        FROM approvals ap JOIN turns t ON t.id = ap.turn_id
        WHERE ap.id = ${a.approvalId}::uuid FOR UPDATE OF ap`);
      if (!row) return { kind: 'not_found' };
      const approval = toRow(row);
      if (row.status !== 'pending') {
        return row.status === a.verdict
          ? { kind: 'replayed', approval }
          : { kind: 'conflict', approval, why: row.status === 'expired' ? 'expired' : 'decided' };
      }
      if (row.turn_status !== 'awaiting_approval')
        return { kind: 'conflict', approval, why: 'turn_not_waiting' };
      // Past its expiry a person's decision comes too late: the reconciler expires it.
      if (row.expired && a.verdict !== 'expired') return { kind: 'conflict', approval, why: 'expired' };

      // The reason a person typed is content: sealed for an encrypting tenant (docs/adr/0067) in the
      // approval row, its event and its audit entry alike.
      const reason = await sealText(row.tenant_id, a.reason);
      await tx.execute(sql`
        UPDATE approvals SET status = ${a.verdict}, reason = ${reason}::text, decided_by = ${a.decidedBy},
          decided_at = now()
        WHERE id = ${a.approvalId}::uuid AND status = 'pending'`);
      const resumed = await queueWhenSettled(tx, row.turn_id);
      const data = {
        approvalId: row.id,
        callId: row.call_id,
        name: row.tool_name,
        decision: a.verdict,
        ...(reason ? { reason } : {}),
        resumed,
      };
      const events = await tx.rows<CommittedEvent>(sql`
        WITH s AS (
          UPDATE sessions SET last_event_seq = last_event_seq + 1 WHERE id = ${row.session_id}::uuid
          RETURNING last_event_seq AS seq
        )
        INSERT INTO events (id, tenant_id, session_id, turn_id, seq, type, data)
        SELECT ${a.eventId}::uuid, ${row.tenant_id}::uuid, ${row.session_id}::uuid, ${row.turn_id}::uuid, s.seq,
          'approval_decided', ${json(data)}::jsonb
        FROM s
        RETURNING seq, type, turn_id AS "turnId", data, created_at AS "createdAt"`);
      if (a.actor !== undefined) {
        await tx.execute(
          auditInsert({
            tenantId: row.tenant_id,
            actor: a.actor,
            action: 'approval.decided',
            targetType: 'approval',
            targetId: row.id,
            details: {
              decision: a.verdict,
              turnId: row.turn_id,
              toolName: row.tool_name,
              callId: row.call_id,
              ...(reason ? { reason } : {}),
            },
          }),
        );
      }
      return {
        kind: 'decided',
        approval: { ...approval, status: a.verdict, reason: a.reason },
        resumed,
        priority: row.priority,
        traceContext: row.trace_context,
        events,
      };
    });
  }

  /** Pending approvals past their expiry, oldest first: what the reconciler expires. */
  async due(limit = 100): Promise<string[]> {
    const rows = await this.db.rows<{ id: string }>(sql`
      SELECT ap.id FROM approvals ap JOIN turns t ON t.id = ap.turn_id
      WHERE ap.status = 'pending' AND ap.kind = 'approval' AND ap.expires_at <= now()
        AND t.status = 'awaiting_approval'
      ORDER BY ap.expires_at LIMIT ${limit}::int`);
    return rows.map((r) => r.id);
  }
}

/**
 * After a wait row of the turn was settled (an approval decided, a client call answered or expired:
 * docs/adr/0013, 0047), in the same transaction: when none of its waits is pending any more the turn
 * goes back to `queued`, in the session's order (started_at and run_count stay, so it runs first and
 * resumes). True when it did: the caller enqueues the resume job.
 */
export async function queueWhenSettled(tx: SqlRunner, turnId: string): Promise<boolean> {
  const left = await tx.first<{ n: number }>(sql`
    SELECT count(*)::int AS n FROM approvals WHERE turn_id = ${turnId}::uuid AND status = 'pending'`);
  if ((left?.n ?? 0) > 0) return false;
  await tx.execute(sql`
    UPDATE turns SET status = 'queued'
    WHERE id = ${turnId}::uuid AND status IN ('awaiting_approval', 'awaiting_client_tool')`);
  return true;
}
