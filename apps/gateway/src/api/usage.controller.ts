import { Controller, Get, Inject, Query } from '@nestjs/common';
import { createZodDto } from 'nestjs-zod';
import { DailySpendQuery, DailySpendResponse, UsageResponse } from '@switchboard/contracts';
import { tenantDailySpend, tenantUsage, usageField, type UsageRow } from '@switchboard/store';
import { KeyAgents, TenantId } from '../platform/auth/guard';
import { UsageQueryDto } from './dto';
import { Operation, TenantApi } from '../platform/openapi';
import { GATEWAY_READS, type GatewayReads } from './reads';

class DailySpendQueryDto extends createZodDto(DailySpendQuery) {}

/**
 * The tenant's spend from the cost ledger (issue 13): tokens and USD over a window, in total and per
 * day, agent, session and/or model. One statement over `ledger_entries` (GROUPING SETS give the groups
 * and the totals from the same snapshot, so they agree under concurrent writes), summed in `numeric`
 * and returned as decimal strings: no float ever touches the money.
 */
@TenantApi('usage')
@Controller('v1/usage')
export class UsageController {
  /** Both reads on the read replica once it has replayed the primary's position (docs/adr/0042). */
  constructor(@Inject(GATEWAY_READS) private readonly reads: GatewayReads) {}

  @Get()
  @Operation({
    id: 'getUsage',
    summary: "The tenant's tokens and cost over a window, grouped",
    description:
      'Sums of the cost ledger over [from, to) (default: the last 30 days; at most 366 days), ' +
      'grouped by `groupBy`, a comma list of day|agent|session|model|kind (default `day`, UTC days).',
    status: 200,
    schema: UsageResponse,
    errors: [400],
  })
  async get(
    @TenantId() tenantId: string,
    @Query() q: UsageQueryDto,
    @KeyAgents() only: string[] | undefined,
  ): Promise<UsageResponse> {
    const fields = q.groupBy.map(usageField);
    // A key limited to agents (docs/adr/0066) sums only their entries (GET /v1/usage/daily, a
    // tenant-wide roll-up, refuses it).
    const rows = await this.reads.read(({ sql }) =>
      tenantUsage(sql, {
        tenantId,
        from: q.from,
        to: q.to,
        groupBy: q.groupBy,
        ...(only ? { agentIds: only } : {}),
      }),
    );
    const sums = (r: UsageRow) => ({
      inputTokens: Number(r.inputTokens),
      outputTokens: Number(r.outputTokens),
      cachedTokens: Number(r.cachedTokens),
      cacheWriteTokens: Number(r.cacheWriteTokens),
      costUsd: r.costUsd,
      cacheSavedUsd: r.cacheSavedUsd,
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
          ...Object.fromEntries(fields.map((f) => [f, r[f]])),
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
      'tokens (cachedTokens read from and cacheWriteTokens written to the provider cache among them), ' +
      'cacheSavedUsd, provider calls and turns, as the `cost-log` post-turn hook adds each ended turn once ' +
      '(and the archivist its own model calls). A turn counts shortly after it ends; GET /v1/usage ' +
      'sums the ledger itself, in-flight turns included. Reads one row per day, so it stays cheap.',
    status: 200,
    schema: DailySpendResponse,
    errors: [400],
  })
  async daily(@TenantId() tenantId: string, @Query() q: DailySpendQueryDto): Promise<DailySpendResponse> {
    const { from, to } = q;
    return {
      from,
      to,
      ...(await this.reads.read(({ sql }) => tenantDailySpend(sql, { tenantId, from, to }))),
    };
  }
}
