import { Body, Controller, Get, HttpCode, Inject, Param, Patch, Post, Query, Res } from '@nestjs/common';
import { ApiBody } from '@nestjs/swagger';
import type { FastifyReply } from 'fastify';
import type { TurnSteering } from '@switchboard/admission';
import {
  cancelCause,
  CancelTurnRequest,
  AuditEventPageResponse,
  CreatedTenantResponse,
  notFound,
  OperatorTenantPageResponse,
  OperatorTenantResponse,
  parseRateLimitOverrides,
  PauseTenantRequest,
  ResumeTenantRequest,
  TenantLimitsResponse,
  TurnResponse,
} from '@switchboard/contracts';
import type { Db } from '@switchboard/database';
import { CIPHER, DB, TenantCipher } from '@switchboard/platform';
import { AuditLogRepository, findTurn, OPERATOR_ACTOR, TenantsRepository } from '@switchboard/store';
import type { TenantPause } from '@switchboard/turns';
import { AdminOnly } from '../platform/auth/guard';
import { generateApiKey } from '../platform/auth/keys';
import {
  AdminAuditEventsQueryDto,
  CancelTurnDto,
  CreateTenantDto,
  PageQueryDto,
  PauseTenantDto,
  ResumeTenantDto,
  UpdateRateLimitsDto,
  UpdateTenantDto,
} from './dto';
import { AdminApi, BODY_ERRORS, Operation } from '../platform/openapi';
import {
  decodeCursor,
  encodeCursor,
  pathId,
  presentApiKey,
  presentOperatorTenant,
  presentTenant,
  presentTurn,
} from './presenters';
import { ApiRateLimits } from '../platform/rate-limit';
import { validateOptionalBody } from '../platform/validation';
import { auditEventPage } from './audit.controller';
import { TURN_STEERING } from './turn-steering';
import { checkEncryptionSettings } from './encryption';

export const TENANT_PAUSE = Symbol('TENANT_PAUSE');

/** Creates a tenant with its first API key in one transaction. Shared with the admin CLI. */
export async function createTenant(tenants: TenantsRepository, name: string): Promise<CreatedTenantResponse> {
  const { key, hash, prefix } = generateApiKey();
  const { tenant, apiKey } = await tenants.createWithKey(name, { prefix, hash }, OPERATOR_ACTOR);
  return { tenant: presentTenant(tenant), apiKey: { ...presentApiKey(apiKey), key } };
}

/** One tenant as the operator sees it; 404 when there is none. Shared with the admin CLI. */
export async function operatorTenant(
  tenants: TenantsRepository,
  tenantId: string,
): Promise<OperatorTenantResponse> {
  const row = await tenants.overview(tenantId);
  if (!row) throw notFound('tenant');
  return presentOperatorTenant(row);
}

/**
 * The operator's API (ADMIN_TOKEN): tenants, their settings, limits and pause (docs/adr/0028,
 * 0030), and the audit log of every tenant. Every change writes its audit entry as `operator`.
 */
@AdminApi('admin')
@Controller('v1/admin')
export class AdminController {
  constructor(
    @Inject(TenantsRepository) private readonly tenants: TenantsRepository,
    @Inject(AuditLogRepository) private readonly audit: AuditLogRepository,
    @Inject(TENANT_PAUSE) private readonly pauses: TenantPause,
    @Inject(ApiRateLimits) private readonly limits: ApiRateLimits,
    @Inject(TURN_STEERING) private readonly control: TurnSteering,
    @Inject(DB) private readonly db: Db,
    @Inject(CIPHER) private readonly cipher: TenantCipher,
  ) {}

  /** A new tenant and its first API key. The key is shown in this response only. */
  @Post('tenants')
  @AdminOnly()
  @HttpCode(201)
  @Operation({
    id: 'createTenant',
    summary: 'Create a tenant and its first API key',
    description:
      'Creates a tenant and its first API key in one transaction and writes the audit entry as `operator`. The key is in this response only (store it); each call creates a new tenant, so a retry after a lost response makes a second one.',
    status: 201,
    schema: CreatedTenantResponse,
    errors: BODY_ERRORS,
  })
  create(@Body() body: CreateTenantDto): Promise<CreatedTenantResponse> {
    return createTenant(this.tenants, body.name);
  }

