import { z } from 'zod';
import { CancelReason } from './cancel-reasons';

/** Progress event types of SPEC §6, journaled per session with a monotonically increasing seq. */
export const EventType = {
  MessageAdmitted: 'message_admitted',
  TurnStarted: 'turn_started',
  ProviderRoundStarted: 'provider_round_started',
  TextDelta: 'text_delta',
  ProviderRoundCompleted: 'provider_round_completed',
  ToolCallStarted: 'tool_call_started',
  ToolCallCompleted: 'tool_call_completed',
  IterationCompleted: 'iteration_completed',
  ContextCompacted: 'context_compacted',
  SummarizerStarted: 'summarizer_started',
  SummarizerCompleted: 'summarizer_completed',
  ToolResultCompacted: 'tool_result_compacted',
  SubagentSpawned: 'subagent_spawned',
  SubagentCompleted: 'subagent_completed',
  ReflectionCompleted: 'reflection_completed',
  ApprovalRequested: 'approval_requested',
  ApprovalDecided: 'approval_decided',
  ClientToolRequested: 'client_tool_requested',
  ClientToolAnswered: 'client_tool_answered',
  StopHookFired: 'stop_hook_fired',
  ContextUnavailable: 'context_unavailable',
  ContextDegraded: 'context_degraded',
  TurnCompleted: 'turn_completed',
  TurnFailed: 'turn_failed',
  TurnCancelled: 'turn_cancelled',
  InterjectionDelivered: 'interjection_delivered',
  TurnClosure: 'turn_closure',
  SessionForked: 'session_forked',
  SessionForkCreated: 'session_fork_created',
  SessionRewound: 'session_rewound',
  ActionBudgetExceeded: 'action_budget_exceeded',
  MemoryRecalled: 'memory_recalled',
  WakeLiveness: 'wake_liveness',
} as const;
export type EventType = (typeof EventType)[keyof typeof EventType];

/*
 * The event union (SPEC §6): one data schema per EventType. It describes the journal
 * (`GET /v1/sessions/:id/events`), the live channel (libs/live) and the SSE frames
 * (`GET /v1/turns/:id/stream`, `GET /v1/sessions/:id/stream`), and types what the engine emits
 * (`TurnCheckpoints.emit`). Known fields are listed; objects stay open (`looseObject`) so a journal
 * row written by an older or newer version still parses, and large payloads (attempt timelines,
 * failure artifacts, tool errors) are described only by their outline.
 */

const Json = z.record(z.string(), z.unknown());

/**
 * Why a call waits for a person (docs/adr/0013): the tool declares it, the agent or the tenant lists
 * it, the turn's input is untrusted, or a replay turn's side-effecting call matches no recorded call
 * of the original (docs/adr/0054).
 */
export const APPROVAL_POLICIES = [
  'tool',
  'agent',
  'tenant',
  'untrusted_input',
  'replay_unrecorded_side_effect',
] as const;

/**
 * An object described by its outline: other fields pass and are kept (`looseObject`), and its type
 * has no index signature, so the engine's interfaces (ProviderAttempt, Usage, FailureArtifact) are
 * assignable to it.
 */
function outline<T extends z.ZodRawShape>(shape: T) {
  return z.looseObject(shape) as unknown as z.ZodObject<T>;
}

/** Token usage as the providers report it (libs/providers `Usage`). */
const UsageData = outline({
  inputTokens: z.number(),
  outputTokens: z.number(),
  /** Prompt tokens read from the provider's prompt cache (part of inputTokens). */
  cachedTokens: z.number().optional(),
  /** Prompt tokens written to the provider's prompt cache (part of inputTokens), docs/adr/0032. */
  cacheWriteTokens: z.number().optional(),
});
/** One provider attempt of a round's timeline (libs/engine `ProviderAttempt`). */
const AttemptData = outline({ model: z.string(), attempt: z.int(), outcome: z.string() });
/** The failure artifact of a failed turn (libs/engine `FailureArtifact`); left open. */
const FailureData = outline({ kind: z.string(), message: z.string() });

