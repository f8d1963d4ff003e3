import type { ApiKey, Tenant } from '@prisma/client';
import {
  applyRateLimitsUpdate,
  applySettingsUpdate,
  applyTenantUpdate,
  newId,
  type UpdateRateLimitsRequest,
  type UpdateSettingsRequest,
  type UpdateTenantRequest,
} from '@switchboard/contracts';
import { poolOf, type Db, type Prisma } from '@switchboard/database';
import { OPERATOR_ACTOR, recordAudit, type AuditEntry } from './audit-log';
import { sql, SqlDb, type Sql } from './sql';
import { tenantSpentTodayUsd } from './tenant-spend';
import { HOLDS_SESSION, WAITING } from './turn/statuses';

/** A key as stored: its hash and display prefix (the key itself is never stored). */
export interface StoredKey {
  name: string;
  prefix: string;
  hash: string;
  /** docs/adr/0066; absent: `admin`. */
  role?: string;
  /** The agents the key is limited to; absent or empty: every agent. */
  agentIds?: string[];
  expiresAt?: Date | null;
}

/**
 * A tenant as the operator sees it (docs/adr/0030): its row, and live figures read in the same
 * statement — today's spend (as the daily cap counts it) and its unfinished turns by state.
 */
export interface TenantOverview {
  id: string;
  name: string;
  createdAt: Date;
  paused: boolean;
  pausedAt: Date | null;
  pauseReason: string | null;
  settings: unknown;
  /** Exact decimal (numeric as text). */
  spentTodayUsd: string;
  running: number;
  queued: number;
  waiting: number;
}

/** What a pause or resume found: no such tenant, or the tenant and whether this call changed it. */
export type PauseChange = { found: false } | { found: true; changed: boolean };

/** The overview statement over the tenants `where` selects, in id order (time-ordered UUIDs). */
function overviewStatement(where: Sql, limit: number): Sql {
  return sql`
    SELECT t.id, t.name, t.created_at AS "createdAt", t.kill_switch AS paused, t.paused_at AS "pausedAt",
      t.pause_reason AS "pauseReason", t.settings,
      trim_scale(${tenantSpentTodayUsd(sql`t.id`)})::text AS "spentTodayUsd",
      c.running, c.queued, c.waiting
    FROM tenants t
    CROSS JOIN LATERAL (
      -- turns_tenant_unfinished_idx holds exactly these rows.
      SELECT count(*) FILTER (WHERE u.status = 'running')::int AS running,
        count(*) FILTER (WHERE u.status = 'queued')::int AS queued,
        count(*) FILTER (WHERE u.status IN ${WAITING})::int AS waiting
      FROM turns u
      WHERE u.tenant_id = t.id AND u.status IN ${HOLDS_SESSION}
    ) c
    WHERE ${where}
    ORDER BY t.id
    LIMIT ${limit}::int`;
}

/** Tenants and their settings; every change here that matters for security writes its audit entry. */
export class TenantsRepository {
  private sqlDb?: SqlDb;

  constructor(private readonly db: Db) {}

  /** Typed SQL on Prisma's pool, for the statements Prisma cannot express. */
  private get sql(): SqlDb {
    this.sqlDb ??= new SqlDb(poolOf(this.db), { component: 'tenants' });
    return this.sqlDb;
  }

  /** A tenant with its first API key, and its `tenant.created` entry, in one transaction. */
  createWithKey(
    name: string,
    key: Omit<StoredKey, 'name'>,
    actor = OPERATOR_ACTOR,
  ): Promise<{ tenant: Tenant; apiKey: ApiKey }> {
    return this.db.$transaction(async (tx) => {
      const tenant = await tx.tenant.create({ data: { id: newId(), name } });
      const apiKey = await tx.apiKey.create({
        data: { id: newId(), tenantId: tenant.id, name: 'default', prefix: key.prefix, hash: key.hash },
      });
      await recordAudit(tx, {
        tenantId: tenant.id,
        actor,
        action: 'tenant.created',
        targetType: 'tenant',
        targetId: tenant.id,
        details: { name, firstKey: { id: apiKey.id, prefix: apiKey.prefix } },
      });
      return { tenant, apiKey };
    });
  }

  /** A tenant's id and name; undefined when there is no such tenant. */
  async find(tenantId: string): Promise<{ id: string; name: string } | undefined> {
    const tenant = await this.db.tenant.findUnique({
      where: { id: tenantId },
      select: { id: true, name: true },
    });
    return tenant ?? undefined;
  }

  /** The tenant's stored settings (unparsed); undefined when there is no such tenant. */
  async settings(tenantId: string): Promise<{ settings: unknown } | undefined> {
    const tenant = await this.db.tenant.findUnique({ where: { id: tenantId }, select: { settings: true } });
    return tenant ?? undefined;
  }

  /** One tenant as the operator sees it; undefined when there is none. */
  async overview(tenantId: string): Promise<TenantOverview | undefined> {
    return this.sql.first<TenantOverview>(overviewStatement(sql`t.id = ${tenantId}::uuid`, 1));
  }

