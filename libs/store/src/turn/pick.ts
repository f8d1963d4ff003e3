import { join, ofTenant, sql, type Sql, type SqlDb } from '../sql';
import { claimNext, claimParts, claimResultOf, type ClaimResult, type ClaimRow } from './claim';
import type { Lease } from './lease';
import { DRAIN_ORDER, UNFINISHED, WAITING } from './statuses';

/**
 * The fair choice (docs/adr/0029): which session a worker runs next, whatever turn its job named.
 * Jobs are wake-ups (docs/adr/0003) and Postgres says what runs, so the choice lives here, where the
 * claim is: among the tenants with runnable turns, not paused and under their concurrency cap, the one
 * with the fewest slots in use per unit of share (a slot is a session under a live lease), the
 * tenant waiting longest first among equals; within that tenant the best head of a priority band,
 * where each band has a head start over the band below instead of strict precedence (so background
 * never starves); within the session, the claim's drain order (docs/adr/0014) as before.
 */

/**
 * How far ahead of the band below a band's turns stand, in seconds: a `normal` turn goes before a
 * `background` turn admitted up to this long before it, and no longer. Strict bands would let a
 * steady stream of normal turns starve background ones.
 */
export const BAND_HEAD_START_S = 10;

/**
 * Among tenants with as many slots per share in use, the one with less waiting goes first (a light
 * tenant's turn is not queued behind a heavy one's backlog at every tie), then the one waiting
 * longest. Backlogs are counted up to this many turns, so the count stays a bounded read.
 */
const BACKLOG_COUNT_LIMIT = 100;

/**
 * The job's own session's head start in its tenant, in bands: half a band on top of its next turn's
 * own band (docs/adr/0080). The job was a wake-up for that session, so among turns of one band it
 * goes first unless another has waited `BAND_HEAD_START_S / 2` longer; it no longer outranks a
 * higher band. `turns` jobs carry no BullMQ priority (FIFO wake-ups), so a background job may be
 * fetched before a normal one: the band order has to hold here, where the choice is.
 */
const OWN_HEAD_START_BANDS = 0.5;

/**
 * A band's probe looks at its oldest queued turns up to this many (ADR 0081): read in the band
 * index's order, then tested for being runnable. Unbounded, Postgres read and sorted every queued
 * turn of the band whenever it guessed that few would pass the test (measured: 300 of 300 at each
 * choice). Older turns than these that cannot run now are ones queued behind their session's
 * running turn (its holder drains them), waiting, or held: a younger turn past the window still
 * runs by its own job's choice, which looks at its session directly, and by every choice once
 * the older ones drain.
 */
const BAND_CANDIDATES = 64;

/** The priority bands with their head start, highest first. */
const BANDS = sql`(VALUES ('interject', 3), ('next', 2), ('normal', 1), ('background', 0)) AS b(band, rank)`;
/** The same bands, for the job's own session's turn. */
const OWN_BANDS = sql`(VALUES ('interject', 3), ('next', 2), ('normal', 1), ('background', 0)) AS ob(band, rank)`;

/**
 * A turn `t` in session `ss` may start: no lease holds the session (or it expired), no turn of it
 * waits, and its agent is active, not paused or stopped by the operator (docs/adr/0031). Written as
 * `EXISTS` an active agent, not `NOT EXISTS` a held one: Postgres estimated the anti-join to keep
 * about one row and sorted every candidate instead of walking the band's index to the first
 * (ADR 0081). An agent is only ever deleted with its tenant.
 */
const RUNNABLE = sql`(ss.lease_token IS NULL OR ss.lease_expires_at < now())
  AND NOT EXISTS (SELECT 1 FROM turns w WHERE w.session_id = t.session_id AND w.status IN ${WAITING})
  AND EXISTS (SELECT 1 FROM agents ah WHERE ah.id = t.agent_id AND ah.lifecycle = 'active')`;

/** A tenant's concurrency cap: its `maxConcurrentTurns` setting, else the deployment's default (0: none). */
export const tenantCap = (settings: Sql, defaultCap: number): Sql =>
  sql`coalesce(CASE WHEN jsonb_typeof(${settings} -> 'maxConcurrentTurns') = 'number'
    THEN (${settings} ->> 'maxConcurrentTurns')::int END, ${defaultCap}::int)`;

/** A tenant's share (its weight in the fair choice): its `share` setting when positive, else 1. */
export const tenantShare = (settings: Sql): Sql =>
  sql`CASE WHEN jsonb_typeof(${settings} -> 'share') = 'number' AND (${settings} ->> 'share')::float8 > 0
    THEN (${settings} ->> 'share')::float8 ELSE 1 END`;

