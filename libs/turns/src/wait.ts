import { waitingStatus, type TurnOutcome } from '@switchboard/engine';
import type { CheckpointResult } from '@switchboard/store';
import type { ClaimedTurn } from './claimed-turn';

/**
 * A waiting outcome persisted (docs/adr/0013): the waits, the turn `awaiting_approval`,
 * `awaiting_client_tool` (docs/adr/0047) or `awaiting_subagent` and the lease's release commit together; the worker goes on to other work and
 * the decision (or the task's end) resumes the turn on any worker. A turn waits; it never pauses
 * (pausing is the operator's, of a tenant or an agent: docs/ARCHITECTURE.md glossary).
 */
export async function persistWaits(ctx: ClaimedTurn, outcome: TurnOutcome): Promise<CheckpointResult> {
  const { r, turn } = ctx;
  const waits = outcome.waits ?? [];
  const status = waitingStatus(waits);
  const committed = await ctx.checkpoints.wait(
    outcome,
    ctx.plan.approvalTtlMs,
    status,
    ctx.plan.clientToolTtlMs,
  );
  ctx.span.setAttributes({ 'switchboard.turn.status': status });
  if (committed.applied && (status === 'awaiting_approval' || status === 'awaiting_client_tool')) {
    r.onTaskState?.(turn, { status, key: `wait${turn.runCount}` });
  }
  r.metrics.turnWaits.inc({ status });
  // A child may have ended before the wait committed: looked at again now (docs/adr/0024).
  const taskIds = waits.flatMap((w) => (w.kind === 'task' ? [w.taskId] : []));
  if (status === 'awaiting_subagent') await r.tasks?.parentWaiting(turn.id, taskIds);
  return committed;
}
