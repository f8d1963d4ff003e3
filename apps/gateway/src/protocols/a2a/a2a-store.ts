import { TaskState, type TaskPushNotificationConfig } from '@a2a-js/sdk';
import { newId, type TurnResponse } from '@switchboard/contracts';
import { ofTenant, sql, type SqlDb } from '@switchboard/store';

/**
 * The A2A adapter's own statements (docs/adr/0037): the push notification configs of a task
 * (`a2a_push_configs`, tenant-scoped) and the agent's tasks as ListTasks pages them (turns).
 */

/** The most configs one task keeps: a client that registers more is refused, nothing stored. */
export const PUSH_CONFIGS_PER_TASK = 10;

/** The wire versions a config remembers (the body of its deliveries is that version's shape). */
export type PushWireVersion = '0.3' | '1.0';

interface PushConfigRow {
  configId: string;
  turnId: string;
  url: string;
  token: string | null;
  authScheme: string | null;
  authCredentials: string | null;
}

const asConfig = (r: PushConfigRow): TaskPushNotificationConfig => ({
  tenant: '',
  id: r.configId,
  taskId: r.turnId,
  url: r.url,
  token: r.token ?? '',
  authentication:
    r.authScheme !== null ? { scheme: r.authScheme, credentials: r.authCredentials ?? '' } : undefined,
});

const CONFIG_COLUMNS = sql`config_id AS "configId", turn_id AS "turnId", url, token,
  auth_scheme AS "authScheme", auth_credentials AS "authCredentials"`;

/** Which turn statuses a task state filter means (ListTasks `status`). */
const STATUSES_OF: Partial<Record<TaskState, string[]>> = {
  [TaskState.TASK_STATE_SUBMITTED]: ['queued'],
  [TaskState.TASK_STATE_WORKING]: ['running', 'awaiting_subagent'],
  [TaskState.TASK_STATE_INPUT_REQUIRED]: ['awaiting_approval'],
  [TaskState.TASK_STATE_COMPLETED]: ['completed'],
  [TaskState.TASK_STATE_FAILED]: ['failed'],
  [TaskState.TASK_STATE_CANCELED]: ['cancelled'],
};

/** The turn statuses a task state stands for; [] for a state no turn is ever in (rejected, auth-required). */
export const statusesOf = (state: TaskState): string[] => STATUSES_OF[state] ?? [];

/** What a ListTasks page reads of a turn: what `taskOf` needs. */
export type ListedTurn = Pick<
  TurnResponse,
  | 'id'
  | 'sessionId'
  | 'agentId'
  | 'status'
  | 'finalText'
  | 'failure'
  | 'stopReason'
  | 'createdAt'
  | 'startedAt'
  | 'completedAt'
>;

export class A2aStore {
  constructor(private readonly sql: SqlDb) {}

  /**
   * Stores (or replaces, same id) a config of the tenant's task; false when the task already has
   * PUSH_CONFIGS_PER_TASK others. One statement: the count and the upsert see the same rows.
   */
  async savePushConfig(
    tenantId: string,
    agentId: string,
    c: TaskPushNotificationConfig & { id: string },
    version: PushWireVersion,
  ): Promise<boolean> {
    const scheme = c.authentication?.scheme || null;
    const n = await this.sql.execute(sql`
      INSERT INTO a2a_push_configs (id, tenant_id, agent_id, turn_id, config_id, url, token, auth_scheme,
        auth_credentials, protocol_version)
      SELECT ${newId()}::uuid, ${tenantId}::uuid, ${agentId}::uuid, ${c.taskId}::uuid, ${c.id}, ${c.url},
        ${c.token || null}, ${scheme}, ${scheme ? c.authentication?.credentials || null : null}, ${version}
      WHERE (SELECT count(*) FROM a2a_push_configs WHERE turn_id = ${c.taskId}::uuid
             AND ${ofTenant('tenant_id', tenantId)} AND config_id <> ${c.id}) < ${PUSH_CONFIGS_PER_TASK}
      ON CONFLICT (turn_id, config_id) DO UPDATE SET url = EXCLUDED.url, token = EXCLUDED.token,
        auth_scheme = EXCLUDED.auth_scheme, auth_credentials = EXCLUDED.auth_credentials,
        protocol_version = EXCLUDED.protocol_version
        WHERE a2a_push_configs.tenant_id = EXCLUDED.tenant_id`);
    return n > 0;
  }

  async pushConfig(tenantId: string, turnId: string, configId: string) {
    const row = await this.sql.first<PushConfigRow>(sql`
      SELECT ${CONFIG_COLUMNS} FROM a2a_push_configs
      WHERE turn_id = ${turnId}::uuid AND config_id = ${configId} AND ${ofTenant('tenant_id', tenantId)}`);
    return row && asConfig(row);
  }

  async pushConfigs(tenantId: string, turnId: string): Promise<TaskPushNotificationConfig[]> {
    const rows = await this.sql.rows<PushConfigRow>(sql`
      SELECT ${CONFIG_COLUMNS} FROM a2a_push_configs
      WHERE turn_id = ${turnId}::uuid AND ${ofTenant('tenant_id', tenantId)}
      ORDER BY created_at, config_id`);
    return rows.map(asConfig);
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
  }): Promise<{ rows: ListedTurn[]; total: number }> {
    const filter = sql`${ofTenant('t.tenant_id', q.tenantId)} AND t.agent_id = ${q.agentId}::uuid
      AND (${q.sessionId ?? null}::uuid IS NULL OR t.session_id = ${q.sessionId ?? null}::uuid)
      AND (${q.statuses?.length ? q.statuses : null}::text[] IS NULL OR t.status = ANY(${q.statuses?.length ? q.statuses : null}::text[]))
      AND (${q.statusAfter?.toISOString() ?? null}::timestamptz IS NULL
           OR COALESCE(t.completed_at, t.started_at, t.created_at) >= ${q.statusAfter?.toISOString() ?? null}::timestamptz)`;
    const cursorAt = q.before?.createdAt.toISOString() ?? null;
    const cursorId = q.before?.id ?? null;
    const [rows, count] = await Promise.all([
      this.sql.rows<ListedTurn & { createdAt: Date; startedAt: Date | null; completedAt: Date | null }>(sql`
        SELECT t.id, t.session_id AS "sessionId", t.agent_id AS "agentId", t.status, t.final_text AS "finalText",
          t.failure, t.stop_reason AS "stopReason", t.created_at AS "createdAt", t.started_at AS "startedAt",
          t.completed_at AS "completedAt"
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
