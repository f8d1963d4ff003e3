import type { OutboundWebhookJob, TaskTurn } from '@switchboard/contracts';
import type { Db } from '@switchboard/database';
import type { Logger } from '@switchboard/observability';
import { a2aPushBody, type A2aPushVersion } from '@switchboard/protocols';
import type { TurnRow } from '@switchboard/store';

/** A turn's move the runner reports (`TaskStateChange` of libs/turns): the state and its transition key. */
interface TaskStateChange {
  status: 'running' | 'awaiting_approval' | 'awaiting_client_tool';
  key: string;
}

/**
 * The `webhook-id` of an A2A push notification of a task's intermediate state (docs/adr/0037): the
 * config's row and the transition's key (`run<n>`, `wait<n>`), so each transition is one job (a
 * publish repeated for it is the same job) and a later one a new notification.
 */
export const a2aUpdateWebhookId = (configRowId: string, key: string): string =>
  `msg_a2a_${configRowId}_${key}`;

/**
 * A2A push notifications of a task's intermediate states (docs/adr/0037), the runner's
 * `onTaskState`: a turn that starts running (TASK_STATE_WORKING) or whose wait committed
 * (TASK_STATE_INPUT_REQUIRED) is published on `outbound-webhooks` to each of its push configs, the
 * task in the config's wire version, as the completion-webhook hook does for the end. One indexed
 * read per transition; the runner reports `running` only for a turn whose claim saw a config. Failures are logged: the turn goes on, and its
 * end is still notified by the post-turn hook.
 */
export function a2aTaskUpdates(deps: {
  db: Db;
  notify: (job: Omit<OutboundWebhookJob, 'trace'>) => Promise<unknown>;
  logger: Logger;
}): (turn: TurnRow, transition: TaskStateChange) => void {
  return (turn, transition) => {
    void publishUpdates(deps, turn, transition).catch((err: unknown) =>
      deps.logger.error({ err, turnId: turn.id }, 'could not publish the A2A task update'),
    );
  };
}

async function publishUpdates(
  deps: Parameters<typeof a2aTaskUpdates>[0],
  turn: TurnRow,
  transition: TaskStateChange,
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
      webhookId: a2aUpdateWebhookId(config.id, transition.key),
      event: `a2a.task.${transition.status}`,
      payload: a2aPushBody(task, config.version),
      a2aPush: { turnId: turn.id, configId: config.configId },
    });
  }
}
