import { z } from 'zod';
import { Priority } from './envelope';
import { AppError } from './errors';
import { ResponseFormat } from './structured-output';
import { EvaluationSettings, Scorers } from './evaluation';
import { CONCRETE_MODEL_REF, ConcreteModelRef, MODEL_ROUTES, ModelRef, type ModelRoute } from './model-refs';

/** Request bodies and queries of the HTTP API. Objects are strict: unknown fields are rejected. */

export { MODEL_ROUTES, ModelRoute, MODEL_HINT_PREFIX, ConcreteModelRef, ModelRef } from './model-refs';

const ToolName = z.string().min(1).max(120);

export const Budgets = z.strictObject({
  maxIterations: z.int().min(1).max(100).optional(),
  maxToolCalls: z.int().min(1).max(1000).optional(),
  maxUsd: z.number().positive().max(1000).optional(),
  deadlineMs: z.int().min(1000).max(3_600_000).optional(),
  maxReflections: z.int().min(0).max(10).optional(),
  /**
   * How long a call to a client-declared tool waits for the client's result (docs/adr/0047) before
   * the turn ends `client_tool_timeout`; default 10 minutes.
   */
  clientToolTimeoutMs: z
    .int()
    .min(1000)
    .max(7 * 86_400_000)
    .optional(),
  /**
   * What the turn does when it reaches `maxIterations`, the model-call cap (seed 000 checkpoint
   * strategy, docs/adr/0058): `stop` (the default) ends on the last round's text; `summarize` makes
   * one more, tool-less model call that summarises what was done and what is left, and ends on it.
   */
  onMaxIterations: z.enum(['stop', 'summarize']).optional(),
});
export type Budgets = z.infer<typeof Budgets>;

/**
 * The hourly side-effect budget (seed 000 `max_actions_per_hour`, docs/adr/0058): how many calls of
 * side-effecting tools (`network`, `local_write`, `destructive`) may start in any rolling hour, for
 * one agent (agent setting) or for all of a tenant's agents (operator setting). Null: unlimited.
 */
export const MaxActionsPerHour = z.int().min(1).max(1_000_000);

export const Tier = z.enum(['chat', 'reasoning', 'worker']);

/**
 * An embedder (docs/adr/0049): `local/<model>` (built in: `words-100d`, `hash-256`) or
 * `openai/<model>` (the embeddings API, or a compatible server at OPENAI_BASE_URL).
 */
export const EmbedderRef = z
  .string()
  .max(200)
  .regex(/^(local|openai)\/[A-Za-z0-9._:@-]+$/, {
    message: 'must be "<provider>/<model>" with provider local or openai',
  });

/**
 * Semantic tool selection (docs/adr/0049): with more tools than `maxPerTurn` (its own, MCP,
 * sub-agent and client tools together), a turn is offered the `pinned` ones, those whose name and
 * description are most similar to its input, and those it already called; absent: every tool.
 */
export const ToolSelection = z.strictObject({
  maxPerTurn: z.int().min(1).max(128).optional(),
  pinned: z.array(ToolName).max(100).optional(),
});
export type ToolSelection = z.infer<typeof ToolSelection>;

/**
 * TokenJuice for an agent's tool results (docs/adr/0033): `full` compacts by kind and keeps the
 * original for `tokenjuice_retrieve`; `light` rewrites only without loss; `off` leaves results as
 * they are; `auto` (the default) is `light` for a `hint:coding` agent and `full` for the others.
 */
export const ToolResultCompression = z.enum(['auto', 'full', 'light', 'off']);
export type ToolResultCompression = z.infer<typeof ToolResultCompression>;
const Name = z.string().trim().min(1).max(120);

export const CreateTenantRequest = z.strictObject({ name: Name });
export type CreateTenantRequest = z.infer<typeof CreateTenantRequest>;

/** What an API key may do (docs/adr/0066); `admin` is every key made before roles and the default. */
export const API_KEY_ROLES = ['admin', 'developer', 'approver', 'reader', 'ingest'] as const;
export const ApiKeyRole = z.enum(API_KEY_ROLES);
export type ApiKeyRole = z.infer<typeof ApiKeyRole>;

export const CreateApiKeyRequest = z.strictObject({
  name: Name.optional(),
  /** admin (the default) | developer | approver | reader | ingest. */
  role: ApiKeyRole.optional(),
  /** Limits the key to these agents of the tenant (1 to 100); absent: every agent. */
  agentIds: z.array(z.uuid()).min(1).max(100).optional(),
  /** When the key stops working (401), an ISO 8601 date-time in the future; absent: never. */
  expiresAt: z.iso.datetime({ offset: true }).optional(),
});
export type CreateApiKeyRequest = z.infer<typeof CreateApiKeyRequest>;

/**
 * When the archivist distils a session's turns into memory (docs/adr/0032). `debounced` (the
 * default): a turn worth distilling is deferred, and the session's deferred turns are distilled in
 * one model call after `afterTurns` of them or `idleMs` without a new one; `every_turn`: one call per
 * turn; `off`: never. An agent's settings win over the tenant's, field by field.
 */
export const ArchivistSettings = z.strictObject({
  mode: z.enum(['debounced', 'every_turn', 'off']).optional(),
  afterTurns: z.int().min(1).max(50).optional(),
  idleMs: z
    .int()
    .min(1000)
    .max(24 * 3600 * 1000)
    .optional(),
});
export type ArchivistSettings = z.infer<typeof ArchivistSettings>;

/** The archivist's defaults: distil after 10 deferred turns or 10 minutes idle. */
export const ARCHIVIST_DEFAULTS: Required<ArchivistSettings> = {
  mode: 'debounced',
  afterTurns: 10,
  idleMs: 10 * 60 * 1000,
};

/** The settings in force: the agent's over the tenant's over the defaults (either may be invalid: ignored). */
export function resolveArchivistSettings(tenant: unknown, agent: unknown): Required<ArchivistSettings> {
  const t = ArchivistSettings.safeParse(tenant ?? {});
  const a = ArchivistSettings.safeParse(agent ?? {});
  return { ...ARCHIVIST_DEFAULTS, ...(t.success ? t.data : {}), ...(a.success ? a.data : {}) };
}

/** How recall finds an agent's records (docs/adr/0050): full-text, vectors, or both fused. */
export const RecallMode = z.enum(['fts', 'vector', 'hybrid']);
export type RecallMode = z.infer<typeof RecallMode>;

/**
 * An agent's memory settings (docs/adr/0050). `recall`: how recall searches (default `hybrid` when
 * the agent sets an `embedder`, whose vectors its records then get; else `fts`, no vectors).
 */
