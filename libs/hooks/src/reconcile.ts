import type { Queue } from 'bullmq';
import { ARCHIVIST_DEFAULTS, Jobs, PostTurnHookName, type TraceCarrier } from '@switchboard/contracts';
import { withSpan, type Logger } from '@switchboard/observability';
import { publish } from '@switchboard/queue';
import { missingHookRuns, sql, type SqlRunner } from '@switchboard/store';
import { ARCHIVIST_HOOK, archivistSessionDedup } from './archivist';

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
 * again, and turns with every row are marked reconciled (`hooks_settled_at`). Bounded per sweep; run by the maintenance `reconcile`.
 */
export async function reconcileHooks(
  db: SqlRunner,
  postTurnQueue: Queue,
  logger: Logger,
  options: { graceMs: number; limit?: number },
): Promise<{ republished: number; reconciled: number; archivistSessions?: number }> {
  const { missing, reconciled } = await missingHookRuns(db, {
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
  const archivistSessions = await reconcileDeferredArchivist(db, postTurnQueue, options.limit);
  if (archivistSessions > 0) {
    logger.warn({ sessions: archivistSessions }, 'hooks reconcile published overdue archivist distillations');
  }
  return { republished, reconciled, ...(archivistSessions > 0 ? { archivistSessions } : {}) };
}

/** How long past its idle period a session's deferred turns may wait before the sweep publishes its job. */
export const ARCHIVIST_OVERDUE_MARGIN_MS = 5 * 60 * 1000;

/**
 * Sessions whose deferred archivist turns (docs/adr/0032) are overdue: the newest was deferred longer
 * ago than the session's idle period (the agent's, the tenant's or the default) plus a margin, so its
 * distillation job was lost (Redis keeps nothing on disk) or failed for good. Their job is published
 * again, to run now, deduplicated as every session job is.
 */
export async function reconcileDeferredArchivist(
  db: SqlRunner,
  postTurnQueue: Queue,
  limit = HOOKS_RECONCILE_LIMIT,
): Promise<number> {
  // A deferred row written without its session (by a hooks worker older than migration
  // 20261213000000, still running through a rolling deploy) gets it here, or its session's
  // distillation, which reads the deferred rows by session (docs/adr/0083), would never see it.
  // (A subquery per row: each is one probe of the turns' primary key, never a join over `turns`.)
  await db.execute(sql`
    UPDATE hook_runs h SET session_id = (SELECT t.session_id FROM turns t WHERE t.id = h.turn_id)
    WHERE h.status = 'deferred' AND h.session_id IS NULL`);
  const overdue = await db.rows<{ sessionId: string; tenantId: string; turnId: string }>(sql`
    SELECT t.session_id AS "sessionId", t.tenant_id AS "tenantId",
           (array_agg(t.id ORDER BY t.seq DESC))[1] AS "turnId"
    FROM hook_runs h
    JOIN turns t ON t.id = h.turn_id
    JOIN agents a ON a.id = t.agent_id
    JOIN tenants tn ON tn.id = t.tenant_id
    WHERE h.hook = ${ARCHIVIST_HOOK} AND h.status = 'deferred'
    GROUP BY t.session_id, t.tenant_id, a.archivist, tn.settings
    HAVING max(h.created_at) < now() - ${ARCHIVIST_OVERDUE_MARGIN_MS} * interval '1 millisecond'
      - coalesce(
          CASE WHEN jsonb_typeof(a.archivist -> 'idleMs') = 'number' THEN (a.archivist ->> 'idleMs')::numeric END,
          CASE WHEN jsonb_typeof(tn.settings -> 'archivist' -> 'idleMs') = 'number'
               THEN (tn.settings -> 'archivist' ->> 'idleMs')::numeric END,
          ${ARCHIVIST_DEFAULTS.idleMs}) * interval '1 millisecond'
    LIMIT ${limit}`);
  for (const o of overdue) {
    await publish(
      postTurnQueue,
      Jobs.postTurn,
      { turnId: o.turnId, tenantId: o.tenantId, hook: ARCHIVIST_HOOK, sessionId: o.sessionId },
      { delay: 0, deduplication: archivistSessionDedup(o.sessionId) },
    );
  }
  return overdue.length;
}
