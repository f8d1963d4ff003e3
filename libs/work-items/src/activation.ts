import type { Queue } from 'bullmq';
import type { Admission } from '@switchboard/admission';
import { AgentStoppedError, AppError, Jobs, newId, TenantPausedError } from '@switchboard/contracts';
import type { Db } from '@switchboard/database';
import type { Logger } from '@switchboard/observability';
import { publish } from '@switchboard/queue';
import { HOLDS_SESSION } from '@switchboard/store';
import { flushWakeHints } from '@switchboard/triage';
import { recordClosure } from './closure';
import { ASLEEP_TEXT } from './lifecycle';

/**
 * Runtime-owned activation (seed 002 "Work-Queue Activation And Tick", "SystemTick",
 * docs/adr/0031). When an agent's work session is idle and its current item is runnable, or a
 * queued runnable item exists, the runtime admits one `system_tick` into that session; a due
 * `recheck_at` admits one low-priority tick and is consumed. The ticks go through the same
 * Admission as wake hints and schedule fires (origin `system {subsystem: work_items}`,
 * `runtime_owned`): nothing a tool, a route or a model says can make one.
 */

/** Why a tick was admitted, in its metadata (`workTick.reason`). */
export type TickReason = 'continue_current' | 'activate_queued' | 'recheck_due' | 'sleep_timer';

export type ActivationOutcome =
  | { kind: 'admitted'; reason: TickReason; messageId: string; sessionId: string }
  /** Pending wake hints of the work session became the tick (they are never starved by work ticks). */
  | { kind: 'wake_hints'; messageId: string; sessionId: string }
  | { kind: 'busy' | 'nothing' | 'stalled' | 'held' | 'gone' | 'asleep' };

export interface ActivationDeps {
  db: Db;
  admission: Admission;
  logger: Logger;
  /** Where the timer of the next recheck goes (a delayed `work` job); absent: only the sweep finds it. */
  workQueue?: Queue;
  /**
   * Keep-working ticks in a row that may end with no work-item change before the runtime stops
   * ticking (WORK_TICK_MAX_IDLE): a model that never completes cannot keep itself alive.
   */
  maxIdleTicks: number;
}

interface StateRow {
  deleted: boolean;
  paused: boolean;
  lifecycle: string;
  asleep: boolean;
  asleep_at: Date | null;
  sleeping_until: Date | null;
  /** A timed sleep ended and nothing woke the agent since: its wake tick is due. */
  sleep_due: boolean;
  current_runnable: boolean;
  current_id: string | null;
  queued_runnable: boolean;
  work_session_id: string | null;
  session_active: boolean;
  busy: boolean;
  wake_hints: boolean;
  last_turn_id: string | null;
  next_recheck: Date | null;
}

interface DueRow {
  id: string;
  objective: string;
  blocked_by: string;
  recheck_at: Date;
}

/** A turn that holds its session (queued, running or waiting), as statement text. */
const HOLDS_SESSION_LIST = HOLDS_SESSION.toQuery().text;

/** The agent's work state in one read. */
async function readState(db: Db, tenantId: string, agentId: string): Promise<StateRow | undefined> {
  const [row] = await db.$queryRawUnsafe<StateRow[]>(
    `
    SELECT a.deleted_at IS NOT NULL AS deleted,
      COALESCE((SELECT kill_switch FROM tenants WHERE id = a.tenant_id), false) AS paused,
      a.lifecycle, ${ASLEEP_TEXT} AS asleep, a.asleep_at, a.sleeping_until,
      (a.asleep_at IS NOT NULL AND a.sleeping_until <= now() AND NOT EXISTS (SELECT 1 FROM turns st
        WHERE st.tenant_id = a.tenant_id AND st.agent_id = a.id AND st.created_at > a.asleep_at)) AS sleep_due,
      a.current_work_item_id AS current_id,
      EXISTS (SELECT 1 FROM work_items w WHERE w.id = a.current_work_item_id AND w.state = 'open'
        AND w.blocked_by IS NULL AND w.plan_status <> 'needs_input') AS current_runnable,
      EXISTS (SELECT 1 FROM work_items w WHERE w.tenant_id = a.tenant_id AND w.agent_id = a.id
        AND w.state = 'open' AND w.blocked_by IS NULL AND w.plan_status <> 'needs_input'
        AND w.id IS DISTINCT FROM a.current_work_item_id) AS queued_runnable,
      a.work_session_id,
      EXISTS (SELECT 1 FROM sessions s WHERE s.id = a.work_session_id AND s.status = 'active') AS session_active,
      EXISTS (SELECT 1 FROM turns t WHERE t.session_id = a.work_session_id
        AND t.status IN ${HOLDS_SESSION_LIST}) AS busy,
      EXISTS (SELECT 1 FROM wake_hints h WHERE h.session_id = a.work_session_id) AS wake_hints,
      (SELECT t.id FROM turns t WHERE t.session_id = a.work_session_id ORDER BY t.seq DESC LIMIT 1)
        AS last_turn_id,
      (SELECT min(w.recheck_at) FROM work_items w WHERE w.tenant_id = a.tenant_id AND w.agent_id = a.id
        AND w.state = 'open' AND w.blocked_by IS NOT NULL AND w.recheck_consumed_at IS NULL
        AND w.recheck_at > now()) AS next_recheck
    FROM agents a WHERE a.id = $1::uuid AND a.tenant_id = $2::uuid`,
    agentId,
    tenantId,
  );
  return row;
}

