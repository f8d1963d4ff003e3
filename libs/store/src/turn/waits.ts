import { join, json, sql, type Sql, type SqlRunner } from '../sql';
import type { TurnFrame } from './checkpoint-rows';
import { WAITING } from './statuses';

/**
 * Waits (docs/adr/0013, 0024): a turn that cannot go on until something outside it happens is
 * made to wait by a checkpoint that sets its waiting status (`TurnChanges.waiting`), releases the lease
 * (`SessionChanges.release`) and, for approvals, inserts their rows here.
 */

/**
 * One approval row a waiting turn asks for (docs/adr/0013): a person's decision (`approval`), or the
 * client's result of a call to a tool it declared (`client_tool`, docs/adr/0047).
 */
export interface ApprovalInsert {
  kind: 'approval' | 'client_tool';
  id: string;
  callId: string;
  toolName: string;
  /** Already redacted. */
  arguments: unknown;
  sideEffect: string;
  policy: string;
  expiresAt: Date;
}

/** `ap`: the approvals the turn waits for. */
export function approvalsCte(f: TurnFrame, approvals: ApprovalInsert[] | undefined): Sql | undefined {
  if (!approvals || approvals.length === 0) return undefined;
  const rows = approvals.map(
    (a) => sql`(${a.id}::uuid, ${f.tenantId}::uuid, ${f.sessionId}::uuid, ${f.turnId}::uuid,
      ${a.callId}::text, ${a.toolName}::text, ${json(a.arguments ?? {})}::jsonb, ${a.sideEffect}::text,
      ${a.policy}::text, ${a.expiresAt.toISOString()}::timestamptz, ${a.kind}::text)`,
  );
  // One approval per call: a wait checkpoint replayed after its commit asks for nothing twice.
  return sql`ap AS (
    INSERT INTO approvals (id, tenant_id, session_id, turn_id, call_id, tool_name, arguments, side_effect,
      policy, expires_at, kind)
    SELECT v.* FROM (VALUES ${join(rows)}) AS v WHERE EXISTS (SELECT 1 FROM s)
    ON CONFLICT (turn_id, call_id) DO NOTHING)`;
}

/** Whether a turn of the session is waiting (docs/adr/0013): the turns behind it cannot run. */
export async function sessionWaiting(db: SqlRunner, sessionId: string): Promise<boolean> {
  const row = await db.first(sql`
    SELECT 1 AS one FROM turns WHERE session_id = ${sessionId}::uuid AND status IN ${WAITING} LIMIT 1`);
  return row !== undefined;
}