  /** Every tenant by id (creation order), with its pause, operator settings, today's spend and turn counts. */
  @Get('tenants')
  @AdminOnly()
  @Operation({
    id: 'listTenants',
    summary: 'Tenants with their pause, limits, spend today and unfinished turns',
    description:
      "Every tenant in creation order, with its pause, operator settings (concurrency cap, fair share, daily spend cap, rate limits), today's spend and unfinished turns. Paged: up to `limit` (default 50, at most 200), then `cursor` = the previous page's `nextCursor` until it is null; a malformed cursor is a 400.",
    status: 200,
    schema: OperatorTenantPageResponse,
    errors: [400],
  })
  async list(@Query() q: PageQueryDto): Promise<OperatorTenantPageResponse> {
    const after = decodeCursor<[string]>(q.cursor, ['string']);
    const limit = q.limit ?? 50;
    const rows = await this.tenants.overviewPage(after?.[0], limit);
    const page = rows.slice(0, limit);
    return {
      data: page.map(presentOperatorTenant),
      nextCursor: rows.length > limit ? encodeCursor([page[page.length - 1].id]) : null,
    };
  }

  @Get('tenants/:id')
  @AdminOnly()
  @Operation({
    id: 'getTenant',
    summary: 'A tenant with its pause, limits, spend today and unfinished turns',
    description:
      "One tenant as the operator sees it: pause, operator settings, today's spend and unfinished turns. 404 when there is no such tenant.",
    status: 200,
    schema: OperatorTenantResponse,
    errors: [404],
  })
  get(@Param('id') id: string): Promise<OperatorTenantResponse> {
    return operatorTenant(this.tenants, pathId(id, 'tenant'));
  }

  /**
   * The operator's settings of a tenant (docs/adr/0030): `maxConcurrentTurns`, `share` (fair share),
   * `dailySpendLimitUsd`, each replaced when given, `null` back to the default. Merged into
   * `tenants.settings` under the row's lock with its audit entry.
   */
  @Patch('tenants/:id')
  @AdminOnly()
  @Operation({
    id: 'updateTenant',
    summary: "Set a tenant's concurrency cap, fair share weight or daily spend cap (null = default)",
    description:
      "Sets the operator's settings of a tenant (docs/adr/0030): `maxConcurrentTurns`, `share` (fair-share weight) and `dailySpendLimitUsd`, each replaced when given and back to the default with `null`; absent fields are kept, so a repeat is harmless. Written with its audit entry; 404 for an unknown tenant.",
    status: 200,
    schema: OperatorTenantResponse,
    errors: [...BODY_ERRORS, 404],
  })
  async update(@Param('id') id: string, @Body() body: UpdateTenantDto): Promise<OperatorTenantResponse> {
    const tenantId = pathId(id, 'tenant');
    checkEncryptionSettings(this.cipher, body.encryption);
    const updated = await this.tenants.updateOperatorSettings(tenantId, body, OPERATOR_ACTOR);
    if (body.encryption) this.cipher.forgetMode(tenantId);
    if (!updated) throw notFound('tenant');
    return operatorTenant(this.tenants, tenantId);
  }

  /**
   * The operator's rate-limit overrides for a tenant (docs/adr/0028), merged per bucket; `null` goes
   * back to the deployment's default. Other gateways apply them within a few seconds.
   */
  @Patch('tenants/:id/limits')
  @AdminOnly()
  @Operation({
    id: 'updateTenantLimits',
    summary: "Set a tenant's rate limits (requests per minute per bucket; 0 = unlimited, null = default)",
    description:
      "Merges the tenant's rate-limit overrides per bucket (docs/adr/0028): requests per minute, `0` for unlimited, `null` back to the deployment's default. Every gateway applies them within a few seconds; a repeat is harmless; 404 for an unknown tenant.",
    status: 200,
    schema: TenantLimitsResponse,
    errors: [...BODY_ERRORS, 404],
  })
  async updateLimits(
    @Param('id') id: string,
    @Body() body: UpdateRateLimitsDto,
  ): Promise<TenantLimitsResponse> {
    const tenantId = pathId(id, 'tenant');
    const updated = await this.tenants.updateRateLimits(tenantId, body, OPERATOR_ACTOR);
    if (!updated) throw notFound('tenant');
    this.limits.forget(tenantId);
    return {
      tenantId,
      rateLimits: parseRateLimitOverrides(updated.settings),
      effective: await this.limits.effective(tenantId),
    };
  }

  /**
   * Pauses a tenant (docs/adr/0030): its running turns stop at their next safe point, its queued
   * turns stay queued, and every admission of its input answers 403 `tenant_paused`. Pausing a paused
   * tenant changes nothing.
   */
  @Post('tenants/:id/pause')
  @AdminOnly()
  @HttpCode(200)
  @Operation({
    id: 'pauseTenant',
    summary: 'Pause a tenant: admission refused, running turns stopped, queued turns kept',
    description:
      'Pauses a tenant (docs/adr/0030): its running turns stop at their next safe point, its queued turns stay queued, and every admission of its input answers 403 `tenant_paused` until it is resumed. Pausing a paused tenant changes nothing; the optional `reason` goes to the audit log.',
    status: 200,
    schema: OperatorTenantResponse,
    errors: [...BODY_ERRORS, 404],
  })
  @ApiBody({ type: PauseTenantDto, required: false })
  async pause(@Param('id') id: string, @Body() raw: unknown): Promise<OperatorTenantResponse> {
    const tenantId = pathId(id, 'tenant');
    const body = validateOptionalBody(PauseTenantRequest, raw);
    const change = await this.pauses.pause(tenantId, body.reason ?? null, OPERATOR_ACTOR);
    if (!change.found) throw notFound('tenant');
    return operatorTenant(this.tenants, tenantId);
  }

