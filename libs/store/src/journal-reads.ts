import { ofTenant, sql, type SqlDb } from './sql';

/** A journal event as a stream reads it (timestamps as JSON gives them). */
export interface JournalRow {
  id: string;
  seq: number;
  type: string;
  turnId: string | null;
  data: Record<string, unknown>;
  createdAt: string;
}

/** The session of the tenant with this id, if there is one. */
export async function tenantSessionId(
  db: SqlDb,
  tenantId: string,
  sessionId: string,
): Promise<string | undefined> {
  const row = await db.first<{ id: string }>(
    sql`SELECT id FROM sessions WHERE id = ${sessionId}::uuid AND ${ofTenant('tenant_id', tenantId)}`,
  );
  return row?.id;
}

/**
 * One page of the session's journal after `after` (only the turn's rows when `turnId` is given), in
 * seq order, and the session's last seq as the same statement saw it: nothing of the turn can be
 * missing below it.
 */
export async function journalPage(
  db: SqlDb,
  page: { sessionId: string; after: number; turnId?: string; limit: number },
): Promise<{ last: number | null; events: JournalRow[] }> {
  const turn = page.turnId ? sql`AND turn_id = ${page.turnId}::uuid` : sql``;
  const row = await db.first<{ last: number | null; events: JournalRow[] }>(sql`
    SELECT (SELECT last_event_seq FROM sessions WHERE id = ${page.sessionId}::uuid) AS last,
      coalesce((SELECT json_agg(e ORDER BY e.seq) FROM (
        SELECT id, seq, type, turn_id AS "turnId", data, created_at AS "createdAt" FROM events
        WHERE session_id = ${page.sessionId}::uuid AND seq > ${page.after} ${turn}
        ORDER BY seq LIMIT ${page.limit}) e), '[]'::json) AS events`);
  return { last: row?.last ?? null, events: row?.events ?? [] };
}
