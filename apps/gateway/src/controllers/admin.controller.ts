import { Body, Controller, HttpCode, Inject, Post } from '@nestjs/common';
import { CreatedTenantResponse, newId } from '@switchboard/contracts';
import type { Db } from '@switchboard/database';
import { AdminOnly } from '../auth/guard';
import { generateApiKey } from '../auth/keys';
import { CreateTenantDto } from '../http/dto';
import { AdminApi, BODY_ERRORS, Operation } from '../http/openapi';
import { presentApiKey, presentTenant } from '../http/presenters';
import { DB } from '@switchboard/platform';

/** Creates a tenant with its first API key in one transaction. Shared with the admin CLI. */
export async function createTenant(db: Db, name: string): Promise<CreatedTenantResponse> {
  const { key, hash, prefix } = generateApiKey();
  const [tenant, apiKey] = await db.$transaction(async (tx) => {
    const tenant = await tx.tenant.create({ data: { id: newId(), name } });
    const apiKey = await tx.apiKey.create({
      data: { id: newId(), tenantId: tenant.id, name: 'default', prefix, hash },
    });
    return [tenant, apiKey] as const;
  });
  return { tenant: presentTenant(tenant), apiKey: { ...presentApiKey(apiKey), key } };
}

@AdminApi('admin')
@Controller('v1/admin')
export class AdminController {
  constructor(@Inject(DB) private readonly db: Db) {}

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
    return createTenant(this.db, body.name);
  }
}
