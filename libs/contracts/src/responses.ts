import { z } from 'zod';
import {
  AuditAction,
  ArchivistSettings,
  ToolSelection,
  Budgets,
  MemorySettings,
  RecallMode,
  ModelPrices,
  ModelRoutes,
  RateLimitOverrides,
  SessionStatus,
  Tier,
  ToolResultCompression,
  ToolSchemaMode,
} from './api';
import {
  ContinuationTriggerKind,
  AdmissionContext,
  AuthorityClass,
  DeliverySurface,
  MessageBody,
  MessageKind,
  MessageOrigin,
  Priority,
  TrustLevel,
} from './envelope';
import { CancelReason } from './cancel-reasons';
import { ERROR_CODES } from './errors';
import { McpApproval } from './mcp';
import { Scorer } from './evaluation';
import { TriggerDeliveryMode, TriggerScheme } from './triggers';
import {
  APPROVAL_POLICIES,
  JournaledFrame,
  LiveFrame,
  TurnEvent,
  TurnStatus as TurnStatuses,
} from './events';
import { QueueName } from './jobs';
import { SchedulePayload } from './schedules';
import { USAGE_DIMENSIONS } from './usage';

/**
 * Response bodies of the HTTP API. The gateway's presenters are typed by these schemas and the
 * OpenAPI document is generated from them, so the two cannot drift. Objects are strict: a field a
 * presenter adds or drops without a change here fails to compile and fails the OpenAPI e2e test.
 * Free-form JSON the engine writes (attempt timeline, failure artifact, decision record, tool
 * results, event data) is documented by its known fields and left open.
 */

/** Response schemas by their OpenAPI component name; the gateway turns this registry into `components.schemas`. */
export const ApiSchemas = z.registry<{ id: string }>();

const Id = z.uuid();
const Timestamp = z.iso.datetime({ offset: true });
/** Money as a decimal string, so no precision is lost in JSON. */
const Usd = z.string().regex(/^-?\d+(\.\d+)?$/);
const Json = z.unknown();
const JsonObject = z.record(z.string(), z.unknown());

/** `{error: {code, message, details?}}`: the one shape of every 4xx and 5xx. */
export const ErrorResponse = z
  .strictObject({
    error: z.strictObject({
      code: z.enum(ERROR_CODES),
      message: z.string(),
      /** For validation_failed: `{issues: [{path, message, code}]}`. */
      details: Json.optional(),
    }),
  })
  .register(ApiSchemas, { id: 'Error' });
export type ErrorResponse = z.infer<typeof ErrorResponse>;

export const TenantResponse = z
  .strictObject({ id: Id, name: z.string(), createdAt: Timestamp })
  .register(ApiSchemas, { id: 'Tenant' });
export type TenantResponse = z.infer<typeof TenantResponse>;

export const ApiKeyResponse = z
  .strictObject({
    id: Id,
    name: z.string(),
    /** The key's first characters, safe to display. */
    prefix: z.string(),
    createdAt: Timestamp,
    /** When a request last used the key, to about a minute (written at most once a minute); null if never. */
    lastUsedAt: Timestamp.nullable(),
    revokedAt: Timestamp.nullable(),
    /** admin | developer | approver | reader | ingest (docs/adr/0066). */
    role: z.enum(['admin', 'developer', 'approver', 'reader', 'ingest']),
    /** The agents the key is limited to; null: every agent of the tenant. */
    agentIds: z.array(Id).nullable(),
    /** When the key stops working; null: never. */
    expiresAt: Timestamp.nullable(),
  })
  .register(ApiSchemas, { id: 'ApiKey' });
export type ApiKeyResponse = z.infer<typeof ApiKeyResponse>;

/** A new key: the only response that carries the key itself. */
export const CreatedApiKeyResponse = ApiKeyResponse.extend({ key: z.string() }).register(ApiSchemas, {
  id: 'CreatedApiKey',
});
export type CreatedApiKeyResponse = z.infer<typeof CreatedApiKeyResponse>;

export const ApiKeyListResponse = z
  .strictObject({ data: z.array(ApiKeyResponse), nextCursor: z.string().nullable() })
  .register(ApiSchemas, { id: 'ApiKeyList' });
export type ApiKeyListResponse = z.infer<typeof ApiKeyListResponse>;

/** An external trigger capability (docs/adr/0019); its token and secret are shown only when issued. */
export const TriggerResponse = z
  .strictObject({
    id: Id,
    agentId: Id,
    name: z.string(),
    scheme: TriggerScheme,
    deliveryMode: TriggerDeliveryMode,
    /** The standing session deliveries are admitted into; null: a new session per delivery. */
    sessionId: Id.nullable(),
    rules: z.array(JsonObject),
    /** Until then the secret before the last rotation is still accepted. */
    previousSecretExpiresAt: Timestamp.nullable(),
    createdAt: Timestamp,
    revokedAt: Timestamp.nullable(),
    /** Deliveries stored for the trigger (a replay of a delivery id is not counted; docs/adr/0060). */
    deliveryCount: z.int(),
    /** When the last delivery arrived (the trigger last fired); null before the first. */
    lastDeliveryAt: Timestamp.nullable(),
  })
  .register(ApiSchemas, { id: 'Trigger' });
export type TriggerResponse = z.infer<typeof TriggerResponse>;

/**
 * A trigger just created or rotated: the only responses that carry its URL token (`path`, to append
 * to the gateway's public URL; null when no new token was issued, as in a signed trigger's rotation)
 * and its signing secret (null when we generated none: `token` triggers, and `slack`, whose secret
 * the tenant gave).
 */
export const IssuedTriggerResponse = TriggerResponse.extend({
  path: z.string().nullable(),
  signingSecret: z.string().nullable(),
}).register(ApiSchemas, { id: 'IssuedTrigger' });
export type IssuedTriggerResponse = z.infer<typeof IssuedTriggerResponse>;

export const TriggerListResponse = z
  .strictObject({ data: z.array(TriggerResponse), nextCursor: z.string().nullable() })
  .register(ApiSchemas, { id: 'TriggerList' });
export type TriggerListResponse = z.infer<typeof TriggerListResponse>;

/**
 * A webhook delivery a trigger stored, and triage's decision on it (docs/adr/0018, 0019): `decision`
 * is null until triage decided. The body itself is not shown (it is the sender's untrusted text, and
 * may carry what the sender should not have sent); its source and event type are.
 */
export const TriggerDeliveryResponse = z
  .strictObject({
    id: Id,
    triggerId: Id,
    /** The sender's delivery id (or the Idempotency-Key), by which replays are deduplicated. */
    deliveryId: z.string(),
    source: z.string().nullable(),
    eventType: z.string().nullable(),
    /** The ingress checked its signature (a `token` trigger's deliveries never are). */
    verified: z.boolean(),
    decision: z.enum(['drop', 'notify', 'spawn_reactor', 'spawn_orchestrator']).nullable(),
    reason: z.string().nullable(),
    /** Who decided: rule, model, cache or default. */
    decisionSource: z.string().nullable(),
    decisionModel: z.string().nullable(),
    decisionCostUsd: Usd,
    /** The message it was admitted as, when it was. */
    messageId: Id.nullable(),
    createdAt: Timestamp,
    decidedAt: Timestamp.nullable(),
  })
  .register(ApiSchemas, { id: 'TriggerDelivery' });
export type TriggerDeliveryResponse = z.infer<typeof TriggerDeliveryResponse>;

export const TriggerDeliveryPageResponse = z
  .strictObject({ data: z.array(TriggerDeliveryResponse), nextCursor: z.string().nullable() })
  .register(ApiSchemas, { id: 'TriggerDeliveryPage' });
export type TriggerDeliveryPageResponse = z.infer<typeof TriggerDeliveryPageResponse>;

/** What `POST /v1/hooks/{token}` answers: the stored delivery's id, the same for every replay of it. */
export const HookDeliveryResponse = z
  .strictObject({ deliveryId: Id, duplicate: z.boolean() })
  .register(ApiSchemas, { id: 'HookDelivery' });
export type HookDeliveryResponse = z.infer<typeof HookDeliveryResponse>;

/** Slack's signed `url_verification` handshake, answered with its challenge (nothing is stored). */
export const SlackChallengeResponse = z
  .strictObject({ challenge: z.string() })
  .register(ApiSchemas, { id: 'SlackChallenge' });
export type SlackChallengeResponse = z.infer<typeof SlackChallengeResponse>;

export const CreatedTenantResponse = z
  .strictObject({
    tenant: TenantResponse,
    apiKey: CreatedApiKeyResponse,
  })
  .register(ApiSchemas, { id: 'CreatedTenant' });
export type CreatedTenantResponse = z.infer<typeof CreatedTenantResponse>;

/** Opaque cursor of the next page; null on the last page. */
const NextCursor = z.string().nullable();

