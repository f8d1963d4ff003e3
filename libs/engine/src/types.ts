import type { DecisionStrategy } from './decision';
import type {
  Budgets,
  CancelReason,
  ClaimedMemory,
  EventData,
  EventType,
  ResponseFormat,
  ToolChoice,
} from '@switchboard/contracts';
import type {
  ChatMessage,
  CostStatus,
  ModelResponse,
  PriceOverrides,
  PromptCache,
  ToolCallRequest,
  ToolSpec,
  TransportDiagnostics,
  Usage,
} from '@switchboard/providers';
import type { ContextSource, RuntimeMetadata } from './context';
export type { RuntimeMetadata } from './context';
import type { ToolSelectionSettings } from './tool-selection';
import type { SideEffect, ToolDefinition } from '@switchboard/tools';

export type TurnBudget = Required<
  Omit<Budgets, 'maxUsd' | 'deadlineMs' | 'clientToolTimeoutMs' | 'onMaxIterations'>
> & {
  maxUsd?: number;
  deadlineMs?: number;
  clientToolTimeoutMs?: number;
  /** At the model-call cap: `stop` (absent) or one tool-less summarising call (docs/adr/0058). */
  onMaxIterations?: 'stop' | 'summarize';
};

export const DEFAULT_BUDGET: TurnBudget = {
  maxIterations: 10,
  maxToolCalls: 50,
  maxReflections: 0,
};

/** What a stop hook sees between two rounds of the tool-call loop (`iterations` counts rounds). */
export interface LoopState {
  turnId: string;
  tenantId: string;
  iterations: number;
  toolCalls: number;
  spentUsd: number;
  elapsedMs: number;
  budget: TurnBudget;
}

/**
 * A policy lever checked between rounds, before each model call (seed 000 "Stop hooks"). Returning
 * a reason votes to stop; the first vote ends the loop with that reason on the
 * turn. Hooks are policy-driven; cancellation (user-driven) is separate.
 */
export interface StopHook {
  name: string;
  check(state: LoopState): Promise<string | null> | string | null;
  /**
   * A vote of this hook cancels the turn with this reason (docs/adr/0055) instead of completing it:
   * a stop from outside the turn (the tenant's kill switch), not one of its own limits.
   */
  cancels?: CancelReason;
}

