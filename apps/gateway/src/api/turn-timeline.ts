import type {
  ProviderAttemptResponse,
  RoundContextResponse,
  TimelineChild,
  TimelineRound,
  TimelineToolCall,
  TurnResponse,
  TurnTimelineResponse,
} from '@switchboard/contracts';
import { traceIdOf } from '@switchboard/observability';
import type { StoredRoundContext, TimelineRead } from '@switchboard/store';

/**
 * The timeline's assembly (docs/adr/0045), pure: from `readTurn`'s row (presented) and
 * `readTimeline`'s lists to one turn's story. Rounds come from the attempt timeline (every attempt
 * carries its round) and the journal's `provider_round_completed` (usage, cost); each tool call is
 * placed in the round after which the journal first names it (its start, its approval, its
 * compaction), and its row, approval and compaction are joined by the provider's call id.
 */

type Journal = TimelineRead['events'];
type Data = Record<string, unknown>;

const iso = (v: string | Date | null | undefined): string | null =>
  v === null || v === undefined ? null : new Date(v).toISOString();
const ms = (from: string | null, to: string | null): number | null =>
  from && to ? Math.max(0, Date.parse(to) - Date.parse(from)) : null;
const str = (v: unknown): string | undefined => (typeof v === 'string' ? v : undefined);
const num = (v: unknown): number | undefined => (typeof v === 'number' ? v : undefined);

export interface TimelineInput {
  turn: TurnResponse;
  read: TimelineRead;
  /** JAEGER_UI_URL without a trailing slash, when configured. */
  jaegerUiUrl?: string;
}

export function assembleTimeline({ turn, read, jaegerUiUrl }: TimelineInput): TurnTimelineResponse {
  const traceId = traceIdOf(read.traceContext) ?? null;
  const claimedAt = iso(turn.startedAt);
  const endedAt = iso(turn.completedAt);
  return {
    turn: {
      id: turn.id,
      sessionId: turn.sessionId,
      agentId: turn.agentId,
      parentTurnId: read.parentTurnId,
      status: turn.status,
      stopReason: turn.stopReason,
      model: turn.model,
      iterations: turn.iterations,
      runCount: read.runCount,
      cancelRequestedAt: turn.cancelRequestedAt,
      cancelReason: turn.cancelReason,
      cancelNote: turn.cancelNote,
      usage: turn.usage,
      costUsd: turn.costUsd,
      childrenCostUsd: turn.childrenCostUsd ?? '0',
      totalCostUsd: turn.totalCostUsd ?? turn.costUsd,
      costStatus: turn.costStatus,
      failure: turn.failure,
    },
    phases: {
      admittedAt: turn.createdAt,
      claimedAt,
      queueWaitMs: ms(turn.createdAt, claimedAt),
      endedAt,
      runMs: ms(claimedAt, endedAt),
    },
    rounds: assembleRounds(turn.attempts, read),
    children: read.children.map((c): TimelineChild => ({
      ...c,
      taskStatus: c.taskStatus as TimelineChild['taskStatus'],
      childTurnStatus: c.childTurnStatus as TimelineChild['childTurnStatus'],
      createdAt: iso(c.createdAt)!,
      completedAt: iso(c.completedAt),
    })),
    hooks: read.hooks.map((h) => ({ ...h, createdAt: iso(h.createdAt)!, completedAt: iso(h.completedAt) })),
    events: read.events.map((e) => ({ seq: e.seq, type: e.type, at: iso(e.at)!, data: e.data ?? {} })),
    traceId,
    traceUrl: traceId && jaegerUiUrl ? `${jaegerUiUrl}/trace/${traceId}` : null,
  };
}

/** Rounds by index: every round the attempts, the journal or a recorded context name. */
export function assembleRounds(attempts: ProviderAttemptResponse[], read: TimelineRead): TimelineRound[] {
  const completed = new Map<number, Data>();
  const indexes = new Set<number>(read.contextRounds);
  for (const a of attempts) indexes.add(a.round);
  for (const e of read.events) {
    const round = num(e.data?.round);
    if (round === undefined) continue;
    if (e.type === 'provider_round_completed') completed.set(round, e.data!);
    if (e.type === 'provider_round_started' || e.type === 'provider_round_completed') indexes.add(round);
  }
  const callRounds = callRoundsOf(read.events);
  const calls = assembleToolCalls(read);
  const recorded = new Set(read.contextRounds);
  const sorted = [...indexes].sort((a, b) => a - b);
  const last = sorted[sorted.length - 1];
  return sorted.map((index) => {
    const own = attempts.filter((a) => a.round === index);
    const done = completed.get(index);
    const served = own.find((a) => a.outcome === 'succeeded');
    const startedAt = own[0]?.startedAt ?? null;
    const endedAt = own[own.length - 1]?.completedAt ?? null;
    const usage = (done?.usage ?? served?.usage) as Data | undefined;
    return {
      index,
      model: str(done?.model) ?? served?.model ?? own[own.length - 1]?.model ?? null,
      startedAt,
      endedAt,
      latencyMs: ms(startedAt, endedAt),
      attempts: own,
      usage: usage
        ? {
            inputTokens: num(usage.inputTokens) ?? 0,
            outputTokens: num(usage.outputTokens) ?? 0,
            cachedTokens: num(usage.cachedTokens) ?? 0,
            cacheWriteTokens: num(usage.cacheWriteTokens) ?? 0,
          }
        : null,
      costUsd: num(done?.costUsd) ?? null,
      cacheSavedUsd: num(done?.cacheSavedUsd) ?? null,
      // A call the journal does not place (its events were never journaled) goes to the last round.
      toolCalls: calls.filter((c) => (callRounds.get(c.callId) ?? last) === index),
      contextRecorded: recorded.has(index),
    };
  });
}

