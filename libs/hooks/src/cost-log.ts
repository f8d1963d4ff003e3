import { newId, type OutboundWebhookJob, type PostTurnJob } from '@switchboard/contracts';
import type { Db } from '@switchboard/database';
import type { Logger, Metrics } from '@switchboard/observability';
import { recordCostLog, type SqlDb } from '@switchboard/store';
import type { HookModels } from './archivist';

export interface HookContext {
  db: Db;
  /** The store over the same pg pool (`sqlDbFor(poolOf(db), 'hooks', metrics)`). */
  sql: SqlDb;
  logger: Logger;
  metrics: Metrics;
  /** Publishes a signed notification on `outbound-webhooks` (the completion-webhook hook's only output). */
  notify?: (job: Omit<OutboundWebhookJob, 'trace'>) => Promise<unknown>;
  /** The model providers (the archivist's summarization call). */
  models?: HookModels;
}

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
  if (result.kind !== 'written') return result.kind;
  for (const e of result.byModel) {
    ctx.metrics.tokens.inc({ provider: e.provider, model: e.model, direction: 'input' }, e.inputTokens);
    ctx.metrics.tokens.inc({ provider: e.provider, model: e.model, direction: 'output' }, e.outputTokens);
    ctx.metrics.tokens.inc({ provider: e.provider, model: e.model, direction: 'cached' }, e.cachedTokens);
    ctx.metrics.costUsd.inc({ provider: e.provider, model: e.model }, Number(e.costUsd));
  }
  ctx.logger.info({ costLog: result.line }, 'turn cost');
  return 'written';
}
