import { newId, type AuditAction } from '@switchboard/contracts';
import { isSecretKey, poolOf, redact, type Db, type Prisma, type Tx } from '@switchboard/database';
import { json, Sql, sql, SqlDb } from './sql';

/**
 * The audit log (docs/adr/0030): one `audit_events` row per security-relevant change, written in
 * the transaction of the change itself, so a change without its entry (or an entry without its
 * change) never commits. `details` are built by each writer from fields it names, then passed
 * through `auditDetails`, which redacts anything whose key names a secret or a hash.
 */

/** Who acted: the operator (ADMIN_TOKEN, the admin CLI) or a tenant's API key. */
export const OPERATOR_ACTOR = 'operator';
export const apiKeyActor = (keyId: string): string => `api_key:${keyId}`;

export interface AuditEntry {
  /** null: an operator-wide event. */
  tenantId: string | null;
  actor: string;
  action: AuditAction;
  targetType: string;
  targetId: string | null;
  details?: Record<string, unknown>;
}

/** A key names a hash: `hash`, `tokenHash`, `key_hash`. */
const isHashKey = (key: string) => /hash/i.test(key);

/**
 * What an entry may keep of `details`: plain JSON, every value under a key that names a secret
 * (`isSecretKey`: token, secret, password, authorization, api key…) or a hash redacted, at any depth.
 */
export function auditDetails(details: Record<string, unknown> = {}): Record<string, unknown> {
  const strip = (value: unknown): unknown => {
    if (Array.isArray(value)) return value.map(strip);
    if (value && typeof value === 'object') {
      return Object.fromEntries(
        Object.entries(value).map(([k, v]) => [k, isSecretKey(k) || isHashKey(k) ? '[redacted]' : strip(v)]),
      );
    }
    return value;
  };
  return strip(redact(details)) as Record<string, unknown>;
}

/** The entry's INSERT, for a transaction on the store's typed SQL (`SqlRunner`). */
export function auditInsert(e: AuditEntry): Sql {
  return sql`
    INSERT INTO audit_events (id, tenant_id, actor, action, target_type, target_id, details)
    VALUES (${newId()}::uuid, ${e.tenantId}::uuid, ${e.actor}, ${e.action}, ${e.targetType}, ${e.targetId},
      ${json(auditDetails(e.details))}::jsonb)`;
}

/** The entry, inside a Prisma transaction (the repositories on Prisma). */
export async function recordAudit(tx: Tx, e: AuditEntry): Promise<void> {
  await tx.auditEvent.create({
    data: {
      id: newId(),
      tenantId: e.tenantId,
      actor: e.actor,
      action: e.action,
      targetType: e.targetType,
      targetId: e.targetId,
      details: auditDetails(e.details) as Prisma.InputJsonObject,
    },
  });
}

/** An audit entry as read. */
export interface AuditRow {
  id: string;
  tenantId: string | null;
  actor: string;
  action: string;
  targetType: string;
  targetId: string | null;
  details: Record<string, unknown>;
  createdAt: Date;
}

export interface AuditFilter {
  /** Only this tenant's entries (a tenant's own route always sets it). */
  tenantId?: string;
  action?: AuditAction;
  /**
   * Only entries about these agents or their objects (sessions, turns, tasks, approvals, triggers):
   * a key limited to agents (docs/adr/0066). Entries about the tenant or its keys are left out.
   */
  agentIds?: string[];
  /** The last entry of the previous page: the page continues after it, newest first. */
  beforeId?: string;
  limit: number;
}

/** An entry's target as a uuid (null when it is not one: a cast of anything else would fail). */
const targetUuid = sql`(CASE WHEN a.target_id ~ '^[0-9a-fA-F-]{36}$' THEN a.target_id::uuid END)`;

/** The entry is about one of `ids` (agents) or an object of theirs, found in the entry's tenant. */
function ofAgents(ids: string[]) {
  const owned = (table: string) =>
    sql`EXISTS (SELECT 1 FROM ${new Sql([table], [])} o WHERE o.id = ${targetUuid}
      AND o.tenant_id = a.tenant_id AND o.agent_id = ANY(${ids}::uuid[]))`;
  return sql`(
    (a.target_type = 'agent' AND ${targetUuid} = ANY(${ids}::uuid[]))
    OR (a.target_type = 'session' AND ${owned('sessions')})
    OR (a.target_type = 'turn' AND ${owned('turns')})
    OR (a.target_type = 'task' AND ${owned('tasks')})
    OR (a.target_type = 'trigger' AND ${owned('triggers')})
    OR (a.target_type = 'approval' AND EXISTS (SELECT 1 FROM approvals ap JOIN sessions s ON s.id = ap.session_id
      WHERE ap.id = ${targetUuid} AND ap.tenant_id = a.tenant_id AND s.agent_id = ANY(${ids}::uuid[]))))`;
}

/** Reads of the audit log: newest first by (created_at, id), the order of its two indexes. */
export class AuditLogRepository {
  private readonly sql: SqlDb;

  constructor(db: Db) {
    this.sql = new SqlDb(poolOf(db), { component: 'audit' });
  }

  /**
   * One page, `limit + 1` rows: the caller tells from the extra one whether more follow. A cursor
   * that names no entry of the filter (another tenant's, or none) gives an empty page.
   */
  page(f: AuditFilter): Promise<AuditRow[]> {
    const tenant = f.tenantId === undefined ? sql`true` : sql`a.tenant_id = ${f.tenantId}::uuid`;
    const action = f.action === undefined ? sql`true` : sql`a.action = ${f.action}`;
    const agents = f.agentIds === undefined ? sql`true` : ofAgents(f.agentIds);
    const after =
      f.beforeId === undefined
        ? sql`true`
        : sql`(a.created_at, a.id) < (SELECT c.created_at, c.id FROM audit_events c
            WHERE c.id = ${f.beforeId}::uuid AND ${f.tenantId === undefined ? sql`true` : sql`c.tenant_id = ${f.tenantId}::uuid`})`;
    return this.sql.rows<AuditRow>(sql`
      SELECT a.id, a.tenant_id AS "tenantId", a.actor, a.action, a.target_type AS "targetType",
        a.target_id AS "targetId", a.details, a.created_at AS "createdAt"
      FROM audit_events a
      WHERE ${tenant} AND ${action} AND ${agents} AND ${after}
      ORDER BY a.created_at DESC, a.id DESC
      LIMIT ${f.limit + 1}::int`);
  }
}
