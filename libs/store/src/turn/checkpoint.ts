import { join, sql, type Sql, type SqlRunner } from '../sql';
import { tenantCapUsd } from '../tenant-spend';
import { turnDetailColumns, turnDetailLateral, type TurnDetailJson } from '../turn-reads';
import {
  carriesTurnCost,
  eventsCte,
  ledgerCte,
  messagesCte,
  toolCallsCte,
  type CommittedEvent,
  type EventInsert,
  type LedgerInsert,
  type MessageInsert,
  type ToolCallUpsert,
  type TurnFrame,
} from './checkpoint-rows';
import { sealCheckpoint } from './checkpoint-seal';
import { rollUpCte, sessionCte, type SessionChanges } from './checkpoint-session';
import { turnCte, type TurnChanges } from './checkpoint-turn';
import { OTHER_TENANT_QUEUED } from './statuses';
import type { Lease } from './lease';
import { taskCte, type TaskChanges } from './task';
import { approvalsCte, type ApprovalInsert } from './waits';
import { roundContextCtes, type ContextPartInsert, type RoundContextInsert } from './round-context';

/**
 * A checkpoint (docs/adr/0010): one atomic commit of a turn's progress, one statement. The session
 * row is updated first (`s`: fenced by the lease, which it extends; event seqs allocated; the
 * session changes), and every other write selects from it, so a lost lease writes nothing.
 */

/** A checkpoint's write set. */
export interface CheckpointWrites extends TurnFrame {
  /** The lease the checkpoint is fenced by (and extends); null only for writes outside a lease. */
  lease: Lease | null;
  events: EventInsert[];
  turn?: TurnChanges;
  session?: SessionChanges;
  messages?: MessageInsert[];
  ledger?: LedgerInsert[];
  toolCalls?: ToolCallUpsert[];
  /** Approvals a waiting turn asks for (docs/adr/0013). */
  approvals?: ApprovalInsert[];
  /** The sub-agent task the turn runs (docs/adr/0024): its end with the turn's last checkpoint. */
  task?: TaskChanges;
  /** What the checkpoint's rounds sent (docs/adr/0045): new content-addressed parts and each round's list. */
  contextParts?: ContextPartInsert[];
  roundContexts?: RoundContextInsert[];
  /** Return the events as committed (seq, data with the cost filled in) for the live channel (libs/live). */
  returnEvents?: boolean;
  /**
   * With a turn's end: return the turn as GET /v1/turns/:id reads it (`TurnDetailJson`, read in the
   * same statement from the updated row) for the live channel's end event (docs/adr/0071).
   */
  returnTurn?: boolean;
}

export interface CheckpointResult {
  /** False when the fence failed: nothing was written. */
  applied: boolean;
  /** The lease was released by this checkpoint. */
  released: boolean;
  /** The tenant's kill switch as this statement saw it. */
  killSwitch: boolean;
  /**
   * What the turn may still spend under the tenant's daily cap, as this statement saw it (docs/adr/0026):
   * the key is present (undefined: no cap) when the statement read it.
   */
  tenantCapUsd?: number;
  /** A cancel of the checkpoint's turn was requested (docs/adr/0014): the runner stops it at its next safe point. */
  cancelRequested: boolean;
  /** With `returnEvents`: what the checkpoint journaled, in seq order. */
  events?: CommittedEvent[];
  /**
   * Read by a checkpoint that ends the turn (docs/adr/0029): another tenant has a turn waiting to
   * start, so the holder gives the session back instead of running the session's next turn.
   */
  contended?: boolean;
  /**
   * Read by a checkpoint that ends the turn: the closure decision the turn's end recorded (the plain
   * one, docs/adr/0031), or null when the work-activation step decides it after the commit.
   */
  closure?: unknown;
  /**
   * With `returnTurn` and a turn's end: the turn as it stands after this statement. Its tool calls,
   * recalled records, tasks and scores are as they stood before it (one statement sees one snapshot):
   * the caller adds what the statement itself wrote, or does not use it.
   */
  turn?: TurnDetailJson | null;
}

