import type { OutboundWebhookJob, TriageJob } from '@switchboard/contracts';
import type { Db } from '@switchboard/database';
import type { Admission, Admitted } from '@switchboard/admission';
import type { Logger } from '@switchboard/observability';
import { resolveModelList, type PriceOverrides, type ProviderRegistry } from '@switchboard/providers';
import { AgentStoppedError, parseTenantSettings, TenantPausedError } from '@switchboard/contracts';
import { askModels, triggerFingerprint, type TriageCall } from './decide';
import { applyRules, TriageAction, TriageRules, type TriggerEvent } from './rules';
import { flushWakeHints, keptBody, recordWakeHint } from './wake';

/** Who made a delivery's decision (docs/adr/0018); `mode`: the trigger's `wake_hint` delivery mode. */
export type DecisionSource = 'rule' | 'model' | 'cache' | 'default' | 'mode';

export interface TriageDecision {
  /** `wake_hint`: coalesced into the session's next system tick (a `wake_hint` trigger). */
  action: TriageAction | 'wake_hint';
  reason: string;
  source: DecisionSource;
  /** The model whose answer was used (model), or the last one tried (default). */
  model?: string;
  /** Spend of this triage's model calls, every attempt included. */
  costUsd: number;
}

export interface TriageResult {
  decision: TriageDecision;
  messageId?: string;
  turnId?: string;
}

/**
 * What triage decides when no rule matched and no model answered with a valid decision: a full turn.
 * The conservative choice (docs/adr/0018): dropping could lose the one event that mattered, `notify`
 * needs an endpoint the tenant may not have, and a turn is what every delivery got before triage had
 * a model; the agent can still decide to do nothing, within its own budgets.
 */
export const SAFE_DEFAULT_ACTION: TriageAction = 'spawn_orchestrator';

/** A light reaction's iteration cap (`spawn_reactor`): the runner applies it from the message metadata. */
export const REACTOR_MAX_ITERATIONS = 3;

export interface TriageDeps {
  db: Db;
  admission: Admission;
  logger: Logger;
  /** Without providers no model is asked: rules, then the safe default. */
  providers?: ProviderRegistry;
  /** The deployment's DEFAULT_MODEL: where `hint:burst` goes when the tenant has no burst route. */
  defaultModel?: string;
  /** TRIAGE_FALLBACK_MODEL: asked when the burst model's answer is not a decision; else the agent's model. */
  fallbackModel?: string;
  /** TRIAGE_CACHE_TTL_MS: how long a model decision is reused for an identical delivery; 0 turns it off. */
  cacheTtlMs?: number;
  prices?: PriceOverrides;
  /** Enqueues a signed outbound notification (`outbound-webhooks`); without it `notify` is recorded only. */
  notify?: (job: Omit<OutboundWebhookJob, 'trace'>) => Promise<unknown>;
}

/**
 * Triages one trigger delivery (seed 000 "Triage", SPEC §10, docs/adr/0018): the trigger's rules,
 * else a cached decision for an identical delivery, else the tenant's `burst` model with a fallback,
 * else the safe default. The decision is written once (the first writer wins), then its action is
 * applied; every action is idempotent, so a retried job re-applies the stored decision without
 * asking a model again.
 */