export const MemorySettings = z.strictObject({
  recall: RecallMode.optional(),
  /**
   * Learning feedback (docs/adr/0059): the agent's kept reflections, tool-failure hints from its tool
   * statistics and its user profile go into each turn's input as evidence. Default false.
   */
  learning: z.boolean().optional(),
  /**
   * Seed 001 stage 6.1 (docs/adr/0060): list the memory records recalled into a turn and the web pages
   * it read after its plain-text final answer. Default false.
   */
  citations: z.boolean().optional(),
});
export type MemorySettings = z.infer<typeof MemorySettings>;

/** The settings as stored, read defensively: an invalid stored value is no settings. */
export function parseMemorySettings(stored: unknown): MemorySettings {
  const r = MemorySettings.safeParse(stored ?? {});
  return r.success ? r.data : {};
}

/** The recall mode in force: the one asked, else the agent's, else hybrid with an embedder set, else fts. */
export function recallModeOf(
  settings: MemorySettings,
  embedder: string | null,
  asked?: RecallMode,
): RecallMode {
  return asked ?? settings.recall ?? (embedder ? 'hybrid' : 'fts');
}

export const CreateAgentRequest = z.strictObject({
  name: Name,
  archetype: z.string().trim().min(1).max(60).optional(),
  tier: Tier.optional(),
  instructions: z.string().max(100_000).optional(),
  model: ModelRef.optional(),
  fallbackModels: z.array(ModelRef).max(5).optional(),
  /**
   * Tools the agent may call, by name; an unknown name is refused. Absent: none (issue 11), so a
   * tool added to the deployment is never enabled silently.
   */
  tools: z
    .array(ToolName)
    .max(100)
    .optional()
    .describe(
      'Tools the agent may call, by name; an unknown name is refused (the error lists the available ones); absent or empty: the agent has no tools',
    ),
  allowedSubagents: z.array(z.string().min(1).max(120)).max(50).optional(),
  /** Tools whose calls by this agent wait for a human decision (docs/adr/0013). */
  approvalRequired: z.array(ToolName).max(100).optional(),
  budgets: Budgets.optional(),
  toolResultCompression: ToolResultCompression.optional().describe(
    'TokenJuice for tool results: full (compacted by kind, the original kept for tokenjuice_retrieve), ' +
      'light (lossless rewrites only), off, or auto (default: light for a hint:coding agent, else full)',
  ),
  /** When the archivist distils this agent's sessions; over the tenant's settings (docs/adr/0032). */
  archivist: ArchivistSettings.optional(),
  toolSelection: ToolSelection.optional().describe(
    'Semantic tool selection: with more tools than maxPerTurn, each turn is offered the pinned tools, ' +
      'the ones most similar to its input and those it already called, in their usual order; absent: every tool',
  ),
  embedder: EmbedderRef.optional().describe(
    "The agent's embedder: local/words-100d (built in), local/hash-256 (lexical) or openai/<model>; an " +
      'unknown one is refused. Set, its memory records get vectors (hybrid recall by default) and a ' +
      'change re-embeds them; unset, recall is full-text and tool selection uses local/words-100d',
  ),
  /** How recall searches the agent's memory (docs/adr/0050). */
  memory: MemorySettings.optional(),
  maxActionsPerHour: MaxActionsPerHour.nullable()
    .optional()
    .describe(
      'The hourly side-effect budget: calls of network, local_write or destructive tools this agent may ' +
        'start in any rolling hour, across its turns and every harness process; the next one is refused ' +
        'with a tool error the model sees (action_budget_exceeded). Null or absent: unlimited (the ' +
        "tenant's budget, set by the operator, still applies)",
    ),
  scorers: Scorers.optional().describe(
    "Scorers of the agent's turns (docs/adr/0062), versioned: llm_judge {rubric, model?, passThreshold?}, " +
      'rule {check: json_schema | regex | tool_called | max_latency_ms | max_cost_usd | not_failed | expected}, ' +
      'webhook {url, timeoutMs?}; each with a unique name and samplePercent (0-100, default 100)',
  ),
});
export type CreateAgentRequest = z.infer<typeof CreateAgentRequest>;

export const UpdateAgentRequest = CreateAgentRequest.partial().refine((v) => Object.keys(v).length > 0, {
  message: 'at least one field is required',
});
export type UpdateAgentRequest = z.infer<typeof UpdateAgentRequest>;

/** Largest `metadata` object, in bytes of its JSON. */
export const MAX_METADATA_BYTES = 16_384;

/**
 * Free-form JSON the caller attaches to a session or message. Bounded in size here; its nesting is
 * bounded with the whole body (MAX_JSON_DEPTH) before it is parsed.
 */
export const Metadata = z.record(z.string().max(200), z.unknown()).superRefine((value, ctx) => {
  const bytes = Buffer.byteLength(JSON.stringify(value));
  if (bytes > MAX_METADATA_BYTES) {
    ctx.addIssue({
      code: 'custom',
      message: `metadata is ${bytes} bytes of JSON; at most ${MAX_METADATA_BYTES} are allowed`,
    });
  }
});

export const CreateSessionRequest = z.strictObject({
  agentId: z.string().min(1).max(100),
  title: z.string().max(200).optional(),
  metadata: Metadata.optional(),
});
export type CreateSessionRequest = z.infer<typeof CreateSessionRequest>;

export const ContentBlock = z.strictObject({ type: z.literal('text'), text: z.string().min(1).max(200_000) });

export const AdmitMessageRequest = z.strictObject({
  content: z.union([z.string().min(1).max(200_000), z.array(ContentBlock).min(1).max(50)]),
  priority: Priority.optional(),
  /**
   * enqueue (default): run after the session's earlier messages; reject: 409 while a turn is queued or
   * running; interrupt: cancel the session's running turn (or one awaiting approval), then run this one.
   */
  multitask: z.enum(['enqueue', 'reject', 'interrupt']).optional(),
  metadata: Metadata.optional(),
  correlationId: z.string().min(1).max(200).optional(),
  /**
   * Hold the response until the turn ends: `true` for up to the deployment's WAIT_TIMEOUT_MS, or a
   * number of seconds (capped by it). Ended, or waiting on an approval (`awaiting_approval`: it waits
   * for a person, docs/adr/0013) → 200 with the turn (as GET /v1/turns/:id); still running at the
   * bound → 202 as without it. Not part of the Idempotency-Key's request: a retry with
   * or without it replays (and waits when it asks to).
   */
  wait: z.union([z.boolean(), z.int().min(1).max(3600)]).optional(),
  /**
   * Structured output (docs/adr/0048): `{type: "json_object"}`, or `{type: "json_schema", name,
   * schema, strict?}` (a JSON Schema, draft-07 unless `$schema` names 2019-09 or 2020-12). The
   * turn's final answer is validated against it, with one repair round; a turn whose answer still does
   * not match fails `structured_output_invalid`. Absent: plain text.
   */
  responseFormat: ResponseFormat.optional(),
});
export type AdmitMessageRequest = z.infer<typeof AdmitMessageRequest>;