/** Due rechecks of the agent, oldest first. */
function dueRechecks(db: Db, tenantId: string, agentId: string): Promise<DueRow[]> {
  return db.$queryRaw<DueRow[]>`
    SELECT id, objective, blocked_by, recheck_at FROM work_items
    WHERE tenant_id = ${tenantId}::uuid AND agent_id = ${agentId}::uuid AND state = 'open'
      AND blocked_by IS NOT NULL AND recheck_consumed_at IS NULL AND recheck_at <= now()
    ORDER BY recheck_at, position LIMIT 20`;
}

/**
 * The last `n` turns of the work session all were keep-working ticks, ended, and no work item of the
 * agent changed since the first of them began: the model is not moving its work.
 */
async function stalled(
  db: Db,
  tenantId: string,
  agentId: string,
  sessionId: string,
  n: number,
): Promise<boolean> {
  if (n <= 0) return false;
  const [row] = await db.$queryRaw<{ stalled: boolean }[]>`
    WITH last AS (
      SELECT t.created_at, m.origin->>'subsystem' AS subsystem, m.metadata->'workTick'->>'reason' AS reason
      FROM turns t JOIN messages m ON m.id = t.input_message_id
      WHERE t.session_id = ${sessionId}::uuid AND t.tenant_id = ${tenantId}::uuid
      ORDER BY t.seq DESC LIMIT ${n}
    )
    SELECT count(*) = ${n}
      AND bool_and(subsystem = 'work_items' AND reason IN ('continue_current', 'activate_queued'))
      AND NOT EXISTS (SELECT 1 FROM work_items w WHERE w.tenant_id = ${tenantId}::uuid
        AND w.agent_id = ${agentId}::uuid AND w.updated_at >= (SELECT min(created_at) FROM last))
      AS stalled
    FROM last`;
  return row?.stalled ?? false;
}

/**
 * The agent's standing work session (docs/adr/0031): made on first need, in one transaction under the
 * agent's row lock, and made again when an operator closed it.
 */
export async function ensureWorkSession(db: Db, tenantId: string, agentId: string): Promise<string> {
  return db.$transaction(async (tx) => {
    const [agent] = await tx.$queryRaw<{ work_session_id: string | null }[]>`
      SELECT work_session_id FROM agents
      WHERE id = ${agentId}::uuid AND tenant_id = ${tenantId}::uuid FOR UPDATE`;
    if (!agent) throw new Error(`agent ${agentId} not found`);
    // A statement of its own, after the lock: it sees a session another activation made meanwhile.
    const [active] = agent.work_session_id
      ? await tx.$queryRaw<{ active: boolean }[]>`
          SELECT status = 'active' AS active FROM sessions WHERE id = ${agent.work_session_id}::uuid`
      : [];
    if (agent.work_session_id && active?.active) return agent.work_session_id;
    const id = newId();
    await tx.session.create({ data: { id, tenantId, agentId, title: 'Work items (system ticks)' } });
    await tx.agent.update({ where: { id: agentId }, data: { workSessionId: id } });
    return id;
  });
}

/** A delayed `work` job for a future instant; one per (agent, instant), whoever asks. */
export async function scheduleActivation(
  queue: Queue,
  a: { tenantId: string; agentId: string },
  at: Date,
): Promise<void> {
  const delay = Math.max(0, at.getTime() - Date.now());
  await publish(queue, Jobs.work, { ...a, cause: `at-${at.getTime()}` }, { delay });
}

/** Admits a tick; a paused tenant's or a replayed one is told apart. */
async function admitTick(
  admission: Admission,
  input: Parameters<Admission['admit']>[0],
): Promise<{ messageId: string } | 'paused'> {
  try {
    return await admission.admit(input);
  } catch (err) {
    if (err instanceof TenantPausedError || err instanceof AgentStoppedError) return 'paused';
    // A racing activation admitted under the key with another text (the state moved between reads).
    if (err instanceof AppError && err.code === 'idempotency_key_reused') return { messageId: '' };
    throw err;
  }
}

