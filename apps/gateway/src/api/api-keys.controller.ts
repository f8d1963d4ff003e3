import { Body, Controller, Delete, Get, HttpCode, Inject, Param, Post, Query } from '@nestjs/common';
import {
  AppError,
  ApiKeyListResponse,
  type CreateApiKeyRequest as CreateApiKeyBody,
  ApiKeyResponse,
  CreatedApiKeyResponse,
  notFound,
  type PageQuery,
} from '@switchboard/contracts';
import { ApiKeysRepository } from '@switchboard/store';
import { Actor, TenantId } from '../platform/auth/guard';
import { KEY_REVOCATIONS, type KeyRevocations } from '../platform/auth/key-revocations';
import { generateApiKey } from '../platform/auth/keys';
import { CreateApiKeyDto, PageQueryDto } from './dto';
import { BODY_ERRORS, Operation, TenantApi } from '../platform/openapi';
import { decodeCursor, encodeCursor, pathId, presentApiKey } from './presenters';

/**
 * A tenant's API keys, shared by the tenant's routes (its own keys) and the operator's
 * (/v1/admin/tenants/:id/api-keys): the secret only in `create`'s answer, every change audited as
 * `actor`, a revoke published to every gateway.
 */
export class TenantApiKeys {
  constructor(
    private readonly keys: ApiKeysRepository,
    private readonly revocations: KeyRevocations,
  ) {}

  /**
   * A new key with its role, agents and expiry (docs/adr/0066): 400 for an expiry not in the
   * future or an agent that is not the tenant's (nothing written).
   */
  async create(tenantId: string, actor: string, body: CreateApiKeyBody): Promise<CreatedApiKeyResponse> {
    const expiresAt = body.expiresAt !== undefined ? new Date(body.expiresAt) : null;
    if (expiresAt && expiresAt.getTime() <= Date.now())
      throw new AppError('bad_request', 'expiresAt must be in the future');
    const agentIds = body.agentIds ? [...new Set(body.agentIds.map((a) => a.toLowerCase()))] : [];
    if (agentIds.length > 0 && (await this.keys.countAgents(tenantId, agentIds)) !== agentIds.length)
      throw new AppError('bad_request', 'agentIds must name agents of this tenant');
    const { key, hash, prefix } = generateApiKey();
    const row = await this.keys.create(
      tenantId,
      { name: body.name ?? 'unnamed', prefix, hash, role: body.role ?? 'admin', agentIds, expiresAt },
      actor,
    );
    return { ...presentApiKey(row), key };
  }

  async list(tenantId: string, q: PageQuery): Promise<ApiKeyListResponse> {
    const after = decodeCursor<[string]>(q.cursor, ['string']);
    const limit = q.limit ?? 50;
    const rows = await this.keys.page(tenantId, after?.[0], limit);
    const page = rows.slice(0, limit);
    return {
      data: page.map(presentApiKey),
      nextCursor: rows.length > limit ? encodeCursor([page[page.length - 1].id]) : null,
    };
  }

  /** 404 for another tenant's key (or none). */
  async revoke(tenantId: string, actor: string, id: string): Promise<ApiKeyResponse> {
    const key = await this.keys.find(tenantId, pathId(id, 'api key'));
    if (!key) throw notFound('api key');
    const row = await this.keys.revoke(key, actor);
    await this.revocations.revoked(key.hash);
    return presentApiKey(row);
  }
}

@TenantApi('api-keys')
@Controller('v1/api-keys')
export class ApiKeysController {
  private readonly keys: TenantApiKeys;

  constructor(
    @Inject(ApiKeysRepository) keys: ApiKeysRepository,
    @Inject(KEY_REVOCATIONS) revocations: KeyRevocations,
  ) {
    this.keys = new TenantApiKeys(keys, revocations);
  }

  @Post()
  @HttpCode(201)
  @Operation({
    id: 'createApiKey',
    summary: 'Create an API key for the calling tenant (the key is shown once)',
    description:
      'Creates another API key for the calling tenant, with a `role` (admin, the default; developer; approver; reader; ingest), optionally limited to `agentIds` and expiring at `expiresAt`; the secret `key` is in this response only (only its hash is stored). Each call makes a new key. 400 for an unknown role, an agent not of the tenant or an expiry not in the future (nothing written); 403 `insufficient_scope` for a key that is not an admin key.',
    status: 201,
    schema: CreatedApiKeyResponse,
    errors: BODY_ERRORS,
  })
  create(
    @TenantId() tenantId: string,
    @Actor() actor: string,
    @Body() body: CreateApiKeyDto,
  ): Promise<CreatedApiKeyResponse> {
    return this.keys.create(tenantId, actor, body);
  }

  @Get()
  @Operation({
    id: 'listApiKeys',
    summary: "The tenant's API keys, by id (revoked ones included)",
    description:
      "The tenant's API keys by id, revoked ones included (with `revokedAt`), with their display prefix and last use; never the secret. Paged by `limit` (default 50, at most 200) and `cursor` (the previous page's `nextCursor`).",
    status: 200,
    schema: ApiKeyListResponse,
    errors: [400],
  })
  list(@TenantId() tenantId: string, @Query() q: PageQueryDto): Promise<ApiKeyListResponse> {
    return this.keys.list(tenantId, q);
  }

  /**
   * Revokes a key: it stops working at once through this gateway, through the others as soon as
   * they hear of it on Redis, and at the latest once their cached lookup expires (API_KEY_CACHE_MS,
   * docs/adr/0017). Revoking twice is harmless.
   */
  @Delete(':id')
  @Operation({
    id: 'revokeApiKey',
    summary: 'Revoke an API key',
    description:
      "Revokes a key: it stops working at once on this gateway, on the others as soon as they hear of it on Redis, and at the latest when their cached lookup expires (API_KEY_CACHE_MS). Revoking twice is harmless and answers the key as it is; 404 for another tenant's key.",
    status: 200,
    schema: ApiKeyResponse,
    errors: [404],
  })
  revoke(
    @TenantId() tenantId: string,
    @Actor() actor: string,
    @Param('id') id: string,
  ): Promise<ApiKeyResponse> {
    return this.keys.revoke(tenantId, actor, id);
  }
}
