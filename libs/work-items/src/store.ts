import { newId, type PlanStatus, type TodoItem, type WorkItemView } from '@switchboard/contracts';
import { json, ofTenant, sql, type Sql, type SqlRunner } from '@switchboard/store';

/**
 * Work items in Postgres (seed 002 "Work-Item Persistence Foundation", docs/adr/0031). Every
 * statement is scoped by tenant and agent; focus lives on the agent (`agents.current_work_item_id`),
 * and the views are derived in SQL from the row and that pointer, never stored.
 */

export interface WorkItemRow {
  id: string;
  tenantId: string;
  agentId: string;
  /** bigint as text: the insertion order, the page cursor. */
  position: string;
  objective: string;
  state: 'open' | 'completed' | 'cancelled';
  planStatus: PlanStatus;
  plan: string | null;
  todoList: TodoItem[];
  blockedBy: string | null;
  recheckAt: Date | null;
  recheckConsumedAt: Date | null;
  resultSummary: string | null;
  createdBy: 'agent' | 'operator';
  createdTurnId: string | null;
  closedBy: 'agent' | 'operator' | null;
  closedTurnId: string | null;
  createdAt: Date;
  updatedAt: Date;
  completedAt: Date | null;
  /** The agent's current work item. */
  current: boolean;
}

/** The row's columns as WorkItemRow, for an item aliased `w` next to its agent `a`. */
const COLUMNS = sql`w.id, w.tenant_id AS "tenantId", w.agent_id AS "agentId", w.position::text AS position,
  w.objective, w.state, w.plan_status AS "planStatus", w.plan, w.todo_list AS "todoList",
  w.blocked_by AS "blockedBy", w.recheck_at AS "recheckAt", w.recheck_consumed_at AS "recheckConsumedAt",
  w.result_summary AS "resultSummary", w.created_by AS "createdBy", w.created_turn_id AS "createdTurnId",
  w.closed_by AS "closedBy", w.closed_turn_id AS "closedTurnId",
  w.created_at AS "createdAt", w.updated_at AS "updatedAt", w.completed_at AS "completedAt",
  (w.id = a.current_work_item_id) IS TRUE AS current`;

/** The view's condition on `w` (an item) and `a` (its agent). */
export function viewCondition(view: WorkItemView): Sql {
  switch (view) {
    case 'all':
      return sql`true`;
    case 'current':
      return sql`w.id = a.current_work_item_id AND w.state = 'open'`;
    case 'queued':
      return sql`w.state = 'open' AND w.blocked_by IS NULL AND w.id IS DISTINCT FROM a.current_work_item_id`;
    case 'runnable':
      return sql`w.state = 'open' AND w.blocked_by IS NULL AND w.plan_status <> 'needs_input'`;
    case 'blocked':
      return sql`w.state = 'open' AND w.blocked_by IS NOT NULL`;
    case 'waiting_for_operator':
      return sql`w.state = 'open' AND w.blocked_by IS NULL AND w.plan_status = 'needs_input'`;
    case 'completed':
      return sql`w.state <> 'open'`;
  }
}

/** Where an item stands for the scheduler (seed 002 readiness projection). */
export function readinessOf(
  w: Pick<WorkItemRow, 'state' | 'blockedBy' | 'planStatus'>,
): 'runnable' | 'waiting_for_operator' | 'blocked' | 'completed' {
  if (w.state !== 'open') return 'completed';
  if (w.blockedBy !== null) return 'blocked';
  if (w.planStatus === 'needs_input') return 'waiting_for_operator';
  return 'runnable';
}

export interface NewWorkItem {
  tenantId: string;
  agentId: string;
  objective: string;
  planStatus?: PlanStatus;
  plan?: string;
  todoList?: TodoItem[];
  createdBy: 'agent' | 'operator';
  createdTurnId?: string;
  /** The creating tool call's key: the same key finds the item it made. */
  idempotencyKey?: string;
}

export interface WorkItemPatch {
  objective?: string;
  planStatus?: PlanStatus;
  plan?: string;
  todoList?: TodoItem[];
  /** null clears the blocker and its recheck; a text sets it with a recheck `recheckAfterMs` from now. */
  blockedBy?: string | null;
  recheckAfterMs?: number;
}

export type Refusal = 'not_found' | 'not_open';

export class WorkItemStore {
  constructor(
    private readonly db: SqlRunner,
    /** The recheck deadline a blocker gets when the caller gives none (WORK_ITEM_RECHECK_MS). */
    private readonly defaultRecheckMs = 3_600_000,
  ) {}