const line = (text: string, max = 200) => {
  const flat = text.replace(/\s+/g, ' ').trim();
  return flat.length > max ? `${flat.slice(0, max)}…` : flat;
};

/** One activation pass for an agent: at most one tick admitted. Safe to run concurrently and repeatedly. */
export async function activateWork(
  deps: ActivationDeps,
  agent: { tenantId: string; agentId: string },
): Promise<ActivationOutcome> {
  const { db, logger } = deps;
  const { tenantId, agentId } = agent;
  const state = await readState(db, tenantId, agentId);
  if (!state || state.deleted) return { kind: 'gone' };
  if (state.next_recheck && deps.workQueue)
    await scheduleActivation(deps.workQueue, agent, state.next_recheck);
  if (state.asleep && state.sleeping_until && deps.workQueue) {
    await scheduleActivation(deps.workQueue, agent, state.sleeping_until);
  }
  // Paused or stopped by the operator, or the tenant paused: nothing runs until the resume.
  if (state.paused || state.lifecycle !== 'active') return { kind: 'held' };
  if (state.busy) return { kind: 'busy' };
  const due = await dueRechecks(db, tenantId, agentId);
  // Keep-working ticks wait while the agent sleeps; a due recheck or its timer wakes it.
  const work = !state.asleep && (state.current_runnable || state.queued_runnable);
  if (!work && due.length === 0 && !state.sleep_due) return { kind: state.asleep ? 'asleep' : 'nothing' };
  const sessionId =
    state.work_session_id && state.session_active
      ? state.work_session_id
      : await ensureWorkSession(db, tenantId, agentId);
  // Wake hints held for this session go first: a keep-working tick never starves them (ADR 0018).
  if (state.wake_hints && state.session_active) {
    const flushed = await flushWakeHints(deps, sessionId);
    // A liveness-only resolution (docs/adr/0060) admitted nothing: the work goes on as without hints.
    if (flushed?.messageId) return { kind: 'wake_hints', messageId: flushed.messageId, sessionId };
  }
  const common = {
    tenantId,
    sessionId,
    kind: 'system_tick' as const,
    origin: { kind: 'system' as const, subsystem: 'work_items' },
    deliverySurface: 'runtime_system' as const,
    admissionContext: 'runtime_owned' as const,
  };
  if (state.sleep_due && due.length === 0 && state.asleep_at) {
    // A timed sleep ended: one tick wakes the agent (its turn is admitted after the sleep began).
    const admitted = await admitTick(deps.admission, {
      ...common,
      body: {
        type: 'text',
        text: `System tick: your sleep timer ended (asleep since ${state.asleep_at.toISOString()}). Check whether anything needs you.`,
      },
      priority: 'normal',
      metadata: { workTick: { reason: 'sleep_timer', asleepAt: state.asleep_at.toISOString() } },
      idempotencyKey: `sleep:${state.asleep_at.getTime()}`,
    });
    if (admitted === 'paused') return { kind: 'held' };
    logger.info({ tenantId, agentId, sessionId, messageId: admitted.messageId }, 'sleep timer tick admitted');
    return { kind: 'admitted', reason: 'sleep_timer', messageId: admitted.messageId, sessionId };
  }
  if (work) {
    if (await stalled(db, tenantId, agentId, sessionId, deps.maxIdleTicks)) {
      logger.warn({ tenantId, agentId, sessionId }, 'work ticks stopped: the last ones changed no work item');
      if (due.length === 0) return { kind: 'stalled' };
    } else {
      const reason: TickReason = state.current_runnable ? 'continue_current' : 'activate_queued';
      const text =
        reason === 'continue_current'
          ? `System tick: continue your current work item ${state.current_id}. Update it as you make ` +
            'progress; when it is done, write the report and call complete_work_item in the same reply.'
          : 'System tick: you have no current work item and runnable work is queued. Pick the next one ' +
            'with pick_work_item and work on it.';
      // One tick per ended turn of the session: racing activations after the same turn admit once.
      const admitted = await admitTick(deps.admission, {
        ...common,
        body: { type: 'text', text },
        priority: 'normal',
        metadata: {
          workTick: { reason, workItemId: reason === 'continue_current' ? state.current_id : null },
        },
        idempotencyKey: `work:${state.last_turn_id ?? 'first'}`,
      });
      if (admitted === 'paused') return { kind: 'held' };
      logger.info(
        { tenantId, agentId, sessionId, reason, messageId: admitted.messageId },
        'work tick admitted',
      );
      return { kind: 'admitted', reason, messageId: admitted.messageId, sessionId };
    }
  }
  // A due recheck: one low-priority tick for every reminder due now, each consumed once.
  const items = due.map((d) => `- ${d.id}: ${line(d.objective)} — blocked by: ${line(d.blocked_by)}`);
  const first = due[0];
  const admitted = await admitTick(deps.admission, {
    ...common,
    body: {
      type: 'text',
      text:
        'System tick: the recheck of blocked work is due. Inspect each blocker; clear it with ' +
        `update_work_item (blocked_by: null) when it is resolved, or set it again:\n${items.join('\n')}`,
    },
    priority: 'background',
    metadata: {
      workTick: { reason: 'recheck_due', workItemIds: due.map((d) => d.id) },
    },
    idempotencyKey: `recheck:${first.id}:${first.recheck_at.getTime()}`,
  });
  if (admitted === 'paused') return { kind: 'held' };
  // Consumed only as of the deadline the tick was for: a blocker set again meanwhile keeps its own.
  for (const d of due) {
    await db.$executeRaw`
      UPDATE work_items SET recheck_consumed_at = now()
      WHERE id = ${d.id}::uuid AND tenant_id = ${tenantId}::uuid AND recheck_at = ${d.recheck_at}
        AND recheck_consumed_at IS NULL`;
  }
  logger.info({ tenantId, agentId, sessionId, items: due.length }, 'work recheck tick admitted');
  return { kind: 'admitted', reason: 'recheck_due', messageId: admitted.messageId, sessionId };
}

