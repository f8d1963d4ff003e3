import { newId, type TaskTurn } from '@switchboard/contracts';
import { ofTenant, sql, type SqlDb } from './sql';

/**
 * The A2A adapter's statements (docs/adr/0037): the push notification configs of a task
 * (`a2a_push_configs`, tenant-scoped) and an agent's turns as ListTasks pages them. Plain rows: the
 * wire types are the gateway's (apps/gateway/src/protocols/a2a).
 */

/** The most configs one task keeps: a client that registers more is refused, nothing stored. */
export const PUSH_CONFIGS_PER_TASK = 10;

/** The wire versions a config remembers (the body of its deliveries is that version's shape). */
export type PushWireVersion = '0.3' | '1.0';

/** A push notification config as stored: `configId` is the A2A id, `turnId` the task. */
export interface PushConfigRow {
  configId: string;
  turnId: string;
  url: string;
  token: string | null;
  authScheme: string | null;
  authCredentials: string | null;
}

const CONFIG_COLUMNS = sql`config_id AS "configId", turn_id AS "turnId", url, token,
  auth_scheme AS "authScheme", auth_credentials AS "authCredentials"`;

export class A2aStore {
  constructor(private readonly sql: SqlDb) {}

  /**
   * Stores (or replaces, same id) a config of the tenant's task; false when the task already has
   * PUSH_CONFIGS_PER_TASK others. One statement: the count and the upsert see the same rows.
   */
  async savePushConfig(
    tenantId: string,
    agentId: string,
    c: PushConfigRow,
    version: PushWireVersion,
  ): Promise<boolean> {
    const scheme = c.authScheme;
    const n = await this.sql.execute(sql`
      INSERT INTO a2a_push_configs (id, tenant_id, agent_id, turn_id, config_id, url, token, auth_scheme,
        auth_credentials, protocol_version)
      SELECT ${newId()}::uuid, ${tenantId}::uuid, ${agentId}::uuid, ${c.turnId}::uuid, ${c.configId}, ${c.url},
        ${c.token}, ${scheme}, ${scheme ? c.authCredentials : null}, ${version}
      WHERE (SELECT count(*) FROM a2a_push_configs WHERE turn_id = ${c.turnId}::uuid
             AND ${ofTenant('tenant_id', tenantId)} AND config_id <> ${c.configId}) < ${PUSH_CONFIGS_PER_TASK}
      ON CONFLICT (turn_id, config_id) DO UPDATE SET url = EXCLUDED.url, token = EXCLUDED.token,
        auth_scheme = EXCLUDED.auth_scheme, auth_credentials = EXCLUDED.auth_credentials,
        protocol_version = EXCLUDED.protocol_version
        WHERE a2a_push_configs.tenant_id = EXCLUDED.tenant_id`);
    return n > 0;
  }

  pushConfig(tenantId: string, turnId: string, configId: string): Promise<PushConfigRow | undefined> {
    return this.sql.first<PushConfigRow>(sql`
      SELECT ${CONFIG_COLUMNS} FROM a2a_push_configs
      WHERE turn_id = ${turnId}::uuid AND config_id = ${configId} AND ${ofTenant('tenant_id', tenantId)}`);
  }

  pushConfigs(tenantId: string, turnId: string): Promise<PushConfigRow[]> {
    return this.sql.rows<PushConfigRow>(sql`
      SELECT ${CONFIG_COLUMNS} FROM a2a_push_configs
      WHERE turn_id = ${turnId}::uuid AND ${ofTenant('tenant_id', tenantId)}
      ORDER BY created_at, config_id`);
  }

  /** True when there was such a config. */
  async deletePushConfig(tenantId: string, turnId: string, configId: string): Promise<boolean> {
    const n = await this.sql.execute(sql`
      DELETE FROM a2a_push_configs
      WHERE turn_id = ${turnId}::uuid AND config_id = ${configId} AND ${ofTenant('tenant_id', tenantId)}`);
    return n > 0;
  }

  /**
   * A page of the agent's turns, newest first (created_at, id), after the `before` cursor, with the
   * count of all that match. `statuses` empty: any. `statusAfter`: the status timestamp (the task's
   * `status.timestamp`: completed, else started, else created) at or after it.
   */
  async listTurns(q: {
    tenantId: string;
    agentId: string;
    sessionId?: string;
    statuses?: string[];
    statusAfter?: Date;
    before?: { createdAt: Date; id: string };
    limit: number;
  }): Promise<{ rows: TaskTurn[]; total: number }> {
    const filter = sql`${ofTenant('t.tenant_id', q.tenantId)} AND t.agent_id = ${q.agentId}::uuid
      AND (${q.sessionId ?? null}::uuid IS NULL OR t.session_id = ${q.sessionId ?? null}::uuid)
      AND (${q.statuses?.length ? q.statuses : null}::text[] IS NULL OR t.status = ANY(${q.statuses?.length ? q.statuses : null}::text[]))
      AND (${q.statusAfter?.toISOString() ?? null}::timestamptz IS NULL
           OR COALESCE(t.completed_at, t.started_at, t.created_at) >= ${q.statusAfter?.toISOString() ?? null}::timestamptz)`;
    const cursorAt = q.before?.createdAt.toISOString() ?? null;
    const cursorId = q.before?.id ?? null;
    const [rows, count] = await Promise.all([
      this.sql.rows<TaskTurn & { createdAt: Date; startedAt: Date | null; completedAt: Date | null }>(sql`
        SELECT t.id, t.session_id AS "sessionId", t.agent_id AS "agentId", t.status, t.final_text AS "finalText",
          t.failure, t.stop_reason AS "stopReason", t.created_at AS "createdAt", t.started_at AS "startedAt",
          t.completed_at AS "completedAt", t.cancel_reason AS "cancelReason", t.cancel_note AS "cancelNote"
        FROM turns t
        WHERE ${filter}
          AND (${cursorAt}::timestamptz IS NULL OR (t.created_at, t.id) < (${cursorAt}::timestamptz, ${cursorId}::uuid))
        ORDER BY t.created_at DESC, t.id DESC
        LIMIT ${q.limit}`),
      this.sql.first<{ n: string }>(sql`SELECT count(*)::text AS n FROM turns t WHERE ${filter}`),
    ]);
    const iso = (d: Date | string | null) => (d === null ? null : new Date(d).toISOString());
    return {
      rows: rows.map((r) => ({
        ...r,
        createdAt: iso(r.createdAt)!,
        startedAt: iso(r.startedAt),
        completedAt: iso(r.completedAt),
      })),
      total: Number(count?.n ?? 0),
    };
  }
}
