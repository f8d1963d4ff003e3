import { EventType, newId } from '@switchboard/contracts';
import { enqueueHooks } from './finalise';
import { requeueTurn } from './requeue';
import type { RunnerResources } from './runner-options';

/** Marks a turn failed when its job has used every attempt (a bug or a dead dependency). */
export async function failPermanently(r: RunnerResources, turnId: string, error: Error): Promise<void> {
  const failed = await r.store.failTurn({
    turnId,
    stopReason: 'internal_error',
    failure: {
      kind: 'internal',
      category: 'unknown',
      message: error.message.slice(0, 2000),
      brief: 'The turn could not be run after every retry; see the worker logs for this turn id.',
    },
    eventId: newId(),
    eventData: { stopReason: 'internal_error' },
  });
  if (!failed) return;
  await r.live?.publish(failed.sessionId, [
    { seq: failed.eventSeq, type: EventType.TurnFailed, turnId, data: { stopReason: 'internal_error' } },
  ]);
  r.metrics.turns.inc({ status: 'failed' });
  await enqueueHooks(r, { id: turnId, tenantId: failed.tenantId, status: 'failed' });
  // A child turn's task ends with it and its parent hears of it (a no-op for other turns; the
  // tasks sweep retries a failure here).
  await r.tasks
    ?.childEnded(turnId)
    .catch((err: unknown) => r.logger.warn({ err, turnId }, 'parent not told yet; the tasks sweep retries'));
  // Jobs of the session's later turns may have completed while this one held the session: wake one.
  await wake(r, failed.sessionId);
}

/** Enqueues a fresh job for the session's oldest unfinished turn (its old job may have completed). */
export async function wake(r: RunnerResources, sessionId: string): Promise<void> {
  const queue = r.turnsQueue;
  if (!queue) return;
  const next = await r.store.nextUnfinished(sessionId);
  if (!next) return;
  await requeueTurn(queue, { ...next, sessionId }, 'wake turn');
}
