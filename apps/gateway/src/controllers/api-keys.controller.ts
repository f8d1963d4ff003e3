import { Body, Controller, Delete, Get, HttpCode, Inject, Param, Post } from '@nestjs/common';
import { ApiBearerAuth, ApiTags } from '@nestjs/swagger';
import { newId, notFound } from '@switchboard/contracts';
import type { Db } from '@switchboard/database';
import { TenantId } from '../auth/guard';
import { generateApiKey } from '../auth/keys';
import { CreateApiKeyDto } from '../http/dto';
import { pathId, presentApiKey } from '../http/presenters';
import { DB } from '@switchboard/platform';

@ApiTags('api-keys')
@ApiBearerAuth()
@Controller('v1/api-keys')
export class ApiKeysController {
  constructor(@Inject(DB) private readonly db: Db) {}

  @Post()
  @HttpCode(201)
  async create(@TenantId() tenantId: string, @Body() body: CreateApiKeyDto) {
    const { key, hash, prefix } = generateApiKey();
    const row = await this.db.apiKey.create({
      data: { id: newId(), tenantId, name: body.name ?? 'unnamed', prefix, hash },
    });
    return { ...presentApiKey(row), key };
  }

  @Get()
  async list(@TenantId() tenantId: string) {
    const rows = await this.db.apiKey.findMany({ where: { tenantId }, orderBy: { createdAt: 'asc' } });
    return { data: rows.map(presentApiKey) };
  }

  /** Revokes a key: it stops working at once. Revoking twice is harmless. */
  @Delete(':id')
  async revoke(@TenantId() tenantId: string, @Param('id') id: string) {
    const key = await this.db.apiKey.findFirst({ where: { id: pathId(id, 'api key'), tenantId } });
    if (!key) throw notFound('api key');
    const row = key.revokedAt
      ? key
      : await this.db.apiKey.update({ where: { id: key.id }, data: { revokedAt: new Date() } });
    return presentApiKey(row);
  }
}
