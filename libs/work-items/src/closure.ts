import { EventType } from '@switchboard/contracts';
import { appendEvents, type Db } from '@switchboard/database';
import {
  isNotCompleted,
  json,
  NOT_COMPLETED,
  ofTenant,
  PLAIN_CLOSURE,
  plainClosureHolds,
  rejoinPending,
  sql,
} from '@switchboard/store';
import { ASLEEP_TEXT } from './lifecycle';

/**
 * The closure decision of an ended turn (seed 002 "Closure Decision", docs/adr/0031), distinct from
 * the agent's status: `failed` for a failed or cancelled turn; `continuable` when persisted work
 * warrants a runtime follow-up with no new trigger (a runnable current item, or runnable queued work
 * the model must pick); `waiting` when a sub-agent task's result is still to rejoin the session
 * (`awaiting_task_result`, docs/adr/0057: its `task_result` message will come), the turn's item waits
 * (for operator input, an external change) or the agent sleeps on a timer; `completed` otherwise.
 */
export interface ClosureDecision {
  outcome: 'completed' | 'continuable' | 'waiting' | 'failed';
  waitingReason?:
    'awaiting_operator_input' | 'awaiting_external_change' | 'awaiting_task_result' | 'awaiting_timer';
  /** Only for `awaiting_task_result`: the tasks whose results are still to rejoin (the evidence a `task_result` matches). */
  taskIds?: string[];
  workSignal?: {
    workItemId: string;
    status: 'active' | 'queued';
    reactivationMode: 'continue_active' | 'activate_queued';
  };
  workItemId: string | null;
  runtimePosture: 'awake' | 'asleep' | 'paused' | 'stopped';
}

interface ClosureRow {
  status: string;
  work_item_id: string | null;
  lifecycle: 'active' | 'paused' | 'stopped';
  asleep: boolean;
  sleeping_until: Date | null;
  current_id: string | null;
  current_runnable: boolean;
  queued_id: string | null;
  subject_state: string | null;
  subject_blocked: boolean;
  subject_needs_input: boolean;
  /** The session's sub-agent tasks whose results are still to rejoin it (docs/adr/0057), oldest first. */
  pending_task_ids?: string[] | null;
  /** The agent has open work or a timed sleep: the activation step asks for a pass. */
  has_work: boolean;
}

export function decideClosure(r: Omit<ClosureRow, 'has_work'>): ClosureDecision {
  const runtimePosture = r.lifecycle === 'active' ? (r.asleep ? 'asleep' : 'awake') : r.lifecycle;
  const base = { workItemId: r.work_item_id, runtimePosture } as const;
  if (isNotCompleted(r.status)) return { ...base, outcome: 'failed' };
  if (!r.asleep && r.current_runnable && r.current_id) {
    return {
      ...base,
      outcome: 'continuable',
      workSignal: { workItemId: r.current_id, status: 'active', reactivationMode: 'continue_active' },
    };
  }
  if (!r.asleep && r.queued_id) {
    return {
      ...base,
      outcome: 'continuable',
      workSignal: { workItemId: r.queued_id, status: 'queued', reactivationMode: 'activate_queued' },
    };
  }
  // A task result will come on its own (a `task_result` message): the next trigger most surely due.
  if (r.pending_task_ids?.length) {
    return {
      ...base,
      outcome: 'waiting',
      waitingReason: 'awaiting_task_result',
      taskIds: r.pending_task_ids,
    };
  }
  if (r.subject_state === 'open' && r.subject_needs_input) {
    return { ...base, outcome: 'waiting', waitingReason: 'awaiting_operator_input' };
  }
  if (r.subject_state === 'open' && r.subject_blocked) {
    return { ...base, outcome: 'waiting', waitingReason: 'awaiting_external_change' };
  }
  if (r.asleep && r.sleeping_until) return { ...base, outcome: 'waiting', waitingReason: 'awaiting_timer' };
  return { ...base, outcome: 'completed' };
}

/**
 * The facts the decision is made from, in one read: the turn, its agent, its bound and current items.
 * The tenant is checked on the row (`IS TRUE`, as `ofTenant` in libs/store): the turn stays a key lookup.
 */
