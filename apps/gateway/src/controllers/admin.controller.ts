import { Body, Controller, HttpCode, Inject, Param, Patch, Post } from '@nestjs/common';
import {
  CreatedTenantResponse,
  notFound,
  parseRateLimitOverrides,
  TenantLimitsResponse,
} from '@switchboard/contracts';
import { TenantsRepository } from '@switchboard/store';
import { AdminOnly } from '../auth/guard';
import { generateApiKey } from '../auth/keys';
import { CreateTenantDto, UpdateRateLimitsDto } from '../http/dto';
import { AdminApi, BODY_ERRORS, Operation } from '../http/openapi';
import { pathId, presentApiKey, presentTenant } from '../http/presenters';
import { ApiRateLimits } from '../http/rate-limit';

/** Creates a tenant with its first API key in one transaction. Shared with the admin CLI. */
export async function createTenant(tenants: TenantsRepository, name: string): Promise<CreatedTenantResponse> {
  const { key, hash, prefix } = generateApiKey();
  const { tenant, apiKey } = await tenants.createWithKey(name, { prefix, hash });
  return { tenant: presentTenant(tenant), apiKey: { ...presentApiKey(apiKey), key } };
}

@AdminApi('admin')
@Controller('v1/admin')
export class AdminController {
  constructor(
    @Inject(TenantsRepository) private readonly tenants: TenantsRepository,
    @Inject(ApiRateLimits) private readonly limits: ApiRateLimits,
  ) {}

  /** A new tenant and its first API key. The key is shown in this response only. */
  @Post('tenants')
  @AdminOnly()
  @HttpCode(201)
  @Operation({
    id: 'createTenant',
    summary: 'Create a tenant and its first API key',
    status: 201,
    schema: CreatedTenantResponse,
    errors: BODY_ERRORS,
  })
  create(@Body() body: CreateTenantDto): Promise<CreatedTenantResponse> {
    return createTenant(this.tenants, body.name);
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
    status: 200,
    schema: TenantLimitsResponse,
    errors: [...BODY_ERRORS, 404],
  })
  async updateLimits(
    @Param('id') id: string,
    @Body() body: UpdateRateLimitsDto,
  ): Promise<TenantLimitsResponse> {
    const tenantId = pathId(id, 'tenant');
    const updated = await this.tenants.updateRateLimits(tenantId, body);
    if (!updated) throw notFound('tenant');
    this.limits.forget(tenantId);
    return {
      tenantId,
      rateLimits: parseRateLimitOverrides(updated.settings),
      effective: await this.limits.effective(tenantId),
    };
  }
}
