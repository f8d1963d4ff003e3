import { EventType, newId, type CancelCause } from '@switchboard/contracts';
import { redact, type JournalEvent } from '@switchboard/database';
import type {
  EmbeddingRecord,
  RoundRecord,
  SideCallRecord,
  SummaryRecord,
  ToolCallMeta,
  ToolOutcome,
  TurnOutcome,
} from '@switchboard/engine';
import { costStatusOf, type Usage } from '@switchboard/providers';
import { clientCallId, type ApprovalInsert, type TurnRow, type WaitingStatus } from '@switchboard/store';
import { taskEnd } from '../handback';
import type { StoredCompaction } from '../history';
import { emptyWrites, mergeUsage, type PendingWrites } from './writes';

/**
 * Pure row builders: what each thing the engine records becomes in a checkpoint's write set. Ids
 * are fresh; nothing is read or written here.
 */

/** The fields every transcript entry this turn writes shares. */
export function entry(turn: TurnRow, position: number) {
  return {
    id: newId(),
    tenantId: turn.tenantId,
    agentId: turn.agentId,
    sessionId: turn.sessionId,
    turnId: turn.id,
    turnSeq: turn.seq,
    position,
    priority: turn.priority,
  };
}

/** One provider call's usage: a ledger line under a deterministic key, and the turn's totals. */
export function book(
  turn: TurnRow,
  w: PendingWrites,
  key: string,
  c: {
    provider: string;
    model: string;
    usage: Usage;
    costUsd: number;
    costSource: string;
    cacheSavedUsd?: number;
    kind?: 'chat' | 'embedding';
  },
): void {
  const costUsd = c.costUsd.toFixed(8);
  const cacheSavedUsd = (c.cacheSavedUsd ?? 0).toFixed(8);
  const cacheWriteTokens = c.usage.cacheWriteTokens ?? 0;
  w.ledger.push({
    id: newId(),
    tenantId: turn.tenantId,
    agentId: turn.agentId,
    sessionId: turn.sessionId,
    turnId: turn.id,
    key,
    provider: c.provider,
    model: c.model,
    inputTokens: c.usage.inputTokens,
    outputTokens: c.usage.outputTokens,
    cachedTokens: c.usage.cachedTokens,
    cacheWriteTokens,
    costUsd,
    cacheSavedUsd,
    costSource: c.costSource,
    ...(c.kind ? { kind: c.kind } : {}),
  });
  w.turn.usage = mergeUsage(w.turn.usage, {
    inputTokens: c.usage.inputTokens,
    outputTokens: c.usage.outputTokens,
    cachedTokens: c.usage.cachedTokens,
    cacheWriteTokens,
    costUsd,
    cacheSavedUsd,
    costStatus: costStatusOf(c.costSource),
  });
}

/** A side call's usage into the ledger and the turn's totals (nothing when it reached no provider). */
export function bookSideCall(turn: TurnRow, w: PendingWrites, call: SideCallRecord, key: string): void {
  if (!call.usage || !call.provider || !call.model) return;
  book(turn, w, key, {
    provider: call.provider,
    model: call.model,
    usage: call.usage,
    costUsd: call.costUsd,
    costSource: call.costSource ?? 'rate_table',
    cacheSavedUsd: call.cacheSavedUsd,
  });
}

/**
 * An embedder call of the turn (issue 33): a `kind: embedding` ledger line and the turn's totals, keyed
 * by its purpose and the turn's run (each run recalls and selects tools once; a resumed run's calls
 * are calls of their own), or by its tool call (`memory_search`: a call re-run on resume books once).
 */
export function embeddingWrites(turn: TurnRow, e: EmbeddingRecord): PendingWrites {
  const w = emptyWrites();
  const slash = e.embedder.indexOf('/');
  book(turn, w, `${turn.id}:embed:${e.purpose}:${e.callId ?? turn.runCount}`, {
    provider: e.embedder.slice(0, slash),
    // The model as rounds book theirs: `<provider>/<model>`.
    model: e.embedder,
    usage: { inputTokens: e.inputTokens, outputTokens: 0, cachedTokens: 0 },
    costUsd: e.costUsd,
    costSource: e.costSource,
    kind: 'embedding',
  });
  return w;
}

