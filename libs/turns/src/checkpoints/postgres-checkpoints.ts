import { type CancelCause, type EventData, type EventType } from '@switchboard/contracts';
import { LeaseLostError, type JournalEvent } from '@switchboard/database';
import type {
  CompactionRecord,
  EmbeddingRecord,
  ProviderAttempt,
  RoundContext,
  RoundRecord,
  SideCallRecord,
  SummaryRecord,
  ToolCallMeta,
  ToolOutcome,
  TurnCheckpoints,
  TurnOutcome,
} from '@switchboard/engine';
import type { Logger, Metrics } from '@switchboard/observability';
import type { ChatMessage } from '@switchboard/providers';
import type {
  ApprovalInsert,
  CheckpointResult,
  CommittedEvent,
  TurnRow,
  TurnStore,
  WaitingStatus,
} from '@switchboard/store';
import { TERMINAL_EVENT_TYPES, type LiveTurnDetail } from '@switchboard/live';
import { retryTransient } from '../durable';
import { storedCompaction } from '../history';
import type { SessionLease } from '../lease';
import type { LiveProgress } from '../live-progress';
import { toChatMessage } from '../transcript';
import { checkpointStatement, commitCheckpoint } from './commit';
import { EventBuffer } from './event-buffer';
import { CheckpointMetrics } from './metrics';
import {
  compactionWrites,
  embeddingWrites,
  finaliseRows,
  waitRows,
  reflectionWrites,
  roundWrites,
  toolResultWrites,
  toolStartedWrites,
} from './rows';
import { roundContextWrites, type RecordedContext, type StoredParts } from './round-context';
import { TurnSignals } from './signals';
import { emptyWrites, withDeferred, type PendingWrites } from './writes';

/** Everything a turn's checkpoints need, given once when the turn is claimed. */
export interface CheckpointContext {
  store: TurnStore;
  turn: TurnRow;
  lease: SessionLease;
  /** Next transcript position of this turn (0 is its input). */
  nextPosition: number;
  /** The turn seq of each message of the history the engine was given (for compaction cuts). */
  historySeqs: number[];
  metrics: Metrics;
  logger: Logger;
  /** How long a checkpoint retries transient database errors before the job fails. */
  retryMs: number;
  /** The tenant's kill switch and spend cap as the claim read them (docs/adr/0026). */
  killSwitch: boolean;
  tenantCapUsd?: number;
  /** Called when a checkpoint finds the turn's cancel requested (docs/adr/0014). */
  onCancelRequested: () => void;
  /** Record each round's exact context with it (ROUND_CONTEXTS, docs/adr/0045); false: nothing is hashed or written. */
  roundContexts?: boolean;
  /** Context parts this process has seen committed (shared by its turns): not sent again. */
  storedParts?: StoredParts;
  /** The live channel: each checkpoint's events after it, starts and streamed text before (ADR 0015). */
  live?: LiveProgress;
}

/**
 * The engine's checkpoints, each one fenced statement (`TurnStore.commitCheckpoint`, retried on transient
 * errors: `commitCheckpoint`). What needs no checkpoint of its own waits for the next one
 * (docs/adr/0010): a read-only tool's start goes with its result, the last round (no tool calls)
 * with the finalisation. A child turn's task (docs/adr/0024) is `running` from its claim and ended
 * with the last checkpoint.
 */
export class PostgresCheckpoints implements TurnCheckpoints {
  private readonly turn: TurnRow;
  private readonly events: EventBuffer;
  private readonly observed: CheckpointMetrics;
  /** The kill switch, spend cap, cancel request and interjections checkpoints bring back. */
  readonly signals: TurnSignals;
  private nextPosition: number;
  /** Written with the next checkpoint: the last round, the first checkpoint's turn model and system prompt. */
  private deferred: PendingWrites = emptyWrites();
  /** Committed-after hooks of the deferred writes (metrics once the round is durable). */
  private afterDeferred: (() => void)[] = [];
  /** The finalisation's committed events, published by `publishFinal` once the finalisation steps ran. */
  private finalEvents?: CommittedEvent[];
  /** What the end event says of the turn (docs/adr/0071): its body, or why a waiter reads it. */
  private finalTurn?: LiveTurnDetail;
  /** The context this run has recorded (docs/adr/0045): parts sent, the last round's list. */
  private readonly contextRecorded: RecordedContext;