interface CheckpointRow {
  applied: boolean;
  released: boolean;
  kill_switch: boolean | null;
  tenant_cap_usd: string | null;
  cancel_requested: boolean | null;
  events?: CommittedEvent[] | null;
  contended?: boolean;
  closure?: unknown;
  turn?: TurnDetailJson | null;
}

/** What every checkpoint reads back: applied, released, the kill switch, the cap, a cancel; its events when asked. */
function resultColumns(w: CheckpointWrites): Sql {
  return sql`SELECT EXISTS (SELECT 1 FROM s) AS applied, coalesce((SELECT released FROM s), false) AS released,
    (SELECT kill_switch FROM tenants WHERE id = ${w.tenantId}::uuid) AS kill_switch,
    (SELECT ${tenantCapUsd(sql`tn`, sql`${w.turnId}::uuid`)} FROM tenants tn
      WHERE tn.id = ${w.tenantId}::uuid) AS tenant_cap_usd,
    (SELECT cancel_requested_at IS NOT NULL FROM turns WHERE id = ${w.turnId}::uuid) AS cancel_requested
    ${w.turn?.end ? sql`, ${OTHER_TENANT_QUEUED(sql`${w.tenantId}::uuid`)} AS contended, (SELECT closure FROM t) AS closure` : sql``}
    ${w.returnEvents && w.events.length > 0 ? sql`, (SELECT json_agg(e ORDER BY e.seq) FROM e) AS events` : sql``}
    ${w.turn?.end && w.returnTurn ? sql`, (SELECT row_to_json(x) FROM (SELECT ${turnDetailColumns(sql`t`)} FROM t, ${turnDetailLateral(sql`t`)}) x) AS turn` : sql``}`;
}

/** The single statement of a checkpoint (see `TurnStore.commitCheckpoint`). */
export function checkpointStatement(w: CheckpointWrites): Sql {
  const session = w.session ?? {};
  const usage = w.turn?.usage;
  const ctes = [
    rollUpCte(w.turnId, session, usage),
    sessionCte(w, session, w.lease, w.events.length),
    turnCte(w.turnId, w.turn, carriesTurnCost(w.events)),
    ledgerCte(w.ledger),
    taskCte(w.turnId, w.task, usage?.costUsd),
    approvalsCte(w, w.approvals),
    toolCallsCte(w, w.toolCalls),
    messagesCte(w.messages),
    ...roundContextCtes(w, w.contextParts, w.roundContexts),
    eventsCte(w, w.events, w.returnEvents),
  ].filter((c): c is Sql => c !== undefined);
  return sql`WITH ${join(ctes, ',\n')}
    ${resultColumns(w)}`;
}

/** Commits a checkpoint: one statement, on the pool or in the caller's transaction. */
export async function commitCheckpoint(runner: SqlRunner, w: CheckpointWrites): Promise<CheckpointResult> {
  // The tenant's content sealed as its encryption mode says (docs/adr/0067); read back opened.
  const row = await runner.first<CheckpointRow>(checkpointStatement(await sealCheckpoint(w)));
  return {
    applied: row?.applied ?? false,
    released: row?.released ?? false,
    killSwitch: !!row?.kill_switch,
    tenantCapUsd: row?.tenant_cap_usd == null ? undefined : Number(row.tenant_cap_usd),
    cancelRequested: !!row?.cancel_requested,
    ...(w.returnEvents ? { events: row?.events ?? [] } : {}),
    ...(w.turn?.end ? { contended: !!row?.contended, closure: row?.closure ?? null } : {}),
    ...(w.turn?.end && w.returnTurn ? { turn: row?.turn ?? null } : {}),
  };
}

/** Whether an event is in the journal: a retried checkpoint whose first attempt's answer was lost. */
export async function eventExists(db: SqlRunner, id: string): Promise<boolean> {
  return (await db.first(sql`SELECT 1 AS one FROM events WHERE id = ${id}::uuid`)) !== undefined;
}