/** Every journaled event's data, by type. */
export const EventData = {
  message_admitted: z.looseObject({
    messageId: z.string(),
    kind: z.string(),
    authorityClass: z.string(),
    priority: z.string(),
    deliverySurface: z.string(),
  }),
  turn_started: z.looseObject({
    /** The turn's per-session seq. */
    seq: z.int(),
    /** A run after a crash or a lost lease: the turn carries on from what it committed. */
    resumed: z.boolean(),
    model: z.string(),
    /** The agent's model route when it named a route rather than a model. */
    route: z.string().optional(),
    /**
     * The turn's first run only, when the session's turn before it was waiting (seed 002
     * "Continuation Resolution", docs/adr/0057): which waiting reason its input matched, with evidence.
     */
    continuation: z
      .looseObject({
        modelVisible: z.boolean(),
        priorClosureOutcome: z.string(),
        priorWaitingReason: z.string().nullable().optional(),
        priorTurnId: z.string(),
        matchedWaitingReason: z.boolean(),
        evidence: z.array(z.string()),
      })
      .optional(),
  }),
  provider_round_started: z.looseObject({
    round: z.int(),
    model: z.string(),
    /** When the call started (ISO): the event is journaled with the round, delivered live at once. */
    startedAt: z.string().optional(),
  }),
  /** Streamed text: live, a chunk as the provider streamed it; in the journal, a round's text. */
  text_delta: z.looseObject({ text: z.string() }),
  provider_round_completed: z.looseObject({
    round: z.int(),
    /** The model that answered (a fallback, perhaps). */
    model: z.string(),
    requestedModel: z.string(),
    usage: UsageData,
    costUsd: z.number(),
    /** What the provider's prompt cache saved on this call, USD (negative when it only wrote). */
    cacheSavedUsd: z.number().optional(),
    toolCalls: z.int(),
    attempts: z.array(AttemptData),
  }),
  tool_call_started: z.looseObject({
    callId: z.string(),
    name: z.string(),
    /** A replay's call answered from the original's recorded result, not executed (docs/adr/0054). */
    replayed: z.literal(true).optional(),
    /** With `replayed`: the original's tool_calls row it was answered from. */
    replayedFromToolCallId: z.string().optional(),
  }),
  tool_call_completed: z.looseObject({
    callId: z.string(),
    name: z.string(),
    ok: z.boolean(),
    durationMs: z.number(),
    /** A replay's call answered from the original's recorded result, not executed (docs/adr/0054). */
    replayed: z.literal(true).optional(),
    /** With `replayed`: the original's tool_calls row it was answered from. */
    replayedFromToolCallId: z.string().optional(),
    /** A failed call's classified failure (retryable, its kind). */
    failure: Json.optional(),
    tool_error: Json.optional(),
    error: z.string().optional(),
    /** The no-progress detector's verdict when it was not `continue`. */
    noProgress: z.string().optional(),
  }),
  iteration_completed: z.looseObject({ iteration: z.int(), costUsd: z.number() }),
  context_compacted: z.looseObject({
    droppedMessages: z.int(),
    beforeTokens: z.number(),
    afterTokens: z.number(),
    summarized: z.boolean(),
  }),
  /**
   * The summarizer side-call (seed 000): one provider call inside the turn that compresses an
   * oversized tool result. Not a sub-agent: no task, no child turn (docs/adr/0025).
   */
  summarizer_started: z.looseObject({
    agent: z.string(),
    callId: z.string().optional(),
    tool: z.string().optional(),
    model: z.string().optional(),
    bytes: z.number().optional(),
  }),
  summarizer_completed: z.looseObject({
    agent: z.string(),
    callId: z.string().optional(),
    ok: z.boolean(),
    costUsd: z.number().optional(),
    bytes: z.number().optional(),
    error: z.string().optional(),
    /** The session's summarizer was switched off after repeated failures. */
    disabled: z.boolean().optional(),
  }),
  /**
   * TokenJuice compacted a tool result before it entered history (seed 000; docs/adr/0033): its kind,
   * sizes, and for a lossy compaction the marker `tokenjuice_retrieve` returns the original by.
   */
  tool_result_compacted: z.looseObject({
    callId: z.string(),
    tool: z.string(),
    kind: z.string(),
    mode: z.enum(['full', 'light']),
    lossy: z.boolean(),
    marker: z.string().optional(),
    originalBytes: z.int(),
    contentBytes: z.int(),
  }),
  /** A child agent runs as its own turn, tracked by a task (issue 11); journaled on the parent's session. */
  subagent_spawned: z.looseObject({
    taskId: z.string(),
    /** The child agent's name (a tenant agent or a built-in archetype). */
    agent: z.string(),
    childSessionId: z.string(),
    childTurnId: z.string(),
    /** The child's spawn depth: a root turn is 0, its child 1 (at most MAX_SPAWN_DEPTH). */
    depth: z.int(),
    /** The parent waits for the child before its next step. */
    blocking: z.boolean(),
  }),
  /** A child's task ended or handed back; journaled on the parent's session. */
  subagent_completed: z.looseObject({
    taskId: z.string(),
    /** The task's status: completed, failed, cancelled, or a handback needing the parent (awaiting_user, incomplete). */
    status: z.string(),
    /** The compact result the parent sees (`completed`, `awaiting_user {question, options}`, `incomplete {reason}`). */
    handback: z.unknown().optional(),
    /** The child turn's cost (a decimal string or a number). */
    costUsd: z.union([z.string(), z.number()]).optional(),
  }),
  reflection_completed: z.looseObject({
    index: z.int(),
    ok: z.boolean(),
    costUsd: z.number(),
    error: z.string().optional(),
  }),
  /** A gated tool call made its turn wait (docs/adr/0013); decide it with POST /v1/approvals/:approvalId. */
  approval_requested: z.looseObject({
    approvalId: z.string(),
    callId: z.string(),
    name: z.string(),
    /** Redacted as every event's data is. */
    arguments: z.unknown(),
    sideEffect: z.string(),
    policy: z.enum(APPROVAL_POLICIES),
    expiresAt: z.string(),
  }),
  /** A decision on an approval; `resumed` when it was the turn's last pending one (the turn is queued again). */
  approval_decided: z.looseObject({
    approvalId: z.string(),
    callId: z.string(),
    name: z.string(),
    decision: z.enum(['approved', 'rejected', 'expired']),
    reason: z.string().optional(),
    resumed: z.boolean(),
  }),
  /**
   * The model called a tool the client declared (docs/adr/0047): the turn waits until the client
   * answers `callId` (POST /v1/turns/:id/client-tool-results, or its protocol's own way).
   */
  client_tool_requested: z.looseObject({
    /** The id the client answers: the wait's own, unique across tenants and turns. */
    callId: z.string(),
    /** The model's id for the call (the transcript's). */
    modelCallId: z.string(),
    name: z.string(),
    /** The JSON arguments the model wrote, as it wrote them. */
    arguments: z.string(),
    expiresAt: z.string(),
  }),
  /** The client answered a call (or its wait expired); `resumed` when the turn is queued again. */
  client_tool_answered: z.looseObject({
    callId: z.string(),
    modelCallId: z.string(),
    name: z.string(),
    outcome: z.enum(['answered', 'expired']),
    resumed: z.boolean(),
  }),
  stop_hook_fired: z.looseObject({
    hook: z.string(),
    reason: z.string(),
    iteration: z.int(),
    unpricedModels: z.array(z.string()).optional(),
  }),
  context_unavailable: z.looseObject({ sources: z.array(z.string()) }),
  /**
   * The hourly side-effect budget (docs/adr/0058) refused a call: the agent's or the tenant's
   * `maxActionsPerHour` side-effecting calls already started in the rolling window. The call was not
   * run; the model got the `action_budget_exceeded` tool error. `retryAfterMs`: until a slot frees.
   */
  action_budget_exceeded: z.looseObject({
    callId: z.string(),
    name: z.string(),
    scope: z.enum(['agent', 'tenant']),
    limit: z.int(),
    windowMs: z.int(),
    retryAfterMs: z.int(),
  }),
  /**
   * A context source answered with less than it is set to (docs/adr/0050, 0049): memory recall fell
   * back to full-text, or tool selection offered every tool, because the agent's embedder failed or
   * was slow. A warning; the turn goes on.
   */
  context_degraded: z.looseObject({ source: z.string(), message: z.string() }),
  turn_completed: terminalData(),
  turn_failed: terminalData(),
  turn_cancelled: terminalData(),
  /**
   * An operator's `interject` message joined this (running) turn at a safe point (docs/adr/0014):
   * it is in the turn's transcript at `position`, and the model sees it in the next provider call.
   * The interject turn that carried it ends `completed` with stop reason `interjected`.
   */
  interjection_delivered: z.looseObject({
    messageId: z.string(),
    interjectTurnId: z.string(),
    position: z.int(),
  }),
  /**
   * The closure decision of an ended turn (seed 002 "Closure Decision", docs/adr/0031), journaled
   * after its terminal event: whether persisted work warrants a runtime follow-up, waits, or is done.
   */
  turn_closure: z.looseObject({
    outcome: z.enum(['completed', 'continuable', 'waiting', 'failed']),
    /** Only for `waiting`. */
    waitingReason: z
      .enum(['awaiting_operator_input', 'awaiting_external_change', 'awaiting_task_result', 'awaiting_timer'])
      .optional(),
    /** Only for `continuable`: the work the runtime reactivates. */
    workSignal: z
      .looseObject({
        workItemId: z.string(),
        status: z.enum(['active', 'queued']),
        reactivationMode: z.enum(['continue_active', 'activate_queued']),
      })
      .optional(),
    /** Only for `awaiting_task_result`: the sub-agent tasks whose results are still to rejoin (docs/adr/0057). */
    taskIds: z.array(z.string()).optional(),
    /** The work item the turn was bound to when it began. */
    workItemId: z.string().nullable().optional(),
    runtimePosture: z.enum(['awake', 'asleep', 'paused', 'stopped']).optional(),
  }),
  /**
   * The first event of a fork (docs/adr/0053): the session it was forked from and where. Its copied
   * turns are in the transcript and GET /v1/turns, not in this journal (their events are the parent's).
   */
  session_forked: z.looseObject({
    fromSessionId: z.string(),
    /** The fork point: a turn of the parent that had ended. */
    fromTurnId: z.string(),
    position: z.enum(['after', 'before']),
    /** The last turn seq of the copied prefix: the fork's next turn takes the seq after it. */
    forkedAtTurnSeq: z.int(),
    copiedTurns: z.int(),
    /** The fork's model override, when it has one. */
    model: z.string().optional(),
    /** The fork has its own instructions (shown in the session's `overrides`, not here). */
    instructionsOverridden: z.boolean().optional(),
  }),
  /** Journaled on the parent when it was forked at this event's turn (docs/adr/0053). */
  session_fork_created: z.looseObject({
    forkSessionId: z.string(),
    position: z.enum(['after', 'before']),
    forkedAtTurnSeq: z.int(),
  }),
  /**
   * The session was rewound to before `turnId` (docs/adr/0053): it and the later turns listed are left
   * out of the model's history from now on; they stay in the journal and the transcript.
   */
  session_rewound: z.looseObject({
    turnId: z.string(),
    seq: z.int(),
    rewoundTurnIds: z.array(z.string()),
    /** The session's compaction cut fell inside the rewound turns and was cleared. */
    compactionCleared: z.boolean().optional(),
  }),
  /**
   * The memory records the turn's context showed the model (seed 001 stage 1, issue 38,
   * docs/adr/0060): episodic recall's block and the context pack's facts and preferences, each with its
   * score and where it came from. One per run that loaded memory; none when nothing was recalled.
   */
  memory_recalled: z.looseObject({
    records: z.array(
      z.looseObject({
        ref: z.string(),
        kind: z.string(),
        title: z.string(),
        score: z.number().nullable(),
        path: z.string().nullable(),
        via: z.enum(['episodic', 'facts', 'preferences']),
        source: z.string().nullable(),
        sourceTurnId: z.string().nullable(),
        sourceSessionId: z.string().nullable(),
      }),
    ),
  }),
  /**
   * Pending wake hints became a system tick that resolved `liveness_only` (seed 002 "SystemTick",
   * docs/adr/0060): none carried content and the session's last turn was not waiting on an external
   * change, so no message was admitted and no model turn spent. Session-level (no turn).
   */
  wake_liveness: z.looseObject({
    resolution: z.literal('liveness_only'),
    count: z.int(),
    triggerIds: z.array(z.string()),
    deliveryIds: z.array(z.string()),
  }),
} as const satisfies Record<EventType, z.ZodType<Record<string, unknown>>>;

