import type { CancelCause } from '@switchboard/contracts';
import type { SqlDb, SqlRunner } from './sql';
import { claimNext, type ClaimNext, type ClaimResult } from './turn/claim';
import { pickAndClaim, type PickNext, type PickResult } from './turn/pick';
import {
  commitCheckpoint,
  eventExists,
  type CheckpointResult,
  type CheckpointWrites,
} from './turn/checkpoint';
import type { CommittedEvent } from './turn/checkpoint-rows';
import { failTurn, recordFinalisationError, type FailTurn } from './turn/fail';
import {
  deliverInterjections,
  interjectedSince,
  type DeliveredInterjection,
  type DeliverInterjections,
} from './turn/interjections';
import {
  claimLease,
  freeExpiredLeases,
  heartbeat,
  heartbeatMany,
  type HeldLease,
  type HeldLeaseBeat,
  releaseLease,
  renewLease,
  type FreedSession,
  type Heartbeat,
  type Lease,
} from './turn/lease';
import { cancelRequest, killSwitch, nextUnfinished, turnsToWake, type TurnToWake } from './turn/reads';
import { sessionWaiting } from './turn/waits';

export * from './turn/statuses';
export * from './turn/lease';
export * from './turn/claim';
export * from './turn/pick';
export * from './turn/checkpoint';
export * from './turn/checkpoint-rows';
export * from './turn/checkpoint-session';
export * from './turn/checkpoint-turn';
export * from './turn/plain-closure';
export * from './turn/continuation';
export * from './turn/task';
export * from './turn/waits';
export * from './turn/interjections';
export * from './turn/fail';
export * from './turn/reads';
export * from './turn/round-context';

/**
 * The turn's statements on the hot path (docs/adr/0010-turn-store-on-pg.md): the lease claim with
 * everything a turn needs loaded in the same statement (`turn/claim.ts`), and each checkpoint as one
 * statement that is fenced by the session lease and commits the checkpoint's rows, the turn's
 * counters and its journal events together (`turn/checkpoint.ts`). A simple turn (two model rounds,
 * one read-only tool) is four statements.
 *
 * Each statement family lives in `libs/store/src/turn/` with its row types beside it; this class
 * holds the store's `SqlDb` and delegates to them.
 */
export class TurnStore {
  constructor(readonly db: SqlDb) {}

  /** The claim: the lease and the session's next turn, loaded, in one statement (`turn/claim.ts`). */
  claimNext(a: ClaimNext): Promise<ClaimResult> {
    return claimNext(this.db, a);
  }

  /**
   * The fair choice and its claim (`turn/pick.ts`, docs/adr/0029): the next session to run across
   * tenants, under their caps and shares, claimed with `p.lease`.
   */
  pickAndClaim(p: PickNext): Promise<PickResult> {
    return pickAndClaim(this.db, p);
  }

  /** Takes the lease when it is free or expired (no turn is loaded): for tests and tools. */
  claimLease(sessionId: string, owner: string, lease: Lease): Promise<boolean> {
    return claimLease(this.db, sessionId, owner, lease);
  }

  /** Extends the lease; false when it is no longer ours. */
  renewLease(sessionId: string, lease: Lease): Promise<boolean> {
    return renewLease(this.db, sessionId, lease);
  }

  /** Frees every expired lease and answers each freed session's next unfinished turn (docs/adr/0029). */
  freeExpiredLeases(): Promise<FreedSession[]> {
    return freeExpiredLeases(this.db);
  }

  /** Releases the lease if it is still ours. */
  releaseLease(sessionId: string, token: string): Promise<void> {
    return releaseLease(this.db, sessionId, token);
  }

  /**
   * Every running turn's heartbeat of one process in one statement (docs/adr/0069): the leases still
   * ours, or freed by the sweep while their turn still runs here, extended by `ms`.
   */
  heartbeatMany(owner: string, ms: number, leases: HeldLease[]): Promise<HeldLeaseBeat[]> {
    return heartbeatMany(this.db, owner, ms, leases);
  }

  /** The running turn's heartbeat: the lease extended, a cancel or an interjection noticed (docs/adr/0014). */
  heartbeat(sessionId: string, lease: Lease, turnId: string): Promise<Heartbeat> {
    return heartbeat(this.db, sessionId, lease, turnId);
  }

  /**
   * One checkpoint as one statement (`turn/checkpoint.ts`), on the pool or in the caller's
   * transaction: a lost lease writes nothing.
   */
  commitCheckpoint(writes: CheckpointWrites, runner: SqlRunner = this.db): Promise<CheckpointResult> {
    return commitCheckpoint(runner, writes);
  }

  /** Whether an event is in the journal: a retried checkpoint whose first attempt's answer was lost. */
  eventExists(id: string): Promise<boolean> {
    return eventExists(this.db, id);
  }

  /** Delivers the session's pending interjections into its running turn, fenced by the lease (docs/adr/0014). */
  deliverInterjections(
    a: DeliverInterjections,
  ): Promise<{ messages: DeliveredInterjection[]; events: CommittedEvent[] } | null> {
    return deliverInterjections(this.db, a);
  }

  /** Interjections already delivered into a turn at `fromPosition` or later, in order. */
  interjectedSince(turnId: string, fromPosition: number): Promise<DeliveredInterjection[]> {
    return interjectedSince(this.db, turnId, fromPosition);
  }

  /** A turn that could not be run after every retry, failed with its event, unless it already ended. */
  failTurn(a: FailTurn): Promise<{ tenantId: string; sessionId: string; eventSeq: number } | undefined> {
    return failTurn(this.db, a);
  }

  /** A finalisation step's failure, recorded on the turn. */
  recordFinalisationError(
    turnId: string,
    entry: { step: string; message: string; at: string },
  ): Promise<void> {
    return recordFinalisationError(this.db, turnId, entry);
  }

  /** The session's next unfinished turn in drain order, if any. */
  nextUnfinished(
    sessionId: string,
  ): Promise<{ id: string; tenantId: string; priority: string; traceContext: unknown } | undefined> {
    return nextUnfinished(this.db, sessionId);
  }

  /** A page of the tenant's sessions with turns to run, each with its next turn (docs/adr/0030). */
  turnsToWake(tenantId: string, afterSessionId: string | undefined, limit: number): Promise<TurnToWake[]> {
    return turnsToWake(this.db, tenantId, afterSessionId, limit);
  }

  /** The reason and note of a turn's cancel request (docs/adr/0055); undefined when none was made. */
  cancelRequest(turnId: string): Promise<CancelCause | undefined> {
    return cancelRequest(this.db, turnId);
  }

  /** Whether a turn of the session is waiting (docs/adr/0013): the turns behind it cannot run. */
  sessionWaiting(sessionId: string): Promise<boolean> {
    return sessionWaiting(this.db, sessionId);
  }

  /** The tenant's kill switch. */
  killSwitch(tenantId: string): Promise<boolean> {
    return killSwitch(this.db, tenantId);
  }
}