export async function triageDelivery(deps: TriageDeps, job: TriageJob): Promise<TriageResult | null> {
  const { db } = deps;
  const delivery = await db.triggerDelivery.findUnique({ where: { id: job.deliveryId } });
  if (!delivery || delivery.tenantId !== job.tenantId) return null;
  const trigger = await db.trigger.findUnique({ where: { id: delivery.triggerId } });
  if (!trigger || trigger.tenantId !== delivery.tenantId) return null;

  const payload = delivery.payload as {
    source?: string;
    eventType?: string;
    headers?: Record<string, string>;
    body?: unknown;
  };
  const event: TriggerEvent = {
    source: payload.source ?? trigger.name,
    eventType: payload.eventType,
    payload: payload.body,
  };

  // A wake_hint trigger's deliveries never enter the transcript (seed 002 "Wake Hints").
  if (trigger.deliveryMode === 'wake_hint') return wakeHint(deps, trigger, delivery, event);

  let decision: TriageDecision;
  if (delivery.decision !== null) {
    // `forward` (before the decision pipeline) and anything unreadable replay as the safe default;
    // the admission's idempotency key makes that a no-op for a delivery already admitted.
    const stored = TriageAction.safeParse(delivery.decision);
    decision = {
      action: stored.success ? stored.data : SAFE_DEFAULT_ACTION,
      reason: delivery.reason ?? '',
      source: (delivery.decisionSource as DecisionSource | null) ?? 'rule',
      ...(delivery.decisionModel ? { model: delivery.decisionModel } : {}),
      costUsd: Number(delivery.decisionCostUsd),
    };
  } else {
    const fingerprint = triggerFingerprint(trigger.id, event);
    decision = await decide(deps, trigger, event, fingerprint);
    // The first writer wins: a concurrent run of the same job applies that run's decision.
    const won = await db.triggerDelivery.updateMany({
      where: { id: delivery.id, decision: null },
      data: {
        decision: decision.action,
        reason: decision.reason,
        decisionSource: decision.source,
        decisionModel: decision.model ?? null,
        decisionCostUsd: decision.costUsd,
        fingerprint,
        decidedAt: new Date(),
      },
    });
    if (won.count === 0) return triageDelivery(deps, job);
    deps.logger.info(
      {
        deliveryId: delivery.id,
        action: decision.action,
        source: decision.source,
        costUsd: decision.costUsd,
      },
      'trigger delivery triaged',
    );
  }

  if (decision.action === 'drop') return { decision };

  if (decision.action === 'notify') {
    if (!deps.notify) return { decision };
    const webhookId = `msg_${delivery.id}`;
    await deps.notify({
      tenantId: trigger.tenantId,
      webhookId,
      event: 'trigger.notify',
      payload: {
        triggerId: trigger.id,
        triggerName: trigger.name,
        deliveryId: delivery.deliveryId,
        source: event.source,
        eventType: event.eventType ?? null,
        reason: decision.reason,
        body: event.payload ?? null,
      },
    });
    return { decision };
  }

  // Without a standing session each delivery gets its own, keyed by the delivery
  // id so a retried job reuses it instead of opening a second one.
  let sessionId = trigger.sessionId;
  if (!sessionId) {
    // Atomic under concurrent runs of the same delivery: one insert wins, the others find it. None for
    // a paused tenant (docs/adr/0030): its admission below is refused, and no empty session is left.
    await db.$executeRaw`
      INSERT INTO sessions (id, tenant_id, agent_id, title, updated_at)
      SELECT ${delivery.id}::uuid, ${trigger.tenantId}::uuid, ${trigger.agentId}::uuid,
        ${`${trigger.name} delivery`}, now()
      WHERE NOT EXISTS (SELECT 1 FROM tenants WHERE id = ${trigger.tenantId}::uuid AND kill_switch)
      ON CONFLICT (id) DO NOTHING`;
    sessionId = delivery.id;
  }
  const admitted = await admitDelivery(deps, delivery.id, {
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
    metadata: {
      triggerId: trigger.id,
      deliveryId: delivery.deliveryId,
      triage: {
        action: decision.action,
        reason: decision.reason,
        source: decision.source,
        // A light reaction (spawn_reactor): the runner caps the turn's iterations at this.
        ...(decision.action === 'spawn_reactor' ? { maxIterations: REACTOR_MAX_ITERATIONS } : {}),
      },
    },
    // Seed 002 `sourceRefs` and correlation (docs/adr/0060): the stored delivery and the sender's ids.
    sourceRefs: {
      triggerId: trigger.id,
      deliveryId: delivery.id,
      externalDeliveryId: delivery.deliveryId,
    },
    ...correlationOf(payload.headers),
    // The delivery id makes a re-run of this job admit nothing new.
    idempotencyKey: `delivery:${delivery.id}`,
  });
  if (!admitted) return { decision };
  await db.triggerDelivery.update({ where: { id: delivery.id }, data: { messageId: admitted.messageId } });
  return { decision, messageId: admitted.messageId, turnId: admitted.turnId };
}