async function closureFacts(db: Db, tenantId: string, turnId: string): Promise<ClosureRow | undefined> {
  const [row] = await db.$queryRawUnsafe<ClosureRow[]>(
    `
    SELECT t.status, t.work_item_id, a.lifecycle, ${ASLEEP_TEXT} AS asleep, a.sleeping_until,
      a.current_work_item_id AS current_id,
      EXISTS (SELECT 1 FROM work_items w WHERE w.id = a.current_work_item_id AND w.state = 'open'
        AND w.blocked_by IS NULL AND w.plan_status <> 'needs_input') AS current_runnable,
      (SELECT w.id FROM work_items w WHERE w.tenant_id = a.tenant_id AND w.agent_id = a.id
        AND w.state = 'open' AND w.blocked_by IS NULL AND w.plan_status <> 'needs_input'
        AND w.id IS DISTINCT FROM a.current_work_item_id ORDER BY w.position LIMIT 1) AS queued_id,
      s.state AS subject_state, s.blocked_by IS NOT NULL AS subject_blocked,
      s.plan_status = 'needs_input' AS subject_needs_input,
      (SELECT array_agg(k.id::text ORDER BY k.created_at, k.id) FROM tasks k
        WHERE k.parent_session_id = t.session_id AND ${rejoinPending(sql`k`).toQuery().text}) AS pending_task_ids,
      EXISTS (SELECT 1 FROM work_items o WHERE o.tenant_id = a.tenant_id AND o.agent_id = a.id
        AND o.state = 'open') OR coalesce(a.sleeping_until > now(), false) AS has_work
    FROM turns t JOIN agents a ON a.id = t.agent_id AND a.tenant_id = t.tenant_id
    LEFT JOIN work_items s ON s.id = coalesce(t.work_item_id, a.current_work_item_id)
    WHERE t.id = $1::uuid AND (t.tenant_id = $2::uuid) IS TRUE`,
    turnId,
    tenantId,
  );
  return row;
}

/**
 * The common case in one statement (no read before the write), when the turn's end did not record it
 * already (a turn ended by another path, or a step run again): the plain closure of libs/store
 * (`PLAIN_CLOSURE`, `plainClosureHolds`) — completed, or failed for a failed or cancelled turn, and no
 * work to ask a pass for. Anything else (or a closure already recorded) updates nothing and takes the
 * full path.
 */
async function recordPlainClosure(
  db: Db,
  turn: { id: string; tenantId: string },
): Promise<ClosureDecision | undefined> {
  const { text, values } = sql`
    UPDATE turns t SET closure = CASE WHEN t.status IN ${NOT_COMPLETED}
      THEN ${json(PLAIN_CLOSURE.failed)}::jsonb ELSE ${json(PLAIN_CLOSURE.completed)}::jsonb END
    WHERE t.id = ${turn.id}::uuid AND ${ofTenant('t.tenant_id', turn.tenantId)} AND t.closure IS NULL
      AND ${plainClosureHolds(sql`t`)}
    RETURNING t.status`.toQuery();
  const [row] = await db.$queryRawUnsafe<{ status: string }[]>(text, ...values);
  if (!row) return undefined;
  return isNotCompleted(row.status) ? { ...PLAIN_CLOSURE.failed } : { ...PLAIN_CLOSURE.completed };
}

/**
 * Decides and records the closure of an ended turn: on the turn row and, when it tells more than the
 * terminal event (continuable, waiting, or a turn bound to a work item), as a `turn_closure` journal
 * event, in one transaction, once (a re-run step finds it recorded and writes nothing).
 */
export async function recordClosure(
  db: Db,
  turn: { id: string; tenantId: string; sessionId: string },
): Promise<{ closure: ClosureDecision; hasWork: boolean } | undefined> {
  const plain = await recordPlainClosure(db, turn);
  if (plain) return { closure: plain, hasWork: false };
  const facts = await closureFacts(db, turn.tenantId, turn.id);
  if (!facts) return undefined;
  const closure = decideClosure(facts);
  const record = (runner: Pick<Db, '$executeRaw'>) => runner.$executeRaw`
      UPDATE turns SET closure = ${JSON.stringify(closure)}::jsonb
      WHERE id = ${turn.id}::uuid AND (tenant_id = ${turn.tenantId}::uuid) IS TRUE AND closure IS NULL`;
  // Journaled when it says more than the terminal event: work to continue or wait for, or a turn
  // bound to a work item. A plain answer's closure is on the turn only: one statement, no transaction.
  const telling = closure.outcome === 'continuable' || closure.outcome === 'waiting' || !!closure.workItemId;
  if (!telling) await record(db);
  else {
    await db.$transaction(async (tx) => {
      if ((await record(tx)) === 0) return;
      await appendEvents(tx, {
        tenantId: turn.tenantId,
        sessionId: turn.sessionId,
        events: [{ type: EventType.TurnClosure, turnId: turn.id, data: { ...closure } }],
      });
    });
  }
  return { closure, hasWork: facts.has_work };
}