export const AgentResponse = z
  .strictObject({
    id: Id,
    name: z.string(),
    archetype: z.string(),
    tier: Tier,
    instructions: z.string(),
    /** `<provider>/<model>` or `hint:<route>`. */
    model: z.string(),
    fallbackModels: z.array(z.string()),
    tools: z.array(z.string()),
    allowedSubagents: z.array(z.string()),
    /** Tools whose calls by this agent wait for a human decision. */
    approvalRequired: z.array(z.string()),
    budgets: Budgets,
    /** TokenJuice for its tool results (docs/adr/0033): auto | full | light | off. */
    toolResultCompression: ToolResultCompression,
    /** The agent's own archivist settings (the tenant's apply to the fields it leaves out), docs/adr/0032. */
    archivist: ArchivistSettings,
    /** Semantic tool selection (docs/adr/0049): `{}` offers every tool. */
    toolSelection: ToolSelection,
    /** The agent's embedder; null: the built-in local/words-100d. */
    embedder: z.string().nullable(),
    /** Vector memory and recall settings (docs/adr/0050); `{}`: full-text recall, no vectors. */
    memory: MemorySettings,
    /** The agent's hourly side-effect budget (docs/adr/0058); null: unlimited. */
    maxActionsPerHour: z.int().nullable(),
    /** The agent's scorers (docs/adr/0062), versioned with the rest of its configuration. */
    scorers: z.array(Scorer),
    /** The agent's current configuration version (docs/adr/0061): GET /v1/agents/:id/versions lists them all. */
    version: z.int(),
    /** A built-in archetype's row, materialised by a sub-agent spawn (read-only; docs/adr/0025). */
    builtIn: z.boolean(),
    createdAt: Timestamp,
    updatedAt: Timestamp,
  })
  .register(ApiSchemas, { id: 'Agent' });
export type AgentResponse = z.infer<typeof AgentResponse>;

/** One tool's record for an agent (the `learning` post-turn hook's roll-up of its ended turns). */
export const AgentToolStatusResponse = z
  .strictObject({
    tool: z.string(),
    calls: z.int(),
    failures: z.int(),
    /** Failures per tool error kind (`timeout`, `http_error`, `invalid_arguments`...). */
    failuresByKind: z.record(z.string(), z.int()),
    /** failures / calls, 4 decimal places. */
    failureRate: z.number().min(0).max(1),
    avgLatencyMs: z.int(),
    maxLatencyMs: z.int(),
    lastUsedAt: Timestamp.nullable(),
    lastFailedAt: Timestamp.nullable(),
    lastFailureKind: z.string().nullable(),
  })
  .register(ApiSchemas, { id: 'AgentToolStatus' });
export type AgentToolStatusResponse = z.infer<typeof AgentToolStatusResponse>;

/**
 * The agent's lifecycle (seed 002 "Agent State"; docs/adr/0031): stopped and paused are the
 * operator's; awake_running (a turn runs), awaiting_task (a turn waits for a sub-agent), asleep (the
 * agent chose to sleep) and awake_idle are derived.
 */
export const AgentLifecycleResponse = z
  .strictObject({
    state: z.enum(['awake_idle', 'awake_running', 'awaiting_task', 'asleep', 'paused', 'stopped']),
    why: z.string(),
    since: Timestamp,
    /** A timed sleep's end. */
    until: Timestamp.nullable(),
    /** For a stopped agent: resume is required before new prompts; a wake does not override it. */
    hint: z.string().nullable(),
    currentWorkItemId: Id.nullable(),
  })
  .register(ApiSchemas, { id: 'AgentLifecycle' });
export type AgentLifecycleResponse = z.infer<typeof AgentLifecycleResponse>;

/** A model's capability flags (docs/adr/0059). */
export const ModelCapabilitiesResponse = z
  .strictObject({
    /** Takes image input. */
    vision: z.boolean(),
    /** Calls tools. */
    tools: z.boolean(),
    /** Has a native JSON-schema output mode (the engine validates every answer anyway, docs/adr/0048). */
    structuredOutput: z.boolean(),
  })
  .register(ApiSchemas, { id: 'ModelCapabilities' });

const EffectiveModelRef = z.strictObject({
  /** The concrete `<provider>/<model>`. */
  ref: z.string(),
  /** The route it came from (`hint:<route>` or the vision route), or null for a concrete reference. */
  route: z.string().nullable(),
  capabilities: ModelCapabilitiesResponse,
});

/**
 * The models the agent's turns run on now (docs/adr/0059), after the tenant's routes and the
 * deployment's default: a session's model override (docs/adr/0053) replaces these for that session.
 */
export const AgentEffectiveModelResponse = z
  .strictObject({
    model: EffectiveModelRef,
    fallbackModels: z.array(EffectiveModelRef),
    /** What a turn with image input runs on: the vision route first when the tenant has one; null: no model takes images. */
    forImages: z
      .strictObject({ model: EffectiveModelRef, fallbackModels: z.array(EffectiveModelRef) })
      .nullable(),
  })
  .register(ApiSchemas, { id: 'AgentEffectiveModel' });
export type AgentEffectiveModelResponse = z.infer<typeof AgentEffectiveModelResponse>;

/** What the agent's learning feeds back into its turns (docs/adr/0059), when `memory.learning` is on. */
export const AgentLearningResponse = z
  .strictObject({
    enabled: z.boolean(),
    /** The newest kept reflections (up to 5), newest first. */
    reflections: z.array(
      z.strictObject({ text: z.string(), turnId: Id, sessionId: Id, createdAt: Timestamp }),
    ),
    /** The user profile record, consolidated from the agent's `preference` memory records. */
    userProfile: z.strictObject({ content: z.string(), version: z.int(), updatedAt: Timestamp }).nullable(),
  })
  .register(ApiSchemas, { id: 'AgentLearning' });

/** GET /v1/agents/:id: the agent and its status (the list has the lifecycle, not the tool statistics). */
/** Candidate and baseline mean online scores as the canary's sweep computed them (docs/adr/0064). */
export const CanaryObservationResponse = z
  .strictObject({
    baselineMean: z.number().nullable(),
    candidateMean: z.number().nullable(),
    /** Scored turns of each side since the canary started. */
    n: z.strictObject({ baseline: z.int(), candidate: z.int() }),
  })
  .register(ApiSchemas, { id: 'CanaryObservation' });

/** An agent's canary (docs/adr/0064): the last one started, whatever its status. */
export const CanaryResponse = z
  .strictObject({
    agentId: Id,
    runId: Id,
    status: z.enum(['running', 'promoted', 'rolled_back', 'stopped']),
    baselineVersion: z.int(),
    candidateVersion: z.int(),
    sharePercent: z.number(),
    margin: z.number(),
    minScored: z.int(),
    /** The scorer compared; null: every score of the turn (scorers and feedback). */
    scorer: z.string().nullable(),
    /** What the sweep last saw while it ran (null: not evaluated yet). */
    observed: CanaryObservationResponse.extend({ at: Timestamp }).nullable(),
    /** How it ended: the evidence of an automatic rollback, or who promoted or stopped it (null while running). */
    decision: z
      .strictObject({
        outcome: z.enum(['promoted', 'rolled_back', 'stopped']),
        by: z.string(),
        baselineMean: z.number().nullable(),
        candidateMean: z.number().nullable(),
        n: z.strictObject({ baseline: z.int(), candidate: z.int() }),
        /** The version a promotion created (its configuration equals the candidate's). */
        promotedAs: z.int().optional(),
      })
      .nullable(),
    createdBy: z.string().nullable(),
    startedAt: Timestamp,
    decidedAt: Timestamp.nullable(),
  })
  .register(ApiSchemas, { id: 'Canary' });
export type CanaryResponse = z.infer<typeof CanaryResponse>;

export const AgentDetailResponse = AgentResponse.extend({
  /** The agent's canary (the last one started, docs/adr/0064), or null when it never had one. */
  canary: CanaryResponse.nullable(),
  status: z.strictObject({
    /** Per tool the agent has called, by name; tools it never called are absent. */
    tools: z.array(AgentToolStatusResponse),
    lifecycle: AgentLifecycleResponse,
    /** The effective model: the agent's model and fallbacks after routes and defaults (docs/adr/0059). */
    effectiveModel: AgentEffectiveModelResponse,
    learning: AgentLearningResponse,
  }),
}).register(ApiSchemas, { id: 'AgentDetail' });
export type AgentDetailResponse = z.infer<typeof AgentDetailResponse>;

/** A built-in archetype every tenant has (seed 000; docs/adr/0025-archetypes-and-tiers.md). */
export const ArchetypeResponse = z
  .strictObject({
    name: z.string(),
    tier: Tier,
    description: z.string(),
    /** The narrow system prompt its agents run with. */
    instructions: z.string(),
    /** Tools by name; a deployment that does not register one does not offer it. */
    tools: z.array(z.string()),
    /** A model route hint, `hint:<route>`. */
    model: z.string(),
  })
  .register(ApiSchemas, { id: 'Archetype' });