/**
 * Admits a decided delivery. A delivery the ingress stored before its tenant was paused and triaged
 * while it is (docs/adr/0030) is not admitted: logged, its decision kept, the job done (retries could
 * only fail the same way).
 */
async function admitDelivery(
  deps: TriageDeps,
  deliveryId: string,
  input: Parameters<Admission['admit']>[0],
): Promise<Admitted | undefined> {
  try {
    return await deps.admission.admit(input);
  } catch (err) {
    if (err instanceof AgentStoppedError) {
      // Stopped after the ingress took the delivery (docs/adr/0031): recorded, not admitted.
      deps.logger.warn(
        { deliveryId, tenantId: input.tenantId },
        'delivery not admitted: the agent is stopped',
      );
      return undefined;
    }
    if (!(err instanceof TenantPausedError)) throw err;
    deps.logger.warn({ deliveryId, tenantId: input.tenantId }, 'delivery not admitted: the tenant is paused');
    return undefined;
  }
}

/** The sender's correlation and causation ids (the ingress keeps these headers, bounded). */
export function correlationOf(headers: Record<string, string> | undefined): {
  correlationId?: string;
  causationId?: string;
} {
  const id = (v: unknown) => (typeof v === 'string' && v.trim() !== '' ? v.trim().slice(0, 200) : undefined);
  const correlationId = id(headers?.['x-correlation-id']);
  const causationId = id(headers?.['x-causation-id']);
  return { ...(correlationId ? { correlationId } : {}), ...(causationId ? { causationId } : {}) };
}

type TriggerRow = NonNullable<Awaited<ReturnType<Db['trigger']['findUnique']>>>;

async function decide(
  deps: TriageDeps,
  trigger: TriggerRow,
  event: TriggerEvent,
  fingerprint: string,
): Promise<TriageDecision> {
  const rules = TriageRules.safeParse(trigger.rules);
  if (!rules.success) {
    // Stale rules (the API validates them): fall through to the model rather than guess.
    deps.logger.warn({ triggerId: trigger.id }, 'trigger rules are invalid; ignoring them');
  } else {
    const byRule = applyRules(rules.data, event);
    if (byRule) return { action: byRule.action, reason: byRule.reason, source: 'rule', costUsd: 0 };
  }

  const ttl = deps.cacheTtlMs ?? 0;
  if (ttl > 0) {
    const hit = await deps.db.triggerDelivery.findFirst({
      where: {
        triggerId: trigger.id,
        fingerprint,
        decisionSource: 'model',
        decidedAt: { gt: new Date(Date.now() - ttl) },
      },
      orderBy: { decidedAt: 'desc' },
      select: { decision: true, reason: true, decisionModel: true },
    });
    const action = TriageAction.safeParse(hit?.decision);
    if (hit && action.success) {
      return {
        action: action.data,
        reason: hit.reason ?? '',
        source: 'cache',
        ...(hit.decisionModel ? { model: hit.decisionModel } : {}),
        costUsd: 0,
      };
    }
  }

  let calls: TriageCall[] = [];
  if (deps.providers && deps.defaultModel) {
    const [tenant, agent] = await Promise.all([
      deps.db.tenant.findUnique({ where: { id: trigger.tenantId }, select: { settings: true } }),
      deps.db.agent.findUnique({ where: { id: trigger.agentId }, select: { model: true } }),
    ]);
    const settings = parseTenantSettings(tenant?.settings);
    const refs = resolveModelList(
      ['hint:burst', deps.fallbackModel ?? agent?.model ?? 'hint:burst'],
      settings.modelRoutes,
      deps.defaultModel,
    ).map((r) => r.ref);
    const asked = await askModels(deps.providers, refs, event, {
      prices: { ...deps.prices, ...settings.modelPrices },
    });
    calls = asked.calls;
    if (asked.decision) {
      return { ...asked.decision, source: 'model', model: asked.model, costUsd: asked.costUsd };
    }
    deps.logger.warn(
      { triggerId: trigger.id, calls },
      'no triage model gave a decision; using the safe default',
    );
    return {
      action: SAFE_DEFAULT_ACTION,
      reason:
        `no model gave a valid decision (${calls.map((c) => `${c.model}: ${c.error ?? 'ok'}`).join('; ')})`.slice(
          0,
          500,
        ),
      source: 'default',
      model: asked.model,
      costUsd: asked.costUsd,
    };
  }
  return { action: SAFE_DEFAULT_ACTION, reason: 'no rule matched', source: 'default', costUsd: 0 };
}