  constructor(private readonly c: CheckpointContext) {
    this.turn = c.turn;
    this.nextPosition = c.nextPosition;
    this.events = new EventBuffer(c.turn.id, c.live);
    this.observed = new CheckpointMetrics(c.metrics, c.logger, c.turn.id);
    const stored = c.storedParts;
    this.contextRecorded = {
      written: new Set(),
      ...(stored ? { stored: (h: string) => stored.has(c.turn.tenantId, h) } : {}),
    };
    this.signals = new TurnSignals(
      c.store,
      c.turn.tenantId,
      { killSwitch: c.killSwitch, tenantCapUsd: c.tenantCapUsd },
      c.onCancelRequested,
    );
  }

  /** The run's model and, on the session's first turn, its rendered system prompt: for the first checkpoint. */
  started(model: string, systemPrompt: string | undefined): void {
    this.deferred.turn.model = model;
    if (systemPrompt !== undefined) this.deferred.session.systemPrompt = systemPrompt;
  }

  /**
   * One checkpoint: its events and writes (with whatever was deferred) in one fenced statement; its
   * answer's signals observed, then what waited for the deferred writes to be durable.
   */
  private async commit(
    name: string,
    events: JournalEvent[],
    writes: PendingWrites,
    options: {
      returnEvents?: boolean;
      approvals?: ApprovalInsert[];
      /** Keep the committed events for `publishFinal` instead of publishing them now. */
      publishLater?: boolean;
      /** The turn's end: have the statement return the turn for the end event (docs/adr/0071). */
      returnTurn?: boolean;
    } = {},
  ): Promise<CheckpointResult> {
    // Taken at once: checkpoints of one wave of tool calls run concurrently, and only one carries them.
    const merged = withDeferred(this.deferred, writes);
    const after = this.afterDeferred;
    this.deferred = emptyWrites();
    this.afterDeferred = [];
    const statement = checkpointStatement(this.turn, this.c.lease, events, merged, {
      approvals: options.approvals,
      task: merged.task,
      returnEvents: !!options.returnEvents || this.c.live !== undefined,
      returnTurn: !!options.returnTurn && this.c.live !== undefined,
    });
    const result = await commitCheckpoint(statement, {
      store: this.c.store,
      retryMs: this.c.retryMs,
      logger: this.c.logger,
      name,
      found: () => ({
        applied: true,
        released: false,
        killSwitch: this.signals.lastKillSwitch,
        cancelRequested: false,
      }),
    });
    // Only what this statement wrote: a failed fence wrote none of its parts.
    if (result.applied)
      for (const p of merged.contextParts) this.c.storedParts?.add(this.turn.tenantId, p.hash);
    if (options.publishLater) {
      this.finalEvents = result.events ?? [];
      if (options.returnTurn) this.finalTurn = endDetail(result, merged.toolCalls.length > 0);
    } else this.c.live?.committed(result.events);
    this.signals.observe(result);
    for (const fn of after) fn();
    return result;
  }

  /**
   * A round waits for the next checkpoint (docs/adr/0010): the last round (no tool calls) for the
   * finalisation; a round with tool calls for its calls' first commit — a side-effecting call's start
   * (before it runs), else the first result — or the wait checkpoint when a call awaits approval. A worker that
   * dies before that commit leaves no trace of the round: the resumed turn asks the model again, as it
   * always has for the last round.
   */
  async recordRound(r: RoundRecord): Promise<void> {
    const writes = roundWrites(this.turn, r, this.nextPosition++);
    // What the round sent rides along with it (docs/adr/0045): no statement of its own.
    if (r.context && this.c.roundContexts !== false)
      Object.assign(writes, roundContextWrites(r.context, this.contextRecorded));
    this.deferred = withDeferred(this.deferred, writes);
    this.afterDeferred.push(() => {
      this.observed.attempts(r.attempts);
      this.observed.unpriced(r.provider, r.model, r.costSource);
    });
  }

