import { isEnded, PostTurnHookName, stoppedParentCause, type CancelCause } from '@switchboard/contracts';
import type { TurnOutcome } from '@switchboard/engine';
import { traceExemplar } from '@switchboard/observability';
import type { CheckpointResult } from '@switchboard/store';
import { isolated } from './finalisation-steps';
import { handBack } from './handback';
import { postTurnBatcher } from './post-turn-batcher';
import type { RunnerResources } from './runner-options';
import type { ClaimedTurn } from './claimed-turn';

/** Every named hook runs after every ended turn (libs/hooks has exactly one handler per name). */
export const POST_TURN_HOOKS: readonly PostTurnHookName[] = PostTurnHookName.options;

/**
 * Finalisation (seed 001 stage 6). The essential checkpoint commits the turn's result with its last
 * round, the decision record and the ended event, and releases the lease when no turn is queued
 * behind it; if it fails the job retries and the turn resumes. Every later finalisation step is
 * isolated: its failure is logged and recorded on the turn, and the result stands. Waiting clients
 * hear of the end once the finalisation steps have run (`publishFinal`), so what they read of the
 * turn includes what those steps record (its closure, docs/adr/0031); the journal stays the truth.
 */
export async function finaliseTurn(ctx: ClaimedTurn, outcome: TurnOutcome): Promise<CheckpointResult> {
  const { r, turn } = ctx;
  // Why a cancelled turn was cancelled (docs/adr/0055) goes on the turn and into turn_cancelled.
  const cancel = outcome.status === 'cancelled' ? await cancelCauseOf(ctx, outcome) : undefined;
  const committed = await ctx.checkpoints.finalise(outcome, ctx.plan.input.model, cancel);
  // Until the steps are known to have written nothing to the turn, the end event's body may be stale.
  let changed = true;
  try {
    changed = await afterCommit(ctx, outcome, committed, cancel);
  } finally {
    // Waiting clients hear of the end now, with what the finalisation steps recorded in place (the
    // turn itself with the event unless a step recorded a failure on it, docs/adr/0071).
    ctx.checkpoints.publishFinal({ changed });
  }
  // The answer is committed before any hook runs. A hook that cannot be enqueued is recorded, then
  // the job fails so its retry enqueues it again (the turn has ended by then).
  const ended = { ...turn, status: outcome.status };
  const hooks = await isolated(r, turn, 'enqueue_hooks', () => enqueueHooks(r, ended));
  if (hooks) throw hooks;
  return committed;
}

/**
 * A cancelled run's cause: the turn's cancel request when one was made (its reason stands: it came
 * first), else what the run itself knows (a stop hook that cancels: the tenant's kill switch).
 */
export async function cancelCauseOf(
  ctx: Pick<ClaimedTurn, 'r' | 'turn'>,
  outcome: Pick<TurnOutcome, 'cancelReason'>,
): Promise<CancelCause | undefined> {
  const requested = await ctx.r.store.cancelRequest(ctx.turn.id);
  if (requested) return requested;
  if (outcome.cancelReason) return { reason: outcome.cancelReason, note: null };
  ctx.r.logger.warn({ turnId: ctx.turn.id }, 'a turn was cancelled with no known reason');
  return undefined;
}

/**
 * After the essential commit: the parent hears of its child, the metrics, the finalisation steps.
 * True when a step failed (its failure is recorded on the turn: the turn changed after the commit).
 */
async function afterCommit(
  ctx: ClaimedTurn,
  outcome: TurnOutcome,
  committed: CheckpointResult,
  cancel: CancelCause | undefined,
): Promise<boolean> {
  let failed = false;
  const { r, turn, span } = ctx;
  // The child's task ended in that statement; its parent hears of it (and resumes) now.
  await handBack(r, turn);
  if (outcome.status === 'failed') {
    r.logger.warn(
      {
        turnId: turn.id,
        stopReason: outcome.stopReason,
        failure: outcome.failure?.kind,
        failureKind: outcome.failure?.failureKind,
      },
      'turn failed',
    );
  }
  span.setAttributes({
    'switchboard.turn.status': outcome.status,
    'switchboard.turn.iterations': outcome.iterations,
  });
  r.metrics.turns.inc({ status: outcome.status });
  if (cancel) {
    span.setAttribute('switchboard.turn.cancel_reason', cancel.reason);
    r.metrics.turnsCancelled.inc({ reason: cancel.reason });
  }
  r.metrics.turnDuration.observe({
    labels: { status: outcome.status },
    value: (Date.now() - ctx.startedAt) / 1000,
    // Grafana links the bucket to this turn's trace (docs/adr/0040).
    exemplarLabels: traceExemplar(span),
  });
  // A turn that ended at its deadline or budget takes its sub-agents' open child turns with it
  // (docs/adr/0055); the maintenance sweep finishes what a crash here leaves.
  const stopChildren =
    outcome.status === 'completed' ? stoppedParentCause(turn.id, outcome.stopReason) : undefined;
  if (stopChildren && r.tasks?.stopChildren) {
    const tasks = r.tasks;
    const error = await isolated(r, turn, 'stop_children', async () => {
      await tasks.stopChildren?.(turn.tenantId, turn.id, stopChildren);
    });
    if (error) failed = true;
  }
  const ended = { ...turn, status: outcome.status };
  for (const step of r.finalisationSteps ?? []) {
    // Every step runs, whatever failed before it.
    const error = await isolated(r, turn, step.name, () => step.run(ended, outcome, committed));
    if (error) failed = true;
  }
  // After the closure step (it saw the results still owed): async sub-agent tasks that ended while
  // this turn could still take their results rejoin the session as `task_result` messages
  // (docs/adr/0057). Only when the turn's end did not record the plain closure, which holds only when
  // the session owes no task result: the common turn makes no statement here. The tasks sweep
  // finishes what a crash here leaves.
  const tasks = r.tasks;
  if (!committed.closure && tasks?.rejoinSession) {
    const error = await isolated(r, turn, 'task_rejoin', async () => {
      await tasks.rejoinSession?.(turn.sessionId);
    });
    if (error) failed = true;
  }
  return failed;
}

/**
 * The one `post-turn` job of an ended turn (docs/adr/0039): the hooks worker runs every hook in it,
 * and a hook that fails there is retried in a job of its own. Its job id makes a repeat a no-op.
 * Turns that end together in one process share a job (`PostTurnBatcher`, docs/adr/0070).
 */
export async function enqueueHooks(
  r: Pick<RunnerResources, 'postTurnQueue' | 'postTurnBatchWindowMs'>,
  turn: { id: string; tenantId: string; status: string },
): Promise<void> {
  if (!isEnded(turn.status)) return;
  await postTurnBatcher(r.postTurnQueue, r.postTurnBatchWindowMs).add({
    turnId: turn.id,
    tenantId: turn.tenantId,
  });
}