/** A terminal event's data; `costUsd` (decimal string) is filled in by the statement that commits it. */
function terminalData() {
  return z.looseObject({
    stopReason: z.string(),
    iterations: z.int().optional(),
    toolCalls: z.int().optional(),
    failure: FailureData.optional(),
    /** The turn's cost (decimal string), filled in by the statement that commits the event. */
    costUsd: z.union([z.string(), z.number()]).optional(),
    /**
     * turn_cancelled: why (docs/adr/0055), a `CancelReason`. Events journaled before typed reasons
     * carry the free text given with the cancel instead.
     */
    reason: z.union([CancelReason, z.string()]).optional(),
    /** turn_cancelled: the free text given with the cancel (a client's reason, the parent a cascade came from). */
    note: z.string().optional(),
    /** turn_completed of an interject turn delivered into a running turn: that turn (docs/adr/0014). */
    intoTurnId: z.string().optional(),
  });
}

/** The data an event of type `T` carries. */
export type EventData<T extends EventType = EventType> = z.input<(typeof EventData)[T]>;

const ISO_TIME = z.iso.datetime({ offset: true });

function eventOf<T extends EventType>(type: T) {
  return z.strictObject({
    /** Per-session, gap-free, increasing. */
    seq: z.int(),
    type: z.literal(type),
    turnId: z.uuid().nullable(),
    data: EventData[type],
    createdAt: ISO_TIME,
  });
}