/** A round's rows: its assistant message, its ledger line and usage, its attempts and the round count. */
export function roundWrites(turn: TurnRow, r: RoundRecord, position: number): PendingWrites {
  const w = emptyWrites();
  w.messages.push({
    ...entry(turn, position),
    role: 'assistant',
    kind: 'internal_followup',
    origin: { kind: 'system', subsystem: 'harness' },
    trust: 'trusted_system',
    authorityClass: 'runtime_instruction',
    body: { type: 'text', text: r.response.text },
    toolCalls: r.response.toolCalls,
    metadata: { model: r.model, round: r.round, finishReason: r.response.finishReason },
  });
  book(turn, w, `${turn.id}:round:${r.round}`, {
    provider: r.provider,
    model: r.model,
    usage: r.response.usage,
    costUsd: r.costUsd,
    costSource: r.costSource,
    cacheSavedUsd: r.cacheSavedUsd,
  });
  w.turn.iterations = r.round + 1;
  w.turn.attempts = r.attempts;
  w.turn.model = r.model;
  return w;
}

/** A side-effecting call's start: its tool_calls row `running`. */
export function toolStartedWrites(meta: ToolCallMeta): PendingWrites {
  const w = emptyWrites();
  w.toolCalls.push({
    id: newId(),
    callId: meta.call.id,
    name: meta.call.name,
    arguments: meta.arguments ?? {},
    sideEffect: meta.sideEffect,
    idempotencyKey: meta.idempotencyKey,
    status: 'running',
  });
  return w;
}

/** What a tool call's result records. */
export interface ToolResult {
  meta: ToolCallMeta;
  outcome: ToolOutcome;
  durationMs: number;
  /** What the model sees (the rendered, bounded outcome). */
  content: string;
  summary?: SummaryRecord;
}

/** A tool call's result: its tool_calls row, its transcript entry, the summarizer's cost and streak. */
export function toolResultWrites(turn: TurnRow, r: ToolResult, position: number): PendingWrites {
  const { meta, outcome } = r;
  const w = emptyWrites();
  if (r.summary) {
    // The summarizer's cost and the session's failure streak commit with the result they shaped.
    bookSideCall(turn, w, r.summary.call, `${turn.id}:summarize:${meta.call.id}`);
    w.session.summarizerFailures = r.summary.consecutiveFailures;
  }
  w.toolCalls.push({
    id: newId(),
    callId: meta.call.id,
    name: meta.call.name,
    arguments: meta.arguments ?? {},
    sideEffect: meta.sideEffect,
    idempotencyKey: meta.idempotencyKey,
    status: outcome.ok ? 'completed' : 'failed',
    result: outcome.ok ? outcome.result : undefined,
    error: outcome.ok ? undefined : outcome,
    durationMs: r.durationMs,
    ...(meta.replayedFromToolCallId ? { replayedFromToolCallId: meta.replayedFromToolCallId } : {}),
  });
  w.messages.push({
    ...entry(turn, position),
    role: 'tool',
    kind: 'internal_followup',
    origin: { kind: 'system', subsystem: 'tools' },
    trust: 'untrusted_external',
    // Tool output informs the model; it never authorises anything by itself.
    authorityClass: 'external_evidence',
    body: { type: 'text', text: r.content },
    toolCallId: meta.call.id,
    metadata: { tool: meta.call.name },
  });
  w.turn.toolCallsAdded = 1;
  return w;
}

/** A reflection: its cost, and its note (when one was written) as a transcript entry at `position`. */
export function reflectionWrites(
  turn: TurnRow,
  r: { index: number; note: string | null; call: SideCallRecord },
  position: number,
): PendingWrites {
  const w = emptyWrites();
  bookSideCall(turn, w, r.call, `${turn.id}:reflect:${r.index}`);
  if (r.note !== null) {
    w.messages.push({
      ...entry(turn, position),
      role: 'user',
      kind: 'internal_followup',
      origin: { kind: 'system', subsystem: 'reflection' },
      trust: 'trusted_system',
      authorityClass: 'runtime_instruction',
      body: { type: 'text', text: r.note },
      metadata: { reflection: r.index, model: r.call.model },
    });
  }
  return w;
}

/** A compaction: the cut stored on the session (when it maps to turn seqs), the summary call's cost. */
export function compactionWrites(
  turn: TurnRow,
  stored: StoredCompaction | undefined,
  call?: SideCallRecord,
): PendingWrites {
  const w = emptyWrites();
  // Each compaction summary is a separate purchase, even when a resumed turn compacts again.
  if (call) bookSideCall(turn, w, call, `${turn.id}:${call.purpose}:${newId()}`);
  if (stored) w.session.compaction = stored;
  return w;
}

/**
 * The wait checkpoint's rows (docs/adr/0013): an approval row and an `approval_requested` event per approval
 * wait, the turn waiting in `status`, and the lease released whatever is queued behind it. A task
 * wait writes no row: the task exists, and its end resumes the turn (docs/adr/0024).
 */
