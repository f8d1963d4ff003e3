import { parseTenantSettings, type PostTurnJob } from '@switchboard/contracts';
import { sql } from '@switchboard/store';
import { claimHookRun } from './archivist-snapshot';
import type { HookContext } from './context';

export const COMPLETION_WEBHOOK_HOOK = 'completion-webhook';

/** The longest `finalText` a completion webhook carries; the whole text is at GET /v1/turns/:id. */
export const COMPLETION_FINAL_TEXT_MAX = 4000;

/** The Standard Webhooks `webhook-id` (and outbound job id) of a turn's completion webhook. */
export const completionWebhookId = (turnId: string): string => `msg_turn_${turnId}`;

const EVENTS: Record<string, string> = {
  completed: 'turn.completed',
  failed: 'turn.failed',
  cancelled: 'turn.cancelled',
};

/**
 * The completion-webhook hook (docs/adr/0018, addendum): when the tenant has a notify endpoint,
 * publishes one `turn.completed | turn.failed | turn.cancelled` notification on `outbound-webhooks`,
 * whose worker signs, sends, retries and logs it. The webhook id is derived from the turn id, so a
 * retried hook or a hooks worker killed after publishing adds the same job (a no-op) and every
 * attempt carries the same `webhook-id`. No endpoint: skipped, nothing queued. Either way the run is
 * recorded in `hook_runs` (docs/adr/0027), after the publish (the effect is in Redis, so the record
 * cannot share its transaction: a worker killed between the two publishes again, under the same id,
 * and the receiver deduplicates by `webhook-id`); a run that finds the row does nothing.
 */
export async function runCompletionWebhook(
  ctx: HookContext,
  job: PostTurnJob,
): Promise<'written' | 'already_done' | 'skipped'> {
  const recorded = await ctx.sql.first(sql`
    SELECT 1 FROM hook_runs WHERE turn_id = ${job.turnId}::uuid AND hook = ${COMPLETION_WEBHOOK_HOOK}`);
  if (recorded) return 'already_done';
  const turn = await ctx.db.turn.findFirst({ where: { id: job.turnId, tenantId: job.tenantId } });
  const event = turn && EVENTS[turn.status];
  // Not the tenant's turn, or not ended: nothing to do and nothing recorded.
  if (!turn || !event) return 'skipped';
  const record = (output: Record<string, unknown>) =>
    claimHookRun(ctx.sql, {
      tenantId: job.tenantId,
      turnId: job.turnId,
      hook: COMPLETION_WEBHOOK_HOOK,
      output: { ...output, turnStatus: turn.status },
    });
  const tenant = await ctx.db.tenant.findUnique({ where: { id: job.tenantId }, select: { settings: true } });
  if (!parseTenantSettings(tenant?.settings).notifyUrl) {
    return (await record({ skipped: 'no_endpoint' })) ? 'skipped' : 'already_done';
  }
  if (!ctx.notify) throw new Error('the completion-webhook hook has no outbound-webhooks publisher');
  const webhookId = completionWebhookId(turn.id);
  await ctx.notify({
    tenantId: job.tenantId,
    webhookId,
    event,
    payload: {
      type: event,
      turnId: turn.id,
      sessionId: turn.sessionId,
      agentId: turn.agentId,
      status: turn.status,
      stopReason: turn.stopReason,
      finalText: turn.finalText === null ? null : turn.finalText.slice(0, COMPLETION_FINAL_TEXT_MAX),
      finalTextTruncated: (turn.finalText?.length ?? 0) > COMPLETION_FINAL_TEXT_MAX,
      usage: {
        inputTokens: turn.inputTokens,
        outputTokens: turn.outputTokens,
        cachedTokens: turn.cachedTokens,
      },
      costUsd: turn.costUsd.toFixed(8),
      completedAt: turn.completedAt?.toISOString() ?? null,
    },
  });
  return (await record({ webhookId, event })) ? 'written' : 'already_done';
}
