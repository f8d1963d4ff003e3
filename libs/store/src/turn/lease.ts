import { sql, type SqlRunner } from '../sql';
import { DRAIN_ORDER, PENDING_INTERJECTION, UNFINISHED } from './statuses';

/**
 * The session lease (docs/adr/0003): a worker's exclusive, time-bound hold on a session. Every
 * statement of a running turn is fenced by its token, and extends it by its duration.
 */
export interface Lease {
  token: string;
  ms: number;
}

/** The lease's new expiry, `ms` from now. */
export const leaseExpiry = (lease: Lease) => sql`now() + (${lease.ms} * interval '1 millisecond')`;

/** Takes the lease when it is free or expired (no turn is loaded): for tests and tools. */
export async function claimLease(
  db: SqlRunner,
  sessionId: string,
  owner: string,
  lease: Lease,
): Promise<boolean> {
  const n = await db.execute(sql`
    UPDATE sessions SET lease_owner = ${owner}, lease_token = ${lease.token}::uuid,
      lease_expires_at = ${leaseExpiry(lease)}
    WHERE id = ${sessionId}::uuid AND (lease_token IS NULL OR lease_expires_at < now())`);
  return n === 1;
}

/** Extends the lease; false when it is no longer ours. */
export async function renewLease(db: SqlRunner, sessionId: string, lease: Lease): Promise<boolean> {
  const n = await db.execute(sql`
    UPDATE sessions SET lease_expires_at = ${leaseExpiry(lease)}
    WHERE id = ${sessionId}::uuid AND lease_token = ${lease.token}::uuid`);
  return n === 1;
}

/** Releases the lease if it is still ours. */
export async function releaseLease(db: SqlRunner, sessionId: string, token: string): Promise<void> {
  await db.execute(sql`
    UPDATE sessions SET lease_owner = NULL, lease_token = NULL, lease_expires_at = NULL
    WHERE id = ${sessionId}::uuid AND lease_token = ${token}::uuid`);
}

/** What the running turn's heartbeat learns. */
export interface Heartbeat {
  /** The lease is still ours (and was extended). */
  held: boolean;
  /** A cancel of the turn was requested (docs/adr/0014). */
  cancelRequested: boolean;
  /** An interjection waits for the turn (docs/adr/0014). */
  interjection: boolean;
}

/**
 * The running turn's heartbeat: extends the lease and says whether the turn was asked to stop, or
 * an interjection waits for it (docs/adr/0014): the backstop when a control message was lost.
 */
export async function heartbeat(
  db: SqlRunner,
  sessionId: string,
  lease: Lease,
  turnId: string,
): Promise<Heartbeat> {
  const row = await db.first<{ held: boolean; cancel_requested: boolean; interjection: boolean }>(sql`
    WITH s AS (
      UPDATE sessions SET lease_expires_at = ${leaseExpiry(lease)}
      WHERE id = ${sessionId}::uuid AND lease_token = ${lease.token}::uuid
      RETURNING id
    )
    SELECT EXISTS (SELECT 1 FROM s) AS held,
      coalesce((SELECT cancel_requested_at IS NOT NULL FROM turns WHERE id = ${turnId}::uuid), false)
        AS cancel_requested,
      EXISTS (SELECT 1 FROM turns WHERE session_id = ${sessionId}::uuid AND ${PENDING_INTERJECTION(sql`turns`)})
        AS interjection`);
  return {
    held: row?.held ?? false,
    cancelRequested: row?.cancel_requested ?? false,
    interjection: row?.interjection ?? false,
  };
}

/** One running turn's lease, as the batched heartbeat renews it. */
export interface HeldLease {
  sessionId: string;
  token: string;
  turnId: string;
}

/** What the batched heartbeat learns of one lease: `Heartbeat`, and who holds the session when not us. */
export interface HeldLeaseBeat extends Heartbeat {
  sessionId: string;
  /** The lease's owner now (its worker id) when it is not held by this token; null when free. */
  owner: string | null;
}

