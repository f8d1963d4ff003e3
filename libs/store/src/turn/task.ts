import { json, sql, type Sql } from '../sql';

/**
 * A child turn's sub-agent task row (docs/adr/0024), written in the child's own statements: no
 * extra transaction. The claim that marks the child turn running marks its task running
 * (`TASK_START_CTE`), so `GET /v1/tasks/:id` says `running` while the child's first model call is in
 * flight; the child's last checkpoint writes the task's end (`taskCte`).
 */

/**
 * The claim's `kt`: the claimed turn's task, `pending` → `running`. A turn that runs no task has a
 * null `task_id`: the scalar subquery makes that one index probe on a null key, which matches nothing.
 */
export const TASK_START_CTE = sql`kt AS (
  UPDATE tasks SET status = 'running', updated_at = now()
  WHERE id = (SELECT task_id FROM ut) AND status = 'pending'
)`;

/** What a child turn's checkpoint writes on its task row. */
export interface TaskChanges {
  id: string;
  /** The task's end; its start (`running`) is the claim's (`claimNext`). */
  end: { status: 'completed' | 'failed' | 'cancelled'; handback: unknown; output: string };
}

/** `k`: the task's end (its cost the turn's after this checkpoint). */
export function taskCte(
  turnId: string,
  task: TaskChanges | undefined,
  costUsd: string | undefined,
): Sql | undefined {
  if (!task) return undefined;
  // The child's end on its task row, in the child's own statement: no extra transaction.
  return sql`k AS (
    UPDATE tasks SET status = ${task.end.status}::text, handback = ${json(task.end.handback)}::jsonb,
      output = ${task.end.output}::text, completed_at = now(), updated_at = now(),
      cost_usd = coalesce((SELECT cost_usd FROM turns WHERE id = ${turnId}::uuid), 0)
        + ${costUsd ?? '0'}::numeric
    WHERE id = ${task.id}::uuid AND status IN ('pending', 'running') AND EXISTS (SELECT 1 FROM s))`;
}
