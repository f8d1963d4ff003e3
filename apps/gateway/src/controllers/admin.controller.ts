import { Body, Controller, HttpCode, Inject, Post } from '@nestjs/common';
import { ApiBearerAuth, ApiTags } from '@nestjs/swagger';
import { newId } from '@switchboard/contracts';
import type { Db } from '@switchboard/database';
import { AdminOnly } from '../auth/guard';
import { generateApiKey } from '../auth/keys';
import { CreateTenantDto } from '../http/dto';
import { presentApiKey, presentTenant } from '../http/presenters';
import { DB } from '@switchboard/platform';

/** Creates a tenant with its first API key in one transaction. Shared with the admin CLI. */
export async function createTenant(db: Db, name: string) {
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

@ApiTags('admin')
@ApiBearerAuth()
@Controller('v1/admin')
export class AdminController {
  constructor(@Inject(DB) private readonly db: Db) {}

  /** A new tenant and its first API key. The key is shown in this response only. */
  @Post('tenants')
  @AdminOnly()
  @HttpCode(201)
  create(@Body() body: CreateTenantDto) {
    return createTenant(this.db, body.name);
  }
}
