import { Controller, Get, Inject, Query } from '@nestjs/common';
import { AuditEventPageResponse, type AuditEventsQuery } from '@switchboard/contracts';
import { AuditLogRepository } from '@switchboard/store';
import { KeyAgents, TenantId } from '../platform/auth/guard';
import { AuditEventsQueryDto } from './dto';
import { Operation, TenantApi } from '../platform/openapi';
import { decodeCursor, encodeCursor, presentAuditEvent } from './presenters';

/** One page of the audit log, newest first: the tenant's own (`tenantId`) or, for the operator, any. */
export async function auditEventPage(
  audit: AuditLogRepository,
  q: AuditEventsQuery,
  tenantId: string | undefined,
  /** Only entries about these agents and their objects (a key limited to agents, docs/adr/0066). */
  agentIds?: string[],
): Promise<AuditEventPageResponse> {
  const before = decodeCursor<[string]>(q.cursor, ['string']);
  const limit = q.limit ?? 50;
  const rows = await audit.page({
    tenantId,
    action: q.action,
    beforeId: before?.[0],
    limit,
    ...(agentIds ? { agentIds } : {}),
  });
  const page = rows.slice(0, limit);
  return {
    data: page.map(presentAuditEvent),
    nextCursor: rows.length > limit ? encodeCursor([page[page.length - 1].id]) : null,
  };
}

/**
 * The tenant's audit log (docs/adr/0030): security-relevant changes to it — keys created and
 * revoked, settings and limits changed, trigger secrets rotated, approvals decided, pauses — by
 * whom (`operator` or `api_key:<id>`). Only its own entries.
 */
@TenantApi('audit')
@Controller('v1/audit-events')
export class AuditController {
  constructor(@Inject(AuditLogRepository) private readonly audit: AuditLogRepository) {}

  @Get()
  @Operation({
    id: 'listAuditEvents',
    summary: "The tenant's audit log, newest first (optionally of one action)",
    description:
      "The tenant's audit log (who changed what: keys, agents, triggers, settings, operator actions), newest first, optionally of one `action`. Paged by `limit` (default 50, at most 200) and `cursor`.",
    status: 200,
    schema: AuditEventPageResponse,
    errors: [400],
  })
  list(
    @TenantId() tenantId: string,
    @Query() q: AuditEventsQueryDto,
    @KeyAgents() only: string[] | undefined,
  ): Promise<AuditEventPageResponse> {
    return auditEventPage(this.audit, q, tenantId, only);
  }
}
