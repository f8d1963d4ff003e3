import type { Approval } from '@prisma/client';
import type { Db } from '@switchboard/database';
import { pageOf, type Page } from './sessions-repository';

/**
 * What a client reads of approvals (the decision itself is `ApprovalStore`'s statement). Newest
 * first; `pending` lists only approvals whose turn still waits for them.
 */
export class ApprovalsRepository {
  constructor(private readonly db: Db) {}

  async page(
    tenantId: string,
    filter: { status?: string; beforeId?: string },
    limit: number,
  ): Promise<Page<Approval>> {
    const rows = await this.db.approval.findMany({
      where: {
        tenantId,
        ...(filter.status ? { status: filter.status } : {}),
        ...(filter.status === 'pending' ? { turn: { status: 'awaiting_approval' } } : {}),
        ...(filter.beforeId !== undefined ? { id: { lt: filter.beforeId } } : {}),
      },
      orderBy: { id: 'desc' },
      take: limit + 1,
    });
    return pageOf(rows, limit);
  }

  find(tenantId: string, id: string): Promise<Approval | null> {
    return this.db.approval.findFirst({ where: { id, tenantId } });
  }
}