  /** One page of tenants by id, `limit + 1` rows: the caller tells from the extra one whether more follow. */
  overviewPage(afterId: string | undefined, limit: number): Promise<TenantOverview[]> {
    const where = afterId === undefined ? sql`true` : sql`t.id > ${afterId}::uuid`;
    return this.sql.rows<TenantOverview>(overviewStatement(where, limit + 1));
  }

  /**
   * Merges a settings update into the stored settings under the tenant row's lock: concurrent
   * updates apply one after the other instead of losing each other's routes. Undefined when there is
   * no such tenant. The audit entry names the fields changed, never their values (a signing secret
   * is one of them).
   */
  updateSettings(
    tenantId: string,
    update: UpdateSettingsRequest,
    actor: string,
  ): Promise<{ settings: unknown } | undefined> {
    return this.mergeLocked(tenantId, (settings) => applySettingsUpdate(settings, update), {
      actor,
      action: 'tenant.settings_changed',
      details: { fields: Object.keys(update).sort() },
    });
  }

  /**
   * The operator's rate-limit overrides merged into the settings (`settings.rateLimits`,
   * docs/adr/0028), under the row's lock like a settings update. Undefined when there is no such tenant.
   */
  updateRateLimits(
    tenantId: string,
    update: UpdateRateLimitsRequest,
    actor = OPERATOR_ACTOR,
  ): Promise<{ settings: unknown } | undefined> {
    return this.mergeLocked(tenantId, (settings) => applyRateLimitsUpdate(settings, update), {
      actor,
      action: 'tenant.limits_changed',
      details: { rateLimits: update },
    });
  }

  /**
   * The operator's settings (`maxConcurrentTurns`, `share`, `dailySpendLimitUsd`, docs/adr/0030)
   * merged in under the row's lock; `null` removes one. Undefined when there is no such tenant.
   */
  updateOperatorSettings(
    tenantId: string,
    update: UpdateTenantRequest,
    actor = OPERATOR_ACTOR,
  ): Promise<{ settings: unknown } | undefined> {
    return this.mergeLocked(tenantId, (settings) => applyTenantUpdate(settings, update), {
      actor,
      action: 'tenant.limits_changed',
      details: { changes: update },
    });
  }

  /**
   * Pauses the tenant (docs/adr/0030): its kill switch on, with when and why, and the `tenant.paused`
   * entry, under the row's lock. A tenant already paused is left as it is (no entry): `changed` false.
   */
  pause(tenantId: string, reason: string | null, actor = OPERATOR_ACTOR): Promise<PauseChange> {
    return this.db.$transaction(async (tx) => {
      const [row] = await tx.$queryRaw<{ kill_switch: boolean }[]>`
        SELECT kill_switch FROM tenants WHERE id = ${tenantId}::uuid FOR UPDATE`;
      if (!row) return { found: false };
      if (row.kill_switch) return { found: true, changed: false };
      await tx.tenant.update({
        where: { id: tenantId },
        data: { killSwitch: true, pausedAt: new Date(), pauseReason: reason },
      });
      await recordAudit(tx, {
        tenantId,
        actor,
        action: 'tenant.paused',
        targetType: 'tenant',
        targetId: tenantId,
        details: reason === null ? {} : { reason },
      });
      return { found: true, changed: true };
    });
  }

  /**
   * Resumes the tenant: kill switch off, pause cleared, the `tenant.resumed` entry, under the row's
   * lock. A tenant that is not paused is left as it is (no entry): `changed` false. Waking its
   * queued turns is the caller's (`TenantPause` in libs/turns): this is the database's part.
   */
  resume(tenantId: string, actor = OPERATOR_ACTOR): Promise<PauseChange> {
    return this.db.$transaction(async (tx) => {
      const [row] = await tx.$queryRaw<{ kill_switch: boolean; paused_at: Date | null }[]>`
        SELECT kill_switch, paused_at FROM tenants WHERE id = ${tenantId}::uuid FOR UPDATE`;
      if (!row) return { found: false };
      if (!row.kill_switch) return { found: true, changed: false };
      await tx.tenant.update({
        where: { id: tenantId },
        data: { killSwitch: false, pausedAt: null, pauseReason: null },
      });
      await recordAudit(tx, {
        tenantId,
        actor,
        action: 'tenant.resumed',
        targetType: 'tenant',
        targetId: tenantId,
        details: row.paused_at ? { pausedAt: row.paused_at.toISOString() } : {},
      });
      return { found: true, changed: true };
    });
  }

