import { newId, type PostTurnJob } from '@switchboard/contracts';
import { recordLearning, recordLearningFeedback, type LearningResult } from '@switchboard/store';
import type { HookContext } from './context';

/** Reflection ids the feedback statement may use: a turn has at most 10 (budgets.maxReflections). */
const REFLECTION_IDS = 10;

/**
 * The learning hook (seed 000 "Post-turn hooks", issue 13): what each tool the turn called did —
 * calls, failures by kind, latency — added to the agent's per-tool statistics, which GET
 * /v1/agents/:id shows as the agent's status. One statement (`recordLearning`): the statistics
 * change only in the run that inserts the turn's `hook_runs (turn, 'learning')` row, so a retried
 * or duplicated job adds nothing.
 *
 * Then the feedback half (docs/adr/0059), for an agent with `memory.learning` on: the turn's
 * reflections kept across turns and the user profile rebuilt (`recordLearningFeedback`). It runs on a
 * retry too (a run that died between the two statements is finished by the next), and is idempotent
 * on its own; an agent with learning off costs no second statement; the tool-failure hints need nothing here, they are read from the statistics.
 */
export async function runLearning(
  ctx: HookContext,
  job: PostTurnJob,
): Promise<'written' | 'already_done' | 'skipped'> {
  const result = await recordLearning(ctx.sql, { id: newId(), turnId: job.turnId, tenantId: job.tenantId });
  reportLearning(ctx, job, result);
  if (result.kind !== 'skipped' && result.learning) {
    const ids = Array.from({ length: REFLECTION_IDS }, () => newId());
    const feedback = await recordLearningFeedback(ctx.sql, job, ids);
    if (feedback.reflections > 0 || feedback.profileChanged) {
      ctx.logger.info({ turnId: job.turnId, ...feedback }, 'learning feedback kept');
    }
  }
  return result.kind;
}

/** The log line of a learning run that wrote its row (alone or in a group, docs/adr/0070). */
export function reportLearning(
  ctx: Pick<HookContext, 'logger'>,
  job: PostTurnJob,
  result: LearningResult,
): void {
  if (result.kind === 'written' && result.tools.length > 0) {
    ctx.logger.info({ turnId: job.turnId, tools: result.tools }, 'tool use learned');
  }
}
