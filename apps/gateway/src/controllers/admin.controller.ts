import { Body, Controller, HttpCode, Inject, Post } from '@nestjs/common';
import { CreatedTenantResponse } from '@switchboard/contracts';
import { TenantsRepository } from '@switchboard/store';
import { AdminOnly } from '../auth/guard';
import { generateApiKey } from '../auth/keys';
import { CreateTenantDto } from '../http/dto';
import { AdminApi, BODY_ERRORS, Operation } from '../http/openapi';
import { presentApiKey, presentTenant } from '../http/presenters';

/** Creates a tenant with its first API key in one transaction. Shared with the admin CLI. */
export async function createTenant(tenants: TenantsRepository, name: string): Promise<CreatedTenantResponse> {
  const { key, hash, prefix } = generateApiKey();
  const { tenant, apiKey } = await tenants.createWithKey(name, { prefix, hash });
  return { tenant: presentTenant(tenant), apiKey: { ...presentApiKey(apiKey), key } };
}

@AdminApi('admin')
@Controller('v1/admin')
export class AdminController {
  constructor(@Inject(TenantsRepository) private readonly tenants: TenantsRepository) {}

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
}