/**
 * A session's own agent settings (docs/adr/0053): every turn of the session runs with them over its
 * agent's. `model` replaces the agent's model and its fallbacks; `instructions` replace the agent's
 * instructions in the system prompt (rendered on the session's first turn).
 */
export const SessionOverrides = z.strictObject({
  model: ModelRef.optional(),
  instructions: z.string().max(100_000).optional(),
});
export type SessionOverrides = z.infer<typeof SessionOverrides>;

/** Overrides as stored (sessions.overrides), read defensively: what no longer parses is no override. */
export function parseSessionOverrides(stored: unknown): SessionOverrides {
  if (stored == null) return {};
  const parsed = SessionOverrides.safeParse(stored);
  return parsed.success ? parsed.data : {};
}

const FORK_POSITION = z.enum(['after', 'before']);

/**
 * POST /v1/sessions/:id/fork (docs/adr/0053): the fork point is a turn of the session (`turnId`) or the
 * seq of a turn's end event in its journal (`eventSeq`: turn_completed, turn_failed or turn_cancelled),
 * exactly one of the two; `position` after (default: the turn is in the fork) or before it (it is not).
 */
export const ForkSessionRequest = z
  .strictObject({
    turnId: z.uuid().optional(),
    eventSeq: z.int().min(1).max(2_147_483_647).optional(),
    position: FORK_POSITION.optional(),
    model: ModelRef.optional(),
    instructions: z.string().max(100_000).optional(),
    title: z.string().max(200).optional(),
  })
  .superRefine((v, ctx) => {
    if ((v.turnId === undefined) === (v.eventSeq === undefined)) {
      ctx.addIssue({
        code: 'custom',
        path: v.turnId === undefined ? [] : ['eventSeq'],
        message: 'give exactly one fork point: turnId or eventSeq',
      });
    }
  });
export type ForkSessionRequest = z.infer<typeof ForkSessionRequest>;

/** POST /v1/sessions/:id/rewind (docs/adr/0053): the first turn to leave out; it and every later turn are rewound. */
export const RewindSessionRequest = z.strictObject({ turnId: z.uuid() });
export type RewindSessionRequest = z.infer<typeof RewindSessionRequest>;

/** POST /v1/turns/:id/cancel: the body is optional; a reason, when given, is journaled with turn_cancelled. */
export const CancelTurnRequest = z.strictObject({
  reason: z.string().min(1).max(500).optional(),
});
export type CancelTurnRequest = z.infer<typeof CancelTurnRequest>;

/**
 * POST /v1/turns/:id/replay (docs/adr/0054): the body is optional; `model` and `instructions` are the
 * fork's overrides (docs/adr/0053), so the replay can try another model or prompt on the same input.
 */
export const ReplayTurnRequest = z.strictObject({
  model: ModelRef.optional(),
  instructions: z.string().max(100_000).optional(),
  /** The agent version the replay runs on (docs/adr/0061); default: the version the original turn ran on. */
  agentVersion: z.int().min(1).optional(),
});
export type ReplayTurnRequest = z.infer<typeof ReplayTurnRequest>;

/**
 * `POST /v1/turns/:id/client-tool-results` (docs/adr/0047): the outputs of the client tool calls the
 * turn waits for, by the ids `client_tool_requested` handed out (`call_…`); all of them at once.
 */
export const ClientToolResultsRequest = z.strictObject({
  results: z
    .array(
      z.strictObject({
        /** The id of the call (`client_tool_requested.callId`). */
        callId: z.string().min(1).max(200),
        /** What the tool returned, as the model will see it. */
        output: z.string().max(1_000_000),
      }),
    )
    .min(1)
    .max(128),
});
export type ClientToolResultsRequest = z.infer<typeof ClientToolResultsRequest>;

export const PageQuery = z.strictObject({
  cursor: z.string().max(200).optional(),
  limit: z.coerce.number().int().min(1).max(200).optional(),
});
export type PageQuery = z.infer<typeof PageQuery>;

export const SessionStatus = z.enum(['active', 'closed']);

/** The statuses of a turn that has not ended: what GET /v1/turns lists (seed 000 active runs). */
export const ACTIVE_TURN_STATUSES = [
  'queued',
  'running',
  'awaiting_approval',
  'awaiting_subagent',
  'awaiting_client_tool',
] as const;
export const ActiveTurnStatus = z.enum(ACTIVE_TURN_STATUSES);
export type ActiveTurnStatus = z.infer<typeof ActiveTurnStatus>;

/**
 * GET /v1/turns (docs/adr/0058): the tenant's turns that have not ended, oldest first; `status` one
 * or more of ACTIVE_TURN_STATUSES, comma-separated (default all of them); optionally of one agent or
 * session.
 */
export const ActiveTurnsQuery = PageQuery.extend({
  status: z
    .string()
    .max(200)
    .transform((s) => s.split(',').map((t) => t.trim()))
    .pipe(
      z.array(
        z.enum(ACTIVE_TURN_STATUSES, {
          message: `must be one or more of ${ACTIVE_TURN_STATUSES.join(', ')}, comma-separated (ended turns are listed per session: GET /v1/sessions/{id}/turns)`,
        }),
      ),
    )
    .optional(),
  agentId: z.uuid().optional(),
  sessionId: z.uuid().optional(),
});
export type ActiveTurnsQuery = z.infer<typeof ActiveTurnsQuery>;

/** GET /v1/sessions: a page of the tenant's sessions, optionally of one agent and one status. */
export const SessionsQuery = PageQuery.extend({
  agentId: z.uuid().optional(),
  status: SessionStatus.optional(),
});
export type SessionsQuery = z.infer<typeof SessionsQuery>;

/** GET /v1/triggers: a page of the tenant's triggers; revoked ones only when asked for. */
export const TriggersQuery = PageQuery.extend({
  includeRevoked: z.enum(['true', 'false']).optional(),
});
export type TriggersQuery = z.infer<typeof TriggersQuery>;

/** Largest Postgres `integer`: sequence numbers are columns of that type. */
export const PG_INT_MAX = 2_147_483_647;

