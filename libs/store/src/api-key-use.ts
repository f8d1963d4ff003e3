import { sql, type SqlRunner } from './sql';

/**
 * Sets `api_keys.last_used_at` to now unless it is already within `intervalMs` of now: however many
 * gateways record a key's use, the row is written at most about once per interval. Resolves with
 * the number of rows written (0 or 1).
 */
export function recordKeyUse(db: SqlRunner, keyId: string, intervalMs: number): Promise<number> {
  return db.execute(sql`
    UPDATE api_keys SET last_used_at = now()
    WHERE id = ${keyId}::uuid
      AND (last_used_at IS NULL OR last_used_at < now() - ${intervalMs}::int * interval '1 millisecond')`);
}
