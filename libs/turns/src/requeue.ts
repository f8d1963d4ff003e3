import type { Queue } from 'bullmq';
import { Jobs, type TraceCarrier } from '@switchboard/contracts';
import { withSpan, type Logger } from '@switchboard/observability';
import { publish, withTimeout } from '@switchboard/queue';

/** A turn as a wake-up job names it. */
export interface TurnToRequeue {
  id: string;
  sessionId: string;
  tenantId: string;
  traceContext?: unknown;
}

/**
 * Publishes a `turns` job for the turn again (its job id is the turn id) unless a live job holds the
 * id: a waiting, delayed or active one is left alone, a completed or failed one is removed first. The
 * job continues the admission's trace; it carries no BullMQ priority: the turn's band orders it in
 * Postgres's choice (docs/adr/0080). The one way turns are
 * re-enqueued: the reconciler, the wake after a failed turn, and a resumed tenant (docs/adr/0030).
 * False when a live job was there.
 */
export async function requeueTurn(queue: Queue, t: TurnToRequeue, spanName: string): Promise<boolean> {
  const job = await queue.getJob(t.id);
  if (job) {
    const state = await job.getState();
    if (state !== 'completed' && state !== 'failed') return false;
    await job.remove().catch(() => undefined);
  }
  await withSpan(spanName, { parent: t.traceContext as TraceCarrier | undefined }, () =>
    publish(queue, Jobs.turn, { turnId: t.id, sessionId: t.sessionId, tenantId: t.tenantId }),
  );
  return true;
}

/** A waiting turn to resume: its job and where its trace comes from. */
export interface TurnToResume {
  turnId: string;
  sessionId: string;
  tenantId: string;
  /** The settled wait's id: the job id `<turnId>.<resume>` is new for each wait (docs/adr/0013). */
  resume: string;
  traceContext?: unknown;
}

/**
 * Enqueues the job that resumes a turn whose waits are settled (an approval decided, client tool
 * results answered or expired: docs/adr/0013, 0047), on whichever worker takes it. It continues the
 * admission's trace (no BullMQ priority: docs/adr/0080). A Redis that is down would hold the caller's
 * answer: bounded by `timeoutMs`, and a failure is only logged, since the reconciler finds the
 * `queued` turn.
 */
export async function enqueueResume(
  queue: Queue,
  t: TurnToResume,
  o: { timeoutMs: number; logger: Logger; after: string },
): Promise<void> {
  try {
    const enqueued = withSpan('resume turn', { parent: t.traceContext as TraceCarrier | undefined }, () =>
      publish(queue, Jobs.turn, {
        turnId: t.turnId,
        sessionId: t.sessionId,
        tenantId: t.tenantId,
        resume: t.resume,
      }),
    );
    enqueued.catch(() => undefined);
    await withTimeout(enqueued, o.timeoutMs);
  } catch (err) {
    o.logger.error({ err, turnId: t.turnId }, `enqueue failed after ${o.after}; the reconciler will retry`);
  }
}
