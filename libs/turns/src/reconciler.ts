import type { Queue } from 'bullmq';
import type { Db } from '@switchboard/database';
import type { Logger } from '@switchboard/observability';
import { UNFINISHED_STATUSES, WAITING_STATUSES, type TurnStore } from '@switchboard/store';
import { requeueTurn } from './requeue';

/**
 * Postgres is the source of truth, Redis the transport. The reconciler re-enqueues
 * every admitted, unfinished turn whose job Redis no longer has (a Redis that came
 * back empty, an enqueue that failed after the admission committed). A paused tenant's turns are
 * left alone (docs/adr/0030): the claim would leave them queued, and the resume wakes them.
 */
export async function reconcileTurns(
  db: Db,
  turnsQueue: Queue,
  logger: Logger,
  options: { olderThanMs?: number; limit?: number } = {},
): Promise<number> {
  const cutoff = new Date(Date.now() - (options.olderThanMs ?? 0));
  const pageSize = options.limit ?? 500;
  let requeued = 0;
  let after: string | undefined;
  // Every unfinished turn is looked at, a page at a time: a backlog of turns whose jobs
  // are alive must not hide a newer turn whose job was lost.
  for (;;) {
    const page = await db.turn.findMany({
      where: {
        status: { in: [...UNFINISHED_STATUSES] },
        createdAt: { lte: cutoff },
        // Turns behind a waiting one cannot run: the decision's resume job drains them.
        NOT: { session: { turns: { some: { status: { in: [...WAITING_STATUSES] } } } } },
        session: { tenant: { killSwitch: false } },
        ...(after ? { id: { gt: after } } : {}),
      },
      select: { id: true, sessionId: true, tenantId: true, priority: true, traceContext: true },
      orderBy: { id: 'asc' },
      take: pageSize,
    });
    for (const t of page) {
      if (await requeueTurn(turnsQueue, t, 'reconcile turn')) requeued++;
    }
    if (page.length < pageSize || options.limit !== undefined) break;
    after = page[page.length - 1].id;
  }
  if (requeued > 0) logger.warn({ requeued }, 'reconciler re-enqueued unfinished turns');
  return requeued;
}

/**
 * The lease sweep (docs/adr/0029): frees the sessions whose lease expired and wakes each one's next
 * turn, so a dead worker's sessions, and the slots they held under their tenants' caps, are taken up
 * again within a sweep, without waiting for the reconcile.
 */
export async function sweepExpiredLeases(
  store: TurnStore,
  turnsQueue: Queue,
  logger: Logger,
): Promise<number> {
  const freed = await store.freeExpiredLeases();
  let woken = 0;
  for (const f of freed)
    if (await requeueTurn(turnsQueue, { ...f, id: f.turnId }, 'wake freed session')) woken++;
  if (freed.length > 0) logger.warn({ freed: freed.length, woken }, 'expired session leases freed');
  return freed.length;
}