export const EventsQuery = z.strictObject({
  after: z.coerce.number().int().min(0).max(PG_INT_MAX).optional(),
  limit: z.coerce.number().int().min(1).max(500).optional(),
});

/** A journal seq as a client gives it back: `?after=` or the `Last-Event-ID` header of an SSE stream. */
export const EventCursor = z
  .string()
  .regex(/^\d{1,10}$/, 'must be a journal seq (a non-negative integer)')
  .transform(Number)
  .pipe(z.int().min(0).max(PG_INT_MAX));

/** GET /v1/turns/:id/stream and /v1/sessions/:id/stream: where to start (Last-Event-ID wins). */
export const StreamQuery = z.strictObject({ after: EventCursor.optional() });
export type StreamQuery = z.infer<typeof StreamQuery>;

/** An Idempotency-Key header value: 1 to 200 printable ASCII characters. */
export const IdempotencyKey = z
  .string()
  .min(1)
  .max(200)
  .regex(/^[\x20-\x7e]+$/);

/** One schema per route, all optional: `{ chat?: …, reasoning?: …, … }`. */
function perRoute<S extends z.ZodType>(value: S): Record<ModelRoute, S> {
  return Object.fromEntries(MODEL_ROUTES.map((route) => [route, value])) as Record<ModelRoute, S>;
}

/** Tenant model routes: route → concrete model. A route cannot point at another hint. */
export const ModelRoutes = z.strictObject(perRoute(ConcreteModelRef.optional()));
export type ModelRoutes = z.infer<typeof ModelRoutes>;

/** Tools no agent of the tenant may call, whatever the agent lists. Duplicates are rejected. */
export const BlockedTools = z
  .array(ToolName)
  .max(100)
  .superRefine((tools, ctx) => {
    const duplicates = [...new Set(tools.filter((t, i) => tools.indexOf(t) !== i))];
    if (duplicates.length > 0) {
      ctx.addIssue({ code: 'custom', message: `duplicate tools: ${duplicates.join(', ')}` });
    }
  });

/** How tool schemas are emitted to providers (seed 002 "Provider Tool Schema Contract"). */
export const ToolSchemaMode = z.enum(['relaxed', 'strict']);
export type ToolSchemaMode = z.infer<typeof ToolSchemaMode>;

/** A price key: `<provider>/<model>` or `<provider>/*` (every model of that provider). */
export const PriceKey = z
  .string()
  .regex(new RegExp(`^(${CONCRETE_MODEL_REF}|(openai|openai-chat|anthropic|scripted)/\\*)$`), {
    message:
      'must be "<provider>/<model>" or "<provider>/*" with provider openai, openai-chat, anthropic or scripted',
  });

/**
 * USD per million tokens; cached input tokens cost `input` unless `cachedInput` is given, input
 * written to the provider's prompt cache costs `input` unless `cacheWrite` is given.
 */
export const ModelPrice = z.strictObject({
  input: z.number().min(0).max(10_000),
  output: z.number().min(0).max(10_000),
  cachedInput: z.number().min(0).max(10_000).optional(),
  cacheWrite: z.number().min(0).max(10_000).optional(),
});
export type ModelPrice = z.infer<typeof ModelPrice>;

/** The tenant's own prices, over the deployment's and the maintained table (ADR 0007). */
export const ModelPrices = z
  .record(PriceKey, ModelPrice)
  .refine((v) => Object.keys(v).length <= 100, { message: 'at most 100 prices' });
export type ModelPrices = z.infer<typeof ModelPrices>;

/**
 * Where `notify` triage decisions are sent (docs/adr/0018): an http(s) URL. `PATCH /v1/settings`
 * refuses private, loopback and link-local addresses unless OUTBOUND_WEBHOOK_ALLOW_HOSTS lists them,
 * and the outbound worker refuses them again at send time (a name may resolve elsewhere by then).
 */
export const NotifyUrl = z.url({ protocol: /^https?$/, message: 'must be an http(s) URL' }).max(2000);

/** A Standard Webhooks signing secret: `whsec_` and the base64 of 24 to 64 random bytes. */
export const NotifySecret = z
  .string()
  .regex(/^whsec_[A-Za-z0-9+/]+={0,2}$/, { message: 'must be "whsec_" followed by base64' })
  .refine(
    (v) => {
      const bytes = Buffer.from(v.slice('whsec_'.length), 'base64').length;
      return bytes >= 24 && bytes <= 64;
    },
    { message: 'must encode 24 to 64 bytes' },
  );

/** A tenant's daily spend cap in USD: positive, at most a million. */
export const DailySpendLimitUsd = z.number().positive().max(1_000_000);
/**
 * The daily spend cap as the operator may set it: 0 stops every model call of the tenant's turns
 * (a tenant's own PATCH /v1/settings takes a positive cap only).
 */
export const OperatorDailySpendLimitUsd = z.number().min(0).max(1_000_000);

/**
 * Days a session's transcript is kept after its last activity (docs/adr/0068): older sessions' content
 * (messages, tool arguments and results, originals, journal payloads) is purged by the maintenance
 * job, their cost lines kept. Absent or null: kept for ever.
 */
export const TranscriptRetentionDays = z.int().min(1).max(3650);

/** Tenant settings as stored in `tenants.settings` (other keys there belong to other features). */
export const TenantSettings = z.strictObject({
  /** Endpoint of signed `notify` notifications; set together with `notifySecret`. */
  notifyUrl: NotifyUrl.optional(),
  notifySecret: NotifySecret.optional(),
  modelRoutes: ModelRoutes.optional(),
  blockedTools: BlockedTools.optional(),
  /** `strict` asks providers for strict tool-argument decoding; `relaxed` (the default) works everywhere. */
  toolSchemaMode: ToolSchemaMode.optional(),
  modelPrices: ModelPrices.optional(),
  /** Tools whose calls by any agent of the tenant wait for a human decision (docs/adr/0013). */
  approvalRequired: BlockedTools.optional(),
  /** How long an approval waits before it expires, in ms; the deployment's APPROVAL_TTL_MS when absent. */
  approvalTtlMs: z
    .int()
    .min(1000)
    .max(30 * 24 * 3600 * 1000)
    .optional(),
  /**
   * What the tenant's turns may spend per UTC day, in USD (SPEC §13): a turn claimed with nothing
   * left stops before its first model call, a running one stops at it (docs/adr/0026). Absent: no cap.
   */
  dailySpendLimitUsd: DailySpendLimitUsd.optional(),
  /** When the archivist distils the tenant's sessions (docs/adr/0032); an agent's own settings win. */
  archivist: ArchivistSettings.optional(),
  /** What the tenant's LLM judges may spend per UTC day (docs/adr/0062); EVAL_DAILY_BUDGET_USD when absent. */
  evaluation: EvaluationSettings.optional(),
  /** Days a session's content is kept after its last activity (docs/adr/0068); absent: for ever. */
  transcriptRetentionDays: TranscriptRetentionDays.optional(),
});
export type TenantSettings = z.infer<typeof TenantSettings>;