type DeliveryRow = NonNullable<Awaited<ReturnType<Db['triggerDelivery']['findUnique']>>>;

/**
 * A `wake_hint` trigger's delivery (docs/adr/0018): the trigger's rules may drop it (no model is
 * asked: a wake hint carries no content to judge); otherwise it is counted into the pending hints
 * of the trigger's session (its standing session, else one keyed by the trigger id), which become
 * one `system_tick` as soon as that session is idle.
 */
async function wakeHint(
  deps: TriageDeps,
  trigger: TriggerRow,
  delivery: DeliveryRow,
  event: TriggerEvent,
): Promise<TriageResult> {
  const { db } = deps;
  if (delivery.decision === 'drop') {
    return { decision: { action: 'drop', reason: delivery.reason ?? '', source: 'rule', costUsd: 0 } };
  }
  if (delivery.decision === null) {
    const rules = TriageRules.safeParse(trigger.rules);
    const byRule = rules.success ? applyRules(rules.data, event) : null;
    if (byRule?.action === 'drop') {
      await db.triggerDelivery.updateMany({
        where: { id: delivery.id, decision: null },
        data: { decision: 'drop', reason: byRule.reason, decisionSource: 'rule', decidedAt: new Date() },
      });
      return { decision: { action: 'drop', reason: byRule.reason, source: 'rule', costUsd: 0 } };
    }
  }
  const headers = (delivery.payload as { headers?: Record<string, string> } | null)?.headers;
  const correlation = correlationOf(headers);
  let sessionId = trigger.sessionId;
  if (!sessionId) {
    await db.$executeRaw`
      INSERT INTO sessions (id, tenant_id, agent_id, title, updated_at)
      VALUES (${trigger.id}::uuid, ${trigger.tenantId}::uuid, ${trigger.agentId}::uuid,
        ${`${trigger.name} wake hints`}, now())
      ON CONFLICT (id) DO NOTHING`;
    sessionId = trigger.id;
  }
  await recordWakeHint(db, {
    deliveryRowId: delivery.id,
    tenantId: trigger.tenantId,
    agentId: trigger.agentId,
    sessionId,
    triggerId: trigger.id,
    eventType: event.eventType ?? event.source,
    // Seed 002 "Wake Hints" (docs/adr/0060): the hint keeps its provenance, payload and correlation.
    hint: {
      triggerId: trigger.id,
      deliveryId: delivery.id,
      externalDeliveryId: delivery.deliveryId,
      source: event.source,
      eventType: event.eventType ?? null,
      contentType: headers?.['content-type'] ?? null,
      ...keptBody(event.payload),
      correlationId: correlation.correlationId ?? null,
      causationId: correlation.causationId ?? null,
    },
  });
  const tick = await flushWakeHints(deps, sessionId);
  return {
    decision: {
      action: 'wake_hint',
      reason: 'coalesced into the next system tick',
      source: 'mode',
      costUsd: 0,
    },
    ...(tick?.messageId ? { messageId: tick.messageId } : {}),
  };
}