  async recordFailedAttempts(attempts: ProviderAttempt[], context?: RoundContext): Promise<void> {
    const w = emptyWrites();
    w.turn.attempts = attempts;
    if (context && this.c.roundContexts !== false)
      Object.assign(w, roundContextWrites(context, this.contextRecorded));
    await this.commit('failed_attempts', this.events.take(), w);
    this.observed.attempts(attempts);
  }

  /**
   * A side-effecting call's start is committed before it runs: a resumed turn must know it may have
   * happened (ADR 0004). A read-only call's start is written with its result: run again, it is harmless.
   */
  async toolStarted(meta: ToolCallMeta): Promise<void> {
    if (meta.sideEffect === 'read_only') return;
    await this.commit('tool_started', this.events.take(), toolStartedWrites(meta));
  }

  async recordToolResult(
    meta: ToolCallMeta,
    outcome: ToolOutcome,
    durationMs: number,
    content: string,
    summary?: SummaryRecord,
  ): Promise<void> {
    // The position is taken before the await: calls of one wave record their results concurrently.
    const w = toolResultWrites(
      this.turn,
      { meta, outcome, durationMs, content, summary },
      this.nextPosition++,
    );
    // The tool already ran: its outcome is held here until it commits, through database restarts.
    await this.commit('tool_result', this.events.take(), w);
    this.observed.toolResult(meta, outcome, durationMs);
    if (summary) this.observed.sideCall(summary.call);
  }

  async recordReflection(index: number, note: string | null, call: SideCallRecord): Promise<void> {
    const position = note === null ? this.nextPosition : this.nextPosition++;
    await this.commit(
      'reflection',
      this.events.take(),
      reflectionWrites(this.turn, { index, note, call }, position),
    );
    this.observed.sideCall(call);
  }

  /**
   * An embedder call of the turn (recall, tool selection; issue 33): its ledger line and cost ride
   * with the next checkpoint, as a round does: no statement of its own.
   */
  async recordEmbedding(e: EmbeddingRecord): Promise<void> {
    this.deferred = withDeferred(this.deferred, embeddingWrites(this.turn, e));
  }

  /** The cut is stored on the session in turn seqs (libs/turns/src/history.ts). */
  async recordCompaction(c: CompactionRecord, call?: SideCallRecord): Promise<void> {
    const w = compactionWrites(this.turn, storedCompaction(c, this.c.historySeqs), call);
    await this.commit('compaction', this.events.take(), w);
    if (call) this.observed.sideCall(call);
  }

  /**
   * The wait checkpoint (docs/adr/0013), one statement: an approval row and an `approval_requested` event per
   * approval wait, the turn waiting in `status`, and the lease released whatever is queued behind it
   * (those turns wait for this one). Nothing of the gated calls was started, so a resumed run finds
   * them unanswered and acts on their decisions.
   */
  async wait(
    outcome: TurnOutcome,
    ttlMs: number,
    status: WaitingStatus,
    clientToolTtlMs = ttlMs,
  ): Promise<CheckpointResult> {
    const now = Date.now();
    const rows = waitRows(this.turn, outcome, status, new Date(now + ttlMs), new Date(now + clientToolTtlMs));
    return this.commit('wait', this.events.take(rows.events), rows.writes, {
      returnEvents: true,
      approvals: rows.approvals,
    });
  }

  /**
   * The essential finalisation, one statement: whatever is deferred (the last round), the turn's end
   * and decision record, the session's usage roll-up, the pending events and the turn's ended event
   * (with its cancel's reason and note for a cancelled turn, docs/adr/0055), and the lease's release
   * when no turn was admitted after this one.
   */
  async finalise(outcome: TurnOutcome, model: string, cancel?: CancelCause): Promise<CheckpointResult> {
    const rows = finaliseRows(this.turn, outcome, { model, cancel });
    // The end goes out once the finalisation steps have run (`publishFinal`): a client woken by it
    // reads the turn with what they record (its closure) in place.
    return this.commit('finalise', this.events.take([rows.event]), rows.writes, {
      returnEvents: true,
      publishLater: true,
      returnTurn: true,
    });
  }