/**
 * `schema.safeParse(value)`, with the answer for an absent field (undefined) computed once per schema.
 * Stored settings mostly leave fields out, and a failed parse builds a ZodError: reading a tenant's
 * settings, which the harness and the hooks do for every turn, cost 60–80 µs, nearly all of it
 * errors for absent fields (issue 37). Only answers whose value is not an object are kept, so no
 * two callers share a result they could change.
 */
const absentParses = new WeakMap<z.ZodType, z.ZodSafeParseResult<unknown>>();
export function parseStoredSetting<T extends z.ZodType>(
  schema: T,
  value: unknown,
): z.ZodSafeParseResult<z.output<T>> {
  if (value !== undefined) return schema.safeParse(value);
  const known = absentParses.get(schema) as z.ZodSafeParseResult<z.output<T>> | undefined;
  if (known) return known;
  const parsed = schema.safeParse(undefined);
  if (!parsed.success || typeof parsed.data !== 'object' || parsed.data === null)
    absentParses.set(schema, parsed);
  return parsed;
}

const isRecord = (v: unknown): v is Record<string, unknown> =>
  typeof v === 'object' && v !== null && !Array.isArray(v);

/**
 * Reads stored settings for workers and presenters. Tolerant: never throws; whatever is invalid
 * is dropped entry by entry (an unknown route, a route naming a hint, a bad tool name), so one
 * bad value cannot switch off the rest. Both fields are always present.
 */
export function parseTenantSettings(
  json: unknown,
): Required<
  Omit<
    TenantSettings,
    'approvalTtlMs' | 'notifyUrl' | 'notifySecret' | 'dailySpendLimitUsd' | 'transcriptRetentionDays'
  >
> &
  Pick<
    TenantSettings,
    'approvalTtlMs' | 'notifyUrl' | 'notifySecret' | 'dailySpendLimitUsd' | 'transcriptRetentionDays'
  > {
  const stored = isRecord(json) ? json : {};
  const modelRoutes: ModelRoutes = {};
  if (isRecord(stored.modelRoutes)) {
    for (const route of MODEL_ROUTES) {
      if (!Object.hasOwn(stored.modelRoutes, route)) continue;
      const ref = ConcreteModelRef.safeParse(stored.modelRoutes[route]);
      if (ref.success) modelRoutes[route] = ref.data;
    }
  }
  const toolList = (value: unknown): string[] => {
    const list: string[] = [];
    if (!Array.isArray(value)) return list;
    for (const tool of value) {
      const name = ToolName.safeParse(tool);
      if (name.success && !list.includes(name.data) && list.length < 100) list.push(name.data);
    }
    return list;
  };
  const blockedTools = toolList(stored.blockedTools);
  const approvalRequired = toolList(stored.approvalRequired);
  const ttl = parseStoredSetting(TenantSettings.shape.approvalTtlMs, stored.approvalTtlMs);
  // The operator may have set 0 (PATCH /v1/admin/tenants/:id): a cap like any other.
  const limit = parseStoredSetting(OperatorDailySpendLimitUsd, stored.dailySpendLimitUsd);
  const retention = parseStoredSetting(TranscriptRetentionDays, stored.transcriptRetentionDays);
  const archivist = ArchivistSettings.safeParse(stored.archivist ?? {});
  const evaluation = EvaluationSettings.safeParse(stored.evaluation ?? {});
  const mode = parseStoredSetting(ToolSchemaMode, stored.toolSchemaMode);
  const notifyUrl = parseStoredSetting(NotifyUrl, stored.notifyUrl);
  const notifySecret = parseStoredSetting(NotifySecret, stored.notifySecret);
  const modelPrices: ModelPrices = {};
  if (isRecord(stored.modelPrices)) {
    for (const [key, value] of Object.entries(stored.modelPrices)) {
      const price = ModelPrice.safeParse(value);
      if (PriceKey.safeParse(key).success && price.success && Object.keys(modelPrices).length < 100) {
        modelPrices[key] = price.data;
      }
    }
  }
  return {
    modelRoutes,
    blockedTools,
    toolSchemaMode: mode.success ? mode.data : 'relaxed',
    modelPrices,
    approvalRequired,
    archivist: archivist.success ? archivist.data : {},
    evaluation: evaluation.success ? evaluation.data : {},
    ...(ttl.success && ttl.data !== undefined ? { approvalTtlMs: ttl.data } : {}),
    ...(limit.success ? { dailySpendLimitUsd: limit.data } : {}),
    ...(retention.success ? { transcriptRetentionDays: retention.data } : {}),
    // Only as a pair: a URL without its secret cannot be signed for.
    ...(notifyUrl.success && notifySecret.success
      ? { notifyUrl: notifyUrl.data, notifySecret: notifySecret.data }
      : {}),
  };
}

/**
 * PATCH /v1/settings: `modelRoutes` merges per route (`null` removes that route, an absent route is
 * left alone); `blockedTools` replaces the whole list (`[]` clears it); `toolSchemaMode` replaces.
 */
/**
 * A tenant's encryption of content at rest (docs/adr/0067): `off`, `on` (content sealed with the
 * tenant's data key) or `strict` (also no full-text or vector index derived from it). `on`/`strict`
 * need a key provider in the deployment (400 otherwise).
 */
export const EncryptionMode = z.enum(['off', 'on', 'strict']);
export type EncryptionMode = z.infer<typeof EncryptionMode>;
export const EncryptionSettings = z.strictObject({ mode: EncryptionMode });
export type EncryptionSettings = z.infer<typeof EncryptionSettings>;

