import type { CancelCause, CancelReason } from '@switchboard/contracts';
import { sql, type SqlRunner } from '../sql';
import { DRAIN_ORDER, UNFINISHED, WAITING } from './statuses';

/** Single reads of a session's or a turn's state, off the checkpoint path. */

/** The session's next unfinished turn in drain order, if any (read after a release: nothing left behind). */
export async function nextUnfinished(
  db: SqlRunner,
  sessionId: string,
): Promise<{ id: string; tenantId: string; priority: string; traceContext: unknown } | undefined> {
  return db.first(sql`
    SELECT id, tenant_id AS "tenantId", priority, trace_context AS "traceContext" FROM turns
    WHERE session_id = ${sessionId}::uuid AND status IN ${UNFINISHED} ORDER BY ${DRAIN_ORDER(sql`turns`)}
    LIMIT 1`);
}

/** A session's next unfinished turn, as a wake-up job names it. */
export interface TurnToWake {
  id: string;
  sessionId: string;
  tenantId: string;
  priority: string;
  traceContext: unknown;
}

/**
 * One page of the tenant's sessions that have unfinished turns and no waiting one (a waiting turn's
 * decision wakes its session itself), each with its next turn in drain order, by session id: what a
 * resumed tenant wakes (docs/adr/0030). Reads the partial index on unfinished turns.
 */
export async function turnsToWake(
  db: SqlRunner,
  tenantId: string,
  afterSessionId: string | undefined,
  limit: number,
): Promise<TurnToWake[]> {
  return db.rows<TurnToWake>(sql`
    SELECT DISTINCT ON (t.session_id) t.id, t.session_id AS "sessionId", t.tenant_id AS "tenantId",
      t.priority, t.trace_context AS "traceContext"
    FROM turns t
    WHERE t.tenant_id = ${tenantId}::uuid AND t.status IN ${UNFINISHED}
      ${afterSessionId === undefined ? sql`` : sql`AND t.session_id > ${afterSessionId}::uuid`}
      AND NOT EXISTS (SELECT 1 FROM turns w WHERE w.session_id = t.session_id AND w.status IN ${WAITING})
    ORDER BY t.session_id, ${DRAIN_ORDER(sql`t`)}
    LIMIT ${limit}::int`);
}

/** The reason and note of a turn's cancel request (docs/adr/0055); undefined when none was made. */
export async function cancelRequest(db: SqlRunner, turnId: string): Promise<CancelCause | undefined> {
  const row = await db.first<{ cancel_reason: CancelReason | null; cancel_note: string | null }>(sql`
    SELECT cancel_reason, cancel_note FROM turns WHERE id = ${turnId}::uuid`);
  return row?.cancel_reason ? { reason: row.cancel_reason, note: row.cancel_note } : undefined;
}

/** The tenant's kill switch. */
export async function killSwitch(db: SqlRunner, tenantId: string): Promise<boolean> {
  const row = await db.first<{ kill_switch: boolean }>(sql`
    SELECT kill_switch FROM tenants WHERE id = ${tenantId}::uuid`);
  return row?.kill_switch ?? false;
}
