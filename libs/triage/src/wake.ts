import { Prisma } from '@prisma/client';
import type { Admission } from '@switchboard/admission';
import { AgentStoppedError, ENDED_STATUSES, newId, TenantPausedError } from '@switchboard/contracts';
import type { Db } from '@switchboard/database';
import type { Logger } from '@switchboard/observability';
import { ENDED } from '@switchboard/store';

/** The ended statuses as statement text (`Prisma.raw`: spliced in, not a parameter). */
const ENDED_LIST = Prisma.raw(ENDED.toQuery().text);

/** Distinct event types and triggers a pending wake hint remembers; the count goes on past these. */
export const WAKE_HINT_MAX_LISTED = 20;

export interface WakeHintInput {
  /** The trigger_deliveries row: marked once, so a retried job never counts a delivery twice. */
  deliveryRowId: string;
  tenantId: string;
  agentId: string;
  sessionId: string;
  triggerId: string;
  eventType: string;
}

/**
 * Coalesces one `wake_hint` delivery into its session's pending hints (seed 002 "Wake Hints",
 * docs/adr/0018). Nothing enters the transcript. False when the delivery was already recorded.
 */
export async function recordWakeHint(db: Db, h: WakeHintInput): Promise<boolean> {
  return db.$transaction(async (tx) => {
    const won = await tx.triggerDelivery.updateMany({
      where: { id: h.deliveryRowId, decision: null },
      data: {
        decision: 'wake_hint',
        reason: 'coalesced into the next system tick',
        decisionSource: 'mode',
        decidedAt: new Date(),
      },
    });
    if (won.count === 0) return false;
    await tx.$executeRaw`
      INSERT INTO wake_hints (session_id, id, tenant_id, agent_id, count, event_types, trigger_ids)
      VALUES (${h.sessionId}::uuid, ${newId()}::uuid, ${h.tenantId}::uuid, ${h.agentId}::uuid, 1,
        ARRAY[${h.eventType}]::text[], ARRAY[${h.triggerId}]::text[])
      ON CONFLICT (session_id) DO UPDATE SET
        count = wake_hints.count + 1,
        event_types = CASE
          WHEN ${h.eventType} = ANY(wake_hints.event_types)
            OR cardinality(wake_hints.event_types) >= ${WAKE_HINT_MAX_LISTED} THEN wake_hints.event_types
          ELSE wake_hints.event_types || ${h.eventType}::text END,
        trigger_ids = CASE
          WHEN ${h.triggerId} = ANY(wake_hints.trigger_ids)
            OR cardinality(wake_hints.trigger_ids) >= ${WAKE_HINT_MAX_LISTED} THEN wake_hints.trigger_ids
          ELSE wake_hints.trigger_ids || ${h.triggerId}::text END,
        last_at = now()`;
    return true;
  });
}

interface PendingRow {
  id: string;
  tenant_id: string;
  count: number;
  event_types: string[];
  trigger_ids: string[];
  first_at: Date;
  last_at: Date;
}

/**
 * Turns a session's pending wake hints into one runtime `system_tick` message when the session is
 * idle (no unfinished turn). A busy session keeps them: the maintenance sweep tries again after its
 * turn ends. The tick's idempotency key is the pending row's id, so a retry after a crash between
 * the admission and the clean-up admits nothing new; hints that arrived meanwhile stay pending.
 * Only the runtime admits system ticks: no tool or API lets a model or client make one.
 */
export async function flushWakeHints(
  deps: { db: Db; admission: Admission; logger: Logger },
  sessionId: string,
): Promise<{ messageId: string; count: number } | null> {
  const { db } = deps;
  const [hint] = await db.$queryRaw<PendingRow[]>`
    SELECT id, tenant_id, count, event_types, trigger_ids, first_at, last_at
    FROM wake_hints WHERE session_id = ${sessionId}::uuid`;
  if (!hint) return null;
  const busy = await db.turn.count({
    where: { sessionId, status: { notIn: [...ENDED_STATUSES] } },
  });
  if (busy > 0) return null;
  const summary = {
    count: hint.count,
    eventTypes: hint.event_types,
    triggerIds: hint.trigger_ids,
    firstAt: hint.first_at.toISOString(),
    lastAt: hint.last_at.toISOString(),
  };
  const admitted = await admitTick(deps, {
    tenantId: hint.tenant_id,
    sessionId,
    kind: 'system_tick',
    origin: { kind: 'system', subsystem: 'wake_hints' },
    body: {
      type: 'text',
      text:
        `Wake-up: ${hint.count} external signal${hint.count === 1 ? '' : 's'} arrived ` +
        `(${hint.event_types.join(', ') || 'no event type'}). Check the systems they come from if your work depends on them.`,
    },
    deliverySurface: 'runtime_system',
    admissionContext: 'runtime_owned',
    priority: 'background',
    metadata: { wakeHints: summary },
    idempotencyKey: `wake:${hint.id}`,
  });
  if (!admitted) return null;
  // Remove what this tick covered; hints counted after the read stay pending under a new id.
  await db.$executeRaw`
    UPDATE wake_hints SET id = ${newId()}::uuid, count = count - ${hint.count}
    WHERE session_id = ${sessionId}::uuid AND id = ${hint.id}::uuid`;
  await db.$executeRaw`DELETE FROM wake_hints WHERE session_id = ${sessionId}::uuid AND count <= 0`;
  deps.logger.info(
    { sessionId, count: hint.count, messageId: admitted.messageId },
    'wake hints became a system tick',
  );
  return { messageId: admitted.messageId, count: hint.count };
}

/** The tick's admission; a paused tenant's hints stay pending for after its resume (docs/adr/0030). */
async function admitTick(
  deps: { admission: Admission },
  input: Parameters<Admission['admit']>[0],
): Promise<{ messageId: string } | undefined> {
  try {
    return await deps.admission.admit(input);
  } catch (err) {
    // A paused tenant's or a stopped agent's hints stay pending (docs/adr/0030, 0031).
    if (err instanceof TenantPausedError || err instanceof AgentStoppedError) return undefined;
    throw err;
  }
}

/**
 * The maintenance sweep: flushes every session with pending hints whose turn has ended. A paused
 * tenant's sessions are left for after its resume.
 */
export async function flushIdleWakeHints(
  deps: { db: Db; admission: Admission; logger: Logger },
  limit = 500,
): Promise<number> {
  const rows = await deps.db.$queryRaw<{ session_id: string }[]>`
    SELECT w.session_id FROM wake_hints w
    WHERE NOT EXISTS (SELECT 1 FROM tenants tn WHERE tn.id = w.tenant_id AND tn.kill_switch)
      AND NOT EXISTS (
      SELECT 1 FROM turns t WHERE t.session_id = w.session_id
        AND t.status NOT IN ${ENDED_LIST})
    ORDER BY w.first_at LIMIT ${limit}`;
  let flushed = 0;
  for (const { session_id } of rows) {
    if (await flushWakeHints(deps, session_id)) flushed++;
  }
  return flushed;
}
