import { Controller, Get, Inject, Query } from '@nestjs/common';
import { createZodDto } from 'nestjs-zod';
import {
  DailySpendQuery,
  DailySpendResponse,
  UsageResponse,
  type UsageDimension,
} from '@switchboard/contracts';
import { join, Sql, sql, tenantDailySpend, type SqlDb } from '@switchboard/store';
import { TenantId } from '../auth/guard';
import { UsageQueryDto } from '../http/dto';
import { Operation, TenantApi } from '../http/openapi';
import { GATEWAY_SQL } from './streams.controller';

/** Each dimension's column in the ledger and its name in the response. `day` is the UTC calendar day. */
const DIMENSIONS: Record<UsageDimension, { column: Sql; field: 'day' | 'agentId' | 'sessionId' | 'model' }> =
  {
    day: { column: sql`to_char(created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD')`, field: 'day' },
    agent: { column: sql`agent_id::text`, field: 'agentId' },
    session: { column: sql`session_id::text`, field: 'sessionId' },
    model: { column: sql`model`, field: 'model' },
  };

class DailySpendQueryDto extends createZodDto(DailySpendQuery) {}

/** A dimension's quoted column alias: fixed text from the table above, never the client's. */
const alias = (field: string): Sql => new Sql([`"${field}"`], []);

interface UsageRow {
  day?: string;
  agentId?: string;
  sessionId?: string;
  model?: string;
  /** 1 on the totals row (the empty grouping set). */
  total: number;
  inputTokens: string;
  outputTokens: string;
  cachedTokens: string;
  costUsd: string;
  entries: string;
}

/**
 * The tenant's spend from the cost ledger (issue 13): tokens and USD over a window, in total and per
 * day, agent, session and/or model. One statement over `ledger_entries` (GROUPING SETS give the groups
 * and the totals from the same snapshot, so they agree under concurrent writes), summed in `numeric`
 * and returned as decimal strings: no float ever touches the money.
 */
@TenantApi('usage')
@Controller('v1/usage')
export class UsageController {
  constructor(@Inject(GATEWAY_SQL) private readonly db: SqlDb) {}

  @Get()
  @Operation({
    id: 'getUsage',
    summary: "The tenant's tokens and cost over a window, grouped",
    description:
      'Sums of the cost ledger over [from, to) (default: the last 30 days; at most 366 days), ' +
      'grouped by `groupBy`, a comma list of day|agent|session|model (default `day`, UTC days).',
    status: 200,
    schema: UsageResponse,
    errors: [400],
  })
  async get(@TenantId() tenantId: string, @Query() q: UsageQueryDto): Promise<UsageResponse> {
    const dims = q.groupBy.map((d) => DIMENSIONS[d]);
    const columns = join(dims.map((d) => sql`${d.column} AS ${alias(d.field)}`));
    const names = join(dims.map((d) => alias(d.field)));
    const rows = await this.db.rows<UsageRow>(sql`
      SELECT ${names},
             GROUPING(${names}) <> 0 AS total,
             coalesce(sum(input_tokens), 0)::text AS "inputTokens",
             coalesce(sum(output_tokens), 0)::text AS "outputTokens",
             coalesce(sum(cached_tokens), 0)::text AS "cachedTokens",
             trim_scale(coalesce(sum(cost_usd), 0))::text AS "costUsd",
             count(*)::text AS entries
        FROM (SELECT ${columns}, input_tokens, output_tokens, cached_tokens, cost_usd
                FROM ledger_entries
               WHERE tenant_id = ${tenantId}::uuid
                 AND created_at >= ${q.from}::timestamptz AND created_at < ${q.to}::timestamptz) e
       GROUP BY GROUPING SETS ((${names}), ())
       ORDER BY total, ${names}`);
    const sums = (r: UsageRow) => ({
      inputTokens: Number(r.inputTokens),
      outputTokens: Number(r.outputTokens),
      cachedTokens: Number(r.cachedTokens),
      costUsd: r.costUsd,
      entries: Number(r.entries),
    });
    const totals = rows.find((r) => r.total);
    return {
      from: q.from.toISOString(),
      to: q.to.toISOString(),
      groupBy: q.groupBy,
      // GROUPING SETS always yield the () row, even over no entries.
      totals: sums(totals!),
      groups: rows
        .filter((r) => !r.total)
        .map((r) => ({
          ...Object.fromEntries(dims.map((d) => [d.field, r[d.field]])),
          ...sums(r),
        })),
    };
  }

  @Get('daily')
  @Operation({
    id: 'getDailySpend',
    summary: "The tenant's spend per UTC day (the cost-log hook's roll-up)",
    description:
      'Per UTC day over `from`..`to` (inclusive dates; default the last 30 days, at most 366): USD, ' +
      'tokens, provider calls and turns, as the `cost-log` post-turn hook adds each ended turn once ' +
      '(and the archivist its own model calls). A turn counts shortly after it ends; GET /v1/usage ' +
      'sums the ledger itself, in-flight turns included. Reads one row per day, so it stays cheap.',
    status: 200,
    schema: DailySpendResponse,
    errors: [400],
  })
  async daily(@TenantId() tenantId: string, @Query() q: DailySpendQueryDto): Promise<DailySpendResponse> {
    const { from, to } = q;
    return { from, to, ...(await tenantDailySpend(this.db, { tenantId, from, to })) };
  }
}
