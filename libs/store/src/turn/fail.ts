import { json, sql, type SqlRunner } from '../sql';
import { UNFINISHED } from './statuses';

/**
 * A turn's end outside its checkpoints: a turn that could not be run after every retry, and a
 * finalisation step's failure. (A turn that runs ends with its last checkpoint: `TurnChanges.end`.)
 */

export interface FailTurn {
  turnId: string;
  failure: unknown;
  stopReason: string;
  eventId: string;
  eventData: unknown;
}

/**
 * A turn that could not be run after every retry, failed with its event, unless it already ended.
 * Returns the turn's tenant when it was failed here.
 */
export async function failTurn(
  db: SqlRunner,
  a: FailTurn,
): Promise<{ tenantId: string; sessionId: string; eventSeq: number } | undefined> {
  return db.first(sql`
    WITH t AS (
      UPDATE turns SET status = 'failed', stop_reason = ${a.stopReason}, completed_at = now(),
        failure = ${json(a.failure)}::jsonb
      WHERE id = ${a.turnId}::uuid AND status IN ${UNFINISHED}
      RETURNING tenant_id, session_id
    ),
    s AS (
      UPDATE sessions SET last_event_seq = last_event_seq + 1 FROM t WHERE sessions.id = t.session_id
      RETURNING last_event_seq
    ),
    e AS (
      INSERT INTO events (id, tenant_id, session_id, turn_id, seq, type, data)
      SELECT ${a.eventId}::uuid, t.tenant_id, t.session_id, ${a.turnId}::uuid, s.last_event_seq, 'turn_failed',
        ${json(a.eventData)}::jsonb
      FROM t, s
    )
    SELECT tenant_id AS "tenantId", session_id AS "sessionId", (SELECT last_event_seq FROM s) AS "eventSeq" FROM t`);
}

/** A finalisation step's failure, recorded on the turn. */
export async function recordFinalisationError(
  db: SqlRunner,
  turnId: string,
  entry: { step: string; message: string; at: string },
): Promise<void> {
  await db.execute(sql`
    UPDATE turns SET finalisation_errors = finalisation_errors || ${json([entry])}::jsonb
    WHERE id = ${turnId}::uuid`);
}