/** Each call id's round: the round the journal last began or completed before it first names the call. */
export function callRoundsOf(events: Journal): Map<string, number> {
  const rounds = new Map<string, number>();
  let current: number | undefined;
  for (const e of events) {
    const round = num(e.data?.round);
    if ((e.type === 'provider_round_started' || e.type === 'provider_round_completed') && round !== undefined)
      current = round;
    // A client tool's events (docs/adr/0047) name the client's id; the call is the model's.
    const callId = str(e.data?.modelCallId) ?? str(e.data?.callId);
    if (callId && current !== undefined && !rounds.has(callId)) rounds.set(callId, current);
  }
  return rounds;
}

/** Gate refusals by the tool error kind the engine answers them with (libs/engine run/tool-outcomes.ts). */
const REFUSED: Record<string, TimelineToolCall['gates'][number]['gate']> = {
  unknown_tool: 'tool_lookup',
  blocked: 'blocked',
  invalid_arguments: 'validation',
  approval_rejected: 'approval',
  approval_expired: 'approval',
};

/** Every call of the turn: its row, joined with its approval and compaction; approvals without a row too. */
export function assembleToolCalls(read: TimelineRead): TimelineToolCall[] {
  const approvals = new Map(read.approvals.map((a) => [a.callId, a]));
  const compactions = new Map<string, Data>();
  // When the journal saw each call start: a call that waits durably (a blocking sub-agent spawn) gets
  // its row's startedAt when the turn resumes and commits it, after its child ran.
  const journalStarts = new Map<string, string>();
  for (const e of read.events) {
    const callId = str(e.data?.callId);
    if (e.type === 'tool_result_compacted' && callId) compactions.set(callId, e.data!);
    if (e.type === 'tool_call_started' && callId && !journalStarts.has(callId))
      journalStarts.set(callId, e.at);
  }
  const startOf = (callId: string, row: Date | string | null): string | null => {
    const fromRow = iso(row);
    const fromJournal = journalStarts.get(callId) ?? null;
    if (!fromRow || !fromJournal) return fromRow ?? fromJournal;
    return Date.parse(fromJournal) < Date.parse(fromRow) ? fromJournal : fromRow;
  };
  const seen = new Set<string>();
  const out: TimelineToolCall[] = [];
  const approvalOf = (callId: string): TimelineToolCall['approval'] => {
    const a = approvals.get(callId);
    if (!a) return null;
    return {
      id: a.id,
      kind: a.kind === 'client_tool' ? 'client_tool' : 'approval',
      status: a.status as NonNullable<TimelineToolCall['approval']>['status'],
      policy: a.policy,
      requestedAt: iso(a.createdAt)!,
      decidedAt: iso(a.decidedAt),
      decidedBy: a.decidedBy,
      reason: a.reason,
    };
  };
  for (const c of read.toolCalls) {
    seen.add(c.callId);
    const approval = approvalOf(c.callId);
    const kind = str((c.error as Data | null)?.kind);
    const compacted = compactions.get(c.callId);
    const payload = c.status === 'completed' ? c.result : c.status === 'failed' ? c.error : undefined;
    const startedAt = startOf(c.callId, c.startedAt);
    const completedAt = iso(c.completedAt);
    // A call that waited durably lasted from its start in the journal to its commit.
    const durationMs =
      startedAt && completedAt && startedAt !== iso(c.startedAt)
        ? Date.parse(completedAt) - Date.parse(startedAt)
        : c.durationMs;
    out.push({
      id: c.id,
      callId: c.callId,
      name: c.name,
      arguments: c.arguments,
      effectClass: c.sideEffect as TimelineToolCall['effectClass'],
      gates: gatesOf(approval, kind),
      approval,
      outcome: outcomeOf(c.status, kind),
      error: c.status === 'failed' ? c.error : null,
      startedAt,
      completedAt,
      durationMs,
      resultBytes:
        num(compacted?.originalBytes) ??
        (payload === undefined ? null : Buffer.byteLength(JSON.stringify(payload) ?? '', 'utf8')),
      compactedBytes: num(compacted?.contentBytes) ?? null,
      // The journal carries the marker as the model sees it (`tj:<id>`); the id is what the route takes.
      originalId: compacted?.lossy === true ? (str(compacted.marker)?.replace(/^tj:/, '') ?? null) : null,
    });
  }
  // A gated call that never ran (it waits, or was refused before its result was recorded) is still a call.
  for (const a of read.approvals) {
    if (seen.has(a.callId)) continue;
    const approval = approvalOf(a.callId);
    out.push({
      id: null,
      callId: a.callId,
      name: a.toolName,
      arguments: a.arguments,
      effectClass: a.sideEffect as TimelineToolCall['effectClass'],
      gates: gatesOf(approval, undefined),
      approval,
      outcome: unrunOutcome(a.kind, a.status),
      error: null,
      startedAt: null,
      completedAt: null,
      durationMs: null,
      resultBytes: null,
      compactedBytes: null,
      originalId: null,
    });
  }
  return out;
}

