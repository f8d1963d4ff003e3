import type { Queue } from 'bullmq';
import { Jobs, Priority, PRIORITY_RANK, type TraceCarrier } from '@switchboard/contracts';
import { withSpan } from '@switchboard/observability';
import { publish } from '@switchboard/queue';

/** A turn as a wake-up job names it. */
export interface TurnToRequeue {
  id: string;
  sessionId: string;
  tenantId: string;
  priority: string;
  traceContext?: unknown;
}

/**
 * Publishes a `turns` job for the turn again (its job id is the turn id) unless a live job holds the
 * id: a waiting, delayed or active one is left alone, a completed or failed one is removed first. The
 * job continues the admission's trace and keeps the turn's priority band. The one way turns are
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
    publish(
      queue,
      Jobs.turn,
      { turnId: t.id, sessionId: t.sessionId, tenantId: t.tenantId },
      { priority: PRIORITY_RANK[Priority.catch('normal').parse(t.priority)] },
    ),
  );
  return true;
}