export function waitRows(
  turn: TurnRow,
  outcome: TurnOutcome,
  status: WaitingStatus,
  expiresAt: Date,
  clientExpiresAt: Date = expiresAt,
): { writes: PendingWrites; approvals: ApprovalInsert[]; events: JournalEvent[] } {
  const writes = emptyWrites();
  writes.turn.waiting = status;
  writes.session.release = true;
  const waits = (outcome.waits ?? []).flatMap((x) => (x.kind === 'approval' ? [x] : []));
  const client = clientToolRows(turn, outcome, clientExpiresAt);
  const approvals: ApprovalInsert[] = waits.map((wait) => ({
    kind: 'approval',
    id: wait.approvalId,
    callId: wait.callId,
    toolName: wait.tool,
    arguments: redact(wait.arguments),
    sideEffect: wait.sideEffect,
    policy: wait.policy,
    expiresAt,
  }));
  const events = approvals.map((a) => ({
    type: EventType.ApprovalRequested,
    turnId: turn.id,
    data: {
      approvalId: a.id,
      callId: a.callId,
      name: a.toolName,
      arguments: a.arguments,
      sideEffect: a.sideEffect,
      policy: a.policy,
      expiresAt: expiresAt.toISOString(),
    },
  }));
  return { writes, approvals: [...approvals, ...client.rows], events: [...events, ...client.events] };
}

/**
 * A client tool wait's row (docs/adr/0047): an approval-like row of kind `client_tool`, its id the
 * call id handed to the client (`call_<id without dashes>`), and a `client_tool_requested` event. The
 * arguments are kept as the model wrote them: the client runs its tool on them (the transcript holds
 * them unredacted already).
 */
function clientToolRows(
  turn: TurnRow,
  outcome: TurnOutcome,
  expiresAt: Date,
): { rows: ApprovalInsert[]; events: JournalEvent[] } {
  const waits = (outcome.waits ?? []).flatMap((x) => (x.kind === 'client_tool' ? [x] : []));
  const rows: ApprovalInsert[] = waits.map((w) => ({
    kind: 'client_tool',
    id: w.waitId,
    callId: w.callId,
    toolName: w.tool,
    arguments: w.arguments,
    sideEffect: 'client',
    policy: 'client_tool',
    expiresAt,
  }));
  const events = waits.map((w) => ({
    type: EventType.ClientToolRequested,
    turnId: turn.id,
    data: {
      callId: clientCallId(w.waitId),
      modelCallId: w.callId,
      name: w.tool,
      arguments: w.arguments,
      expiresAt: expiresAt.toISOString(),
    },
  }));
  return { rows, events };
}

/**
 * The finalisation's rows: the turn's end and decision record, the session's usage roll-up, the
 * lease's release when no turn was admitted after this one, a child turn's task end, and the
 * turn's ended event (with the cancel's reason and note for a cancelled turn, docs/adr/0055).
 */
export function finaliseRows(
  turn: TurnRow,
  outcome: TurnOutcome,
  o: { model: string; cancel?: CancelCause },
): { writes: PendingWrites; event: JournalEvent } {
  const type =
    outcome.status === 'completed'
      ? EventType.TurnCompleted
      : outcome.status === 'failed'
        ? EventType.TurnFailed
        : EventType.TurnCancelled;
  const writes = emptyWrites();
  writes.turn.end = {
    status: outcome.status,
    stopReason: outcome.stopReason,
    finalText: outcome.finalText,
    iterations: outcome.iterations,
    toolCalls: outcome.toolCalls,
    failure: outcome.failure ?? null,
    costStatus: outcome.costStatus ?? null,
    decision: {
      strategy: outcome.strategy ?? (outcome.toolCalls > 0 ? 'tool_assisted' : 'direct_answer'),
      ...(outcome.recalledRecords ? { recalledRecords: outcome.recalledRecords } : {}),
      model: o.model,
      iterations: outcome.iterations,
      toolCalls: outcome.toolCalls,
      stopReason: outcome.stopReason,
    },
    ...(outcome.status === 'cancelled' && o.cancel
      ? { cancel: { reason: o.cancel.reason, note: o.cancel.note ?? null } }
      : {}),
  };
  writes.session.rollUpTurn = true;
  writes.session.releaseIfNoTurnAfter = turn.seq;
  if (turn.taskId) writes.task = { id: turn.taskId, end: taskEnd(outcome) };
  const event = {
    type,
    turnId: turn.id,
    data: {
      stopReason: outcome.stopReason,
      iterations: outcome.iterations,
      toolCalls: outcome.toolCalls,
      ...(outcome.failure ? { failure: outcome.failure } : {}),
      ...(outcome.status === 'cancelled' && o.cancel
        ? { reason: o.cancel.reason, ...(o.cancel.note ? { note: o.cancel.note } : {}) }
        : {}),
    },
  };
  return { writes, event };
}
