import { Body, Controller, Get, HttpCode, Inject, Param, Post, Query } from '@nestjs/common';
import { AppError, ApprovalPageResponse, ApprovalResponse, notFound } from '@switchboard/contracts';
import { ApprovalsRepository } from '@switchboard/store';
import type { Approvals } from '@switchboard/turns';
import { Actor, ApiKeyId, KeyAgents, TenantId } from '../platform/auth/guard';
import { ApprovalsQueryDto, DecideApprovalDto } from './dto';
import { BODY_ERRORS, Operation, TenantApi } from '../platform/openapi';
import { decodeCursor, encodeCursor, pathId, presentApproval } from './presenters';

export const APPROVALS = Symbol('APPROVALS');

const VERDICT = { approve: 'approved', reject: 'rejected' } as const;

/**
 * Human-in-the-loop decisions on gated tool calls (SPEC §3, docs/adr/0013). A turn whose tool call
 * needs approval is `awaiting_approval` and holds no worker; the decision on its last pending
 * approval puts it back in the queue, and whichever worker takes it acts on the stored decisions.
 */
@TenantApi('approvals')
@Controller('v1/approvals')
export class ApprovalsController {
  constructor(
    @Inject(ApprovalsRepository) private readonly reads: ApprovalsRepository,
    @Inject(APPROVALS) private readonly approvals: Approvals,
  ) {}

  /** Newest first. `status=pending` lists what waits for a decision (never an approval whose turn ended). */
  @Get()
  @Operation({
    id: 'listApprovals',
    summary: 'Approvals of the tenant, newest first',
    description:
      "The tenant's approvals, newest first; `status=pending` lists what waits for a decision (never one whose turn has ended). Paged by `limit` (default 50, at most 200) and `cursor`.",
    status: 200,
    schema: ApprovalPageResponse,
    errors: [400],
  })
  async list(
    @TenantId() tenantId: string,
    @Query() q: ApprovalsQueryDto,
    @KeyAgents() only: string[] | undefined,
  ): Promise<ApprovalPageResponse> {
    const before = decodeCursor<[string]>(q.cursor, ['string']);
    const limit = q.limit ?? 50;
    const page = await this.reads.page(
      tenantId,
      { status: q.status, beforeId: before?.[0], ...(only ? { agentIds: only } : {}) },
      limit,
    );
    return {
      data: page.rows.map(presentApproval),
      nextCursor: page.more ? encodeCursor([page.rows[page.rows.length - 1].id]) : null,
    };
  }

  @Get(':id')
  @Operation({
    id: 'getApproval',
    summary: 'An approval',
    description:
      "An approval: the gated tool call (tool, arguments, side-effect class), its turn, the policy that gated it, its status, decision and expiry. 404 when it is not the calling tenant's.",
    status: 200,
    schema: ApprovalResponse,
    errors: [404],
  })
  async get(@TenantId() tenantId: string, @Param('id') id: string): Promise<ApprovalResponse> {
    const row = await this.reads.find(tenantId, pathId(id, 'approval'));
    if (!row) throw notFound('approval');
    return presentApproval(row);
  }

  /**
   * Approve or reject, once: a replay of the same decision answers the stored one; another decision
   * after it, a decision after the expiry, or one whose turn no longer waits (cancelled) is a 409.
   */
  @Post(':id')
  @HttpCode(200)
  @Operation({
    id: 'decideApproval',
    summary: 'Approve or reject a gated tool call; its turn resumes',
    description:
      'Approves or rejects a gated tool call, once; the turn resumes with the decision. Replaying the same decision answers the stored one; another decision, a decision after the expiry or on a turn that no longer waits (cancelled) is a 409.',
    status: 200,
    schema: ApprovalResponse,
    errors: [...BODY_ERRORS, 404, 409],
  })
  async decide(
    @TenantId() tenantId: string,
    @ApiKeyId() apiKeyId: string,
    @Actor() actor: string,
    @Param('id') id: string,
    @Body() body: DecideApprovalDto,
  ): Promise<ApprovalResponse> {
    const approvalId = pathId(id, 'approval');
    const outcome = await this.approvals.decide({
      approvalId,
      tenantId,
      verdict: VERDICT[body.decision],
      reason: body.reason ?? null,
      decidedBy: apiKeyId,
      actor,
    });
    if (outcome.kind === 'not_found') throw notFound('approval');
    if (outcome.kind === 'conflict') {
      const message =
        outcome.why === 'expired'
          ? 'the approval expired before a decision'
          : outcome.why === 'turn_not_waiting'
            ? 'the turn of this approval no longer waits for it'
            : `the approval was already decided: ${outcome.approval.status}`;
      throw new AppError('conflict', message, { status: outcome.approval.status });
    }
    const row = await this.reads.find(tenantId, approvalId);
    if (!row) throw notFound('approval');
    return presentApproval(row);
  }
}