export type ArchetypeResponse = z.infer<typeof ArchetypeResponse>;

export const ArchetypeListResponse = z
  .strictObject({ data: z.array(ArchetypeResponse) })
  .register(ApiSchemas, { id: 'ArchetypeList' });
export type ArchetypeListResponse = z.infer<typeof ArchetypeListResponse>;

/** One agent of the list: the agent and its lifecycle (read for the whole page in one statement). */
export const AgentListItemResponse = AgentResponse.extend({
  lifecycle: AgentLifecycleResponse,
}).register(ApiSchemas, { id: 'AgentListItem' });
export type AgentListItemResponse = z.infer<typeof AgentListItemResponse>;

export const AgentPageResponse = z
  .strictObject({ data: z.array(AgentListItemResponse), nextCursor: NextCursor })
  .register(ApiSchemas, { id: 'AgentPage' });
export type AgentPageResponse = z.infer<typeof AgentPageResponse>;

export const SessionResponse = z
  .strictObject({
    id: Id,
    agentId: Id,
    status: SessionStatus,
    title: z.string().nullable(),
    metadata: JsonObject,
    usage: z.strictObject({ inputTokens: z.int(), outputTokens: z.int(), costUsd: Usd }),
    createdAt: Timestamp,
    updatedAt: Timestamp,
    /**
     * The session's last activity: its last admitted message, ended turn or change (the row's
     * `updatedAt`, which admission and each turn's end bump).
     */
    lastActivityAt: Timestamp,
    closedAt: Timestamp.nullable(),
    /**
     * A fork (docs/adr/0053): the session it was forked from, the turn it was forked at, and the last
     * turn seq of the copied prefix (0: nothing copied); null for a session that is not a fork.
     */
    forkedFrom: z
      .strictObject({ sessionId: Id, turnId: Id.nullable(), turnSeq: z.int().nullable() })
      .nullable(),
    /**
     * The session's own agent settings (docs/adr/0053): every turn runs with this model (no fallbacks)
     * and these instructions over its agent's; null when it has none.
     */
    overrides: z
      .strictObject({ model: z.string().optional(), instructions: z.string().optional() })
      .nullable(),
    /**
     * The agent version the session is pinned to (docs/adr/0061): its turns run on that version's
     * configuration; null: it follows the agent's latest (sessions the runtime starts). Re-pin with
     * PATCH /v1/sessions/:id.
     */
    agentVersion: z.int().nullable(),
  })
  .register(ApiSchemas, { id: 'Session' });
export type SessionResponse = z.infer<typeof SessionResponse>;

export const SessionPageResponse = z
  .strictObject({ data: z.array(SessionResponse), nextCursor: NextCursor })
  .register(ApiSchemas, { id: 'SessionPage' });
export type SessionPageResponse = z.infer<typeof SessionPageResponse>;

/** POST /v1/sessions/:id/fork (docs/adr/0053): the new session and where it was forked. */
export const ForkSessionResponse = z
  .strictObject({
    session: SessionResponse,
    forkPoint: z.strictObject({
      /** The session forked from. */
      sessionId: Id,
      /** The fork point: a turn of it that had ended. */
      turnId: Id,
      /** That turn's seq. */
      turnSeq: z.int(),
      position: z.enum(['after', 'before']),
      /** The last turn seq of the copied prefix (`turnSeq` after it, `turnSeq - 1` before it). */
      forkedAtTurnSeq: z.int(),
      /** How many ended turns were copied. */
      copiedTurns: z.int(),
    }),
  })
  .register(ApiSchemas, { id: 'ForkedSession' });
export type ForkSessionResponse = z.infer<typeof ForkSessionResponse>;

/** POST /v1/sessions/:id/rewind (docs/adr/0053): the turns left out of the session's history from now on. */
export const RewindSessionResponse = z
  .strictObject({
    sessionId: Id,
    /** The turns this rewind marked, in seq order (the one given first). */
    rewoundTurnIds: z.array(Id),
    /** The session's context compaction summarised rewound turns and was cleared. */
    compactionCleared: z.boolean(),
  })
  .register(ApiSchemas, { id: 'RewoundSession' });
export type RewindSessionResponse = z.infer<typeof RewindSessionResponse>;

/** GET /v1/sessions/:id/lineage (docs/adr/0053): where the session was forked from, and its forks. */
export const SessionLineageResponse = z
  .strictObject({
    sessionId: Id,
    /**
     * The sessions it descends from, nearest first, each with the turn of it the next one down was
     * forked at; `missing` when that session no longer exists (the chain ends there).
     */
    ancestors: z.array(
      z.strictObject({
        sessionId: Id,
        forkedAtTurnId: Id.nullable(),
        forkedAtTurnSeq: z.int().nullable(),
        createdAt: Timestamp.nullable(),
        missing: z.boolean(),
      }),
    ),
    /** Its own forks, oldest first (at most 500). */
    children: z.array(
      z.strictObject({
        sessionId: Id,
        forkedAtTurnId: Id.nullable(),
        forkedAtTurnSeq: z.int().nullable(),
        createdAt: Timestamp,
      }),
    ),
  })
  .register(ApiSchemas, { id: 'SessionLineage' });
export type SessionLineageResponse = z.infer<typeof SessionLineageResponse>;

/** One transcript entry, with the envelope's provenance. */
export const MessageResponse = z
  .strictObject({
    id: Id,
    sessionId: Id,
    turnId: Id.nullable(),
    role: z.enum(['user', 'assistant', 'tool']),
    kind: MessageKind,
    origin: MessageOrigin,
    trust: TrustLevel,
    authorityClass: AuthorityClass,
    priority: Priority,
    deliverySurface: DeliverySurface.nullable(),
    admissionContext: AdmissionContext.nullable(),
    body: MessageBody,
    /** Tool calls an assistant entry asked for; `arguments` is the model's raw JSON text. */
    toolCalls: z.array(z.strictObject({ id: z.string(), name: z.string(), arguments: z.string() })),
    /** For role `tool`: the call this result answers. */
    toolCallId: z.string().nullable(),
    metadata: JsonObject,
    correlationId: z.string().nullable(),
    causationId: z.string().nullable(),
    createdAt: Timestamp,
    /**
     * Seed 002 `triggerKind` (docs/adr/0060), derived from `kind`: operator_input, external_event,
     * timer_tick, system_tick, task_result, task_status, control or internal_followup.
     */
    triggerKind: ContinuationTriggerKind,
    /**
     * Seed 002 `sourceRefs` (docs/adr/0060): stable ids of where the message came from, set by the
     * runtime only: `triggerId`, `deliveryId` (the stored delivery) and `externalDeliveryId` (the
     * sender's) for a trigger delivery; `wakeHintId`, and `triggerId` / `deliveryId` when there was one,
     * for a wake hint's system tick. Empty for other messages.
     */
    sourceRefs: z.record(z.string(), z.string()),
  })
  .register(ApiSchemas, { id: 'Message' });
export type MessageResponse = z.infer<typeof MessageResponse>;

export const MessagePageResponse = z
  .strictObject({ data: z.array(MessageResponse), nextCursor: NextCursor })
  .register(ApiSchemas, { id: 'MessagePage' });
export type MessagePageResponse = z.infer<typeof MessagePageResponse>;

export const AdmitMessageResponse = z
  .strictObject({
    messageId: Id,
    turnId: Id,
    status: z.enum(Object.values(TurnStatuses)),
  })
  .register(ApiSchemas, { id: 'AdmittedMessage' });
export type AdmitMessageResponse = z.infer<typeof AdmitMessageResponse>;

export const ToolCallResponse = z
  .strictObject({
    id: Id,
    /** The provider's id for the call. */
    callId: z.string(),
    name: z.string(),
    arguments: Json,
    sideEffect: z.enum(['read_only', 'local_write', 'network', 'destructive']),
    status: z.enum(['pending', 'running', 'completed', 'failed']),
    /** The tool's result once completed; null otherwise. */
    result: Json,
    /** The classified tool error of a failed call; null otherwise. */
    error: Json,
    startedAt: Timestamp.nullable(),
    completedAt: Timestamp.nullable(),
    durationMs: z.int().nullable(),
    /**
     * A replay's call answered from this recorded call of the original turn (its tool_calls id), not
     * executed (docs/adr/0054); null for every call that ran (or was refused).
     */
    replayedFromToolCallId: Id.nullable(),
  })
  .register(ApiSchemas, { id: 'ToolCall' });
export type ToolCallResponse = z.infer<typeof ToolCallResponse>;

