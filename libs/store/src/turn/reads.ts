import { sql, type SqlRunner } from '../sql';
import { DRAIN_ORDER, UNFINISHED } from './statuses';

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

/** The reason given with a turn's cancel request, if any. */
export async function cancelReason(db: SqlRunner, turnId: string): Promise<string | null> {
  const row = await db.first<{ cancel_reason: string | null }>(sql`
    SELECT cancel_reason FROM turns WHERE id = ${turnId}::uuid`);
  return row?.cancel_reason ?? null;
}

/** The tenant's kill switch. */
export async function killSwitch(db: SqlRunner, tenantId: string): Promise<boolean> {
  const row = await db.first<{ kill_switch: boolean }>(sql`
    SELECT kill_switch FROM tenants WHERE id = ${tenantId}::uuid`);
  return row?.kill_switch ?? false;
}
