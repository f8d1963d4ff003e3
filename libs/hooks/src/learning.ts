import { newId, type PostTurnJob } from '@switchboard/contracts';
import { recordLearning } from '@switchboard/store';
import type { HookContext } from './context';

/**
 * The learning hook (seed 000 "Post-turn hooks", issue 13): what each tool the turn called did —
 * calls, failures by kind, latency — added to the agent's per-tool statistics, which GET
 * /v1/agents/:id shows as the agent's status. One statement (`recordLearning`): the statistics
 * change only in the run that inserts the turn's `hook_runs (turn, 'learning')` row, so a retried
 * or duplicated job adds nothing.
 */
export async function runLearning(
  ctx: HookContext,
  job: PostTurnJob,
): Promise<'written' | 'already_done' | 'skipped'> {
  const result = await recordLearning(ctx.sql, { id: newId(), turnId: job.turnId, tenantId: job.tenantId });
  if (result.kind === 'written' && result.tools.length > 0) {
    ctx.logger.info({ turnId: job.turnId, tools: result.tools }, 'tool use learned');
  }
  return result.kind;
}
