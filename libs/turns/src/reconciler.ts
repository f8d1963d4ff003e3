import type { Queue } from 'bullmq';
import { Jobs } from '@switchboard/contracts';
import type { Db } from '@switchboard/database';
import type { Logger } from '@switchboard/observability';
import { publish } from '@switchboard/queue';

/**
 * Postgres is the source of truth, Redis the transport. The reconciler re-enqueues
 * every admitted, unfinished turn whose job Redis no longer has (a Redis that came
 * back empty, an enqueue that failed after the admission committed).
 */
export async function reconcileTurns(
  db: Db,
  turnsQueue: Queue,
  logger: Logger,
  options: { olderThanMs?: number; limit?: number } = {},
): Promise<number> {
  const cutoff = new Date(Date.now() - (options.olderThanMs ?? 0));
  const unfinished = await db.turn.findMany({
    where: { status: { in: ['queued', 'running'] }, createdAt: { lte: cutoff } },
    select: { id: true, sessionId: true, tenantId: true, traceContext: true },
    orderBy: { createdAt: 'asc' },
    take: options.limit ?? 1000,
  });
  let requeued = 0;
  for (const t of unfinished) {
    const job = await turnsQueue.getJob(t.id);
    if (job) {
      const state = await job.getState();
      if (state !== 'completed' && state !== 'failed') continue;
      await job.remove().catch(() => undefined);
    }
    await publish(turnsQueue, Jobs.turn, { turnId: t.id, sessionId: t.sessionId, tenantId: t.tenantId });
    requeued++;
  }
  if (requeued > 0) logger.warn({ requeued }, 'reconciler re-enqueued unfinished turns');
  return requeued;
}