  /** Resumes a tenant: admission opens again and its queued turns are woken. Resuming twice is harmless. */
  @Post('tenants/:id/resume')
  @AdminOnly()
  @HttpCode(200)
  @Operation({
    id: 'resumeTenant',
    summary: 'Resume a paused tenant: admission opens, its queued turns run',
    description:
      'Resumes a paused tenant: admission opens again and its queued turns are woken. Resuming a tenant that is not paused changes nothing; 404 for an unknown tenant.',
    status: 200,
    schema: OperatorTenantResponse,
    errors: [...BODY_ERRORS, 404],
  })
  @ApiBody({ type: ResumeTenantDto, required: false })
  async resume(@Param('id') id: string, @Body() raw: unknown): Promise<OperatorTenantResponse> {
    const tenantId = pathId(id, 'tenant');
    validateOptionalBody(ResumeTenantRequest, raw);
    const change = await this.pauses.resume(tenantId, OPERATOR_ACTOR);
    if (!change.found) throw notFound('tenant');
    return operatorTenant(this.tenants, tenantId);
  }

  /**
   * The operator cancels a tenant's turn (docs/adr/0055): as POST /v1/turns/:id/cancel, with
   * cancelReason `operator`, the optional `reason` as its note, and a `turn.cancelled` audit entry
   * written with the cancel (none when the turn had already ended).
   */
  @Post('tenants/:id/turns/:turnId/cancel')
  @AdminOnly()
  @Operation({
    id: 'operatorCancelTurn',
    summary: "Cancel a tenant's turn as the operator (cancelReason operator)",
    description:
      "Cancels a tenant's turn as POST /v1/turns/{id}/cancel does (docs/adr/0014): a queued or waiting turn ends at once (200, `cancelled`), a running one is stopped by its worker at the next safe point (202, `cancelRequestedAt` set). Its cancelReason is `operator` and the optional `reason` its cancelNote (docs/adr/0055); the cancel writes a `turn.cancelled` audit entry. An ended turn is answered as it is (200, no entry); 404 for an unknown tenant or a turn that is not the tenant's.",
    status: 202,
    schema: TurnResponse,
    response: 'The turn is running: the cancel is recorded and its worker stops it at the next safe point.',
    alternative: {
      status: 200,
      schema: TurnResponse,
      description: 'The turn has ended: cancelled here (it was queued or waiting), or it had already ended.',
    },
    errors: [...BODY_ERRORS, 404],
  })
  @ApiBody({ type: CancelTurnDto, required: false })
  async cancelTurn(
    @Param('id') id: string,
    @Param('turnId') rawTurnId: string,
    @Body() raw: unknown,
    @Res() reply: FastifyReply,
  ): Promise<void> {
    const tenantId = pathId(id, 'tenant');
    const turnId = pathId(rawTurnId, 'turn');
    const body = validateOptionalBody(CancelTurnRequest, raw);
    const result = await this.control.cancel(tenantId, turnId, cancelCause('operator', body.reason), {
      auditActor: OPERATOR_ACTOR,
    });
    if (!result) throw notFound('turn');
    const turn = await findTurn(this.db, tenantId, turnId);
    if (!turn) throw notFound('turn');
    // 202 from what the cancel did, not from a re-read: the worker may have stopped the turn already.
    await reply.status(result.status === 'running' ? 202 : 200).send(presentTurn(turn));
  }

  /** The audit log of every tenant (and operator-wide entries), newest first. */
  @Get('audit-events')
  @AdminOnly()
  @Operation({
    id: 'listAdminAuditEvents',
    summary: 'The audit log across tenants, newest first (optionally of one tenant or action)',
    description:
      "The audit log of every tenant, and operator-wide entries, newest first; `tenantId` and `action` narrow it. Paged by `limit` (default 50, at most 200) and `cursor` (the previous page's `nextCursor`).",
    status: 200,
    schema: AuditEventPageResponse,
    errors: [400],
  })
  auditEvents(@Query() q: AdminAuditEventsQueryDto): Promise<AuditEventPageResponse> {
    return auditEventPage(this.audit, q, q.tenantId);
  }
}
