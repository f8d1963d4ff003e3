import { Controller, Get, Inject, Param } from '@nestjs/common';
import { notFound, ToolResultOriginalResponse } from '@switchboard/contracts';
import { readToolResultOriginal } from '@switchboard/store';
import { TenantId } from '../platform/auth/guard';
import { Operation, TenantApi } from '../platform/openapi';
import { GATEWAY_READS, type GatewayReads } from './reads';

/** A compacted result's marker id: 24 hex digits of the original's SHA-256 (docs/adr/0033). */
const MARKER = /^[0-9a-f]{24}$/;

@TenantApi('turns')
@Controller('v1/tool-results')
export class ToolResultsController {
  constructor(@Inject(GATEWAY_READS) private readonly reads: GatewayReads) {}

  /**
   * The original of a tool result TokenJuice compacted lossily: the timeline's `originalId`, the
   * id `tokenjuice_retrieve` takes. Only the tenant's own, until it expires.
   */
  @Get(':id')
  @Operation({
    id: 'getToolResultOriginal',
    summary: 'The original of a compacted tool result',
    description:
      "The full tool result TokenJuice kept when it compacted a result lossily (docs/adr/0033), by the id a turn's timeline gives as `originalId`. 404 when it is not the calling tenant's or has expired (TOKENJUICE_RETENTION_HOURS).",
    status: 200,
    schema: ToolResultOriginalResponse,
    errors: [404],
  })
  async get(@TenantId() tenantId: string, @Param('id') id: string): Promise<ToolResultOriginalResponse> {
    if (!MARKER.test(id)) throw notFound('tool result');
    const row = await this.reads.read(({ sql }) => readToolResultOriginal(sql, tenantId, id));
    if (!row) throw notFound('tool result');
    return { ...row, createdAt: row.createdAt.toISOString(), expiresAt: row.expiresAt.toISOString() };
  }
}