/**
 * The maintenance sweep's part (a backstop for lost `work` jobs and a Redis that came back empty):
 * active agents with runnable open work or a due recheck whose work session is idle, and agents whose
 * timed sleep ended unwoken.
 */
export async function activateIdleAgents(deps: ActivationDeps, limit = 200): Promise<number> {
  const rows = await deps.db.$queryRawUnsafe<{ tenant_id: string; agent_id: string }[]>(
    `
    SELECT tenant_id, agent_id FROM (
      SELECT w.tenant_id, w.agent_id
      FROM work_items w JOIN agents a ON a.id = w.agent_id
      WHERE w.state = 'open' AND a.deleted_at IS NULL AND a.lifecycle = 'active'
        AND ((w.blocked_by IS NULL AND w.plan_status <> 'needs_input' AND NOT ${ASLEEP_TEXT})
          OR (w.blocked_by IS NOT NULL AND w.recheck_consumed_at IS NULL AND w.recheck_at <= now()))
        AND NOT EXISTS (SELECT 1 FROM turns t WHERE t.session_id = a.work_session_id
          AND t.status IN ${HOLDS_SESSION_LIST})
      UNION
      -- Timed sleeps that ended with nothing admitted since (their delayed job lost with Redis).
      SELECT a.tenant_id, a.id FROM agents a
      WHERE a.sleeping_until <= now() AND a.deleted_at IS NULL AND a.lifecycle = 'active'
        AND NOT EXISTS (SELECT 1 FROM turns st WHERE st.tenant_id = a.tenant_id AND st.agent_id = a.id
          AND st.created_at > a.asleep_at)
    ) due
    ORDER BY agent_id LIMIT $1`,
    limit,
  );
  let admitted = 0;
  for (const r of rows) {
    const out = await activateWork(deps, { tenantId: r.tenant_id, agentId: r.agent_id });
    if (out.kind === 'admitted' || out.kind === 'wake_hints') admitted++;
  }
  return admitted;
}

/**
 * The harness's finalisation step after every ended turn (docs/adr/0031): the turn's closure decision
 * recorded (turn row and `turn_closure` event), then, when the agent has open work or a timed sleep,
 * a `work` job (id `<agentId>.<turnId>`, so a re-run step adds nothing) asks the triage worker for an
 * activation pass.
 */
export function workActivationStep(db: Db, workQueue: Queue) {
  return {
    name: 'work-activation',
    async run(
      turn: { id: string; tenantId: string; agentId: string; sessionId: string },
      _outcome?: unknown,
      committed?: { closure?: unknown },
    ): Promise<void> {
      // The turn's end recorded the plain closure: no work item, no sleep, nothing to ask a pass for.
      if (committed?.closure) return;
      // The closure's read also says whether the agent has open work or a timed sleep.
      const recorded = await recordClosure(db, turn);
      if (!recorded?.hasWork) return;
      await publish(workQueue, Jobs.work, { tenantId: turn.tenantId, agentId: turn.agentId, cause: turn.id });
    },
  };
}