export const UpdateSettingsRequest = z
  .strictObject({
    modelRoutes: z.strictObject(perRoute(ConcreteModelRef.nullable().optional())).optional(),
    blockedTools: BlockedTools.optional(),
    toolSchemaMode: ToolSchemaMode.optional(),
    /** Merges per key; `null` removes that price. */
    modelPrices: z
      .record(PriceKey, ModelPrice.nullable())
      .refine((v) => Object.keys(v).length <= 100, { message: 'at most 100 prices' })
      .optional(),
    /** Replaces the whole list (`[]` clears it). */
    approvalRequired: BlockedTools.optional(),
    /** `null` goes back to the deployment's APPROVAL_TTL_MS. */
    approvalTtlMs: z
      .int()
      .min(1000)
      .max(30 * 24 * 3600 * 1000)
      .nullable()
      .optional(),
    /** `null` removes the endpoint (and its secret); a URL needs a secret, given now or before. */
    notifyUrl: NotifyUrl.nullable().optional(),
    /** Write-only: never shown again; replacing it rotates the signing secret. */
    notifySecret: NotifySecret.optional(),
    /** `null` removes the cap. */
    dailySpendLimitUsd: DailySpendLimitUsd.nullable().optional(),
    /** Replaces the tenant's archivist settings (`{}` or `null`: the defaults), docs/adr/0032. */
    archivist: ArchivistSettings.nullable().optional(),
    /** Replaces the tenant's evaluation settings (`{}` or `null`: the defaults), docs/adr/0062. */
    evaluation: EvaluationSettings.nullable().optional(),
    /** The tenant's encryption at rest (docs/adr/0067); replaced when given. */
    encryption: EncryptionSettings.optional(),
    /** Days a session's content is kept after its last activity, 1..3650 (docs/adr/0068); `null`: for ever. */
    transcriptRetentionDays: TranscriptRetentionDays.nullable().optional(),
  })
  .refine((v) => Object.keys(v).length > 0, { message: 'at least one field is required' });
export type UpdateSettingsRequest = z.infer<typeof UpdateSettingsRequest>;

/**
 * The stored settings after a PATCH: routes merged per route (`null` removes one), the block list
 * and schema mode replaced when given. Keys other features keep in `settings` are left as they are;
 * the fields of this schema are written back normalised.
 */
export function applySettingsUpdate(stored: unknown, update: UpdateSettingsRequest): Record<string, unknown> {
  const base = isRecord(stored) ? stored : {};
  const current = parseTenantSettings(base);
  const modelRoutes: ModelRoutes = { ...current.modelRoutes };
  for (const route of MODEL_ROUTES) {
    const ref = update.modelRoutes?.[route];
    if (ref === null) delete modelRoutes[route];
    else if (ref !== undefined) modelRoutes[route] = ref;
  }
  const modelPrices: ModelPrices = { ...current.modelPrices };
  for (const [key, price] of Object.entries(update.modelPrices ?? {})) {
    if (price === null) delete modelPrices[key];
    else modelPrices[key] = price;
  }
  if (Object.keys(modelPrices).length > 100) {
    throw new AppError('validation_failed', 'a tenant has at most 100 prices', {
      issues: [{ path: 'modelPrices', message: 'at most 100 prices' }],
    });
  }
  const notifyUrl = update.notifyUrl === null ? undefined : (update.notifyUrl ?? current.notifyUrl);
  const notifySecret = update.notifyUrl === null ? undefined : (update.notifySecret ?? current.notifySecret);
  if (notifyUrl !== undefined && notifySecret === undefined) {
    throw new AppError('validation_failed', 'notifyUrl needs a notifySecret', {
      issues: [{ path: 'notifySecret', message: 'required with notifyUrl' }],
    });
  }
  return {
    ...base,
    notifyUrl,
    notifySecret,
    modelRoutes,
    blockedTools: update.blockedTools ?? current.blockedTools,
    toolSchemaMode: update.toolSchemaMode ?? current.toolSchemaMode,
    modelPrices,
    approvalRequired: update.approvalRequired ?? current.approvalRequired,
    approvalTtlMs:
      update.approvalTtlMs === null ? undefined : (update.approvalTtlMs ?? current.approvalTtlMs),
    dailySpendLimitUsd:
      update.dailySpendLimitUsd === null
        ? undefined
        : (update.dailySpendLimitUsd ?? current.dailySpendLimitUsd),
    archivist: update.archivist === null ? {} : (update.archivist ?? current.archivist),
    evaluation: update.evaluation === null ? {} : (update.evaluation ?? current.evaluation),
    ...(update.encryption ? { encryption: update.encryption } : {}),
    transcriptRetentionDays:
      update.transcriptRetentionDays === null
        ? undefined
        : (update.transcriptRetentionDays ?? current.transcriptRetentionDays),
  };
}

/** An approval's states (docs/adr/0013): pending until decided, expired by the reconciler, cancelled with its turn. */
export const ApprovalStatus = z.enum(['pending', 'approved', 'rejected', 'expired', 'cancelled']);
export type ApprovalStatus = z.infer<typeof ApprovalStatus>;

/** GET /v1/approvals: the tenant's approvals, newest first, optionally of one status. */
export const ApprovalsQuery = PageQuery.extend({ status: ApprovalStatus.optional() });
export type ApprovalsQuery = z.infer<typeof ApprovalsQuery>;

/** POST /v1/approvals/:id: the human decision on a gated tool call. */
export const DecideApprovalRequest = z.strictObject({
  decision: z.enum(['approve', 'reject']),
  reason: z.string().trim().min(1).max(2000).optional(),
});
export type DecideApprovalRequest = z.infer<typeof DecideApprovalRequest>;

/** POST /v1/tasks/:id/answer: the user's answer to a sub-agent's question (docs/adr/0024). */
export const AnswerTaskRequest = z.strictObject({ answer: z.string().trim().min(1).max(20_000) });
export type AnswerTaskRequest = z.infer<typeof AnswerTaskRequest>;

/** A memory record's kind (docs/adr/0022): distilled facts, turn episodes, notes added over the API. */
export const MemoryRecordKind = z.enum(['fact', 'episode', 'note']);
export type MemoryRecordKind = z.infer<typeof MemoryRecordKind>;

/** A tag of a memory record: 1 to 50 letters, digits, `_`, `-`, `.` or `:`. */
export const MemoryTag = z.string().regex(/^[\p{L}\p{N}_.:-]{1,50}$/u, {
  message: 'a tag is 1 to 50 letters, digits, "_", "-", "." or ":"',
});
export const MEMORY_MAX_TAGS = 20;