  /**
   * Rewrites the tenant's settings with `merge` under the row's lock, with its audit entry in the
   * same transaction; undefined for no such tenant (nothing written).
   */
  private mergeLocked(
    tenantId: string,
    merge: (settings: unknown) => unknown,
    audit: Pick<AuditEntry, 'actor' | 'action' | 'details'>,
  ): Promise<{ settings: unknown } | undefined> {
    return this.db.$transaction(async (tx) => {
      const [locked] = await tx.$queryRaw<{ settings: unknown }[]>`
        SELECT settings FROM tenants WHERE id = ${tenantId}::uuid FOR UPDATE`;
      if (!locked) return undefined;
      const updated = await tx.tenant.update({
        where: { id: tenantId },
        data: { settings: merge(locked.settings) as Prisma.InputJsonValue },
        select: { settings: true },
      });
      await recordAudit(tx, { ...audit, tenantId, targetType: 'tenant', targetId: tenantId });
      return updated;
    });
  }
}

/** A tenant's API keys, and the lookup that authenticates a request. */
/** The kinds of object that belong to one agent, which a key limited to agents may only reach for its own. */
export type AgentOwnedKind =
  'session' | 'turn' | 'approval' | 'task' | 'schedule' | 'trigger' | 'experiment' | 'toolResult';

export class ApiKeysRepository {
  constructor(private readonly db: Db) {}

  /** A new key and its `api_key.created` entry (name and display prefix, never the hash). */
  create(tenantId: string, key: StoredKey, actor: string): Promise<ApiKey> {
    return this.db.$transaction(async (tx) => {
      const row = await tx.apiKey.create({ data: { id: newId(), tenantId, ...key } });
      await recordAudit(tx, {
        tenantId,
        actor,
        action: 'api_key.created',
        targetType: 'api_key',
        targetId: row.id,
        details: {
          name: row.name,
          prefix: row.prefix,
          role: row.role,
          ...(row.agentIds.length > 0 ? { agentIds: row.agentIds } : {}),
          ...(row.expiresAt ? { expiresAt: row.expiresAt.toISOString() } : {}),
        },
      });
      return row;
    });
  }

  /** How many of `ids` are agents of the tenant (not deleted): a new key may only be limited to those. */
  countAgents(tenantId: string, ids: string[]): Promise<number> {
    return this.db.agent.count({ where: { tenantId, id: { in: ids }, deletedAt: null } });
  }

  /**
   * The agent an object of the tenant belongs to (a key limited to agents may only reach its own,
   * docs/adr/0066); undefined when the tenant has no such object.
   */
  async agentOf(tenantId: string, kind: AgentOwnedKind, id: string): Promise<string | undefined> {
    const where = { id, tenantId };
    const select = { agentId: true } as const;
    switch (kind) {
      case 'session':
        return (await this.db.session.findFirst({ where, select }))?.agentId;
      case 'turn':
        return (await this.db.turn.findFirst({ where, select }))?.agentId;
      case 'task':
        return (await this.db.task.findFirst({ where, select }))?.agentId;
      case 'schedule':
        return (await this.db.schedule.findFirst({ where, select }))?.agentId;
      case 'trigger':
        return (await this.db.trigger.findFirst({ where, select }))?.agentId;
      case 'experiment':
        return (await this.db.experiment.findFirst({ where, select }))?.agentId;
      case 'approval': {
        const approval = await this.db.approval.findFirst({ where, select: { sessionId: true } });
        return approval ? this.agentOf(tenantId, 'session', approval.sessionId) : undefined;
      }
      case 'toolResult': {
        // Content-addressed: the session that stored it first; one kept without a session is no agent's.
        const original = await this.db.toolResultOriginal.findFirst({ where, select: { sessionId: true } });
        return original?.sessionId ? this.agentOf(tenantId, 'session', original.sessionId) : undefined;
      }
    }
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

  /** A key by id alone, whatever its tenant: the operator's CLI names keys so. */
  byId(id: string): Promise<ApiKey | null> {
    return this.db.apiKey.findUnique({ where: { id } });
  }

  /**
   * Revokes a key with its `api_key.revoked` entry; a revoked one is returned as it is (no entry).
   * Two revocations racing: only the one that changes the row writes an entry.
   */
  revoke(key: ApiKey, actor: string): Promise<ApiKey> {
    if (key.revokedAt) return Promise.resolve(key);
    return this.db.$transaction(async (tx) => {
      const changed = await tx.apiKey.updateMany({
        where: { id: key.id, revokedAt: null },
        data: { revokedAt: new Date() },
      });
      if (changed.count === 1) {
        await recordAudit(tx, {
          tenantId: key.tenantId,
          actor,
          action: 'api_key.revoked',
          targetType: 'api_key',
          targetId: key.id,
          details: { name: key.name, prefix: key.prefix },
        });
      }
      return tx.apiKey.findUniqueOrThrow({ where: { id: key.id } });
    });
  }

  /** The key with this hash, revoked or not, with what it may do (docs/adr/0066). */
  byHash(
    hash: string,
  ): Promise<Pick<ApiKey, 'id' | 'tenantId' | 'revokedAt' | 'role' | 'agentIds' | 'expiresAt'> | null> {
    return this.db.apiKey.findUnique({
      where: { hash },
      select: { id: true, tenantId: true, revokedAt: true, role: true, agentIds: true, expiresAt: true },
    });
  }
}