/** What the fair claim is asked. */
export interface PickNext {
  /** The job's own turn: its status is read in the same statement (undefined: none asked). */
  own?: { turnId: string; sessionId: string; tenantId: string };
  owner: string;
  /** The lease the claim takes, whichever session it chooses. */
  lease: Lease;
  /** The deployment's cap per tenant when the tenant sets none (0: no cap). */
  defaultCap: number;
  /**
   * Pass over sessions another choice is looking at (`FOR UPDATE SKIP LOCKED`), so workers choosing at
   * once take different sessions instead of all but one losing the claim. Such a choice can see
   * nothing runnable while another merely looked at a session: an empty answer is only final from a
   * choice made without it (`pickAndClaim` asks again).
   */
  skipLocked?: boolean;
}

interface PickRow extends ClaimRow {
  job_status: string | null;
  job_task_id: string | null;
  pick_tenant_id: string | null;
  pick_session_id: string | null;
  pick_turn_id: string | null;
  pick_cap: number | null;
}

/** The CTEs of the choice: `job_turn` (the job's own turn) and `pick` (the session to run next). */
function pickCtes(p: PickNext): Sql[] {
  const lock = p.skipLocked ? sql` FOR UPDATE OF ss SKIP LOCKED` : sql``;
  // Without a job's own turn (the intake's choice) the same text with NULLs, which match no row: one
  // prepared statement for both, so the intake's choices use its cached plan instead of planning a
  // text of their own on every call (Postgres plans a statement for its values its first five calls
  // on each connection; this one's plan takes tens of ms).
  const ownSession = sql`${p.own?.sessionId ?? null}::uuid`;
  const own = sql`SELECT status, task_id FROM turns WHERE id = ${p.own?.turnId ?? null}::uuid
        AND session_id = ${ownSession} AND ${ofTenant('tenant_id', p.own?.tenantId ?? null)}`;
  return [
    sql`job_turn AS (${own})`,
    // The tenants with unfinished turns and the oldest of each: one index probe per tenant.
    sql`waiting (tenant_id, oldest) AS (
      (SELECT tenant_id, created_at FROM turns WHERE status IN ${UNFINISHED}
        ORDER BY tenant_id, created_at LIMIT 1)
      UNION ALL
      SELECT n.tenant_id, n.created_at FROM waiting w CROSS JOIN LATERAL (
        SELECT tenant_id, created_at FROM turns WHERE status IN ${UNFINISHED} AND tenant_id > w.tenant_id
        ORDER BY tenant_id, created_at LIMIT 1) n
    )`,
    // Slots in use: each tenant's sessions under a live lease.
    sql`busy AS (
      SELECT tenant_id, count(*)::int AS n FROM sessions
      WHERE lease_token IS NOT NULL AND lease_expires_at > now() GROUP BY tenant_id
    )`,
    // The tenants that may start a turn: not paused, under their cap.
    sql`ranked AS (
      SELECT w.tenant_id, w.oldest, c.cap, coalesce(b.n, 0)::float8 / c.share AS load,
        -- The tenant's backlog, counted up to BACKLOG_COUNT_LIMIT (a bounded read of the index).
        (SELECT count(*) FROM (SELECT 1 FROM turns q WHERE q.tenant_id = w.tenant_id
          AND q.status IN ${UNFINISHED} LIMIT ${BACKLOG_COUNT_LIMIT}) x) AS backlog
      FROM waiting w
      JOIN tenants tn ON tn.id = w.tenant_id
      LEFT JOIN busy b ON b.tenant_id = w.tenant_id
      CROSS JOIN LATERAL (SELECT ${tenantCap(sql`tn.settings`, p.defaultCap)} AS cap,
        ${tenantShare(sql`tn.settings`)} AS share) c
      WHERE NOT tn.kill_switch AND (c.cap <= 0 OR coalesce(b.n, 0) < c.cap)
    )`,
    // Fewest slots per share first; among equals the smaller backlog, then the longest waiting; then
    // the tenant's best runnable turn: the oldest queued turn of each band (ADR 0081), the job's own
    // session's next and the oldest interrupted turn (running, its session's lease expired or freed);
    // an interrupted one first, then by the bands' head start (the job's own session half a band more
    // than its turn's band). The interrupted-turn probe still walks the tenant's running turns: an
    // interrupted turn whose own job came while its tenant was at its cap is found by no one else.
    sql`pick AS (
      SELECT r.tenant_id, r.cap, h.session_id, h.turn_id FROM ranked r
      CROSS JOIN LATERAL (
        SELECT c.session_id, c.turn_id FROM (
          SELECT x.*, b.rank FROM ${BANDS} CROSS JOIN LATERAL (
            SELECT t.session_id, t.id AS turn_id, t.started_at, t.created_at FROM (
              SELECT q.id, q.session_id, q.agent_id, q.started_at, q.created_at FROM turns q
              WHERE q.tenant_id = r.tenant_id AND q.priority = b.band AND q.status = 'queued'
              ORDER BY q.created_at LIMIT ${BAND_CANDIDATES}) t
            JOIN sessions ss ON ss.id = t.session_id
            WHERE ${RUNNABLE}
            ORDER BY t.created_at LIMIT 1${lock}) x
          UNION ALL
          -- The job's own session: its next turn's band and half a band more (OWN_HEAD_START_BANDS).
          SELECT z.session_id, z.turn_id, z.started_at, z.created_at,
            coalesce(ob.rank, 1) + ${OWN_HEAD_START_BANDS}::float8 FROM (
            SELECT t.session_id, t.id AS turn_id, t.started_at, t.created_at, t.priority FROM turns t
            JOIN sessions ss ON ss.id = t.session_id
            WHERE t.session_id = ${ownSession} AND t.tenant_id = r.tenant_id AND t.status IN ${UNFINISHED}
              AND ${RUNNABLE}
            ORDER BY ${DRAIN_ORDER(sql`t`)} LIMIT 1${lock}) z
          LEFT JOIN ${OWN_BANDS} ON ob.band = z.priority
          UNION ALL
          SELECT y.*, 0 FROM (
            SELECT t.session_id, t.id AS turn_id, t.started_at, t.created_at FROM turns t
            JOIN sessions ss ON ss.id = t.session_id
            WHERE t.tenant_id = r.tenant_id AND t.status = 'running' AND ${RUNNABLE}
            ORDER BY t.created_at LIMIT 1${lock}) y
        ) c
        ORDER BY (c.started_at IS NULL),
          c.created_at - c.rank::float8 * ${BAND_HEAD_START_S} * interval '1 second'
        LIMIT 1) h
      ORDER BY r.load, r.backlog, r.oldest, r.tenant_id
      LIMIT 1
    )`,
  ];
}