/** GET /v1/agents/:id/memory: the agent's records newest first, or the best matches of `q`. */
export const MemoryQuery = z
  .strictObject({
    q: z.string().trim().min(1).max(1000).optional(),
    kind: MemoryRecordKind.optional(),
    limit: z.coerce.number().int().min(1).max(50).optional(),
    cursor: z.string().max(200).optional(),
    /** How `q` searches (docs/adr/0050); default the agent's recall mode. */
    mode: RecallMode.optional(),
    /** Records created at or after / before this instant (ISO 8601 with an offset). */
    since: z.iso.datetime({ offset: true }).optional(),
    until: z.iso.datetime({ offset: true }).optional(),
    /** Records carrying every one of these tags, comma-separated. */
    tags: z
      .string()
      .max(1000)
      .transform((s) => s.split(',').map((t) => t.trim()))
      .pipe(z.array(MemoryTag).min(1).max(MEMORY_MAX_TAGS))
      .optional(),
  })
  .refine((v) => !(v.q !== undefined && v.cursor !== undefined), {
    message: 'cursor pages a listing; a search (q) returns its best matches only',
    path: ['cursor'],
  })
  .refine((v) => v.mode === undefined || v.q !== undefined, {
    message: 'mode applies to a search (q)',
    path: ['mode'],
  })
  .refine((v) => !(v.since && v.until && Date.parse(v.since) >= Date.parse(v.until)), {
    message: 'since must be before until',
    path: ['until'],
  });
export type MemoryQuery = z.infer<typeof MemoryQuery>;

/** POST /v1/agents/:id/memory: a note or fact an operator adds (provenance `{source: 'api'}`). */
export const AddMemoryRequest = z.strictObject({
  content: z
    .string()
    .min(1)
    .max(50_000)
    .refine((s) => s.trim().length > 0, { message: 'content must not be blank' }),
  title: z.string().trim().min(1).max(200).optional(),
  kind: z.enum(['note', 'fact']).optional(),
  tags: z.array(MemoryTag).max(MEMORY_MAX_TAGS).optional(),
});
export type AddMemoryRequest = z.infer<typeof AddMemoryRequest>;

/** GET /v1/agents/:id/memory/:sourceRef: how much of the exact content to return (default 12,000). */
export const MemoryRecordQuery = z.strictObject({
  maxChars: z.coerce.number().int().min(1).max(50_000).optional(),
});
export type MemoryRecordQuery = z.infer<typeof MemoryRecordQuery>;

/**
 * The rate-limit buckets of the HTTP API (docs/adr/0028): `admission` (messages, chat completions),
 * `reads` (GET), `writes` (other changes), and `webhooks` (each trigger's hook URL).
 */
export const RATE_LIMIT_BUCKETS = ['admission', 'reads', 'writes', 'webhooks'] as const;
export type RateLimitBucket = (typeof RATE_LIMIT_BUCKETS)[number];

/** Requests per minute; 0 means unlimited. */
const PerMinute = z.int().min(0).max(1_000_000);

/**
 * A tenant's rate limits as the operator overrides them (stored as `settings.rateLimits`; the
 * tenant cannot change them through PATCH /v1/settings). A bucket absent here takes the deployment's
 * default (RATE_LIMIT_*_PER_MIN). `*PerKey` limits one API key below the tenant's own limit.
 */
export const RateLimitOverrides = z.strictObject({
  admission: PerMinute.optional(),
  reads: PerMinute.optional(),
  writes: PerMinute.optional(),
  webhooks: PerMinute.optional(),
  admissionPerKey: PerMinute.optional(),
  readsPerKey: PerMinute.optional(),
  writesPerKey: PerMinute.optional(),
});
export type RateLimitOverrides = z.infer<typeof RateLimitOverrides>;

/** Reads stored overrides tolerantly: an invalid entry is dropped, never thrown. */
export function parseRateLimitOverrides(settings: unknown): RateLimitOverrides {
  const stored = isRecord(settings) && isRecord(settings.rateLimits) ? settings.rateLimits : {};
  const out: RateLimitOverrides = {};
  for (const key of Object.keys(RateLimitOverrides.shape) as (keyof RateLimitOverrides)[]) {
    const v = PerMinute.safeParse(stored[key]);
    if (v.success) out[key] = v.data;
  }
  return out;
}

/** PATCH /v1/admin/tenants/:id/limits: merges per bucket; `null` goes back to the deployment's default. */
export const UpdateRateLimitsRequest = z
  .strictObject({
    admission: PerMinute.nullable().optional(),
    reads: PerMinute.nullable().optional(),
    writes: PerMinute.nullable().optional(),
    webhooks: PerMinute.nullable().optional(),
    admissionPerKey: PerMinute.nullable().optional(),
    readsPerKey: PerMinute.nullable().optional(),
    writesPerKey: PerMinute.nullable().optional(),
  })
  .refine((v) => Object.keys(v).length > 0, { message: 'at least one field is required' });
export type UpdateRateLimitsRequest = z.infer<typeof UpdateRateLimitsRequest>;

/** The stored settings with a rate-limit update merged in; other keys are left as they are. */
export function applyRateLimitsUpdate(
  stored: unknown,
  update: UpdateRateLimitsRequest,
): Record<string, unknown> {
  const base = isRecord(stored) ? stored : {};
  const limits: Record<string, number> = { ...parseRateLimitOverrides(base) };
  for (const [key, value] of Object.entries(update)) {
    if (value === null) delete limits[key];
    else if (value !== undefined) limits[key] = value;
  }
  return { ...base, rateLimits: limits };
}

/**
 * The operator's tenant settings (docs/adr/0030), stored in `tenants.settings`: the scheduler reads
 * `maxConcurrentTurns` and `share`; the operator's spend cap is stored as `operatorDailySpendLimitUsd`,
 * apart from the tenant's own `dailySpendLimitUsd` (PATCH /v1/settings), and the cap that holds is
 * the smaller of the two (docs/adr/0026): a tenant cannot raise or remove the operator's.
 */
export const OPERATOR_SPEND_LIMIT_KEY = 'operatorDailySpendLimitUsd';
/** Turns of the tenant that may run at once; absent: the deployment's default. */
export const MaxConcurrentTurns = z.int().min(1).max(100_000);
/** The tenant's weight when tenants compete for workers (fair share); absent: 1. */
export const TenantShare = z.number().min(0.1).max(100);
export const DEFAULT_TENANT_SHARE = 1;

/** The operator's settings of a tenant as stored, read tolerantly (an invalid value is the default). */
export interface OperatorTenantSettings {
  maxConcurrentTurns: number | null;
  share: number;
  dailySpendLimitUsd: number | null;
  /** The tenant's hourly side-effect budget over all its agents (docs/adr/0058); null: unlimited. */
  maxActionsPerHour: number | null;
  /** Days a session's content is kept after its last activity (docs/adr/0068); null: for ever. */
  transcriptRetentionDays: number | null;
}

