import type { TurnScoreResponse } from '@switchboard/contracts';
import type { TurnDetail } from '@switchboard/agent-turns';
import type { TaskService } from '@switchboard/subagents';
import { presentTask } from './tasks.controller';
import { presentTurn } from './presenters';

/**
 * GET /v1/turns/:id's body (`TurnDetail`, libs/agent-turns), shared with every hold so the two answer the same: the turn row
 * as `readTurn` reads it in one statement, with its cost rolled up from the turns below it
 * (docs/adr/0025), and the sub-agent tasks it spawned (docs/adr/0024), read only when it spawned any:
 * a turn that did not is answered from that one statement.
 */
export function turnDetail(tasks: TaskService): TurnDetail {
  return async (tenantId, turn) => ({
    ...presentTurn(turn),
    children: turn.spawned ? (await tasks.ofTurn(tenantId, turn.id)).map(presentTask) : [],
    childrenCostUsd: turn.childrenCostUsd,
    totalCostUsd: turn.totalCostUsd,
    recalled: turn.recalled,
    scores: turn.scores.map((sc) => ({
      ...sc,
      kind: sc.kind as TurnScoreResponse['kind'],
      source: sc.source as TurnScoreResponse['source'],
      status: sc.status as TurnScoreResponse['status'],
    })),
  });
}