  /**
   * Publishes the finalisation's events (see `commit`); a second call publishes nothing. The end event
   * carries the turn as the finalisation read it back (docs/adr/0071) unless `changed`: a step after
   * the commit wrote to the turn (a failure recorded on it), and a waiter reads it from Postgres.
   */
  publishFinal(o: { changed?: boolean } = {}): void {
    if (this.finalEvents === undefined) return;
    const detail: LiveTurnDetail | undefined =
      this.finalTurn && o.changed && 'row' in this.finalTurn ? { read: 'changed' } : this.finalTurn;
    this.c.live?.committed(
      detail
        ? this.finalEvents.map((e) => (TERMINAL_EVENT_TYPES.has(e.type) ? { ...e, turn: detail } : e))
        : this.finalEvents,
    );
    this.finalEvents = undefined;
    this.finalTurn = undefined;
  }

  interjectionWaiting(): void {
    this.signals.interjectionWaiting();
  }

  /**
   * The safe point before a provider call (docs/adr/0014): when an interjection waits, the session's
   * pending interject messages move into this turn's transcript in one fenced transaction, and the
   * engine adds them to the next call.
   */
  async interjections(): Promise<ChatMessage[]> {
    if (!this.signals.takeInterjection()) return [];
    const t = this.turn;
    // What is buffered commits first, so the delivery's events follow it in the journal as they do on
    // the live channel (an extra statement only when an interjection waits).
    if (this.events.size > 0) await this.commit('before_interjection', this.events.take(), emptyWrites());
    const delivered = await retryTransient(
      async (attempt) => {
        // A retry after an attempt whose commit succeeded but whose answer was lost: what it moved is here.
        if (attempt > 1) {
          const moved = await this.c.store.interjectedSince(t.id, this.nextPosition);
          if (moved.length > 0) return { messages: moved, events: [] };
        }
        return this.c.store.deliverInterjections({
          tenantId: t.tenantId,
          sessionId: t.sessionId,
          turnId: t.id,
          turnSeq: t.seq,
          lease: this.c.lease,
          fromPosition: this.nextPosition,
        });
      },
      { maxMs: this.c.retryMs },
    );
    if (!delivered) throw new LeaseLostError(t.sessionId);
    this.nextPosition += delivered.messages.length;
    this.c.live?.committed(delivered.events);
    return delivered.messages.map((m) =>
      toChatMessage({ ...m, role: 'user', toolCalls: null, toolCallId: null }),
    );
  }

  /** Buffered: committed with the next checkpoint, together with the state it reports. */
  async emit<T extends EventType>(type: T, data: EventData<T>): Promise<void> {
    this.events.emit(type, data);
  }

  textDelta(delta: string): void {
    this.events.textDelta(delta);
  }

  /** The tenant's kill switch as the latest checkpoint saw it (read again when over a second old). */
  killSwitch(): Promise<boolean> {
    return this.signals.killSwitch();
  }
}

/** The most of a turn's body its end event carries (docs/adr/0071): a larger one is read by the waiter. */
export const LIVE_TURN_MAX_BYTES = 64 * 1024;

/**
 * What the end event says of the turn (docs/adr/0071), from the finalisation's answer: the turn as
 * the statement read it back, with the recalled records the statement itself journaled; or why a
 * waiter reads it from Postgres — no row (a retried statement found already committed), sub-agent
 * tasks (their list is read apart), tool calls written by the same statement (its read of them
 * predates them), a closure left to the work-activation step (written after the commit), or size.
 */
export function endDetail(result: CheckpointResult, wroteToolCalls: boolean): LiveTurnDetail {
  const row = result.turn;
  if (!row) return { read: 'unavailable' };
  if (row.spawned) return { read: 'spawned' };
  if (wroteToolCalls || result.closure == null) return { read: 'changed' };
  const runs = [
    ...(Array.isArray(row.recalledRuns) ? (row.recalledRuns as unknown[]) : []),
    ...(result.events ?? []).filter((e) => e.type === 'memory_recalled').map((e) => e.data.records ?? null),
  ];
  const body = { ...row, recalledRuns: runs.length > 0 ? runs : null };
  if (Buffer.byteLength(JSON.stringify(body)) > LIVE_TURN_MAX_BYTES) return { read: 'too_large' };
  return { row: body };
}
