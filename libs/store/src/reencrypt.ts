import { json, sql, type Sql, type SqlDb } from './sql';

/** What re-encryption needs of the TenantCipher (libs/platform, docs/adr/0067). */
export interface Resealer {
  activeVersion(tenantId: string): Promise<number>;
  sealActive(tenantId: string, kind: 't' | 'j', value: unknown): Promise<string>;
}

/** A sealed value's prefix for a kind and version, for a LIKE: `sbe1.j.3.%`. */
const prefix = (kind: 't' | 'j', version: number) => `sbe1.${kind}.${version}.%`;

/**
 * The background half of data-key rotation (docs/adr/0067): content sealed under a retired version
 * re-sealed under the tenant's active one, one bounded batch per table per call (the maintenance
 * job calls it every tick until nothing is left). Reads go through SqlDb, so they arrive opened, and
 * are sealed again under the active version whatever the tenant's mode now is.
 * Covers the transcript (messages.body, messages.tool_calls) and the turns' final text; returns
 * how many values it re-sealed.
 */
export async function reencryptStale(
  db: SqlDb,
  cipher: Resealer,
  batch = 200,
  onError: (tenantId: string, err: unknown) => void = () => undefined,
): Promise<number> {
  const tenants = await db.rows<{ tenantId: string }>(sql`
    SELECT DISTINCT tenant_id::text AS "tenantId" FROM tenant_data_keys WHERE state = 'retired'`);
  let done = 0;
  for (const { tenantId } of tenants) {
    try {
      done += await reencryptTenant(db, cipher, tenantId, batch);
    } catch (err) {
      // One tenant whose key cannot be unwrapped here (a KEK missing) does not hold up the others.
      onError(tenantId, err);
    }
  }
  return done;
}

async function reencryptTenant(
  db: SqlDb,
  cipher: Resealer,
  tenantId: string,
  batch: number,
): Promise<number> {
  let done = 0;
  {
    const active = await cipher.activeVersion(tenantId);
    const stale = (column: Sql, kind: 't' | 'j') =>
      kind === 'j'
        ? sql`(jsonb_typeof(${column}) = 'string' AND ${column} #>> '{}' LIKE 'sbe1.j.%'
            AND ${column} #>> '{}' NOT LIKE ${prefix('j', active)})`
        : sql`(${column} LIKE 'sbe1.t.%' AND ${column} NOT LIKE ${prefix('t', active)})`;
    const messages = await db.rows<{
      id: string;
      body: unknown;
      toolCalls: unknown;
      staleBody: boolean;
      staleCalls: boolean;
    }>(sql`
      SELECT id, body, tool_calls AS "toolCalls", ${stale(sql`body`, 'j')} AS "staleBody",
        coalesce(${stale(sql`tool_calls`, 'j')}, false) AS "staleCalls"
      FROM messages WHERE tenant_id = ${tenantId}::uuid
        AND (${stale(sql`body`, 'j')} OR coalesce(${stale(sql`tool_calls`, 'j')}, false))
      LIMIT ${batch}`);
    for (const m of messages) {
      const body = m.staleBody ? await cipher.sealActive(tenantId, 'j', m.body) : undefined;
      const calls = m.staleCalls ? await cipher.sealActive(tenantId, 'j', m.toolCalls) : undefined;
      done += await db.execute(sql`
        UPDATE messages SET body = coalesce(${body === undefined ? null : json(body)}::jsonb, body),
          tool_calls = coalesce(${calls === undefined ? null : json(calls)}::jsonb, tool_calls)
        WHERE tenant_id = ${tenantId}::uuid AND id = ${m.id}::uuid`);
    }
    const turns = await db.rows<{ id: string; finalText: string }>(sql`
      SELECT id, final_text AS "finalText" FROM turns
      WHERE tenant_id = ${tenantId}::uuid AND ${stale(sql`final_text`, 't')} LIMIT ${batch}`);
    for (const t of turns) {
      done += await db.execute(sql`
        UPDATE turns SET final_text = ${await cipher.sealActive(tenantId, 't', t.finalText)}
        WHERE tenant_id = ${tenantId}::uuid AND id = ${t.id}::uuid`);
    }
  }
  return done;
}
