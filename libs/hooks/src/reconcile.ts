import type { Queue } from 'bullmq';
import { Jobs, PostTurnHookName, type TraceCarrier } from '@switchboard/contracts';
import { withSpan, type Logger } from '@switchboard/observability';
import { publish } from '@switchboard/queue';
import { unsettledHookRuns, type SqlRunner } from '@switchboard/store';

/** Ended turns one sweep looks at, at most (each has one job per post-turn hook). */
export const HOOKS_RECONCILE_LIMIT = 200;

/** States of a post-turn job that will still run: the sweep leaves it alone. */
const LIVE = new Set(['waiting', 'active', 'delayed', 'prioritized', 'waiting-children']);

/**
 * Publishes the (turn, hook) job again unless one will still run: an old job that ended (`completed`,
 * or `failed` — a worker that died more often than the stall policy allows, attempts spent) holds its
 * id, so it is removed first, as the runner's `wake` does for turns. The hooks are idempotent per
 * (turn, hook), so a job that runs twice (a race with its old job) writes once. True when published.
 */
export async function republishHook(
  queue: Queue,
  run: { turnId: string; tenantId: string; hook: PostTurnHookName },
  trace: TraceCarrier = {},
): Promise<boolean> {
  const id = Jobs.postTurn.jobId({ ...run, trace: {} });
  const old = await queue.getJob(id);
  if (old) {
    if (LIVE.has(await old.getState())) return false;
    await old.remove().catch(() => undefined);
  }
  await withSpan('reconcile post-turn hook', { parent: trace }, () => publish(queue, Jobs.postTurn, run));
  return true;
}

/**
 * The hooks reconcile (docs/adr/0027): Postgres says which ended turns miss a post-turn hook's
 * `hook_runs` row (their job was lost, failed on stalls, or never enqueued); their jobs are published
 * again, and turns with every row are settled. Bounded per sweep; run by the maintenance `reconcile`.
 */
export async function reconcileHooks(
  db: SqlRunner,
  postTurnQueue: Queue,
  logger: Logger,
  options: { graceMs: number; limit?: number },
): Promise<{ republished: number; settled: number }> {
  const { missing, settled } = await unsettledHookRuns(db, {
    hooks: PostTurnHookName.options,
    graceMs: options.graceMs,
    limit: options.limit ?? HOOKS_RECONCILE_LIMIT,
  });
  let republished = 0;
  for (const m of missing) {
    const hook = PostTurnHookName.safeParse(m.hook);
    if (!hook.success) continue;
    const run = { turnId: m.turnId, tenantId: m.tenantId, hook: hook.data };
    if (await republishHook(postTurnQueue, run, m.traceContext)) republished++;
  }
  if (republished > 0) {
    logger.warn({ republished, missing: missing.length }, 'hooks reconcile re-published post-turn jobs');
  }
  return { republished, settled };
}