export interface TurnInput {
  turnId: string;
  tenantId: string;
  sessionId: string;
  /** The agent the turn runs as; tools scoped to an agent (memory, sub-agents) read it from their context. */
  agentId?: string;
  systemPrompt: string;
  /** Earlier turns, oldest first. */
  history: ChatMessage[];
  /** This turn so far: its input first, then whatever a previous run already persisted. */
  turnMessages: ChatMessage[];
  model: string;
  fallbackModels: string[];
  tools: string[];
  /**
   * Tools resolved for this turn only (the agent's MCP tools, docs/adr/0023), looked up before the
   * process-wide registry; absent for a turn whose tools are all built in.
   */
  extraTools?: ToolDefinition[];
  budget: TurnBudget;
  /** Custom stop hooks, checked after the built-in ones (budget, caps, deadline). */
  stopHooks?: StopHook[];
  /** The model's context window; the guard compacts history above 80% of it. */
  contextWindowTokens?: number;
  /** How tool schemas are emitted to the provider (seed 002); relaxed unless asked. */
  toolSchemaMode?: 'relaxed' | 'strict';
  /** Spend already booked by an earlier run of this turn (a resumed turn keeps its budget). */
  spentUsd?: number;
  /** When the turn first started, for the wall-clock deadline (epoch ms). */
  startedAt?: number;
  /** Tools the tenant blocks everywhere: a call to one is refused at the blocked-tool gate. */
  blockedTools?: string[];
  /**
   * The hourly side-effect budgets (docs/adr/0058): the agent's and the tenant's `maxActionsPerHour`.
   * Absent: both unlimited (the `actionBudget` gate still counts the turn's side-effecting calls).
   */
  actionLimits?: { agent: number | null; tenant: number | null };
  /**
   * The summarizer sub-agent (seed 000): the model it runs on and the session's
   * consecutive failures so far; absent, oversized results are only truncated.
   */
  summarizer?: { model: string; consecutiveFailures: number };
  /**
   * TokenJuice's mode for this turn's tool results (docs/adr/0033), the agent's setting resolved:
   * `full` (lossy, originals kept for `tokenjuice_retrieve`), `light` (lossless only), `off` (absent).
   */
  toolResultCompression?: 'full' | 'light' | 'off';
  /** The model reflections run on (seed 001 4h); the turn's own model when absent. */
  reflectionModel?: string;
  /** Prices over the maintained table: the tenant's, then the deployment's (ADR 0007). */
  prices?: PriceOverrides;
  /**
   * Calls of this turn an earlier run started and never recorded a result for (their tool_calls row
   * was left `running`): a side-effecting one is run again only when its tool honours the
   * idempotency key; otherwise it is answered `outcome_unknown` (ADR 0004).
   */
  startedCalls?: string[];
  /**
   * What the approval policy reads (docs/adr/0013): tools the agent and the tenant list as needing
   * approval, and whether this turn's input (or a later user message of the turn) is untrusted
   * content (`external_evidence`, `integration_signal`), which cannot authorise a side effect by itself.
   */
  approval?: { agent: string[]; tenant: string[]; untrustedInput: boolean };
  /** Decisions on this turn's gated calls, stored by the approvals API: a resumed run acts on them. */
  decisions?: ApprovalDecision[];
  /**
   * Tools the client declared for this turn (docs/adr/0047): offered to the model beside the agent's
   * own; a call to one is never executed here, it makes the turn wait for the client's result.
   */
  clientTools?: ClientToolDeclaration[];
  /** The client's answers (or expiries) of this turn's client tool calls: a resumed run records them. */
  clientResults?: ClientToolResult[];
  /** Whether the agent has memory records (the claim's EXISTS): false skips recall (docs/adr/0032). */
  agentHasMemory?: boolean;
  /** The agent's memory as the claim read it (docs/adr/0076): handed to the context sources. */
  claimedMemory?: ClaimedMemory;
  /**
   * Seed 001 stage 3's runtime metadata (docs/adr/0059): the session, the provider and model the turn
   * runs on, today's UTC date. Sent after the system prompt (never persisted into it); absent: none.
   */
  runtimeMetadata?: RuntimeMetadata;
  /**
   * The agent's learning feedback (docs/adr/0059), rendered: kept reflections, tool-failure hints and
   * the user profile, framed as evidence into this turn's input. Absent or null: nothing.
   */
  learning?: string | null;
  /**
   * The agent's `memory.citations` (seed 001 stage 6.1, docs/adr/0060): the memory records recalled
   * into the turn and the web pages it read are listed after a plain-text final answer.
   */
  citations?: boolean;
  /** Whether the agent ever had a work item (the claim's EXISTS): false skips the work-item projection. */
  agentHasWorkItems?: boolean;
  /** The provider prompt cache the turn's rounds ask for (docs/adr/0032); absent: none asked for. */
  promptCache?: PromptCache;
  /**
   * Semantic tool selection (docs/adr/0049): with more tools than `maxPerTurn`, each round offers the
   * pinned tools, the ones most similar to the turn's input and those already called. Absent: all.
   */
  toolSelection?: ToolSelectionSettings;
  /**
   * The structured output the final answer must have (docs/adr/0048): sent to the provider with every
   * round, and the final answer validated against it (one repair round). Absent: plain text.
   */
  responseFormat?: ResponseFormat;
  /**
   * The tool choice the request forced (docs/adr/0047): sent with the turn's first model round only
   * (no assistant message yet); later rounds are `auto`, so the model can answer after the tool result.
   */
  toolChoice?: ToolChoice;
  /**
   * This turn replays an ended turn (docs/adr/0054): its side-effecting calls are answered from the
   * original's recorded results when they match one, and wait for a person's approval otherwise.
   * Absent for every other turn.
   */
  replay?: ReplayInput;
}

