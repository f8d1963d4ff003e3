import type { TurnResponse } from '@switchboard/contracts';
import { costRollup, type SqlDb } from '@switchboard/store';
import type { TaskService } from '@switchboard/subagents';
import { presentTask } from '../controllers/tasks.controller';

/**
 * What GET /v1/turns/:id adds to the turn row's presentation, shared with `wait` on admission so the
 * two answer the same body: the sub-agent tasks the turn spawned (docs/adr/0024) and their cost
 * rolled up into it (docs/adr/0025).
 */
export type TurnDetail = (tenantId: string, turn: TurnResponse) => Promise<TurnResponse>;

export function turnDetail(tasks: TaskService, sql: SqlDb): TurnDetail {
  return async (tenantId, turn) => ({
    ...turn,
    children: (await tasks.ofTurn(tenantId, turn.id)).map(presentTask),
    ...(await costRollup(sql, tenantId, turn.id)),
  });
}