  /** A new open item of a live agent of the tenant; undefined when there is no such agent. */
  async create(n: NewWorkItem): Promise<WorkItemRow | undefined> {
    const key = n.idempotencyKey ?? null;
    return this.db.first<WorkItemRow>(sql`
      WITH a AS (
        SELECT id, current_work_item_id FROM agents
        WHERE id = ${n.agentId}::uuid AND tenant_id = ${n.tenantId}::uuid AND deleted_at IS NULL
      ),
      -- An operator's enqueue is a wake signal (docs/adr/0031): a sleeping agent wakes for it.
      wake AS (
        UPDATE agents SET asleep_at = NULL, sleeping_until = NULL, sleep_reason = NULL
        WHERE id = (SELECT id FROM a) AND ${n.createdBy} = 'operator' AND asleep_at IS NOT NULL
      ),
      ins AS (
        INSERT INTO work_items (id, tenant_id, agent_id, objective, plan_status, plan, todo_list,
          created_by, created_turn_id, idempotency_key)
        SELECT ${newId()}::uuid, ${n.tenantId}::uuid, a.id, ${n.objective}, ${n.planStatus ?? 'ready'},
          ${n.plan ?? null}, ${json(n.todoList ?? [])}::jsonb, ${n.createdBy}, ${n.createdTurnId ?? null}::uuid,
          ${key}
        FROM a
        ON CONFLICT (tenant_id, idempotency_key) DO NOTHING
        RETURNING *
      ),
      w AS (
        SELECT * FROM ins
        UNION ALL
        SELECT * FROM work_items
        WHERE ${key}::text IS NOT NULL AND tenant_id = ${n.tenantId}::uuid AND idempotency_key = ${key}
      )
      SELECT ${COLUMNS} FROM w CROSS JOIN a LIMIT 1`);
  }

  async find(tenantId: string, agentId: string, id: string): Promise<WorkItemRow | undefined> {
    return this.db.first<WorkItemRow>(sql`
      SELECT ${COLUMNS} FROM work_items w JOIN agents a ON a.id = w.agent_id
      WHERE w.id = ${id}::uuid AND w.tenant_id = ${tenantId}::uuid AND w.agent_id = ${agentId}::uuid`);
  }

  /** One view, in insertion order, after the cursor's position. */
  async page(
    q: { tenantId: string; agentId: string; view: WorkItemView; afterPosition?: string },
    limit: number,
  ): Promise<{ rows: WorkItemRow[]; more: boolean }> {
    const after = q.afterPosition !== undefined ? sql`AND w.position > ${q.afterPosition}::bigint` : sql``;
    const rows = await this.db.rows<WorkItemRow>(sql`
      SELECT ${COLUMNS} FROM work_items w JOIN agents a ON a.id = w.agent_id
      WHERE w.tenant_id = ${q.tenantId}::uuid AND w.agent_id = ${q.agentId}::uuid
        AND ${viewCondition(q.view)} ${after}
      ORDER BY w.position LIMIT ${limit + 1}`);
    return { rows: rows.slice(0, limit), more: rows.length > limit };
  }

  /**
   * The agent's items a prompt shows: every open one (up to `maxOpen`), and the newest `recentClosed`
   * closed ones. With `bindTurnId`, the same statement binds that turn to the agent's current item
   * unless it is bound already (a later run of the turn keeps its first binding).
   */
  async forPrompt(
    q: { tenantId: string; agentId: string; bindTurnId?: string },
    recentClosed = 3,
    maxOpen = 50,
  ): Promise<WorkItemRow[]> {
    const bind = q.bindTurnId
      ? sql`WITH bind AS (
          UPDATE turns SET work_item_id = a.current_work_item_id FROM agents a
          WHERE turns.id = ${q.bindTurnId}::uuid AND ${ofTenant('turns.tenant_id', q.tenantId)}
            AND a.id = turns.agent_id AND turns.work_item_id IS NULL AND a.current_work_item_id IS NOT NULL)`
      : sql``;
    return this.db.rows<WorkItemRow>(sql`
      ${bind}
      (SELECT ${COLUMNS} FROM work_items w JOIN agents a ON a.id = w.agent_id
        WHERE w.tenant_id = ${q.tenantId}::uuid AND w.agent_id = ${q.agentId}::uuid AND w.state = 'open'
        ORDER BY w.position LIMIT ${maxOpen})
      UNION ALL
      (SELECT ${COLUMNS} FROM work_items w JOIN agents a ON a.id = w.agent_id
        WHERE w.tenant_id = ${q.tenantId}::uuid AND w.agent_id = ${q.agentId}::uuid AND w.state <> 'open'
        ORDER BY w.completed_at DESC NULLS LAST, w.position DESC LIMIT ${recentClosed})`);
  }

