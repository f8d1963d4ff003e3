import { Controller, Get, HttpCode, Inject, Param, Post } from '@nestjs/common';
import { AppError, DataKeyListResponse, notFound } from '@switchboard/contracts';
import { CIPHER, TenantCipher } from '@switchboard/platform';
import { OPERATOR_ACTOR, TenantsRepository } from '@switchboard/store';
import { AdminOnly } from '../platform/auth/guard';
import { AdminApi, Operation } from '../platform/openapi';
import { pathId } from './presenters';

/**
 * The operator's view of a tenant's data keys (docs/adr/0067): their versions and states, and the
 * rotation that makes a new version active at once (older content is re-sealed lazily on write and by
 * the maintenance job). Never key material. KEK rotation (re-wrapping every key) is the admin CLI's
 * `rewrap-data-keys`.
 */
@AdminApi('admin')
@Controller('v1/admin/tenants/:id/data-keys')
export class DataKeysController {
  constructor(
    @Inject(TenantsRepository) private readonly tenants: TenantsRepository,
    @Inject(CIPHER) private readonly cipher: TenantCipher,
  ) {}

  @Get()
  @AdminOnly()
  @Operation({
    id: 'listTenantDataKeys',
    summary: "A tenant's data-key versions and encryption mode (never key material)",
    description:
      "The tenant's encryption mode in force and every version of its data key, newest first: state (`active` seals new content, `retired` still opens what it sealed, `destroyed`), the provider and the id of the key-encryption key wrapping it. Never key material. 404 for an unknown tenant.",
    status: 200,
    schema: DataKeyListResponse,
    errors: [404],
  })
  async list(@Param('id') id: string): Promise<DataKeyListResponse> {
    const tenantId = pathId(id, 'tenant');
    return this.present(tenantId, await this.modeOf(tenantId));
  }

  @Post('rotate')
  @AdminOnly()
  @HttpCode(200)
  @Operation({
    id: 'rotateTenantDataKey',
    summary: "Rotate a tenant's data key: a new version seals new content at once",
    description:
      "Makes a new version of the tenant's data key, active at once; the previous one is retired and still opens what it sealed, which the maintenance job (and any write of it) re-seals under the new version in batches. Audited `tenant.data_key_rotated`. 400 `validation_failed` when the deployment has no key provider, 404 for an unknown tenant; nothing changes either way.",
    status: 200,
    schema: DataKeyListResponse,
    errors: [400, 404],
  })
  async rotate(@Param('id') id: string): Promise<DataKeyListResponse> {
    const tenantId = pathId(id, 'tenant');
    const mode = await this.modeOf(tenantId);
    if (!this.cipher.available) {
      const message =
        'no key provider is configured (ENCRYPTION_KEYS, ENCRYPTION_KEYS_FILE or VAULT_*): nothing to rotate';
      throw new AppError('validation_failed', message, { issues: [{ path: 'id', message }] });
    }
    await this.cipher.rotate(tenantId, OPERATOR_ACTOR);
    return this.present(tenantId, mode);
  }

  private async modeOf(tenantId: string) {
    const tenant = await this.tenants.settings(tenantId);
    if (!tenant) throw notFound('tenant');
    return this.cipher.modeFromSettings(tenant.settings);
  }

  private async present(tenantId: string, mode: DataKeyListResponse['mode']): Promise<DataKeyListResponse> {
    const keys = this.cipher.available ? await this.cipher.listKeys(tenantId) : [];
    return {
      tenantId,
      mode,
      data: keys.map((k) => ({ ...k, createdAt: k.createdAt.toISOString() })),
    };
  }
}
