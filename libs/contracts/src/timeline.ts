import { z } from 'zod';
import { CancelReason } from './cancel-reasons';
import { TurnStatus } from './events';
import { ApiSchemas, FailureArtifactResponse, ProviderAttemptResponse } from './responses';

/**
 * A turn's story (GET /v1/turns/:id/timeline) and what the model saw in one of its rounds
 * (GET /v1/turns/:id/rounds/:index/context), docs/adr/0045. Assembled from what the turn already
 * stores (the turn row, its journal, tool calls, approvals, tasks, hook runs) and, for the context,
 * the content-addressed parts each round's checkpoint wrote.
 */

const Id = z.uuid();
const Timestamp = z.iso.datetime({ offset: true });
const Usd = z.string().regex(/^-?\d+(\.\d+)?$/);

const TimelineUsage = z.strictObject({
  inputTokens: z.int(),
  outputTokens: z.int(),
  cachedTokens: z.int(),
  cacheWriteTokens: z.int(),
});

/**
 * A gate a call went through (seed 001 4g) and what it answered. `client_tool`: the call was the
 * client's to run (docs/adr/0047), answered by the client (or expired, or cancelled).
 */
const TimelineGate = z.strictObject({
  gate: z.enum(['tool_lookup', 'blocked', 'validation', 'approval', 'client_tool']),
  outcome: z.enum(['refused', 'pending', 'approved', 'rejected', 'answered', 'expired', 'cancelled']),
});

/**
 * A durable wait of the call: a person's approval (`kind: approval`, ADR 0013) or the client's
 * result of a call to its own tool (`kind: client_tool`, docs/adr/0047: `answered` once it sent it).
 */
const TimelineApproval = z.strictObject({
  id: Id,
  kind: z.enum(['approval', 'client_tool']),
  status: z.enum(['pending', 'approved', 'rejected', 'answered', 'expired', 'cancelled']),
  /**
   * Why approval was asked: tool | agent | tenant | untrusted_input | replay_unrecorded_side_effect
   * (a client tool wait: `client`).
   */
  policy: z.string(),
  requestedAt: Timestamp,
  decidedAt: Timestamp.nullable(),
  /** The API key that decided, or `system` (expiry, cancel). */
  decidedBy: z.string().nullable(),
  reason: z.string().nullable(),
});

export const TimelineToolCall = z.strictObject({
  /** The tool_calls row; null for a call that never started (it awaits, or was refused, an approval). */
  id: Id.nullable(),
  /** The provider's id for the call. */
  callId: z.string(),
  name: z.string(),
  arguments: z.unknown(),
  /** The tool's effect class. */
  effectClass: z.enum(['read_only', 'local_write', 'network', 'destructive']).nullable(),
  gates: z.array(TimelineGate),
  approval: TimelineApproval.nullable(),
  /**
   * `succeeded`; `failed` (the tool's error); `refused` by a gate; `outcome_unknown` (a side effect
   * that may have happened before a crash, ADR 0004); `cancelled`; `running`; `awaiting_approval`;
   * `awaiting_client_tool` (a call to the client's tool, its result not sent yet).
   */
  outcome: z.enum([
    'succeeded',
    'failed',
    'refused',
    'outcome_unknown',
    'cancelled',
    'running',
    'awaiting_approval',
    'awaiting_client_tool',
  ]),
  /** The classified tool error of a call that did not succeed; null otherwise. */
  error: z.unknown(),
  startedAt: Timestamp.nullable(),
  completedAt: Timestamp.nullable(),
  durationMs: z.int().nullable(),
  /** The result's size in UTF-8 bytes before any compaction; null while there is none. */
  resultBytes: z.int().nullable(),
  /** What the model got after TokenJuice compacted it (docs/adr/0033); null when not compacted. */
  compactedBytes: z.int().nullable(),
  /** The kept original's id when the compaction was lossy: GET /v1/tool-results/:id. */
  originalId: z.string().nullable(),
});
export type TimelineToolCall = z.infer<typeof TimelineToolCall>;

export const TimelineRound = z.strictObject({
  /** 0-based, as the attempt timeline numbers rounds. */
  index: z.int(),
  /** The model that answered (a fallback perhaps); the last one tried when none did. */
  model: z.string().nullable(),
  startedAt: z.string().nullable(),
  endedAt: z.string().nullable(),
  /** First attempt's start to the last attempt's end, backoffs included. */
  latencyMs: z.int().nullable(),
  attempts: z.array(ProviderAttemptResponse),
  /** The answering call's tokens; null when no attempt answered. */
  usage: TimelineUsage.nullable(),
  costUsd: z.number().nullable(),
  cacheSavedUsd: z.number().nullable(),
  toolCalls: z.array(TimelineToolCall),
  /** Whether GET /v1/turns/:id/rounds/:index/context has this round (rounds run before it was recorded do not). */
  contextRecorded: z.boolean(),
});
export type TimelineRound = z.infer<typeof TimelineRound>;

