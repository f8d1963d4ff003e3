import type { ApiKey, Tenant } from '@prisma/client';
import {
  applyRateLimitsUpdate,
  applySettingsUpdate,
  newId,
  type UpdateRateLimitsRequest,
  type UpdateSettingsRequest,
} from '@switchboard/contracts';
import type { Db, Prisma } from '@switchboard/database';

/** A key as stored: its hash and display prefix (the key itself is never stored). */
export interface StoredKey {
  name: string;
  prefix: string;
  hash: string;
}

/** Tenants and their settings. */
export class TenantsRepository {
  constructor(private readonly db: Db) {}

  /** A tenant with its first API key, in one transaction. */
  createWithKey(name: string, key: Omit<StoredKey, 'name'>): Promise<{ tenant: Tenant; apiKey: ApiKey }> {
    return this.db.$transaction(async (tx) => {
      const tenant = await tx.tenant.create({ data: { id: newId(), name } });
      const apiKey = await tx.apiKey.create({
        data: { id: newId(), tenantId: tenant.id, name: 'default', prefix: key.prefix, hash: key.hash },
      });
      return { tenant, apiKey };
    });
  }

  /** The tenant's stored settings (unparsed); undefined when there is no such tenant. */
  async settings(tenantId: string): Promise<{ settings: unknown } | undefined> {
    const tenant = await this.db.tenant.findUnique({ where: { id: tenantId }, select: { settings: true } });
    return tenant ?? undefined;
  }

  /**
   * Merges a settings update into the stored settings under the tenant row's lock: concurrent
   * updates apply one after the other instead of losing each other's routes. Undefined when there is
   * no such tenant.
   */
  updateSettings(
    tenantId: string,
    update: UpdateSettingsRequest,
  ): Promise<{ settings: unknown } | undefined> {
    return this.mergeLocked(tenantId, (settings) => applySettingsUpdate(settings, update));
  }

  /**
   * The operator's rate-limit overrides merged into the settings (`settings.rateLimits`,
   * docs/adr/0028), under the row's lock like a settings update. Undefined when there is no such tenant.
   */
  updateRateLimits(
    tenantId: string,
    update: UpdateRateLimitsRequest,
  ): Promise<{ settings: unknown } | undefined> {
    return this.mergeLocked(tenantId, (settings) => applyRateLimitsUpdate(settings, update));
  }

  /** Rewrites the tenant's settings with `merge` under the row's lock; undefined for no such tenant. */
  private mergeLocked(
    tenantId: string,
    merge: (settings: unknown) => unknown,
  ): Promise<{ settings: unknown } | undefined> {
    return this.db.$transaction(async (tx) => {
      const [locked] = await tx.$queryRaw<{ settings: unknown }[]>`
        SELECT settings FROM tenants WHERE id = ${tenantId}::uuid FOR UPDATE`;
      if (!locked) return undefined;
      return tx.tenant.update({
        where: { id: tenantId },
        data: { settings: merge(locked.settings) as Prisma.InputJsonValue },
        select: { settings: true },
      });
    });
  }
}

/** A tenant's API keys, and the lookup that authenticates a request. */
export class ApiKeysRepository {
  constructor(private readonly db: Db) {}

  create(tenantId: string, key: StoredKey): Promise<ApiKey> {
    return this.db.apiKey.create({ data: { id: newId(), tenantId, ...key } });
  }

  /** One page by id (time-ordered), revoked keys included; `limit + 1` rows tell whether more follow. */
  page(tenantId: string, afterId: string | undefined, limit: number): Promise<ApiKey[]> {
    return this.db.apiKey.findMany({
      where: { tenantId, ...(afterId !== undefined ? { id: { gt: afterId } } : {}) },
      orderBy: { id: 'asc' },
      take: limit + 1,
    });
  }

  find(tenantId: string, id: string): Promise<ApiKey | null> {
    return this.db.apiKey.findFirst({ where: { id, tenantId } });
  }

  /** Revokes a key; a revoked one is returned as it is. */
  revoke(key: ApiKey): Promise<ApiKey> {
    if (key.revokedAt) return Promise.resolve(key);
    return this.db.apiKey.update({ where: { id: key.id }, data: { revokedAt: new Date() } });
  }

  /** The key with this hash, revoked or not. */
  byHash(hash: string): Promise<Pick<ApiKey, 'id' | 'tenantId' | 'revokedAt'> | null> {
    return this.db.apiKey.findUnique({
      where: { hash },
      select: { id: true, tenantId: true, revokedAt: true },
    });
  }
}
