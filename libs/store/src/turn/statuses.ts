import { ENDED_STATUSES, type TurnStatus } from '@switchboard/contracts';
import { sql, sqlList, type Sql } from '../sql';

/**
 * Turn statuses as the turn's statements test them (docs/adr/0010, 0013, 0014, 0024): each set once
 * as an array, and as the SQL list every statement interpolates (`status IN ${UNFINISHED}`), built
 * here at module load so a statement's text never varies (no SQL writes a set out by hand).
 */

/** Statuses of a turn that is still to run (queued) or was interrupted (running). */
export const UNFINISHED_STATUSES = ['queued', 'running'] as const satisfies readonly TurnStatus[];
export const UNFINISHED = sqlList(UNFINISHED_STATUSES);

/** A turn waiting (docs/adr/0013, 0024, 0047): it ran until something outside it must happen. */
export const WAITING_STATUSES = [
  'awaiting_approval',
  'awaiting_subagent',
  'awaiting_client_tool',
] as const satisfies readonly TurnStatus[];
export type WaitingStatus = (typeof WAITING_STATUSES)[number];
export const WAITING = sqlList(WAITING_STATUSES);

/**
 * Statuses that hold a session's order: the unfinished ones and a waiting turn
 * (`awaiting_approval`, docs/adr/0013; `awaiting_subagent`, docs/adr/0024), which holds back the
 * turns behind it without being runnable. A session with none of these is idle.
 */
export const HOLDS_SESSION_STATUSES = [...UNFINISHED_STATUSES, ...WAITING_STATUSES] as const;
export const HOLDS_SESSION = sqlList(HOLDS_SESSION_STATUSES);

/**
 * A turn a worker holds or that waits (running or waiting): started and not ended, what
 * `multitask: interrupt` cancels (a queued turn is not started: it runs after the interrupting one).
 */
export const ACTIVE_STATUSES = ['running', ...WAITING_STATUSES] as const satisfies readonly TurnStatus[];
export const ACTIVE = sqlList(ACTIVE_STATUSES);

/** Statuses of a turn that ended (`ENDED_STATUSES`, the glossary's "ended"). */
export const ENDED = sqlList(ENDED_STATUSES);

/** An ended turn that did not complete: its closure outcome is `failed` (docs/adr/0031). */
export const NOT_COMPLETED_STATUSES = ['failed', 'cancelled'] as const satisfies readonly TurnStatus[];
export const NOT_COMPLETED = sqlList(NOT_COMPLETED_STATUSES);
export const isNotCompleted = (status: string): boolean =>
  (NOT_COMPLETED_STATUSES as readonly string[]).includes(status);

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
