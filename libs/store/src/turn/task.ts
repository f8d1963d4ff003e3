import { json, sql, type Sql } from '../sql';

/**
 * A child turn's sub-agent task row (docs/adr/0024), written in the child's own statements: no
 * extra transaction.
 */

/** What a child turn's checkpoint writes on its task row. */
export interface TaskChanges {
  id: string;
  /** Absent: the task starts running (from pending),. */
  end?: { status: 'completed' | 'failed' | 'cancelled'; handback: unknown; output: string };
}

/** `k`: the task's end (its cost the turn's after this checkpoint), or its start. */
export function taskCte(
  turnId: string,
  task: TaskChanges | undefined,
  costUsd: string | undefined,
): Sql | undefined {
  if (!task) return undefined;
  // The child's end (or start) on its task row, in the child's own statement: no extra transaction.
  return task.end
    ? sql`k AS (
    UPDATE tasks SET status = ${task.end.status}::text, handback = ${json(task.end.handback)}::jsonb,
      output = ${task.end.output}::text, completed_at = now(), updated_at = now(),
      cost_usd = coalesce((SELECT cost_usd FROM turns WHERE id = ${turnId}::uuid), 0)
        + ${costUsd ?? '0'}::numeric
    WHERE id = ${task.id}::uuid AND status IN ('pending', 'running') AND EXISTS (SELECT 1 FROM s))`
    : sql`k AS (
    UPDATE tasks SET status = 'running', updated_at = now()
    WHERE id = ${task.id}::uuid AND status = 'pending' AND EXISTS (SELECT 1 FROM s))`;
}