/**
 * What a replay turn knows of the turn it replays (docs/adr/0054), loaded with its claim: the
 * original's completed side-effecting calls in the order it made them, and which of them an earlier
 * run of this turn already answered a call from (committed in that call's tool_calls row).
 */
export interface ReplayInput {
  originalTurnId: string;
  recorded: RecordedCall[];
  /** Ids of `recorded` calls this turn's committed calls were answered from: never used again. */
  used: string[];
}

/** A completed side-effecting call of the original turn: its tool_calls row. */
export interface RecordedCall {
  /** The tool_calls row id (what `replayed_from_tool_call_id` names). */
  id: string;
  name: string;
  /** As parsed when the original call was made. */
  arguments: unknown;
  /** The recorded result the replay answers with. */
  result: unknown;
}

/**
 * Why a call needs approval: the tool declares it, the agent or tenant lists it, the input is
 * untrusted, or (docs/adr/0054) a replay turn's side-effecting call matches no recorded call of the
 * original.
 */
export type ApprovalPolicy =
  'tool' | 'agent' | 'tenant' | 'untrusted_input' | 'replay_unrecorded_side_effect';

/** A human's (or the expiry's) decision on one gated call. */
export interface ApprovalDecision {
  approvalId: string;
  callId: string;
  status: 'approved' | 'rejected' | 'expired' | 'cancelled';
  reason?: string | null;
}

/**
 * A gated call waiting for a decision. The engine does not await it: the round's waits end the run
 * with a `waiting` outcome, the runner persists them and frees the worker, and the decision resumes
 * the turn from Postgres (docs/adr/0013).
 */
export interface ApprovalWait {
  kind: 'approval';
  approvalId: string;
  callId: string;
  tool: string;
  arguments: unknown;
  sideEffect: SideEffect;
  policy: ApprovalPolicy;
}

/**
 * A call waiting for a sub-agent task to end (docs/adr/0024): a blocking `spawn_subagent` or a
 * `wait_subagent`. No row is written for it (the task row exists); the task's end resumes the turn.
 */
export interface TaskWait {
  kind: 'task';
  taskId: string;
  callId: string;
}

/** A tool the client executes (docs/adr/0047): its name, what it does and its arguments' JSON Schema. */
export interface ClientToolDeclaration {
  name: string;
  description: string;
  parameters: Record<string, unknown>;
}

/** A client tool call's resolution: the client's output, or its wait expired. */
export interface ClientToolResult {
  callId: string;
  status: 'answered' | 'expired' | 'cancelled';
  /** The client's output (text, as the model sees it) when answered. */
  output: string | null;
}

/**
 * A call to a client-declared tool (docs/adr/0047): nothing runs here; the turn waits until the
 * client answers `waitId` (the id handed out to the client) with the call's output.
 */
export interface ClientToolWait {
  kind: 'client_tool';
  waitId: string;
  callId: string;
  tool: string;
  /** The arguments as the model wrote them (a JSON string, handed to the client unchanged). */
  arguments: string;
}

/**
 * What a `waiting` turn waits on: a human's decision, a sub-agent task (waiting on a child) or the
 * client's tool result; all wait and resume alike.
 */
export type Wait = ApprovalWait | TaskWait | ClientToolWait;

/** One provider attempt on the timeline (seed 002 "attempt timeline"). */
export interface ProviderAttempt {
  round: number;
  /** The provider that served (or failed) the attempt. */
  provider?: string;
  /** `<provider>/<model>` (seed 002 `model_ref`). */
  model: string;
  attempt: number;
  maxAttempts: number;
  startedAt: string;
  completedAt: string;
  /** The request itself, dispatch to response or error; backoff is separate. */
  durationMs: number;
  outcome: AttemptOutcome;
  /** The ProviderError kind of a failed attempt. */
  failureKind?: string;
  /** How that kind is treated: retried, failed fast, ending the turn (`terminal`), or cancelled. */
  disposition?: 'retryable' | 'fail_fast' | 'terminal' | 'cancelled';
  /** This attempt ended its model's candidacy and the next configured model was tried. */
  advancedToFallback: boolean;
  status?: number;
  message?: string;
  backoffMs?: number;
  usage?: Usage;
  /** The provider's request id, for support tickets. */
  requestId?: string;
  transportDiagnostics?: TransportDiagnostics;
}