/** One provider attempt of the timeline (libs/engine ProviderAttempt); more fields may appear. */
export const ProviderAttemptResponse = z
  .looseObject({
    round: z.int(),
    provider: z.string().optional(),
    model: z.string(),
    attempt: z.int(),
    maxAttempts: z.int(),
    startedAt: z.string(),
    completedAt: z.string(),
    durationMs: z.number(),
    outcome: z.enum(['succeeded', 'retrying', 'retries_exhausted', 'fail_fast_aborted']),
    failureKind: z.string().optional(),
    requestId: z.string().optional(),
  })
  .register(ApiSchemas, { id: 'ProviderAttempt' });
export type ProviderAttemptResponse = z.infer<typeof ProviderAttemptResponse>;

/**
 * Why a turn failed (seed 002 failure artifact; libs/engine FailureArtifact); more fields may appear.
 * Inline rather than a component: OpenAPI 3.0 cannot mark a `$ref` nullable.
 */
export const FailureArtifactResponse = z.looseObject({
  kind: z.string(),
  category: z.enum(['transport', 'protocol', 'runtime', 'unknown']),
  message: z.string(),
  brief: z.string(),
});
export type FailureArtifactResponse = z.infer<typeof FailureArtifactResponse>;

/**
 * A sub-agent task (docs/adr/0024): a parent turn's spawn, run as the child's own turn. `handback` is
 * what the parent saw: `completed {result}` or `incomplete {reason}`.
 */
export const TaskResponse = z
  .strictObject({
    id: Id,
    /** The name the parent spawned (an agent of the tenant or a built-in archetype). */
    agent: z.string(),
    agentId: Id,
    status: z.enum(['pending', 'running', 'completed', 'failed', 'cancelled']),
    /** A root turn is depth 0; its child 1 (at most 3). */
    depth: z.int(),
    /** The parent waits for it (a blocking spawn, or wait_subagent). */
    blocking: z.boolean(),
    parentTurnId: Id.nullable(),
    parentSessionId: Id.nullable(),
    childSessionId: Id.nullable(),
    childTurnId: Id.nullable(),
    input: JsonObject,
    handback: JsonObject.nullable(),
    /** The child's final text, bounded. */
    output: z.string().nullable(),
    /** The child turn's cost. */
    costUsd: Usd,
    createdAt: Timestamp,
    completedAt: Timestamp.nullable(),
    closedAt: Timestamp.nullable(),
    /**
     * How the ended task's handback reached its parent (docs/adr/0057): `waiting_turn` (a parent turn
     * waited for it and resumed with it), `tool_call` (wait_subagent or list_subagents answered with it),
     * `task_result` (a `task_result` message was admitted into the parent's session, starting a parent
     * turn: `rejoinTurnId`), `skipped` (the parent closed it, or its spawning turn was cancelled); null: not yet.
     */
    rejoin: z.enum(['waiting_turn', 'tool_call', 'task_result', 'skipped']).nullable(),
    rejoinedAt: Timestamp.nullable(),
    /** The `task_result` message and the parent turn it started, for `rejoin: task_result`. */
    rejoinMessageId: Id.nullable(),
    rejoinTurnId: Id.nullable(),
  })
  .register(ApiSchemas, { id: 'Task' });
export type TaskResponse = z.infer<typeof TaskResponse>;

/** Inline in the Turn schema (a nullable `$ref` is not valid OpenAPI 3.0). */
export const TurnClosureResponse = z.strictObject({
  outcome: z.enum(['completed', 'continuable', 'waiting', 'failed']),
  waitingReason: z
    .enum(['awaiting_operator_input', 'awaiting_external_change', 'awaiting_task_result', 'awaiting_timer'])
    .optional(),
  /** Only for `awaiting_task_result`: the sub-agent tasks whose results are still to rejoin the session (docs/adr/0057). */
  taskIds: z.array(Id).optional(),
  workSignal: z
    .strictObject({
      workItemId: Id,
      status: z.enum(['active', 'queued']),
      reactivationMode: z.enum(['continue_active', 'activate_queued']),
    })
    .optional(),
  workItemId: Id.nullable(),
  runtimePosture: z.enum(['awake', 'asleep', 'paused', 'stopped']),
});
export type TurnClosureResponse = z.infer<typeof TurnClosureResponse>;

/** Inline in the Turn schema: the continuation resolution of a turn's input (docs/adr/0057). */
export const TurnContinuationResponse = z.strictObject({
  /** False only for a `task_status` input (observational). */
  modelVisible: z.boolean(),
  priorClosureOutcome: z.enum(['completed', 'continuable', 'waiting', 'failed']),
  priorWaitingReason: z
    .enum(['awaiting_operator_input', 'awaiting_external_change', 'awaiting_task_result', 'awaiting_timer'])
    .optional(),
  /** The session's previous ended turn, whose closure this resolves. */
  priorTurnId: Id,
  matchedWaitingReason: z.boolean(),
  evidence: z.array(z.string()),
});
export type TurnContinuationResponse = z.infer<typeof TurnContinuationResponse>;

/** One score of a turn (docs/adr/0062): a scorer's verdict or posted feedback. */
export const TurnScoreResponse = z
  .strictObject({
    scorer: z.string(),
    kind: z.enum(['llm_judge', 'rule', 'webhook', 'feedback']),
    source: z.enum(['scorer', 'feedback']),
    status: z.enum(['scored', 'skipped', 'error']),
    score: z.number().nullable(),
    passed: z.boolean().nullable(),
    reason: z.string().nullable(),
    label: z.string().nullable(),
    value: z.number().nullable(),
    givenBy: z.string().nullable(),
    traceId: z.string().nullable(),
    createdAt: Timestamp,
  })
  .register(ApiSchemas, { id: 'TurnScore' });
export type TurnScoreResponse = z.infer<typeof TurnScoreResponse>;

/** POST /v1/turns/:id/feedback's answer: the feedback row. */
export const TurnFeedbackResponse = TurnScoreResponse.extend({
  id: Id,
  turnId: Id,
  /** The comment given, or null. */
  comment: z.string().nullable(),
}).register(ApiSchemas, { id: 'TurnFeedback' });
export type TurnFeedbackResponse = z.infer<typeof TurnFeedbackResponse>;

/** GET /v1/agents/:id/scores: mean score and pass rate per version, UTC day, scorer and source. */
export const AgentScoresResponse = z
  .strictObject({
    data: z.array(
      z.strictObject({
        /** The agent version the scored turns ran on; null for turns that ran before versions. */
        version: z.int().nullable(),
        /** The UTC day, YYYY-MM-DD. */
        day: z.string(),
        scorer: z.string(),
        source: z.enum(['scorer', 'feedback']),
        /** Rows counted: status scored with a score. */
        count: z.int(),
        meanScore: z.number().nullable(),
        /** Share of rows with passed true among those with passed set; null when none has. */
        passRate: z.number().nullable(),
      }),
    ),
  })
  .register(ApiSchemas, { id: 'AgentScores' });
export type AgentScoresResponse = z.infer<typeof AgentScoresResponse>;