  /** Focus: the agent's current item becomes this open item of its own. */
  async pick(tenantId: string, agentId: string, id: string): Promise<WorkItemRow | Refusal> {
    const row = await this.db.first<{ state: string | null; picked: boolean }>(sql`
      WITH w AS (
        SELECT id, state FROM work_items
        WHERE id = ${id}::uuid AND tenant_id = ${tenantId}::uuid AND agent_id = ${agentId}::uuid
      ),
      u AS (
        UPDATE agents SET current_work_item_id = w.id FROM w
        WHERE agents.id = ${agentId}::uuid AND agents.tenant_id = ${tenantId}::uuid AND w.state = 'open'
        RETURNING agents.id
      ),
      -- A change of focus is a change of work (the stall rule of docs/adr/0031); picking the current one is not.
      touched AS (
        UPDATE work_items SET updated_at = now() FROM u
        WHERE work_items.id = ${id}::uuid
          AND (SELECT current_work_item_id FROM agents WHERE id = ${agentId}::uuid) IS DISTINCT FROM ${id}::uuid
        RETURNING work_items.id
      )
      SELECT (SELECT state FROM w) AS state, EXISTS (SELECT 1 FROM u) AS picked`);
    if (!row?.state) return 'not_found';
    if (!row.picked) return 'not_open';
    return (await this.find(tenantId, agentId, id))!;
  }

  /** Changes fields of an open item; a blocker's recheck follows seed 002's rules. */
  async update(
    tenantId: string,
    agentId: string,
    id: string,
    p: WorkItemPatch,
  ): Promise<WorkItemRow | Refusal> {
    const blocker =
      p.blockedBy === undefined
        ? sql``
        : p.blockedBy === null
          ? sql`, blocked_by = NULL, recheck_at = NULL, recheck_consumed_at = NULL`
          : sql`, blocked_by = ${p.blockedBy},
              recheck_at = now() + make_interval(secs => ${(p.recheckAfterMs ?? this.defaultRecheckMs) / 1000}),
              recheck_consumed_at = NULL`;
    const n = await this.db.execute(sql`
      UPDATE work_items SET updated_at = now(),
        objective = COALESCE(${p.objective ?? null}, objective),
        plan_status = COALESCE(${p.planStatus ?? null}, plan_status),
        plan = COALESCE(${p.plan ?? null}, plan),
        todo_list = COALESCE(${p.todoList ? json(p.todoList) : null}::jsonb, todo_list) ${blocker}
      WHERE id = ${id}::uuid AND tenant_id = ${tenantId}::uuid AND agent_id = ${agentId}::uuid
        AND state = 'open'`);
    const row = await this.find(tenantId, agentId, id);
    if (!row) return 'not_found';
    if (n === 0) return 'not_open';
    return row;
  }

  /**
   * Finishes an open item: completed (agent or operator) or cancelled (operator); the blocker and its
   * recheck are cleared, the report stored, and the agent's focus let go if it was this item. A
   * repeat by the same turn (a re-run call) finds it closed by that turn and answers the same.
   */
  async close(
    tenantId: string,
    agentId: string,
    id: string,
    c: {
      state: 'completed' | 'cancelled';
      by: 'agent' | 'operator';
      turnId?: string;
      report: string | null;
    },
  ): Promise<WorkItemRow | Refusal> {
    const row = await this.db.first<{ found: boolean; closed: boolean; sameTurn: boolean }>(sql`
      WITH w AS (
        SELECT id, state, closed_turn_id FROM work_items
        WHERE id = ${id}::uuid AND tenant_id = ${tenantId}::uuid AND agent_id = ${agentId}::uuid
      ),
      u AS (
        UPDATE work_items SET state = ${c.state}, closed_by = ${c.by}, closed_turn_id = ${c.turnId ?? null}::uuid,
          result_summary = ${c.report}, blocked_by = NULL, recheck_at = NULL, recheck_consumed_at = NULL,
          completed_at = now(), updated_at = now()
        WHERE id = (SELECT id FROM w) AND state = 'open'
        RETURNING id
      ),
      focus AS (
        UPDATE agents SET current_work_item_id = NULL
        WHERE id = ${agentId}::uuid AND tenant_id = ${tenantId}::uuid
          AND current_work_item_id = (SELECT id FROM u)
      )
      SELECT EXISTS (SELECT 1 FROM w) AS found, EXISTS (SELECT 1 FROM u) AS closed,
        COALESCE((SELECT closed_turn_id = ${c.turnId ?? null}::uuid FROM w), false) AS "sameTurn"`);
    if (!row?.found) return 'not_found';
    if (!row.closed && !row.sameTurn) return 'not_open';
    return (await this.find(tenantId, agentId, id))!;
  }
}