/**
 * The choice and, for a tenant without a cap, its claim, in one statement: the claim's CTEs take
 * their session, turn and tenant from `pick`. A tenant with a cap is only chosen here; its claim
 * follows under its lock (`pickAndClaim`).
 */
export function pickStatement(p: PickNext): Sql {
  const { ctes, columns, joins } = claimParts({
    session: sql`(SELECT session_id FROM pick)`,
    turn: sql`(SELECT turn_id FROM pick)`,
    tenant: sql`(SELECT tenant_id FROM pick)`,
    owner: p.owner,
    lease: p.lease,
    when: sql`(SELECT cap FROM pick) <= 0`,
  });
  return sql`
    WITH RECURSIVE ${join([...pickCtes(p), ...ctes], ',\n')}
    SELECT
      (SELECT status FROM job_turn) AS job_status, (SELECT task_id FROM job_turn) AS job_task_id,
      pick.tenant_id AS pick_tenant_id, pick.session_id AS pick_session_id, pick.turn_id AS pick_turn_id,
      pick.cap AS pick_cap,
      ${join(columns, ',\n')}
    FROM (SELECT 1) one
    LEFT JOIN pick ON true
    ${joins}`;
}

/** The answer of `pickAndClaim`. */
export interface PickResult {
  /** The job's own turn status; undefined when it named no such turn (or none was asked). */
  ownStatus?: string;
  ownTaskId?: string;
  /** The session chosen and its claim; undefined when nothing was runnable. */
  claimed?: {
    sessionId: string;
    tenantId: string;
    /** The tenant runs under a concurrency cap: freeing one of its slots obliges a new choice. */
    capped: boolean;
    claim: ClaimResult;
  };
}

/**
 * Chooses the next session fairly and claims it with `p.lease`: one statement for a tenant without a
 * cap. A tenant with a cap is claimed in a transaction that first takes the tenant's advisory lock,
 * so the cap is counted again after every other claim for it committed: two workers choosing for the
 * same tenant at once cannot both take its last slot (docs/adr/0029). Every claimer waits for the
 * lock (a claimer giving up instead could leave a free slot no loop comes back for).
 */
export async function pickAndClaim(db: SqlDb, p: PickNext): Promise<PickResult> {
  let row = await db.first<PickRow>(pickStatement({ ...p, skipLocked: true }));
  // Nothing seen past the locked sessions: only a choice that waits for them may say nothing is left.
  if (row && !row.pick_session_id) row = await db.first<PickRow>(pickStatement({ ...p, skipLocked: false }));
  if (!row) throw new Error('pick returned no row');
  const result: PickResult = {
    ...(row.job_status ? { ownStatus: row.job_status } : {}),
    ...(row.job_task_id ? { ownTaskId: row.job_task_id } : {}),
  };
  const { pick_session_id: sessionId, pick_tenant_id: tenantId, pick_turn_id: turnId } = row;
  if (!sessionId || !tenantId || !turnId) return result;
  const cap = row.pick_cap ?? 0;
  if (cap <= 0)
    return { ...result, claimed: { sessionId, tenantId, capped: false, claim: claimResultOf(row) } };
  const claim = await db.transaction(async (tx) => {
    await tx.first(sql`SELECT pg_advisory_xact_lock(hashtextextended(${tenantId}::text, 29))`);
    return claimNext(tx, { sessionId, turnId, tenantId, owner: p.owner, lease: p.lease, cap });
  });
  return { ...result, claimed: { sessionId, tenantId, capped: true, claim } };
}
