import type { UsageDimension } from '@switchboard/contracts';
import { join, Sql, sql, type SqlDb } from './sql';

/** A dimension's field in a usage row. */
export type UsageField = 'day' | 'agentId' | 'sessionId' | 'model' | 'kind';

/** Each dimension's column in the ledger and its name in the rows. `day` is the UTC calendar day. */
const DIMENSIONS: Record<UsageDimension, { column: Sql; field: UsageField }> = {
  day: { column: sql`to_char(created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD')`, field: 'day' },
  agent: { column: sql`agent_id::text`, field: 'agentId' },
  session: { column: sql`session_id::text`, field: 'sessionId' },
  model: { column: sql`model`, field: 'model' },
  kind: { column: sql`kind`, field: 'kind' },
};

/** The field a dimension's value comes in. */
export const usageField = (d: UsageDimension): UsageField => DIMENSIONS[d].field;

/** A dimension's quoted column alias: fixed text from the table above, never the client's. */
const alias = (field: string): Sql => new Sql([`"${field}"`], []);

/** One group's sums (decimal strings: summed in `numeric`, no float touches the money), or the totals. */
export interface UsageRow {
  day?: string;
  agentId?: string;
  /** Null for work outside any session (the memory-embed job's embeddings). */
  sessionId?: string | null;
  model?: string;
  kind?: string;
  /** True on the totals row (the empty grouping set). */
  total: boolean;
  inputTokens: string;
  outputTokens: string;
  cachedTokens: string;
  cacheWriteTokens: string;
  costUsd: string;
  cacheSavedUsd: string;
  entries: string;
}

/**
 * The tenant's ledger over [from, to), grouped by `groupBy`, and the totals row: one statement
 * (GROUPING SETS give the groups and the totals from the same snapshot, so they agree under
 * concurrent writes). The totals row comes last and always exists, even over no entries.
 */
export function tenantUsage(
  db: SqlDb,
  q: {
    tenantId: string;
    from: Date;
    to: Date;
    groupBy: readonly UsageDimension[];
    /** Only these agents' entries (a key limited to agents, docs/adr/0066). */
    agentIds?: string[];
  },
): Promise<UsageRow[]> {
  const dims = q.groupBy.map((d) => DIMENSIONS[d]);
  const columns = join(dims.map((d) => sql`${d.column} AS ${alias(d.field)}`));
  const names = join(dims.map((d) => alias(d.field)));
  return db.rows<UsageRow>(sql`
    SELECT ${names},
           GROUPING(${names}) <> 0 AS total,
           coalesce(sum(input_tokens), 0)::text AS "inputTokens",
           coalesce(sum(output_tokens), 0)::text AS "outputTokens",
           coalesce(sum(cached_tokens), 0)::text AS "cachedTokens",
           coalesce(sum(cache_write_tokens), 0)::text AS "cacheWriteTokens",
           trim_scale(coalesce(sum(cost_usd), 0))::text AS "costUsd",
           trim_scale(coalesce(sum(cache_saved_usd), 0))::text AS "cacheSavedUsd",
           count(*)::text AS entries
      FROM (SELECT ${columns}, input_tokens, output_tokens, cached_tokens, cache_write_tokens,
                   cost_usd, cache_saved_usd
              FROM ledger_entries
             WHERE tenant_id = ${q.tenantId}::uuid
               AND ${q.agentIds === undefined ? sql`true` : sql`agent_id = ANY(${q.agentIds}::uuid[])`}
               AND created_at >= ${q.from}::timestamptz AND created_at < ${q.to}::timestamptz) e
     GROUP BY GROUPING SETS ((${names}), ())
     ORDER BY total, ${names}`);
}