export function parseOperatorTenantSettings(settings: unknown): OperatorTenantSettings {
  const stored = isRecord(settings) ? settings : {};
  const max = parseStoredSetting(MaxConcurrentTurns, stored.maxConcurrentTurns);
  const share = parseStoredSetting(TenantShare, stored.share);
  const limit = parseStoredSetting(OperatorDailySpendLimitUsd, stored[OPERATOR_SPEND_LIMIT_KEY]);
  const actions = parseStoredSetting(MaxActionsPerHour, stored.maxActionsPerHour);
  const retention = parseStoredSetting(TranscriptRetentionDays, stored.transcriptRetentionDays);
  return {
    maxConcurrentTurns: max.success ? max.data : null,
    share: share.success ? share.data : DEFAULT_TENANT_SHARE,
    dailySpendLimitUsd: limit.success ? limit.data : null,
    maxActionsPerHour: actions.success ? actions.data : null,
    transcriptRetentionDays: retention.success ? retention.data : null,
  };
}

/** PATCH /v1/admin/tenants/:id: each field replaces its setting; `null` goes back to the default (or no cap). */
export const UpdateTenantRequest = z
  .strictObject({
    maxConcurrentTurns: MaxConcurrentTurns.nullable().optional(),
    share: TenantShare.nullable().optional(),
    dailySpendLimitUsd: OperatorDailySpendLimitUsd.nullable().optional(),
    /** The tenant's hourly side-effect budget over all its agents (docs/adr/0058); null: unlimited. */
    maxActionsPerHour: MaxActionsPerHour.nullable().optional(),
    /** The tenant's encryption at rest (docs/adr/0067), as the tenant's own PATCH /v1/settings sets it. */
    encryption: EncryptionSettings.optional(),
    /** Days a session's content is kept after its last activity, 1..3650 (docs/adr/0068); null: for ever. */
    transcriptRetentionDays: TranscriptRetentionDays.nullable().optional(),
  })
  .refine((v) => Object.keys(v).length > 0, { message: 'at least one field is required' });
export type UpdateTenantRequest = z.infer<typeof UpdateTenantRequest>;

/** The stored settings with the operator's update merged in: `null` removes the key; other keys stay. */
export function applyTenantUpdate(stored: unknown, update: UpdateTenantRequest): Record<string, unknown> {
  const next: Record<string, unknown> = { ...(isRecord(stored) ? stored : {}) };
  for (const [field, value] of Object.entries(update)) {
    const key = field === 'dailySpendLimitUsd' ? OPERATOR_SPEND_LIMIT_KEY : field;
    if (value === null) delete next[key];
    else if (value !== undefined) next[key] = value;
  }
  return next;
}

/** POST /v1/admin/tenants/:id/pause: the body is optional; a reason is kept with the pause. */
export const PauseTenantRequest = z.strictObject({
  reason: z.string().trim().min(1).max(500).optional(),
});
export type PauseTenantRequest = z.infer<typeof PauseTenantRequest>;

/** POST /v1/agents/:id/pause and /stop: an optional reason, shown as the status's `why`. */
export const AgentPostureRequest = z.strictObject({
  reason: z.string().trim().min(1).max(500).optional(),
});
export type AgentPostureRequest = z.infer<typeof AgentPostureRequest>;

/** POST /v1/admin/tenants/:id/resume: no fields; the body is optional. */
export const ResumeTenantRequest = z.strictObject({});

/**
 * What the audit log records (docs/adr/0030): security-relevant changes, one entry each, written in
 * the transaction of the change.
 */
export const AUDIT_ACTIONS = [
  'tenant.created',
  'tenant.settings_changed',
  'tenant.limits_changed',
  'tenant.paused',
  'tenant.resumed',
  'api_key.created',
  'api_key.revoked',
  'trigger.secret_rotated',
  'approval.decided',
  'session.forked',
  'session.rewound',
  'turn.cancelled',
  'turn.replayed',
  'task.cancelled',
  'agent.version_created',
  'agent.rolled_back',
  'agent.canary_started',
  'agent.canary_promoted',
  'agent.canary_rolled_back',
  'agent.canary_stopped',
  'tenant.data_key_rotated',
  'tenant.exported',
  'tenant.deletion_requested',
  'tenant.deleted',
  'tenant.retention_purged',
] as const;
export const AuditAction = z.enum(AUDIT_ACTIONS);
export type AuditAction = z.infer<typeof AuditAction>;

/** GET /v1/audit-events: the tenant's own entries, newest first, optionally of one action. */
export const AuditEventsQuery = PageQuery.extend({ action: AuditAction.optional() });
export type AuditEventsQuery = z.infer<typeof AuditEventsQuery>;

/** GET /v1/admin/audit-events: every entry, newest first, optionally of one tenant and one action. */
export const AdminAuditEventsQuery = AuditEventsQuery.extend({ tenantId: z.uuid().optional() });
export type AdminAuditEventsQuery = z.infer<typeof AdminAuditEventsQuery>;

/** An agent version number in a path or query (docs/adr/0061). */
export const AgentVersionNumber = z.coerce.number().int().min(1).max(2_147_483_647);

/** GET /v1/agents/:id/versions/diff?from=&to=. */
export const AgentVersionDiffQuery = z.strictObject({ from: AgentVersionNumber, to: AgentVersionNumber });
export type AgentVersionDiffQuery = z.infer<typeof AgentVersionDiffQuery>;

/** POST /v1/agents/:id/rollback: a new version equal to `version`'s configuration. */
export const RollbackAgentRequest = z.strictObject({
  version: z.int().min(1),
  note: z.string().max(500).optional(),
});
export type RollbackAgentRequest = z.infer<typeof RollbackAgentRequest>;

/**
 * PUT /v1/agents/:id/canary (docs/adr/0064): pin `sharePercent` of the agent's new sessions to
 * `candidateVersion`, the rest to `baselineVersion` (default: the agent's current version), and roll the
 * candidate back when its mean online score is below the baseline's by `margin` once each has `minScored`
 * scored turns (`scorer`: compare that scorer's scores only; default every score of the turn).
 */
export const StartCanaryRequest = z.strictObject({
  candidateVersion: z.int().min(1).max(2_147_483_647),
  baselineVersion: z.int().min(1).max(2_147_483_647).optional(),
  sharePercent: z.number().min(0).max(100),
  margin: z.number().min(0).max(1).optional(),
  minScored: z.int().min(1).max(1_000_000).optional(),
  scorer: z
    .string()
    .min(1)
    .max(64)
    .regex(/^[a-z0-9][a-z0-9_:-]*$/)
    .optional(),
});
export type StartCanaryRequest = z.infer<typeof StartCanaryRequest>;

/** PATCH /v1/sessions/:id: re-pin the session to an agent version, or to the latest. */
export const UpdateSessionRequest = z.strictObject({
  agentVersion: z.union([z.int().min(1), z.literal('latest')]),
});
export type UpdateSessionRequest = z.infer<typeof UpdateSessionRequest>;
