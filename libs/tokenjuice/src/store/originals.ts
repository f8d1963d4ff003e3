import { sealText } from '@switchboard/database';
import { sql, type SqlRunner } from '@switchboard/store';

/** What a lossy compaction keeps (docs/adr/0033). */
export interface OriginalWrite {
  tenantId: string;
  /** The marker's id (`markerId`). */
  id: string;
  sessionId?: string;
  turnId?: string;
  callId?: string;
  tool: string;
  kind: string;
  content: string;
}

export interface StoredOriginal {
  id: string;
  tool: string;
  kind: string;
  content: string;
  createdAt: Date;
  expiresAt: Date;
}

/** Rows one sweep statement deletes at most; a sweep runs statements until one deletes fewer. */
const SWEEP_BATCH = 1000;
const SWEEP_MAX_BATCHES = 50;

/**
 * The originals of lossily compacted tool results (`tool_result_originals`), per tenant. Every read
 * is filtered by tenant: a marker from another tenant finds nothing. One statement per call, on the
 * process's pool.
 */
export class OriginalsStore {
  constructor(
    private readonly db: SqlRunner,
    /** How long an original is kept after its last write (TOKENJUICE_RETENTION_HOURS). */
    private readonly retentionMs: number,
  ) {}

  /**
   * Keeps an original until now + retention. The same text again in the tenant (same marker) only
   * moves its expiry later: the first write's provenance stays.
   */
  async keep(o: OriginalWrite): Promise<void> {
    const expires = new Date(Date.now() + this.retentionMs);
    // Sealed for the tenant when its mode says so (docs/adr/0067); `bytes` is the original's size.
    const content = await sealText(o.tenantId, o.content);
    await this.db.execute(sql`
      INSERT INTO tool_result_originals
        (tenant_id, id, session_id, turn_id, call_id, tool, kind, content, bytes, expires_at)
      VALUES (${o.tenantId}::uuid, ${o.id}, ${o.sessionId ?? null}::uuid, ${o.turnId ?? null}::uuid,
        ${o.callId ?? null}, ${o.tool}, ${o.kind}, ${content}, ${Buffer.byteLength(o.content, 'utf8')},
        ${expires})
      ON CONFLICT (tenant_id, id) DO UPDATE
        SET expires_at = greatest(tool_result_originals.expires_at, excluded.expires_at)`);
  }

  /** The tenant's original under this marker id, unless it has expired. */
  async get(tenantId: string, id: string): Promise<StoredOriginal | undefined> {
    return this.db.first<StoredOriginal>(sql`
      SELECT id, tool, kind, content, created_at AS "createdAt", expires_at AS "expiresAt"
      FROM tool_result_originals
      WHERE tenant_id = ${tenantId}::uuid AND id = ${id} AND expires_at > now()`);
  }

  /** The maintenance sweep: deletes expired originals in batches; the number deleted. */
  async sweep(): Promise<number> {
    let total = 0;
    for (let i = 0; i < SWEEP_MAX_BATCHES; i++) {
      const n = await this.db.execute(sql`
        DELETE FROM tool_result_originals WHERE ctid = ANY (ARRAY(
          SELECT ctid FROM tool_result_originals WHERE expires_at <= now() LIMIT ${SWEEP_BATCH}))`);
      total += n;
      if (n < SWEEP_BATCH) break;
    }
    return total;
  }
}