function gatesOf(
  approval: TimelineToolCall['approval'],
  errorKind: string | undefined,
): TimelineToolCall['gates'] {
  const gates: TimelineToolCall['gates'] = [];
  const refusedAt = errorKind ? REFUSED[errorKind] : undefined;
  if (refusedAt && refusedAt !== 'approval') gates.push({ gate: refusedAt, outcome: 'refused' });
  if (approval) gates.push({ gate: approval.kind, outcome: approval.status });
  return gates;
}

/**
 * A waited-on call without its tool_calls row yet: a person's approval pending, approved (its run is
 * next) or refused; the client's tool (docs/adr/0047) pending, answered (recorded when the turn
 * resumes), expired (the turn ends client_tool_timeout) or cancelled with the turn.
 */
function unrunOutcome(kind: string, status: string): TimelineToolCall['outcome'] {
  if (kind === 'client_tool') {
    if (status === 'pending') return 'awaiting_client_tool';
    if (status === 'answered') return 'running';
    return status === 'cancelled' ? 'cancelled' : 'failed';
  }
  return status === 'pending' ? 'awaiting_approval' : status === 'approved' ? 'running' : 'refused';
}

function outcomeOf(status: string, errorKind: string | undefined): TimelineToolCall['outcome'] {
  if (status === 'completed') return 'succeeded';
  if (status === 'running' || status === 'pending') return 'running';
  if (errorKind === 'outcome_unknown') return 'outcome_unknown';
  if (errorKind === 'cancelled') return 'cancelled';
  if (errorKind && REFUSED[errorKind]) return 'refused';
  return 'failed';
}

/** A stored part's JSON (libs/turns checkpoints/round-context.ts). */
type Part =
  | { kind: 'system'; text: string }
  | { kind: 'tools'; tools: RoundContextResponse['tools'] }
  | { kind: 'message'; message: Data };

const SOURCES = new Set(['transcript', 'recall', 'work_items', 'summary', 'other']);

/** A round's context from its part list and the parts' contents, in the order sent (docs/adr/0045). */
export function assembleRoundContext(stored: StoredRoundContext): RoundContextResponse {
  const out: RoundContextResponse = {
    round: stored.round,
    recordedAt: stored.createdAt.toISOString(),
    system: '',
    tools: [],
    messages: [],
    tokens: { system: 0, tools: 0, messages: 0, total: 0 },
  };
  for (const ref of stored.parts) {
    const found = stored.contents[ref.h];
    if (!found) continue;
    const part = found.content as Part;
    if (part.kind === 'system') {
      out.system = part.text;
      out.tokens.system += found.tokens;
    } else if (part.kind === 'tools') {
      out.tools = part.tools;
      out.tokens.tools += found.tokens;
    } else {
      const m = part.message;
      out.messages.push({
        role: m.role as 'user' | 'assistant' | 'tool',
        content: str(m.content) ?? '',
        ...(m.role === 'assistant'
          ? { toolCalls: (m.toolCalls ?? []) as { id: string; name: string; arguments: string }[] }
          : {}),
        ...(m.role === 'tool' ? { toolCallId: str(m.toolCallId) ?? '', name: str(m.name) ?? '' } : {}),
        source: (SOURCES.has(ref.s) ? ref.s : 'other') as RoundContextResponse['messages'][number]['source'],
        tokens: found.tokens,
      });
      out.tokens.messages += found.tokens;
    }
  }
  out.tokens.total = out.tokens.system + out.tokens.tools + out.tokens.messages;
  return out;
}
