import { join, json, sql, type Sql } from '../sql';
import type { Lease } from './lease';
import type { TurnFrame } from './checkpoint-rows';
import type { TurnUsage } from './checkpoint-turn';
import { UNFINISHED } from './statuses';

/**
 * The checkpoint's session update `s` (docs/adr/0010): the fence every other write selects from. It
 * matches only while the lease is ours, extends (or releases) it, allocates the checkpoint's journal
 * seqs and carries its session changes.
 */

/** What a checkpoint changes on the session row (the same UPDATE that fences it and allocates event seqs). */
export interface SessionChanges {
  summarizerFailures?: number;
  compaction?: unknown;
  /** Stored when the session has none yet (rendered on its first turn, then reused byte for byte). */
  systemPrompt?: string;
  /** Add the turn's totals (after this checkpoint) to the session's: the turn's last checkpoint. */
  rollUpTurn?: boolean;
  /**
   * Release the lease in the same statement when no turn was admitted after this seq
   * (`last_turn_seq`, which admission increments under this row's lock, is re-read at commit) and
   * no other turn of the session is unfinished (an earlier seq in a lower priority band).
   */
  releaseIfNoTurnAfter?: number;
  /** Release the lease whatever is queued: the turn is now waiting and holds the session (docs/adr/0013). */
  release?: boolean;
}

/**
 * `cur`: the turn's totals after this checkpoint, for the session roll-up (read before the turn is
 * updated: each row is updated at most once per statement).
 */
export function rollUpCte(
  turnId: string,
  session: SessionChanges,
  usage: TurnUsage | undefined,
): Sql | undefined {
  if (!session.rollUpTurn) return undefined;
  return sql`cur AS (
    SELECT input_tokens + ${usage?.inputTokens ?? 0}::int AS input_tokens,
      output_tokens + ${usage?.outputTokens ?? 0}::int AS output_tokens,
      cost_usd + ${usage?.costUsd ?? '0'}::numeric AS cost_usd
    FROM turns WHERE id = ${turnId}::uuid)`;
}

/** The session's own columns: seqs allocated, summarizer streak, compaction cut, first system prompt, roll-up. */
function sessionSets(session: SessionChanges, events: number): Sql[] {
  const sets: Sql[] = [sql`last_event_seq = sessions.last_event_seq + ${events}::int`];
  if (session.summarizerFailures !== undefined)
    sets.push(sql`summarizer_failures = ${session.summarizerFailures}::int`);
  if (session.compaction !== undefined) sets.push(sql`compaction = ${json(session.compaction)}::jsonb`);
  if (session.systemPrompt !== undefined)
    sets.push(sql`system_prompt = coalesce(sessions.system_prompt, ${session.systemPrompt}::text)`);
  if (session.rollUpTurn) {
    sets.push(sql`input_tokens = sessions.input_tokens + cur.input_tokens,
      output_tokens = sessions.output_tokens + cur.output_tokens,
      cost_usd = sessions.cost_usd + cur.cost_usd, updated_at = now()`);
  }
  return sets;
}

/** The lease's columns: released, released when idle, or extended. */
function leaseSet(lease: Lease, session: SessionChanges, turnId: string): Sql {
  const extend = sql`now() + (${lease.ms}::int * interval '1 millisecond')`;
  if (session.release) return sql`lease_owner = NULL, lease_token = NULL, lease_expires_at = NULL`;
  if (session.releaseIfNoTurnAfter === undefined) return sql`lease_expires_at = ${extend}`;
  // Re-evaluated on the row's latest version: an admission that committed meanwhile keeps the lease.
  // Priority bands run turns out of seq order, so an earlier turn still waiting keeps it too (seen
  // in the statement's snapshot: it was admitted, and so committed, before this seq ran).
  const idle = sql`sessions.last_turn_seq <= ${session.releaseIfNoTurnAfter}::int AND NOT EXISTS (
    SELECT 1 FROM turns o WHERE o.session_id = sessions.id AND o.status IN ${UNFINISHED}
      AND o.id <> ${turnId}::uuid)`;
  return sql`lease_owner = CASE WHEN ${idle} THEN NULL ELSE sessions.lease_owner END,
    lease_token = CASE WHEN ${idle} THEN NULL ELSE sessions.lease_token END,
    lease_expires_at = CASE WHEN ${idle} THEN NULL ELSE ${extend} END`;
}

/** `s`: the fenced session update; `base` is the seq before the checkpoint's events, `released` its lease's end. */
export function sessionCte(f: TurnFrame, session: SessionChanges, lease: Lease | null, events: number): Sql {
  const sets = sessionSets(session, events);
  if (lease) sets.push(leaseSet(lease, session, f.turnId));
  return sql`s AS (
    UPDATE sessions SET ${join(sets)}
    ${session.rollUpTurn ? sql`FROM cur` : sql``}
    WHERE sessions.id = ${f.sessionId}::uuid
      ${lease ? sql`AND sessions.lease_token = ${lease.token}::uuid` : sql``}
    RETURNING sessions.last_event_seq - ${events}::int AS base, sessions.lease_token IS NULL AS released)`;
}
