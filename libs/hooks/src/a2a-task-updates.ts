import { EventType, type OutboundWebhookJob, type TaskTurn } from '@switchboard/contracts';
import type { Db } from '@switchboard/database';
import type { Logger } from '@switchboard/observability';
import { a2aPushBody, type A2aPushVersion } from '@switchboard/protocols';
import type { CommittedEvent, TurnRow } from '@switchboard/store';

/**
 * The `webhook-id` of an A2A push notification of a task's intermediate state (docs/adr/0037): the
 * config's row and the journal seq of the event that committed the state, so each transition is one
 * job (a publish repeated for the same commit is the same job) and a later one a new notification.
 */
export const a2aUpdateWebhookId = (configRowId: string, seq: number): string =>
  `msg_a2a_${configRowId}_${seq}`;

/**
 * Which intermediate task state a checkpoint's events committed, if any: `turn_started` — the turn
 * went from queued to running (TASK_STATE_WORKING, its first run or a resume); the wait checkpoint's
 * `approval_requested` / `client_tool_requested` — it waits (TASK_STATE_INPUT_REQUIRED; a round that
 * waits for a person too is `awaiting_approval`). Keyed by the seq of the event that says so.
 */
export function taskTransitionOf(
  events: readonly CommittedEvent[],
): { status: 'running' | 'awaiting_approval' | 'awaiting_client_tool'; seq: number } | undefined {
  const waits = events.filter(
    (e) => e.type === EventType.ApprovalRequested || e.type === EventType.ClientToolRequested,
  );
  if (waits.length > 0) {
    const person = waits.some((e) => e.type === EventType.ApprovalRequested);
    return {
      status: person ? 'awaiting_approval' : 'awaiting_client_tool',
      seq: Math.min(...waits.map((e) => e.seq)),
    };
  }
  const started = events.find((e) => e.type === EventType.TurnStarted);
  return started ? { status: 'running', seq: started.seq } : undefined;
}

/**
 * A2A push notifications of a task's intermediate states (docs/adr/0037): given each committed
 * checkpoint's events (`TurnRunnerOptions.onCommitted`), a transition to WORKING or INPUT_REQUIRED
 * is published on `outbound-webhooks` to each of the turn's push configs, the task in the config's
 * wire version, as the completion-webhook hook does for the end. A turn without a transition costs
 * nothing; one with a transition one indexed read (most have no config). Failures are logged: the
 * turn goes on, and its end is still notified by the post-turn hook.
 */
export function a2aTaskUpdates(deps: {
  db: Db;
  notify: (job: Omit<OutboundWebhookJob, 'trace'>) => Promise<unknown>;
  logger: Logger;
}): (turn: TurnRow, events: readonly CommittedEvent[]) => void {
  return (turn, events) => {
    const transition = taskTransitionOf(events);
    if (!transition) return;
    void publishUpdates(deps, turn, transition).catch((err: unknown) =>
      deps.logger.error({ err, turnId: turn.id }, 'could not publish the A2A task update'),
    );
  };
}

async function publishUpdates(
  deps: Parameters<typeof a2aTaskUpdates>[0],
  turn: TurnRow,
  transition: NonNullable<ReturnType<typeof taskTransitionOf>>,
): Promise<void> {
  const configs = await deps.db.$queryRaw<{ id: string; configId: string; version: A2aPushVersion }[]>`
    SELECT id::text AS id, config_id AS "configId", protocol_version AS version FROM a2a_push_configs
    WHERE turn_id = ${turn.id}::uuid AND tenant_id = ${turn.tenantId}::uuid ORDER BY id`;
  for (const config of configs) {
    const task: TaskTurn = {
      id: turn.id,
      sessionId: turn.sessionId,
      agentId: turn.agentId,
      status: transition.status,
      finalText: null,
      failure: null,
      stopReason: null,
      createdAt: turn.createdAt.toISOString(),
      startedAt: (turn.startedAt ?? new Date()).toISOString(),
      completedAt: null,
    };
    await deps.notify({
      tenantId: turn.tenantId,
      webhookId: a2aUpdateWebhookId(config.id, transition.seq),
      event: `a2a.task.${transition.status}`,
      payload: a2aPushBody(task, config.version),
      a2aPush: { turnId: turn.id, configId: config.configId },
    });
  }
}
