import { sql, type Sql } from '../sql';

/** Turn statuses as the turn's statements test them (docs/adr/0010, 0013, 0014, 0024). */

/** Statuses of a turn that is still to run (queued) or was interrupted (running). */
export const UNFINISHED = sql`('queued', 'running')`;

/**
 * Statuses that hold a session's order: the unfinished ones and a waiting turn
 * (`awaiting_approval`, docs/adr/0013; `awaiting_subagent`, docs/adr/0024), which holds back the
 * turns behind it without being runnable.
 */
export const HOLDS_SESSION = sql`('queued', 'running', 'awaiting_approval', 'awaiting_subagent')`;

/** A turn waiting (docs/adr/0013, 0024): it ran until something outside it must happen. */
export type WaitingStatus = 'awaiting_approval' | 'awaiting_subagent';
export const WAITING = sql`('awaiting_approval', 'awaiting_subagent')`;

/** Statuses of a turn that ended. */
export const ENDED = sql`('completed', 'failed', 'cancelled')`;

/**
 * The order a session's pending turns run in (SPEC §2 priority, docs/adr/0014): a turn that already
 * started (interrupted, or resumed) first, then by priority band, FIFO (admission seq) within a band.
 */
export const DRAIN_ORDER = (t: Sql) => sql`(${t}.started_at IS NULL),
  CASE ${t}.priority WHEN 'interject' THEN 1 WHEN 'next' THEN 2 WHEN 'normal' THEN 3 ELSE 4 END, ${t}.seq`;

/** A queued interject turn waiting to be delivered into the session's running turn (docs/adr/0014). */
export const PENDING_INTERJECTION = (t: Sql) => sql`${t}.status = 'queued' AND ${t}.priority = 'interject'
  AND ${t}.started_at IS NULL AND ${t}.cancel_requested_at IS NULL`;

/**
 * Another tenant than `tenant` has a turn waiting to start (docs/adr/0029): two probes of the
 * unfinished turns' partial index, either side of the tenant (one already running needs no slot given
 * back). The claim reads it before a turn runs and a turn's last checkpoint after, so a holder gives
 * its session back as soon as someone waits.
 */
export const OTHER_TENANT_QUEUED = (tenant: Sql) => sql`(EXISTS (SELECT 1 FROM turns q
      WHERE q.status IN ${UNFINISHED} AND q.tenant_id < ${tenant} AND q.status = 'queued')
    OR EXISTS (SELECT 1 FROM turns q
      WHERE q.status IN ${UNFINISHED} AND q.tenant_id > ${tenant} AND q.status = 'queued'))`;
