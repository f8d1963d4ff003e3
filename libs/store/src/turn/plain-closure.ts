import { json, sql, type Sql } from '../sql';
import { isNotCompleted } from './statuses';

/**
 * The closure decision (docs/adr/0031) of the common ended turn, recorded with the turn's end: the turn
 * is bound to no work item, and its agent is active, has never gone to sleep and has no current or
 * open work item, and the session has no sub-agent task whose result is still to rejoin it (docs/adr/0057)
 * — then the decision can only be `completed`, or `failed` for a failed or cancelled
 * turn, and there is no work to ask an activation pass for. Anything else is decided after the
 * commit by the work-activation step (libs/work-items closure.ts), which reads the facts.
 */
export const PLAIN_CLOSURE = {
  completed: { workItemId: null, runtimePosture: 'awake', outcome: 'completed' },
  failed: { workItemId: null, runtimePosture: 'awake', outcome: 'failed' },
} as const;

/** The plain closure of a turn ending in `status`. */
export const plainClosureOf = (status: string) =>
  isNotCompleted(status) ? PLAIN_CLOSURE.failed : PLAIN_CLOSURE.completed;

/**
 * A sub-agent task `k` whose handback has not rejoined its parent yet and will without the parent
 * waiting for it (docs/adr/0057): async (not blocking), not closed, not yet delivered (`rejoin`). The
 * partial index tasks_rejoin_pending_idx (parent_session_id) holds exactly these rows.
 */
export const rejoinPending = (k: Sql): Sql =>
  sql`${k}.rejoin IS NULL AND ${k}.closed_at IS NULL AND NOT ${k}.blocking`;

/** True (in SQL) when the turn row `t`'s closure can only be plain (see `PLAIN_CLOSURE`). */
export const plainClosureHolds = (t: Sql): Sql => sql`${t}.work_item_id IS NULL
  AND NOT EXISTS (SELECT 1 FROM tasks k WHERE k.parent_session_id = ${t}.session_id AND ${rejoinPending(sql`k`)})
  AND EXISTS (
    SELECT 1 FROM agents a WHERE a.id = ${t}.agent_id AND a.tenant_id = ${t}.tenant_id
      AND a.current_work_item_id IS NULL AND a.lifecycle = 'active' AND a.asleep_at IS NULL
      AND a.sleeping_until IS NULL
      AND NOT EXISTS (SELECT 1 FROM work_items o WHERE o.tenant_id = a.tenant_id AND o.agent_id = a.id
        AND o.state = 'open'))`;

/** The turn update's `closure` column at its end: the plain closure when it holds, else unchanged. */
export const plainClosureSet = (status: string): Sql =>
  sql`closure = CASE WHEN turns.closure IS NULL AND ${plainClosureHolds(sql`turns`)}
    THEN ${json(plainClosureOf(status))}::jsonb ELSE turns.closure END`;
