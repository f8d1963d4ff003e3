import type { TriageJob } from '@switchboard/contracts';
import type { Db } from '@switchboard/database';
import type { Admission } from '@switchboard/admission';
import type { Logger } from '@switchboard/observability';
import { applyRules, TriageRules, type RuleDecision } from './rules';

export interface TriageResult {
  decision: RuleDecision;
  messageId?: string;
  turnId?: string;
}

/**
 * Triages one trigger delivery: applies the trigger's rules, records the
 * decision on the delivery, and forwards it as a `webhook_event` message into
 * the trigger's standing session (or a new session) through admission.
 * Idempotent: a delivery that already has a decision is not triaged twice.
 */
export async function triageDelivery(
  deps: { db: Db; admission: Admission; logger: Logger },
  job: TriageJob,
): Promise<TriageResult | null> {
  const { db } = deps;
  const delivery = await db.triggerDelivery.findUnique({ where: { id: job.deliveryId } });
  if (!delivery || delivery.tenantId !== job.tenantId) return null;
  const trigger = await db.trigger.findUnique({ where: { id: delivery.triggerId } });
  if (!trigger || trigger.tenantId !== delivery.tenantId) return null;
  if (delivery.decision) {
    return {
      decision: {
        action: delivery.decision as 'drop' | 'forward',
        reason: delivery.reason ?? '',
        rule: null,
      },
    };
  }

  const payload = delivery.payload as { source?: string; eventType?: string; body?: unknown };
  const rules = TriageRules.safeParse(trigger.rules);
  const decision = rules.success
    ? applyRules(rules.data, {
        source: payload.source ?? trigger.name,
        eventType: payload.eventType,
        payload: payload.body,
      })
    : { action: 'forward' as const, reason: 'trigger rules are invalid; forwarding', rule: null };

  if (decision.action === 'drop') {
    await db.triggerDelivery.update({
      where: { id: delivery.id },
      data: { decision: 'drop', reason: decision.reason },
    });
    deps.logger.info({ deliveryId: delivery.id, reason: decision.reason }, 'trigger delivery dropped');
    return { decision };
  }

  // Without a standing session each delivery gets its own, keyed by the delivery
  // id so a retried job reuses it instead of opening a second one.
  let sessionId = trigger.sessionId;
  if (!sessionId) {
    // Atomic under concurrent runs of the same delivery: one insert wins, the others find it.
    await db.$executeRaw`
      INSERT INTO sessions (id, tenant_id, agent_id, title, updated_at)
      VALUES (${delivery.id}::uuid, ${trigger.tenantId}::uuid, ${trigger.agentId}::uuid,
        ${`${trigger.name} delivery`}, now())
      ON CONFLICT (id) DO NOTHING`;
    sessionId = delivery.id;
  }
  const admitted = await deps.admission.admit({
    tenantId: trigger.tenantId,
    sessionId,
    kind: 'webhook_event',
    origin: { kind: 'webhook', source: payload.source ?? trigger.name, eventType: payload.eventType },
    body: { type: 'json', value: payload.body ?? null },
    deliverySurface: 'http_webhook',
    admissionContext: 'external_trigger_capability',
    // Only a signature the ingress checked makes an integration_signal; a configured scheme is not
    // proof (a token-only or unverified delivery is external_evidence, SPEC §2, docs/adr/0019).
    verifiedIntegration: delivery.verified,
    metadata: { triggerId: trigger.id, deliveryId: delivery.deliveryId },
    // The delivery id makes a re-run of this job admit nothing new.
    idempotencyKey: `delivery:${delivery.id}`,
  });
  await db.triggerDelivery.update({
    where: { id: delivery.id },
    data: { decision: 'forward', reason: decision.reason, messageId: admitted.messageId },
  });
  return { decision, messageId: admitted.messageId, turnId: admitted.turnId };
}
