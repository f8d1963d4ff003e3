import { sql, type Sql } from './sql';

/**
 * Children's cost rolls up into the parent turn (issue 11, docs/adr/0025): the cost of every turn
 * below a turn, meaning the child turns of its sub-agent tasks, their children, and so on. It is
 * read from the child turns themselves, which are updated with every round, so a child that is
 * still running already counts. A `numeric` expression; 0 for a turn that spawned nothing.
 */
export const descendantsCostUsd = (turnId: Sql): Sql => sql`(
  WITH RECURSIVE d(id) AS (
    SELECT k.child_turn_id FROM tasks k WHERE k.parent_turn_id = ${turnId} AND k.child_turn_id IS NOT NULL
    UNION
    SELECT k.child_turn_id FROM tasks k JOIN d ON k.parent_turn_id = d.id WHERE k.child_turn_id IS NOT NULL
  )
  SELECT coalesce(sum(t.cost_usd), 0) FROM turns t JOIN d ON t.id = d.id)`;
