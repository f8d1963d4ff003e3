import { parseTenantSettings, type PostTurnJob } from '@switchboard/contracts';
import type { HookContext } from './context';

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
 * attempt carries the same `webhook-id`. No endpoint: skipped, nothing queued.
 */
export async function runCompletionWebhook(
  ctx: HookContext,
  job: PostTurnJob,
): Promise<'written' | 'already_done' | 'skipped'> {
  const tenant = await ctx.db.tenant.findUnique({ where: { id: job.tenantId }, select: { settings: true } });
  if (!parseTenantSettings(tenant?.settings).notifyUrl) return 'skipped';
  const turn = await ctx.db.turn.findFirst({ where: { id: job.turnId, tenantId: job.tenantId } });
  const event = turn && EVENTS[turn.status];
  if (!turn || !event) return 'skipped';
  if (!ctx.notify) throw new Error('the completion-webhook hook has no outbound-webhooks publisher');
  await ctx.notify({
    tenantId: job.tenantId,
    webhookId: completionWebhookId(turn.id),
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
  return 'written';
}