type EventSchemas = { [T in EventType]: ReturnType<typeof eventOf<T>> };
const eventSchemas = Object.fromEntries(
  Object.values(EventType).map((t) => [t, eventOf(t)]),
) as unknown as EventSchemas;

/** A journal event as the API shows it: `GET /v1/sessions/:id/events`, SSE frames, the live channel. */
export const TurnEvent = z.discriminatedUnion(
  'type',
  Object.values(eventSchemas) as unknown as [EventSchemas[EventType], ...EventSchemas[EventType][]],
);
export type TurnEvent = z.infer<typeof TurnEvent>;

/**
 * A journaled event as an SSE frame's data (`id: <seq>`): the Event, with `streamed: true` when its
 * content already went out on that stream as live frames before its commit (docs/adr/0015).
 */
export const JournaledFrame = z.discriminatedUnion(
  'type',
  Object.values(eventSchemas).map((s) => s.extend({ streamed: z.literal(true).optional() })) as unknown as [
    EventSchemas[EventType],
    ...EventSchemas[EventType][],
  ],
);

/**
 * An emitted event not committed yet, as an SSE frame's data (no `id:`): a round's or a tool's
 * start, or text as the provider streams it. Its journaled copy follows when the step commits.
 */
export const LiveFrame = z.strictObject({
  ephemeral: z.literal(true),
  /** The last journal seq committed before it. */
  after: z.int(),
  type: z.enum(Object.values(EventType) as [EventType, ...EventType[]]),
  turnId: z.uuid().nullable(),
  data: Json,
  createdAt: ISO_TIME,
});

/** Parses one event's data by its type (unknown types fail). */
export function parseEventData<T extends EventType>(type: T, data: unknown): EventData<T> {
  return EventData[type].parse(data) as EventData<T>;
}

export const isEventType = (s: string): s is EventType => Object.prototype.hasOwnProperty.call(EventData, s);

export const TurnStatus = {
  Queued: 'queued',
  Running: 'running',
  AwaitingApproval: 'awaiting_approval',
  /** Waiting on a child: until a sub-agent task it waits for ends (docs/adr/0024). */
  AwaitingSubagent: 'awaiting_subagent',
  /** Waiting for the client to run the tools it declared and send their results (docs/adr/0047). */
  AwaitingClientTool: 'awaiting_client_tool',
  Completed: 'completed',
  Failed: 'failed',
  Cancelled: 'cancelled',
} as const;
export type TurnStatus = (typeof TurnStatus)[keyof typeof TurnStatus];

/** A turn's or a task's end (docs/ARCHITECTURE.md glossary: ended); an ended turn never changes again. */
export const ENDED_STATUSES: readonly TurnStatus[] = ['completed', 'failed', 'cancelled'];
export const isEnded = (s: string): boolean => (ENDED_STATUSES as readonly string[]).includes(s);
