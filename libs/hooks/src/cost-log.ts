import { newId, type PostTurnJob } from '@switchboard/contracts';
import { recordCostLog, type CostLogResult } from '@switchboard/store';
import type { HookContext } from './context';

/**
 * The cost log hook: rolls the turn's ledger entries up into one cost log line
 * and records it as the hook's run, in one statement (`recordCostLog`). Idempotent
 * per turn: a re-run finds the record and writes nothing, and only the run that
 * wrote the row counts the tokens and cost into the metrics.
 */
export async function runCostLog(
  ctx: HookContext,
  job: PostTurnJob,
): Promise<'written' | 'already_done' | 'skipped'> {
  const result = await recordCostLog(ctx.sql, { id: newId(), turnId: job.turnId, tenantId: job.tenantId });
  reportCostLog(ctx, result);
  return result.kind;
}

/** The metrics and log line of a cost-log run that wrote its row (alone or in a group, docs/adr/0070). */
export function reportCostLog(ctx: Pick<HookContext, 'metrics' | 'logger'>, result: CostLogResult): void {
  if (result.kind !== 'written') return;
  for (const e of result.byModel) {
    ctx.metrics.tokens.inc({ provider: e.provider, model: e.model, direction: 'input' }, e.inputTokens);
    ctx.metrics.tokens.inc({ provider: e.provider, model: e.model, direction: 'output' }, e.outputTokens);
    ctx.metrics.tokens.inc({ provider: e.provider, model: e.model, direction: 'cached' }, e.cachedTokens);
    ctx.metrics.tokens.inc(
      { provider: e.provider, model: e.model, direction: 'cache_write' },
      e.cacheWriteTokens,
    );
    ctx.metrics.costUsd.inc({ provider: e.provider, model: e.model }, Number(e.costUsd));
  }
  ctx.logger.info({ costLog: result.line }, 'turn cost');
}