/** Seed 002's attempt outcomes. */
export type AttemptOutcome = 'succeeded' | 'retrying' | 'retries_exhausted' | 'fail_fast_aborted';

export interface RoundRecord {
  round: number;
  model: string;
  provider: string;
  response: ModelResponse;
  costUsd: number;
  costSource: string;
  /** What the provider's prompt cache saved on the call (negative when it only wrote): docs/adr/0032. */
  cacheSavedUsd?: number;
  attempts: ProviderAttempt[];
  /** What was sent for the round (docs/adr/0045), for "what the model saw". */
  context?: RoundContext;
}

/**
 * The exact context of one model round (docs/adr/0045): the messages sent, system prompt first,
 * each with its source, and the tools offered. The checkpoints persist it with the round.
 */
export interface RoundContext {
  round: number;
  messages: ChatMessage[];
  /** One per message, in order. */
  sources: ContextSource[];
  tools: ToolSpec[];
}

/** The tool error envelope of seed 002, or a success. */
export type ToolOutcome =
  | { ok: true; result: unknown }
  | {
      ok: false;
      tool_name?: string;
      kind: string;
      message: string;
      hint?: string;
      /** The argument path a validation failure is about. */
      field?: string;
      retryable: boolean;
      /** Structured detail from the tool (seed 002); an oversized one is replaced by a digest. */
      details?: unknown;
    };

/**
 * A model call outside the loop's rounds: the summarizer sub-agent, a
 * reflection, a compaction summary. Its usage and cost go into the ledger.
 */
export interface SideCallRecord {
  purpose: 'summarize' | 'reflect' | 'compact';
  ok: boolean;
  model?: string;
  provider?: string;
  /** Absent when the call never reached a provider. */
  usage?: Usage;
  costUsd: number;
  costSource?: string;
  /** What the provider's prompt cache saved on the call (docs/adr/0032). */
  cacheSavedUsd?: number;
  error?: string;
}

/**
 * An embedder call made for the turn (issue 33, docs/adr/0050): recall's query, semantic tool
 * selection's input and tools. Booked in the ledger as `kind: embedding` and in the turn's cost.
 * Only calls a provider billed are recorded (the built-in `local/*` embedders never are).
 */
export interface EmbeddingRecord {
  purpose: 'recall' | 'tool_selection' | 'memory_search';
  /** The tool call that embedded (`memory_search`): one line per call, however many runs. */
  callId?: string;
  /** `<provider>/<model>`. */
  embedder: string;
  inputTokens: number;
  costUsd: number;
  costSource: string;
}

export interface ToolCallMeta {
  call: ToolCallRequest;
  sideEffect: SideEffect;
  arguments: unknown;
  idempotencyKey: string;
  /**
   * A replay turn's call answered from this recorded call of the original (docs/adr/0054): it was
   * not executed. Written in the call's tool_calls row with its result, in one checkpoint.
   */
  replayedFromToolCallId?: string;
}

/**
 * Persistence the engine asks for at each step. A step that returns has been
 * committed; a resumed turn is rebuilt from what was committed.
 */