/**
 * Every running turn's heartbeat of one process in one statement (docs/adr/0069): each lease still
 * ours is extended by `ms`, and so is a lease the sweep freed while its turn still runs here (no
 * other worker claimed it: the token is null, the owner still this process, and the turn
 * `running`), so a holder whose renewal came late keeps its turn instead of handing it to a re-run.
 * Answers, per lease, whether it is held, a cancel request, a waiting interjection, and the
 * session's owner when the lease is no longer this token's (null when nobody holds it).
 *
 * The owner is what tells a lease the sweep freed (it keeps the owner) from one the holder released
 * (it clears it): a renewal blocked behind the turn's final commit re-reads the session's new row
 * but judges `running` by its snapshot, taken before the commit, and without the owner it took back
 * a lease just released, leaving the session locked for a lease's time with nothing running.
 */
export async function heartbeatMany(
  db: SqlRunner,
  owner: string,
  ms: number,
  leases: HeldLease[],
): Promise<HeldLeaseBeat[]> {
  if (leases.length === 0) return [];
  const rows = await db.rows<{
    session_id: string;
    held: boolean;
    owner: string | null;
    cancel_requested: boolean;
    interjection: boolean;
  }>(sql`
    WITH l AS (
      SELECT * FROM unnest(${leases.map((l) => l.sessionId)}::uuid[], ${leases.map((l) => l.token)}::uuid[],
        ${leases.map((l) => l.turnId)}::uuid[]) AS l(session_id, token, turn_id)
    ), s AS (
      UPDATE sessions ss SET lease_owner = ${owner}, lease_token = l.token,
        lease_expires_at = ${leaseExpiry({ token: '', ms })}
      FROM l WHERE ss.id = l.session_id AND (ss.lease_token = l.token OR (ss.lease_token IS NULL
        AND ss.lease_owner = ${owner}
        AND EXISTS (SELECT 1 FROM turns rt WHERE rt.id = l.turn_id AND rt.status = 'running')))
      RETURNING ss.id
    )
    SELECT l.session_id, s.id IS NOT NULL AS held,
      CASE WHEN cur.lease_token IS NOT NULL THEN cur.lease_owner END AS owner,
      coalesce(t.cancel_requested_at IS NOT NULL, false) AS cancel_requested,
      EXISTS (SELECT 1 FROM turns i WHERE i.session_id = l.session_id AND ${PENDING_INTERJECTION(sql`i`)})
        AS interjection
    FROM l LEFT JOIN s ON s.id = l.session_id LEFT JOIN turns t ON t.id = l.turn_id
      LEFT JOIN sessions cur ON cur.id = l.session_id`);
  return rows.map((r) => ({
    sessionId: r.session_id,
    held: r.held,
    owner: r.held ? owner : r.owner,
    cancelRequested: r.cancel_requested,
    interjection: r.interjection,
  }));
}

/** A session freed from an expired lease, with its next unfinished turn (to wake). */
export interface FreedSession {
  sessionId: string;
  turnId: string;
  tenantId: string;
  priority: string;
  traceContext: unknown;
}

/**
 * Frees every expired lease (its holder died, or stalled past it; the owner stays, so that a holder
 * still running the turn can take it back: `heartbeatMany`) and answers each freed session's
 * next unfinished turn, in one statement (docs/adr/0029): nothing else would wake a turn whose
 * tenant was at its cap while the dead holder's slot counted. A holder that was only slow finds its
 * lease gone at its next fenced write, as it would had another worker taken it.
 */
export async function freeExpiredLeases(db: SqlRunner): Promise<FreedSession[]> {
  return db.rows<FreedSession>(sql`
    WITH freed AS (
      UPDATE sessions SET lease_token = NULL, lease_expires_at = NULL
      WHERE lease_token IS NOT NULL AND lease_expires_at < now()
      RETURNING id
    )
    SELECT f.id AS "sessionId", t.id AS "turnId", t.tenant_id AS "tenantId", t.priority,
      t.trace_context AS "traceContext"
    FROM freed f CROSS JOIN LATERAL (
      SELECT * FROM turns WHERE session_id = f.id AND status IN ${UNFINISHED}
      ORDER BY ${DRAIN_ORDER(sql`turns`)} LIMIT 1) t`);
}