export const TimelineChild = z.strictObject({
  taskId: Id,
  /** The spawn call in the parent's round. */
  callId: z.string().nullable(),
  agent: z.string(),
  taskStatus: z.enum(['pending', 'running', 'completed', 'failed', 'cancelled']),
  childSessionId: Id.nullable(),
  childTurnId: Id.nullable(),
  childTurnStatus: z.enum(Object.values(TurnStatus)).nullable(),
  blocking: z.boolean(),
  /** The child turn's own cost. */
  costUsd: Usd,
  /** Its cost with its own children's, recursively (docs/adr/0025). */
  totalCostUsd: Usd,
  createdAt: Timestamp,
  completedAt: Timestamp.nullable(),
});
export type TimelineChild = z.infer<typeof TimelineChild>;

export const TurnTimelineResponse = z
  .strictObject({
    turn: z.strictObject({
      id: Id,
      sessionId: Id,
      agentId: Id,
      parentTurnId: Id.nullable(),
      status: z.enum(Object.values(TurnStatus)),
      stopReason: z.string().nullable(),
      model: z.string().nullable(),
      iterations: z.int(),
      /** Runs of the turn: more than one after a crash, a lost lease or an approval wait. */
      runCount: z.int(),
      cancelRequestedAt: Timestamp.nullable(),
      /** Why it was cancelled, or a cancel requested (docs/adr/0055). */
      cancelReason: CancelReason.nullable(),
      cancelNote: z.string().nullable(),
      usage: TimelineUsage,
      costUsd: Usd,
      /** Its sub-agents' child turns, recursively (docs/adr/0025). */
      childrenCostUsd: Usd,
      totalCostUsd: Usd,
      costStatus: z.enum(['priced', 'provider_reported', 'unpriced']).nullable(),
      failure: FailureArtifactResponse.nullable(),
    }),
    phases: z.strictObject({
      /** Admission (the turn row's creation). */
      admittedAt: Timestamp,
      /** Its (first) claim by a worker; null while queued. */
      claimedAt: Timestamp.nullable(),
      /** claimedAt - admittedAt. */
      queueWaitMs: z.int().nullable(),
      endedAt: Timestamp.nullable(),
      /** endedAt - claimedAt: approval and sub-agent waits included. */
      runMs: z.int().nullable(),
    }),
    rounds: z.array(TimelineRound),
    children: z.array(TimelineChild),
    /** Post-turn hooks (hook_runs), once the turn ended. */
    hooks: z.array(
      z.strictObject({
        hook: z.string(),
        /** completed | failed | deferred */
        status: z.string(),
        attempts: z.int(),
        createdAt: Timestamp,
        completedAt: Timestamp.nullable(),
      }),
    ),
    /** The turn's journal, in order (data as journaled, redacted). */
    events: z.array(
      z.strictObject({
        seq: z.int(),
        type: z.string(),
        at: Timestamp,
        data: z.record(z.string(), z.unknown()),
      }),
    ),
    /** The W3C trace id of the admission, which the turn's spans join; null without one. */
    traceId: z.string().nullable(),
    /** Jaeger's page for it when JAEGER_UI_URL is set. */
    traceUrl: z.string().nullable(),
  })
  .register(ApiSchemas, { id: 'TurnTimeline' });
export type TurnTimelineResponse = z.infer<typeof TurnTimelineResponse>;

/** A round's index in a path (`/rounds/:index`): a non-negative integer, as the timeline numbers rounds. */
export const RoundIndexParam = z
  .string()
  .regex(/^\d{1,9}$/, 'must be a round index (0, 1, 2, ...)')
  .transform(Number);

/** Where a message of a round's context came from (libs/engine ContextSource). */
export const ContextSourceName = z.enum(['transcript', 'recall', 'work_items', 'summary', 'other']);

export const RoundContextResponse = z
  .strictObject({
    round: z.int(),
    recordedAt: Timestamp,
    /** The system prompt, byte for byte. */
    system: z.string(),
    /** The tools offered, as the request carried them. */
    tools: z.array(
      z.strictObject({
        name: z.string(),
        description: z.string(),
        parameters: z.record(z.string(), z.unknown()),
        strict: z.boolean().optional(),
      }),
    ),
    /** The messages after the system prompt, in the order sent. */
    messages: z.array(
      z.strictObject({
        role: z.enum(['user', 'assistant', 'tool']),
        content: z.string(),
        toolCalls: z
          .array(z.strictObject({ id: z.string(), name: z.string(), arguments: z.string() }))
          .optional(),
        toolCallId: z.string().optional(),
        /** The tool a `tool` message answers. */
        name: z.string().optional(),
        source: ContextSourceName,
        /** Estimated (about four characters a token). */
        tokens: z.int(),
      }),
    ),
    tokens: z.strictObject({ system: z.int(), tools: z.int(), messages: z.int(), total: z.int() }),
  })
  .register(ApiSchemas, { id: 'RoundContext' });
export type RoundContextResponse = z.infer<typeof RoundContextResponse>;

/** The original of a lossily compacted tool result (docs/adr/0033), GET /v1/tool-results/:id. */
export const ToolResultOriginalResponse = z
  .strictObject({
    id: z.string(),
    tool: z.string(),
    /** json | log | diff | html | search | code | text | oversize */
    kind: z.string(),
    content: z.string(),
    bytes: z.int(),
    sessionId: Id.nullable(),
    turnId: Id.nullable(),
    callId: z.string().nullable(),
    createdAt: Timestamp,
    expiresAt: Timestamp,
  })
  .register(ApiSchemas, { id: 'ToolResultOriginal' });
export type ToolResultOriginalResponse = z.infer<typeof ToolResultOriginalResponse>;
