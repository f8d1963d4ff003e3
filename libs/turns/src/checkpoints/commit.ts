import { EventType } from '@switchboard/contracts';
import { LeaseLostError, redact, type JournalEvent } from '@switchboard/database';
import type { Logger } from '@switchboard/observability';
import type {
  ApprovalInsert,
  Lease,
  CheckpointWrites,
  CheckpointResult,
  TaskChanges,
  TurnRow,
  TurnStore,
} from '@switchboard/store';
import { retryTransient } from '../durable';
import type { PendingWrites } from './writes';

/** One checkpoint statement: the turn's frame, its events (ids given) and its write set. */
export function checkpointStatement(
  turn: TurnRow,
  lease: Lease,
  events: JournalEvent[],
  writes: PendingWrites,
  o: { approvals?: ApprovalInsert[]; task?: TaskChanges; returnEvents: boolean; returnTurn?: boolean },
): CheckpointWrites {
  return {
    tenantId: turn.tenantId,
    sessionId: turn.sessionId,
    turnId: turn.id,
    lease: { token: lease.token, ms: lease.ms },
    events: events.map((e) => ({
      id: e.id!,
      turnId: e.turnId ?? null,
      type: e.type,
      data: redact(e.data),
      withTurnCost:
        e.type === EventType.TurnCompleted ||
        e.type === EventType.TurnFailed ||
        e.type === EventType.TurnCancelled,
    })),
    ...writes,
    ...(o.approvals ? { approvals: o.approvals } : {}),
    ...(o.task ? { task: o.task } : {}),
    returnEvents: o.returnEvents,
    ...(o.returnTurn ? { returnTurn: true } : {}),
  };
}

export interface CommitOptions {
  store: TurnStore;
  /** How long transient database errors are retried. */
  retryMs: number;
  logger: Logger;
  /** The checkpoint's name, for the retry's log line. */
  name: string;
  /** The answer when a retry finds the statement already committed (its first event exists). */
  found: () => CheckpointResult;
}

/**
 * Commits one checkpoint statement, retrying transient database errors for up to `retryMs` (ADR
 * 0004): what it records is held in memory meanwhile, so a finished tool's result is not lost to a
 * database blip. The events carry ids, so a retry first looks for the statement's first event: an
 * attempt whose answer was lost may have committed, and must not be applied twice. A lost lease
 * throws `LeaseLostError`.
 */
export async function commitCheckpoint(
  statement: CheckpointWrites,
  o: CommitOptions,
): Promise<CheckpointResult> {
  const marker = statement.events[0]?.id;
  const result = await retryTransient(
    async (attempt): Promise<CheckpointResult> => {
      if (attempt > 1 && marker && (await o.store.eventExists(marker))) return o.found();
      return o.store.commitCheckpoint(statement);
    },
    {
      maxMs: o.retryMs,
      onRetry: (err, attempt) =>
        o.logger.warn(
          { err, turnId: statement.turnId, step: o.name, attempt },
          'checkpoint write failed on a transient database error; retrying',
        ),
    },
  );
  if (!result.applied) throw new LeaseLostError(statement.sessionId);
  return result;
}