export interface TurnCheckpoints {
  recordRound(round: RoundRecord): Promise<void>;
  toolStarted(meta: ToolCallMeta): Promise<void>;
  /** `content` is what the model sees: the rendered outcome, bounded by the result budget. */
  recordToolResult(
    meta: ToolCallMeta,
    outcome: ToolOutcome,
    durationMs: number,
    content: string,
    summary?: SummaryRecord,
  ): Promise<void>;
  /** A reflection (seed 001 4h): its note joins this turn's transcript, its cost the ledger. */
  recordReflection(index: number, note: string | null, call: SideCallRecord): Promise<void>;
  /** The turn's embedder calls (recall, tool selection): their cost joins the turn's and the ledger. */
  recordEmbedding?(record: EmbeddingRecord): Promise<void>;
  /**
   * A compaction of the history (the context guard): where it cut, and the summary when one was
   * written, so later turns can start from it; the summary call's usage and cost, if any.
   */
  recordCompaction(compaction: CompactionRecord, call?: SideCallRecord): Promise<void>;
  /** Records failed attempts of a round that produced no response (and what it sent, docs/adr/0045). */
  recordFailedAttempts(attempts: ProviderAttempt[], context?: RoundContext): Promise<void>;
  /**
   * Journals a progress event. It becomes durable with the next checkpoint, in
   * the same transaction as the state it describes, so the journal never shows
   * a step that was not committed. `data` is typed by the event union (libs/contracts events.ts).
   */
  emit<T extends EventType>(type: T, data: EventData<T>): Promise<void>;
  textDelta(delta: string): void;
  /**
   * Messages delivered into the running turn since the last call (an operator's `interject`,
   * docs/adr/0014), already committed to the turn's transcript. The engine asks at the safe point
   * before each provider call, so the model sees them in that call.
   */
  interjections?(): Promise<ChatMessage[]>;
}

/** Where the context guard cut `TurnInput.history`, and what stands in for the cut part. */
export interface CompactionRecord {
  /** The history's first `headEnd` messages (the first exchange) were kept. */
  headEnd: number;
  /** Messages from `tailStart` on (the recent turns) were kept; those between were dropped. */
  tailStart: number;
  droppedMessages: number;
  /** The model-written summary of the dropped part, or null when a plain note stands in. */
  summary: string | null;
}

/** The summarizer's part in a tool result, committed with the result itself. */
export interface SummaryRecord {
  call: SideCallRecord;
  /** The session's consecutive summarizer failures after this attempt. */
  consecutiveFailures: number;
}

/**
 * Why a turn failed, for operators (seed 002 "Failure Artifact Envelope"; its
 * `summary` is our `brief`, its `model_ref` our `model`).
 */
export interface FailureArtifact {
  kind:
    | 'provider_error'
    | 'context_length_exceeded'
    | 'no_progress'
    | 'budget_unenforceable'
    | 'structured_output_invalid'
    | 'client_tool_timeout'
    | 'internal';
  /** Provenance: provider transport, protocol (contract or response shape), or the turn itself. */
  category: 'transport' | 'protocol' | 'runtime' | 'unknown';
  message: string;
  /** Operator-facing summary of what happened and what to do. */
  brief: string;
  provider?: string;
  model?: string;
  status?: number;
  /** The ProviderError kind of the last failed attempt. */
  failureKind?: string;
  /** The last error and its causes, outermost first. */
  sourceChain?: string[];
  /** The failed round's attempt timeline. */
  attempts?: ProviderAttempt[];
}

export interface TurnOutcome {
  /** `waiting`: not ended; the turn waits on `waits` and resumes when they are all resolved. */
  status: 'completed' | 'failed' | 'cancelled' | 'waiting';
  stopReason: string;
  finalText: string;
  /** Rounds (the contract's name). */
  iterations: number;
  toolCalls: number;
  failure?: FailureArtifact;
  /** Set when the outcome itself decides the turn's cost status (a budget refused on unpriced models). */
  costStatus?: CostStatus;
  /** With `waiting`: one per call of the round that waits, each resolved on its own. */
  waits?: Wait[];
  /**
   * With `cancelled`: why, when the run itself knows (a stop hook that cancels, docs/adr/0055);
   * otherwise the turn's cancel request says.
   */
  cancelReason?: CancelReason;
  /** The decision record's strategy (seed 001 stage 6.7, docs/adr/0060); set by `TurnRun.outcome`. */
  strategy?: DecisionStrategy;
  /** Memory records recalled into this run's context (docs/adr/0060); set by `TurnRun.outcome`. */
  recalledRecords?: number;
}