export const TurnResponse = z
  .strictObject({
    id: Id,
    sessionId: Id,
    agentId: Id,
    inputMessageId: Id,
    /** Admission order within the session. */
    seq: z.int(),
    status: z.enum(Object.values(TurnStatuses)),
    priority: Priority,
    /** The model that answered; null until a round ran. */
    model: z.string().nullable(),
    stopReason: z.string().nullable(),
    finalText: z.string().nullable(),
    iterations: z.int(),
    /**
     * Tokens over the turn's own provider calls. inputTokens counts every prompt token; cachedTokens of
     * them were read from the provider's prompt cache, cacheWriteTokens written to it (docs/adr/0032).
     */
    usage: z.strictObject({
      inputTokens: z.int(),
      outputTokens: z.int(),
      cachedTokens: z.int(),
      cacheWriteTokens: z.int(),
    }),
    costUsd: Usd,
    /**
     * What the provider's prompt cache saved over the turn's calls, USD (exact decimal): their cost
     * with every prompt token at the input rate, less costUsd's part for them; negative when the calls
     * only wrote the cache.
     */
    cacheSavedUsd: Usd,
    /**
     * What costUsd is worth (ADR 0007): `priced` from a price table or override, `provider_reported`
     * when every call's cost came from the provider, `unpriced` when a call's model had no price (booked
     * at zero) or a maxUsd budget was refused for that reason; null before any provider call.
     */
    costStatus: z.enum(['priced', 'provider_reported', 'unpriced']).nullable(),
    attempts: z.array(ProviderAttemptResponse),
    failure: FailureArtifactResponse.nullable(),
    /** The decision record (seed 001 stage 6): the strategy the turn took. */
    decision: JsonObject.nullable(),
    /** Finalisation steps that failed; the turn's result stands. */
    finalisationErrors: z.array(JsonObject),
    toolCalls: z.array(ToolCallResponse),
    createdAt: Timestamp,
    startedAt: Timestamp.nullable(),
    completedAt: Timestamp.nullable(),
    /** When a cancel was requested (POST /v1/turns/:id/cancel, `multitask: interrupt`); null if never. */
    cancelRequestedAt: Timestamp.nullable(),
    /**
     * Why the turn was cancelled, or why a cancel was requested (docs/adr/0055); null when neither. A
     * turn that ended before its worker reached a safe point keeps the request's reason beside its own
     * status. A deadline or a budget that ends a turn is its stopReason (`completed`), not this.
     */
    cancelReason: CancelReason.nullable(),
    /** The free text given with the cancel (the client's `reason`, the parent turn a cascade came from); null if none. */
    cancelNote: z.string().nullable(),
    /** The work item the turn was bound to when it began (the agent's current one; docs/adr/0031). */
    workItemId: Id.nullable(),
    /**
     * When a rewind left the turn out of its session's history (docs/adr/0053); null while it is part of
     * it. A rewound turn is never deleted: its journal and transcript stay.
     */
    rewoundAt: Timestamp.nullable(),
    /** In a fork (docs/adr/0053): the turn this one copies (its tool calls and cost stay the original's). */
    copiedFromTurnId: Id.nullable(),
    /**
     * The turn this one replays (POST /v1/turns/:id/replay, docs/adr/0054): its side-effecting calls
     * were answered from that turn's recorded results, or waited for a person; null for other turns.
     */
    replayOfTurnId: Id.nullable(),
    /** The agent version the turn ran on (docs/adr/0061); null until it is first claimed. */
    agentVersion: z.int().nullable(),
    /**
     * The closure decision, recorded when the turn ended (seed 002 "Closure Decision", docs/adr/0031);
     * null before (and for a turn whose worker died between its end and the record).
     */
    closure: TurnClosureResponse.nullable(),
    /**
     * Continuation resolution (seed 002, docs/adr/0057), set when the turn first ran and the session's
     * turn before it was waiting: which waiting reason this turn's input matched, with evidence
     * (`prior_turn:<id>`, `message:<id>`, `kind:<kind>`, `task:<id>`); null otherwise.
     */
    continuation: TurnContinuationResponse.nullable(),
    /** GET /v1/turns/:id only: the sub-agent tasks this turn spawned, oldest first (docs/adr/0024). */
    children: z.array(TaskResponse).optional(),
    /**
     * GET /v1/turns/:id only: what its sub-agents' child turns (and theirs, recursively) cost; it
     * counts against this turn's maxUsd (docs/adr/0025).
     */
    childrenCostUsd: Usd.optional(),
    /** GET /v1/turns/:id only: costUsd + childrenCostUsd. */
    totalCostUsd: Usd.optional(),
    /**
     * GET /v1/turns/:id only (docs/adr/0060): the memory records recalled into the turn's context, each
     * once, as its `memory_recalled` events journal them: `ref` (the record's source_ref), kind, title,
     * rank `score` and search `path` (null for a standing preference), `via` (episodic recall, the
     * context pack's facts or preferences) and where the record came from (`source`, `sourceTurnId`,
     * `sourceSessionId`): trace a bad answer back to a poisoned memory.
     */
    recalled: z
      .array(
        z.strictObject({
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
      )
      .optional(),
    /**
     * GET /v1/turns/:id only (docs/adr/0062): the turn's scores, oldest first — each scorer's verdict
     * (`source: scorer`; `status` skipped or error with `reason`) and any feedback (`source: feedback`).
     */
    scores: z.array(TurnScoreResponse).optional(),
  })
  .register(ApiSchemas, { id: 'Turn' });
export type TurnResponse = z.infer<typeof TurnResponse>;

/** GET /v1/sessions/:id/turns: the session's turns by seq, rewound ones included (docs/adr/0053). */
export const TurnPageResponse = z
  .strictObject({ data: z.array(TurnResponse), nextCursor: NextCursor })
  .register(ApiSchemas, { id: 'TurnPage' });
export type TurnPageResponse = z.infer<typeof TurnPageResponse>;
/** POST /v1/turns/:id/replay's answer (docs/adr/0054): the replay turn, queued in a fork of the session. */
export const TurnReplayResponse = z
  .strictObject({
    replay: z.strictObject({
      /** The replay turn (GET /v1/turns/:id; its comparison: GET /v1/turns/:id/comparison). */
      turnId: Id,
      /** The fork it runs in: the session forked just before the replayed turn, with the overrides. */
      sessionId: Id,
      /**
       * The turn it replays: the turn asked for, or for a fork's copy of a turn the turn it copies
       * (whose tool calls were recorded).
       */
      originalTurnId: Id,
      status: z.enum(Object.values(TurnStatuses)),
    }),
  })
  .register(ApiSchemas, { id: 'TurnReplay' });
export type TurnReplayResponse = z.infer<typeof TurnReplayResponse>;

/** One side of a replay's comparison (docs/adr/0054). */
export const TurnSummaryResponse = z
  .strictObject({
    turnId: Id,
    sessionId: Id,
    status: z.enum(Object.values(TurnStatuses)),
    /** The model that answered; null until a round ran. */
    model: z.string().nullable(),
    finalText: z.string().nullable(),
    /** Its tool calls in the order the model asked for them. */
    toolCalls: z.array(
      z.strictObject({
        name: z.string(),
        arguments: Json,
        sideEffect: z.enum(['read_only', 'local_write', 'network', 'destructive']),
        status: z.enum(['pending', 'running', 'completed', 'failed']),
        /** Answered from the original's recorded result, not executed. */
        replayed: z.boolean(),
      }),
    ),
    inputTokens: z.int(),
    outputTokens: z.int(),
    costUsd: Usd,
    /** Start to end, less the time it waited for a person or a sub-agent; null until it ended. */
    latencyMs: z.int().nullable(),
  })
  .register(ApiSchemas, { id: 'TurnSummary' });
export type TurnSummaryResponse = z.infer<typeof TurnSummaryResponse>;

/** GET /v1/turns/:id/comparison (docs/adr/0054): a replay beside the turn it replays. */
export const TurnComparisonResponse = z
  .strictObject({
    original: TurnSummaryResponse,
    replay: TurnSummaryResponse,
    /** Null until the replay has ended. */
    diff: z
      .strictObject({
        finalTextEqual: z.boolean(),
        /** The same tools with canonically equal arguments (object keys in any order), in the same order. */
        toolCallsEqual: z.boolean(),
        /** replay − original. */
        inputTokensDelta: z.int(),
        outputTokensDelta: z.int(),
        /** replay − original, USD (exact decimal; negative when the replay cost less). */
        costDeltaUsd: Usd,
        /** replay − original; null when either has no latency. */
        latencyDeltaMs: z.int().nullable(),
      })
      .nullable(),
  })
  .register(ApiSchemas, { id: 'TurnComparison' });
export type TurnComparisonResponse = z.infer<typeof TurnComparisonResponse>;

/**
 * What of a turn an A2A task is made of (docs/adr/0037): what `taskOf` reads, whether the turn comes
 * from GET /v1/turns/:id, a ListTasks page or the push hook's row.
 */
export type TaskTurn = Pick<
  TurnResponse,
  | 'id'
  | 'sessionId'
  | 'agentId'
  | 'status'
  | 'finalText'
  | 'failure'
  | 'stopReason'
  | 'createdAt'
  | 'startedAt'
  | 'completedAt'
> &
  /** Why a cancelled task was cancelled (docs/adr/0055): in its status message. */
  Partial<Pick<TurnResponse, 'cancelReason' | 'cancelNote'>>;

/**
 * A journal event: the event union of libs/contracts events.ts (one data schema per type). The same
 * shape is an SSE frame's data on the stream endpoints.
 */
export const EventResponse = TurnEvent.register(ApiSchemas, { id: 'Event' });
export type EventResponse = z.infer<typeof EventResponse>;

/**
 * One SSE frame's data on `GET /v1/turns/:id/stream` and `GET /v1/sessions/:id/stream` (docs/adr/0015):
 * a journaled event (`id: <seq>`, `streamed` when it already went out live) or a live one (no id,
 * `ephemeral: true`).
 */
export const StreamFrameResponse = z
  .union([JournaledFrame, LiveFrame])
  .register(ApiSchemas, { id: 'StreamFrame' });
export type StreamFrameResponse = z.infer<typeof StreamFrameResponse>;

export const EventPageResponse = z
  .strictObject({
    data: z.array(EventResponse),
    /** Pass as `after` to read on. */
    lastSeq: z.int(),
  })
  .register(ApiSchemas, { id: 'EventPage' });
export type EventPageResponse = z.infer<typeof EventPageResponse>;

export const SettingsResponse = z
  .strictObject({
    modelRoutes: ModelRoutes,
    blockedTools: z.array(z.string()),
    toolSchemaMode: ToolSchemaMode,
    /** The tenant's prices (USD per million tokens) over the deployment's and the maintained table. */
    modelPrices: ModelPrices,
    /** Tools whose calls by any agent of the tenant wait for a human decision. */
    approvalRequired: z.array(z.string()),
    /** How long an approval waits before it expires (ms); null: the deployment's APPROVAL_TTL_MS. */
    approvalTtlMs: z.int().nullable(),
    /** The deployment's DEFAULT_MODEL: what a hint resolves to when the tenant has not set its route. */
    defaultModel: z.string(),
    /** Endpoint of signed `notify` notifications, or null. */
    notifyUrl: z.string().nullable(),
    /** Whether a signing secret is set (the secret itself is never shown). */
    notifySecretSet: z.boolean(),
    /** What the tenant's turns may spend per UTC day (USD), or null: no cap (docs/adr/0026). */
    dailySpendLimitUsd: z.number().nullable(),
    /**
     * The operator's daily cap for the tenant (USD; PATCH /v1/admin/tenants/:id), or null. Read-only
     * here: the cap that holds is the smaller of this and `dailySpendLimitUsd`.
     */
    operatorDailySpendLimitUsd: z.number().nullable(),
    /** The archivist's settings in force for the tenant's agents, defaults filled in (docs/adr/0032). */
    archivist: z.strictObject({
      mode: z.enum(['debounced', 'every_turn', 'off']),
      afterTurns: z.int(),
      idleMs: z.int(),
    }),
    /**
     * What the tenant's LLM-judge scorers may spend per UTC day (USD) in force: its own
     * `evaluation.dailyBudgetUsd`, else the deployment's EVAL_DAILY_BUDGET_USD (docs/adr/0062).
     */
    evaluation: z.strictObject({ dailyBudgetUsd: z.number() }),
    /**
     * Encryption of the tenant's content at rest in force (docs/adr/0067): its own mode, else the
     * deployment's ENCRYPTION_DEFAULT_MODE; `available` says whether the deployment has a key provider.
     */
    encryption: z.strictObject({ mode: z.enum(['off', 'on', 'strict']), available: z.boolean() }),
    /** Days a session's content is kept after its last activity (docs/adr/0068); null: for ever. */
    transcriptRetentionDays: z.int().nullable(),
  })
  .register(ApiSchemas, { id: 'Settings' });
export type SettingsResponse = z.infer<typeof SettingsResponse>;

/** Ledger sums (GET /v1/usage): tokens as integers, USD as an exact decimal string. */
const UsageSums = {
  inputTokens: z.int(),
  outputTokens: z.int(),
  /** Of inputTokens, read from the provider's prompt cache. */
  cachedTokens: z.int(),
  /** Of inputTokens, written to the provider's prompt cache (docs/adr/0032). */
  cacheWriteTokens: z.int(),
  costUsd: Usd,
  /** What the prompt cache saved: the calls at the plain input rate less what they cost; may be negative. */
  cacheSavedUsd: Usd,
  /** Ledger entries summed: one per provider call. */
  entries: z.int(),
};

/** GET /v1/usage: the tenant's token and cost sums over `[from, to)`, in total and per group. */
export const UsageResponse = z
  .strictObject({
    from: Timestamp,
    to: Timestamp,
    groupBy: z.array(z.enum(USAGE_DIMENSIONS)),
    totals: z.strictObject(UsageSums),
    /** One per combination of the groupBy dimensions that has entries, in ascending order of them. */
    groups: z.array(
      z.strictObject({
        /** The UTC day, YYYY-MM-DD. */
        day: z.iso.date().optional(),
        agentId: Id.optional(),
        /** Null: work outside any session (the memory-embed job's embeddings). */
        sessionId: Id.nullable().optional(),
        model: z.string().optional(),
        /** chat | embedding. */
        kind: z.enum(['chat', 'embedding']).optional(),
        ...UsageSums,
      }),
    ),
  })
  .register(ApiSchemas, { id: 'Usage' });
export type UsageResponse = z.infer<typeof UsageResponse>;

/** One UTC day of a tenant's spend roll-up (the cost-log hook's, per ended turn). */
const DailySpendSums = {
  /** Exact decimal. */
  costUsd: Usd,
  inputTokens: z.int(),
  outputTokens: z.int(),
  /** Of inputTokens, read from the provider's prompt cache. */
  cachedTokens: z.int(),
  /** Of inputTokens, written to the provider's prompt cache (docs/adr/0032). */
  cacheWriteTokens: z.int(),
  /** What the prompt cache saved (exact decimal): the calls at the plain input rate less what they cost; may be negative. */
  cacheSavedUsd: Usd,
  providerCalls: z.int(),
  /** Turns whose last provider call fell on the day. */
  turns: z.int(),
};

/** GET /v1/usage/daily: the tenant's spend roll-up per UTC day, days without spend left out. */
export const DailySpendResponse = z
  .strictObject({
    from: z.iso.date(),
    to: z.iso.date(),
    totals: z.strictObject(DailySpendSums),
    days: z.array(z.strictObject({ day: z.iso.date(), ...DailySpendSums })),
  })
  .register(ApiSchemas, { id: 'DailySpend' });
export type DailySpendResponse = z.infer<typeof DailySpendResponse>;

export const HealthResponse = z
  .strictObject({ status: z.literal('ok') })
  .register(ApiSchemas, { id: 'Health' });
export type HealthResponse = z.infer<typeof HealthResponse>;

const Indicators = z.record(z.string(), z.looseObject({ status: z.enum(['up', 'down']) }));
/** @nestjs/terminus' health check result: 200 when every dependency is up, 503 otherwise. */
export const ReadinessResponse = z
  .strictObject({
    status: z.enum(['ok', 'error', 'shutting_down']),
    info: Indicators.optional(),
    error: Indicators.optional(),
    details: Indicators,
  })
  .register(ApiSchemas, { id: 'Readiness' });
export type ReadinessResponse = z.infer<typeof ReadinessResponse>;

/**
 * Who or what asked for the turn whose call waits: the envelope of its input message (an operator
 * prompt, a webhook or channel event, a timer tick, a sub-agent task result...). `authorityClass` is
 * admission's derivation (SPEC §2): `external_evidence` means the call was asked for by external content.
 */
export const ApprovalProvenance = z
  .strictObject({
    /** The turn's input message (GET /v1/sessions/:id/messages lists it). */
    messageId: Id,
    kind: MessageKind,
    origin: MessageOrigin,
    trust: TrustLevel,
    authorityClass: AuthorityClass,
  })
  .register(ApiSchemas, { id: 'ApprovalProvenance' });
export type ApprovalProvenance = z.infer<typeof ApprovalProvenance>;

export const ApprovalResponse = z
  .strictObject({
    id: Id,
    sessionId: Id,
    turnId: Id,
    /** The provider's id of the gated tool call. */
    callId: z.string(),
    toolName: z.string(),
    /** The call's arguments, redacted as journal events are. */
    arguments: Json,
    sideEffect: z.enum(['read_only', 'local_write', 'network', 'destructive']),
    /**
     * Why approval was asked: the tool declares it, the agent or the tenant lists it, the turn's input
     * is untrusted, or a replay's side-effecting call matches no recorded call of the original
     * (`replay_unrecorded_side_effect`, docs/adr/0054).
     */
    policy: z.enum(APPROVAL_POLICIES),
    status: z.enum(['pending', 'approved', 'rejected', 'expired', 'cancelled']),
    reason: z.string().nullable(),
    /** Who decided: the API key's id, `operator` (ADMIN_TOKEN acting as the tenant), or `system` (an expiry, a cancelled turn). */
    decidedBy: z.string().nullable(),
    decidedAt: Timestamp.nullable(),
    expiresAt: Timestamp,
    createdAt: Timestamp,
    /** The agent whose turn made the call. */
    agentId: Id,
    /** The agent's name; null only when its row is gone. */
    agentName: z.string().nullable(),
    /** Who or what asked: the envelope of the turn's input message; null once the transcript's retention dropped it. */
    provenance: ApprovalProvenance.nullable(),
  })
  .register(ApiSchemas, { id: 'Approval' });
export type ApprovalResponse = z.infer<typeof ApprovalResponse>;

export const ApprovalPageResponse = z
  .strictObject({ data: z.array(ApprovalResponse), nextCursor: NextCursor })
  .register(ApiSchemas, { id: 'ApprovalPage' });
export type ApprovalPageResponse = z.infer<typeof ApprovalPageResponse>;

/** A cron schedule that admits one `timer_tick` message into its session per fire (docs/adr/0020). */
export const ScheduleResponse = z
  .strictObject({
    id: Id,
    agentId: Id,
    /** The session its ticks are admitted into. */
    sessionId: Id,
    cron: z.string(),
    /** IANA time zone the expression is read in. */
    timezone: z.string(),
    payload: SchedulePayload,
    /** False while paused. */
    enabled: z.boolean(),
    /** The fire time of the last tick admitted. */
    lastRunAt: Timestamp.nullable(),
    /** The next fire time by the expression; null while paused. */
    nextRunAt: Timestamp.nullable(),
    createdAt: Timestamp,
  })
  .register(ApiSchemas, { id: 'Schedule' });
export type ScheduleResponse = z.infer<typeof ScheduleResponse>;

export const SchedulePageResponse = z
  .strictObject({ data: z.array(ScheduleResponse), nextCursor: NextCursor })
  .register(ApiSchemas, { id: 'SchedulePage' });
export type SchedulePageResponse = z.infer<typeof SchedulePageResponse>;

/** One tool of an MCP server as agents see it (docs/adr/0023). */
export const McpToolResponse = z
  .strictObject({
    /** The name an agent lists: `<server>__<tool>`. */
    name: z.string(),
    /** The tool's own name on its server. */
    tool: z.string(),
    description: z.string().nullable(),
    /** From the tool's MCP annotations (readOnlyHint, destructiveHint, openWorldHint). */
    sideEffect: z.enum(['read_only', 'local_write', 'network', 'destructive']),
    /** Needs a human's approval before it runs: per the server's `approval` setting. */
    needsApproval: z.boolean(),
    /** A call a crashed run started is run again with the same key (idempotentHint or the server setting). */
    honoursIdempotencyKey: z.boolean(),
    /** False when its namespaced name is not a valid provider tool name (it is then never offered). */
    offered: z.boolean(),
    /** The arguments' JSON Schema as the server gave it. */
    inputSchema: z.record(z.string(), z.unknown()),
  })
  .register(ApiSchemas, { id: 'McpTool' });
export type McpToolResponse = z.infer<typeof McpToolResponse>;

/** A tenant's MCP server; its auth header's value is never shown. */
export const McpServerResponse = z
  .strictObject({
    id: Id,
    name: z.string(),
    url: z.string(),
    /** The auth header's name; its value is a secret. */
    authHeader: z.string().nullable(),
    timeoutMs: z.number().int(),
    idempotencyKeys: z.boolean(),
    /** Which tools need approval: all but read-only (`side_effects`), `destructive_only` or `none`. */
    approval: McpApproval,
    /** `ok` after a listing succeeded; `unreachable` (lastError says why) otherwise. */
    status: z.enum(['ok', 'unreachable']),
    lastError: z.string().nullable(),
    tools: z.array(McpToolResponse),
    toolsFetchedAt: Timestamp.nullable(),
    createdAt: Timestamp,
    updatedAt: Timestamp,
  })
  .register(ApiSchemas, { id: 'McpServer' });
export type McpServerResponse = z.infer<typeof McpServerResponse>;

export const McpServerPageResponse = z
  .strictObject({ data: z.array(McpServerResponse), nextCursor: NextCursor })
  .register(ApiSchemas, { id: 'McpServerPage' });
export type McpServerPageResponse = z.infer<typeof McpServerPageResponse>;

const MemoryFields = {
  /** Opaque; resolves only for this agent (docs/adr/0022). */
  sourceRef: z.string(),
  kind: z.enum(['fact', 'episode', 'note']),
  title: z.string(),
  /** `{source: archivist | episodic | api, turnId?, sessionId?, messageSeqs?, hook?, model?}` */
  provenance: JsonObject,
  /** Characters of the full content. */
  totalChars: z.int(),
  createdAt: Timestamp,
  updatedAt: Timestamp,
};

/** A memory record in a listing or a search result: a snippet, and a score when searched. */
export const MemoryRecordResponse = z
  .strictObject({
    ...MemoryFields,
    /** Around the first match when searched, else the content's beginning. */
    snippet: z.string(),
    /** Relative rank within one search (higher is better); null in a listing. */
    score: z.number().nullable(),
    tags: z.array(z.string()),
    /** Which search found it (docs/adr/0050): full-text, vector or both; null in a listing. */
    path: z.enum(['fts', 'vector', 'both']).nullable(),
  })
  .register(ApiSchemas, { id: 'MemoryRecord' });
export type MemoryRecordResponse = z.infer<typeof MemoryRecordResponse>;

export const MemoryPageResponse = z
  .strictObject({
    data: z.array(MemoryRecordResponse),
    nextCursor: NextCursor,
    /** How a search ran (docs/adr/0050): the mode asked and the one that answered. Null in a listing. */
    search: z
      .strictObject({
        mode: RecallMode,
        /** `fts` when the vector side could not run (no vectors yet, the embedder failed or timed out). */
        used: RecallMode,
        /** Why the search fell back, when it did. */
        warning: z.string().nullable(),
      })
      .nullable(),
  })
  .register(ApiSchemas, { id: 'MemoryPage' });
export type MemoryPageResponse = z.infer<typeof MemoryPageResponse>;

/** A memory record's exact content, cut to `maxChars`. */
export const MemoryDocumentResponse = z
  .strictObject({ ...MemoryFields, tags: z.array(z.string()), content: z.string(), truncated: z.boolean() })
  .register(ApiSchemas, { id: 'MemoryDocument' });
export type MemoryDocumentResponse = z.infer<typeof MemoryDocumentResponse>;

/**
 * GET /v1/agents/:id/memory/embeddings (docs/adr/0050): the agent's vectors. `model`: the set recall
 * compares (null: none complete); `target`: the embedder configured; `embedded` of `total` records
 * have a vector of `target`. `model` switches to `target` when `embedded = total`.
 */
export const MemoryEmbeddingStatusResponse = z
  .strictObject({
    model: z.string().nullable(),
    target: z.string().nullable(),
    embedded: z.int(),
    total: z.int(),
    complete: z.boolean(),
  })
  .register(ApiSchemas, { id: 'MemoryEmbeddingStatus' });
export type MemoryEmbeddingStatusResponse = z.infer<typeof MemoryEmbeddingStatusResponse>;

/**
 * A tenant's rate limits (docs/adr/0028): the operator's overrides as stored, and the limits in
 * force per bucket (requests per minute, 0 = unlimited), the deployment's defaults filling the rest.
 */
export const TenantLimitsResponse = z
  .strictObject({
    tenantId: Id,
    rateLimits: RateLimitOverrides,
    effective: z.strictObject({
      admission: z.int(),
      reads: z.int(),
      writes: z.int(),
      webhooks: z.int(),
      admissionPerKey: z.int(),
      readsPerKey: z.int(),
      writesPerKey: z.int(),
    }),
  })
  .register(ApiSchemas, { id: 'TenantLimits' });
export type TenantLimitsResponse = z.infer<typeof TenantLimitsResponse>;

/**
 * A tenant as the operator sees it (docs/adr/0030): whether it is paused, the settings the operator
 * controls, and live figures — today's spend (UTC; the roll-up plus turns not rolled up yet, as the
 * daily cap counts it) and its unfinished turns by state.
 */
export const OperatorTenantResponse = z
  .strictObject({
    id: Id,
    name: z.string(),
    createdAt: Timestamp,
    /** Paused: admission answers 403 tenant_paused, running turns stop at their next safe point, queued ones wait. */
    paused: z.boolean(),
    pausedAt: Timestamp.nullable(),
    pauseReason: z.string().nullable(),
    /** Turns of the tenant that may run at once; null: the deployment's default. */
    maxConcurrentTurns: z.int().nullable(),
    /** Weight of the tenant when tenants compete for workers (fair share); 1 unless set. */
    share: z.number(),
    /** USD per UTC day, or null: no cap (docs/adr/0026). */
    dailySpendLimitUsd: z.number().nullable(),
    /** Side-effecting tool calls all its agents may start in any rolling hour (docs/adr/0058); null: unlimited. */
    maxActionsPerHour: z.int().nullable(),
    /** Days a session's content is kept after its last activity (docs/adr/0068); null: for ever. */
    transcriptRetentionDays: z.int().nullable(),
    /** The operator's rate-limit overrides as stored (docs/adr/0028). */
    rateLimits: RateLimitOverrides,
    /** What the tenant's turns spent today (UTC), exact decimal. */
    spentTodayUsd: Usd,
    turns: z.strictObject({
      running: z.int(),
      queued: z.int(),
      /** Awaiting an approval or a sub-agent. */
      waiting: z.int(),
    }),
  })
  .register(ApiSchemas, { id: 'OperatorTenant' });
export type OperatorTenantResponse = z.infer<typeof OperatorTenantResponse>;

export const OperatorTenantPageResponse = z
  .strictObject({ data: z.array(OperatorTenantResponse), nextCursor: NextCursor })
  .register(ApiSchemas, { id: 'OperatorTenantPage' });
export type OperatorTenantPageResponse = z.infer<typeof OperatorTenantPageResponse>;

/** One audit log entry (docs/adr/0030). `details` never holds a secret or a key hash. */
export const AuditEventResponse = z
  .strictObject({
    id: Id,
    /** null: an operator-wide event. */
    tenantId: Id.nullable(),
    /** `operator` (ADMIN_TOKEN or the admin CLI) or `api_key:<key id>`. */
    actor: z.string(),
    action: AuditAction,
    targetType: z.string(),
    targetId: z.string().nullable(),
    details: JsonObject,
    createdAt: Timestamp,
  })
  .register(ApiSchemas, { id: 'AuditEvent' });
export type AuditEventResponse = z.infer<typeof AuditEventResponse>;

export const AuditEventPageResponse = z
  .strictObject({ data: z.array(AuditEventResponse), nextCursor: NextCursor })
  .register(ApiSchemas, { id: 'AuditEventPage' });
export type AuditEventPageResponse = z.infer<typeof AuditEventPageResponse>;

/** GET /v1/whoami: what the credential is, for a client (the console) choosing its view. */
export const WhoamiResponse = z
  .discriminatedUnion('kind', [
    z.strictObject({
      kind: z.literal('tenant'),
      tenantId: Id,
      tenantName: z.string(),
      keyId: Id,
      /** The key's display prefix. */
      keyPrefix: z.string(),
    }),
    z.strictObject({
      kind: z.literal('operator'),
      /** The tenant the request acts as (`X-Switchboard-Tenant`), when it names one. */
      actingTenantId: Id.optional(),
      actingTenantName: z.string().optional(),
    }),
  ])
  .register(ApiSchemas, { id: 'Whoami' });
export type WhoamiResponse = z.infer<typeof WhoamiResponse>;

/** GET /v1/console/config: what the console needs to know of the deployment (no credentials). */
export const ConsoleConfigResponse = z
  .strictObject({
    /** Jaeger's UI (JAEGER_UI_URL): a trace is at `<jaegerUiUrl>/trace/<traceId>`; null: no links. */
    jaegerUiUrl: z.string().nullable(),
    /** Switchboard's version. */
    version: z.string(),
  })
  .register(ApiSchemas, { id: 'ConsoleConfig' });
export type ConsoleConfigResponse = z.infer<typeof ConsoleConfigResponse>;

/** One BullMQ queue's depth and wait (GET /v1/admin/queues). */
export const QueueStatsResponse = z
  .strictObject({
    name: z.enum(Object.values(QueueName) as [QueueName, ...QueueName[]]),
    /** Waiting to be taken, prioritized jobs included. */
    waiting: z.int(),
    active: z.int(),
    delayed: z.int(),
    failed: z.int(),
    /** How long the oldest waiting job has waited (ms); null when none waits. */
    oldestWaitingMs: z.int().nullable(),
  })
  .register(ApiSchemas, { id: 'QueueStats' });
export type QueueStatsResponse = z.infer<typeof QueueStatsResponse>;

export const QueueStatsListResponse = z
  .strictObject({
    data: z.array(QueueStatsResponse),
    /** The queue board (Bull Board, ADMIN_TOKEN) with every job. */
    boardUrl: z.string(),
  })
  .register(ApiSchemas, { id: 'QueueStatsList' });
export type QueueStatsListResponse = z.infer<typeof QueueStatsListResponse>;

/** One live harness worker process, from its last heartbeat (GET /v1/admin/processes). */
export const HarnessProcessResponse = z
  .strictObject({
    processId: z.string(),
    hostname: z.string(),
    pid: z.int(),
    startedAt: Timestamp,
    lastSeenAt: Timestamp,
    /** Turns this process runs now. */
    turnsInFlight: z.int(),
    /** Permits in use and the adaptive limit (docs/adr/0029); the limit moves between 2 and maxConcurrency. */
    permitsInUse: z.int(),
    permitLimit: z.int(),
    /** HARNESS_CONCURRENCY: the most turns the process runs at once. */
    maxConcurrency: z.int(),
  })
  .register(ApiSchemas, { id: 'HarnessProcess' });
export type HarnessProcessResponse = z.infer<typeof HarnessProcessResponse>;

export const HarnessProcessListResponse = z
  .strictObject({ data: z.array(HarnessProcessResponse) })
  .register(ApiSchemas, { id: 'HarnessProcessList' });
export type HarnessProcessListResponse = z.infer<typeof HarnessProcessListResponse>;

/** One immutable version of an agent's configuration (docs/adr/0061). */
export const AgentVersionResponse = z
  .strictObject({
    agentId: Id,
    version: z.int(),
    /**
     * The versioned configuration: instructions, model, fallbackModels, tools, allowedSubagents,
     * approvalRequired, budgets, toolResultCompression, archivist, toolSelection, embedder, memory,
     * maxActionsPerHour.
     */
    config: JsonObject,
    /** `api_key:<id>` or `operator`; null for a version the database wrote (the backfill, an agent made by the runtime). */
    createdBy: z.string().nullable(),
    note: z.string().nullable(),
    createdAt: Timestamp,
  })
  .register(ApiSchemas, { id: 'AgentVersion' });
export type AgentVersionResponse = z.infer<typeof AgentVersionResponse>;

export const AgentVersionPageResponse = z
  .strictObject({ data: z.array(AgentVersionResponse), nextCursor: NextCursor })
  .register(ApiSchemas, { id: 'AgentVersionPage' });
export type AgentVersionPageResponse = z.infer<typeof AgentVersionPageResponse>;

/** Two versions compared field by field (docs/adr/0061). */
export const AgentVersionDiffResponse = z
  .strictObject({
    agentId: Id,
    from: z.int(),
    to: z.int(),
    /** Each changed value: a field or a nested key (`budgets.maxUsd`), its value in `from` and in `to` (null: absent). */
    changes: z.array(z.strictObject({ path: z.string(), before: z.unknown(), after: z.unknown() })),
  })
  .register(ApiSchemas, { id: 'AgentVersionDiff' });
export type AgentVersionDiffResponse = z.infer<typeof AgentVersionDiffResponse>;

/** One version of a tenant's data key (docs/adr/0067): never key material. */
export const DataKeyResponse = z
  .strictObject({
    version: z.int(),
    /** `active` seals new content; `retired` only opens what it sealed; `destroyed`: nothing opens. */
    state: z.enum(['active', 'retired', 'destroyed']),
    /** The KeyProvider that wrapped it: `local` or `vault-transit`. */
    provider: z.string(),
    /** The key-encryption key that wraps it now (a key ring id, or `<transit key>:vN`). */
    kekId: z.string(),
    createdAt: Timestamp,
  })
  .register(ApiSchemas, { id: 'DataKey' });
export type DataKeyResponse = z.infer<typeof DataKeyResponse>;

/** GET /v1/admin/tenants/:id/data-keys and the rotation's answer: the tenant's mode and key versions, newest first. */
export const DataKeyListResponse = z
  .strictObject({
    tenantId: Id,
    mode: z.enum(['off', 'on', 'strict']),
    data: z.array(DataKeyResponse),
  })
  .register(ApiSchemas, { id: 'DataKeyList' });
export type DataKeyListResponse = z.infer<typeof DataKeyListResponse>;
/**
 * A tenant's deletion (docs/adr/0068): queued, running (keys destroyed, admission paused, Redis keys
 * and queued jobs removed, then every row in batches), completed with its receipt in the operator's
 * audit log (`tenant.deleted`), or failed (`error`; retried by asking again).
 */
export const TenantDeletionResponse = z
  .strictObject({
    id: Id,
    tenantId: Id,
    tenantName: z.string(),
    status: z.enum(['queued', 'running', 'completed', 'failed']),
    /** keys | pause | redis | rows | done: how far it got. */
    stage: z.string(),
    /** Rows deleted so far, per table. */
    counts: z.record(z.string(), z.int()),
    /** Redis keys of the tenant deleted. */
    redisKeys: z.int(),
    /** Queued BullMQ jobs of the tenant removed. */
    jobs: z.int(),
    /** Stored tool-result originals deleted (also in counts.tool_result_originals). */
    originals: z.int(),
    /** Whether the tenant's data keys (tenant_data_keys) were destroyed first. */
    keyDestroyed: z.boolean(),
    requestedAt: Timestamp,
    startedAt: Timestamp.nullable(),
    completedAt: Timestamp.nullable(),
    error: z.string().nullable(),
  })
  .register(ApiSchemas, { id: 'TenantDeletion' });
export type TenantDeletionResponse = z.infer<typeof TenantDeletionResponse>;

/** DELETE /v1/admin/tenants/:id: the deletion, started or already under way. */
export const DeleteTenantResponse = z
  .strictObject({ deletion: TenantDeletionResponse })
  .register(ApiSchemas, { id: 'DeleteTenant' });
export type DeleteTenantResponse = z.infer<typeof DeleteTenantResponse>;

/** GET /v1/admin/tenant-deletions: newest first. */
export const TenantDeletionPageResponse = z
  .strictObject({ data: z.array(TenantDeletionResponse), nextCursor: z.string().nullable() })
  .register(ApiSchemas, { id: 'TenantDeletionPage' });
export type TenantDeletionPageResponse = z.infer<typeof TenantDeletionPageResponse>;
