import type {
  Agent,
  AgentCanary,
  AgentVersion,
  ApiKey,
  Event,
  Message,
  Session,
  Tenant,
} from '@prisma/client';
import {
  AppError,
  isUuid,
  notFound,
  parseOperatorTenantSettings,
  parseRateLimitOverrides,
  ArchivistSettings,
  ToolSelection,
  parseMemorySettings,
  parseScorers,
  parseSessionOverrides,
  parseTenantSettings,
  resolveArchivistSettings,
  PG_INT_MAX,
  type AuditEventResponse,
  type OperatorTenantResponse,
  type AgentResponse,
  type ApiKeyResponse,
  type ApprovalResponse,
  type EventResponse,
  type MessageResponse,
  type SessionResponse,
  type SettingsResponse,
  type TenantResponse,
  type ToolCallResponse,
  type TurnResponse,
  triggerKindOf,
  type AgentVersionResponse,
  type CanaryResponse,
} from '@switchboard/contracts';
import type { ApprovalRead, AuditRow, TenantOverview, ToolCallRead, TurnRead } from '@switchboard/store';

/**
 * Rows → API JSON. One place decides what a client sees. Each presenter returns its response
 * schema's type (libs/contracts/src/responses.ts), which the OpenAPI document is generated from:
 * a field added here without the schema does not compile. Columns the database keeps as plain
 * text or JSON are narrowed to the values the runtime writes there.
 */

export const presentTenant = (t: Tenant): TenantResponse => ({
  id: t.id,
  name: t.name,
  createdAt: t.createdAt.toISOString(),
});

/** A tenant as the operator sees it (docs/adr/0030): its pause, the settings it controls, live figures. */
export const presentOperatorTenant = (t: TenantOverview): OperatorTenantResponse => {
  const operator = parseOperatorTenantSettings(t.settings);
  return {
    id: t.id,
    name: t.name,
    createdAt: t.createdAt.toISOString(),
    paused: t.paused,
    pausedAt: t.pausedAt?.toISOString() ?? null,
    pauseReason: t.pauseReason,
    maxConcurrentTurns: operator.maxConcurrentTurns,
    share: operator.share,
    dailySpendLimitUsd: operator.dailySpendLimitUsd,
    maxActionsPerHour: operator.maxActionsPerHour,
    transcriptRetentionDays: operator.transcriptRetentionDays,
    rateLimits: parseRateLimitOverrides(t.settings),
    spentTodayUsd: t.spentTodayUsd,
    turns: { running: t.running, queued: t.queued, waiting: t.waiting },
  };
};

/** An audit log entry (docs/adr/0030); its action narrowed to the ones the writers record. */
export const presentAuditEvent = (e: AuditRow): AuditEventResponse => ({
  id: e.id,
  tenantId: e.tenantId,
  actor: e.actor,
  action: e.action as AuditEventResponse['action'],
  targetType: e.targetType,
  targetId: e.targetId,
  details: e.details,
  createdAt: e.createdAt.toISOString(),
});

/** A tenant's settings as stored, read tolerantly, plus the deployment's model for unset route hints. */
export const presentSettings = (
  settings: unknown,
  defaultModel: string,
  evalDailyBudgetUsd: number,
  encryption: SettingsResponse['encryption'] = { mode: 'off', available: false },
): SettingsResponse => {
  const s = parseTenantSettings(settings);
  return {
    modelRoutes: s.modelRoutes,
    blockedTools: s.blockedTools,
    toolSchemaMode: s.toolSchemaMode,
    modelPrices: s.modelPrices,
    approvalRequired: s.approvalRequired,
    approvalTtlMs: s.approvalTtlMs ?? null,
    defaultModel,
    notifyUrl: s.notifyUrl ?? null,
    notifySecretSet: s.notifySecret !== undefined,
    dailySpendLimitUsd: s.dailySpendLimitUsd ?? null,
    operatorDailySpendLimitUsd: parseOperatorTenantSettings(settings).dailySpendLimitUsd,
    archivist: resolveArchivistSettings(s.archivist, undefined),
    // The judges' daily budget in force (docs/adr/0062): the tenant's, else EVAL_DAILY_BUDGET_USD.
    evaluation: { dailyBudgetUsd: s.evaluation.dailyBudgetUsd ?? evalDailyBudgetUsd },
    encryption,
    transcriptRetentionDays: s.transcriptRetentionDays ?? null,
  };
};

export const presentApiKey = (k: ApiKey): ApiKeyResponse => ({
  id: k.id,
  name: k.name,
  prefix: k.prefix,
  createdAt: k.createdAt.toISOString(),
  lastUsedAt: k.lastUsedAt?.toISOString() ?? null,
  revokedAt: k.revokedAt?.toISOString() ?? null,
  role: k.role as ApiKeyResponse['role'],
  agentIds: k.agentIds.length > 0 ? k.agentIds : null,
  expiresAt: k.expiresAt?.toISOString() ?? null,
});

export const presentAgent = (a: Agent): AgentResponse => ({
  id: a.id,
  name: a.name,
  archetype: a.archetype,
  tier: a.tier as AgentResponse['tier'],
  instructions: a.instructions,
  model: a.model,
  fallbackModels: a.fallbackModels,
  tools: a.tools,
  allowedSubagents: a.allowedSubagents,
  approvalRequired: a.approvalRequired,
  budgets: a.budgets as AgentResponse['budgets'],
  toolResultCompression: a.toolResultCompression as AgentResponse['toolResultCompression'],
  archivist: ArchivistSettings.safeParse(a.archivist).data ?? {},
  toolSelection: ToolSelection.safeParse(a.toolSelection).data ?? {},
  embedder: a.embedder,
  memory: parseMemorySettings(a.memory),
  maxActionsPerHour: a.maxActionsPerHour,
  scorers: parseScorers(a.scorers),
  version: a.version,
  builtIn: a.builtIn,
  createdAt: a.createdAt.toISOString(),
  updatedAt: a.updatedAt.toISOString(),
});

export const presentSession = (s: Session): SessionResponse => ({
  id: s.id,
  agentId: s.agentId,
  status: s.status as SessionResponse['status'],
  title: s.title,
  metadata: s.metadata as SessionResponse['metadata'],
  usage: { inputTokens: s.inputTokens, outputTokens: s.outputTokens, costUsd: s.costUsd.toFixed() },
  createdAt: s.createdAt.toISOString(),
  updatedAt: s.updatedAt.toISOString(),
  // Admission and each turn's end bump updated_at (admission-store, checkpoint-session): no join needed.
  lastActivityAt: s.updatedAt.toISOString(),
  closedAt: s.closedAt?.toISOString() ?? null,
  forkedFrom: s.forkedFromSessionId
    ? { sessionId: s.forkedFromSessionId, turnId: s.forkedAtTurnId, turnSeq: s.forkedAtTurnSeq }
    : null,
  overrides: overridesOf(s.overrides),
  agentVersion: s.agentVersion,
});

/** A session's overrides as stored (docs/adr/0053), or null when it has none. */
function overridesOf(stored: unknown): SessionResponse['overrides'] {
  const o = parseSessionOverrides(stored);
  return o.model === undefined && o.instructions === undefined ? null : o;
}

type M = MessageResponse;

export const presentMessage = (m: Message): MessageResponse => ({
  id: m.id,
  sessionId: m.sessionId,
  turnId: m.turnId,
  role: m.role as M['role'],
  kind: m.kind as M['kind'],
  origin: m.origin as M['origin'],
  trust: m.trust as M['trust'],
  authorityClass: m.authorityClass as M['authorityClass'],
  priority: m.priority as M['priority'],
  deliverySurface: m.deliverySurface as M['deliverySurface'],
  admissionContext: m.admissionContext as M['admissionContext'],
  body: m.body as M['body'],
  toolCalls: (m.toolCalls ?? []) as M['toolCalls'],
  toolCallId: m.toolCallId,
  metadata: m.metadata as M['metadata'],
  correlationId: m.correlationId,
  causationId: m.causationId,
  createdAt: m.createdAt.toISOString(),
  triggerKind: triggerKindOf(m.kind as M['kind']),
  sourceRefs: stringRecord(m.sourceRefs),
});

/** A stored `source_refs` object, its string values only (docs/adr/0060). */
const stringRecord = (v: unknown): Record<string, string> =>
  v && typeof v === 'object' && !Array.isArray(v)
    ? Object.fromEntries(Object.entries(v).filter((e): e is [string, string] => typeof e[1] === 'string'))
    : {};

/** The tool call columns a client sees (`ToolCallRead`, libs/store/src/turn-reads.ts). */
export type PresentedToolCall = ToolCallRead;

export const presentToolCall = (c: PresentedToolCall): ToolCallResponse => ({
  id: c.id,
  callId: c.callId,
  name: c.name,
  arguments: c.arguments,
  sideEffect: c.sideEffect as ToolCallResponse['sideEffect'],
  status: c.status as ToolCallResponse['status'],
  result: c.result,
  error: c.error,
  startedAt: c.startedAt?.toISOString() ?? null,
  completedAt: c.completedAt?.toISOString() ?? null,
  durationMs: c.durationMs,
  replayedFromToolCallId: c.replayedFromToolCallId,
});

/** The turn columns a client sees, with its tool calls (`TurnRead`, libs/store/src/turn-reads.ts). */
export type PresentedTurn = TurnRead;

export const presentTurn = (t: PresentedTurn): TurnResponse => ({
  id: t.id,
  sessionId: t.sessionId,
  agentId: t.agentId,
  inputMessageId: t.inputMessageId,
  seq: t.seq,
  status: t.status as TurnResponse['status'],
  priority: t.priority as TurnResponse['priority'],
  model: t.model,
  stopReason: t.stopReason,
  finalText: t.finalText,
  iterations: t.iterations,
  usage: {
    inputTokens: t.inputTokens,
    outputTokens: t.outputTokens,
    cachedTokens: t.cachedTokens,
    cacheWriteTokens: t.cacheWriteTokens,
  },
  costUsd: t.costUsd.toFixed(),
  cacheSavedUsd: t.cacheSavedUsd.toFixed(),
  costStatus: t.costStatus as TurnResponse['costStatus'],
  attempts: t.attempts as TurnResponse['attempts'],
  failure: t.failure as TurnResponse['failure'],
  decision: t.decision as TurnResponse['decision'],
  finalisationErrors: t.finalisationErrors as TurnResponse['finalisationErrors'],
  toolCalls: (t.toolCalls ?? []).map(presentToolCall),
  createdAt: t.createdAt.toISOString(),
  startedAt: t.startedAt?.toISOString() ?? null,
  completedAt: t.completedAt?.toISOString() ?? null,
  cancelRequestedAt: t.cancelRequestedAt?.toISOString() ?? null,
  cancelReason: (t.cancelReason ?? null) as TurnResponse['cancelReason'],
  cancelNote: t.cancelNote ?? null,
  workItemId: t.workItemId,
  closure: (t.closure ?? null) as TurnResponse['closure'],
  continuation: (t.continuation ?? null) as TurnResponse['continuation'],
  rewoundAt: t.rewoundAt?.toISOString() ?? null,
  copiedFromTurnId: t.copiedFromTurnId,
  replayOfTurnId: t.replayOfTurnId,
  agentVersion: t.agentVersion ?? null,
});

/** A journal row as the API shows it; its data is what the engine emitted under the event union. */
export const presentEvent = (e: Event): EventResponse =>
  ({
    seq: e.seq,
    type: e.type,
    turnId: e.turnId,
    data: e.data,
    createdAt: e.createdAt.toISOString(),
  }) as EventResponse;

/** An id in a path: anything that is not a UUID cannot name an object, so it is a 404. */
export function pathId(id: string, what: string): string {
  if (!isUuid(id)) throw notFound(what);
  return id;
}

export function encodeCursor(parts: (string | number)[]): string {
  return Buffer.from(JSON.stringify(parts)).toString('base64url');
}

const cursorPart = (p: unknown, kind: 'string' | 'number') =>
  kind === 'string'
    ? typeof p === 'string' && isUuid(p)
    : typeof p === 'number' && Number.isInteger(p) && p >= 0 && p <= PG_INT_MAX;

/**
 * A cursor is opaque to clients but forgeable: each part must be what encodeCursor writes for its
 * kind, a UUID (`'string'`) or a non-negative Postgres integer (`'number'`: turn seq, position), else a 400.
 */
export function decodeCursor<T extends (string | number)[]>(
  cursor: string | undefined,
  shape: ('string' | 'number')[],
): T | undefined {
  if (cursor === undefined) return undefined;
  try {
    const parts = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8')) as unknown;
    if (
      Array.isArray(parts) &&
      parts.length === shape.length &&
      parts.every((p, i) => cursorPart(p, shape[i]))
    ) {
      return parts as T;
    }
  } catch {
    // fall through
  }
  throw new AppError('bad_request', 'invalid cursor');
}

type A = ApprovalResponse;
type P = NonNullable<ApprovalResponse['provenance']>;

/** The approval with its turn's agent and input envelope (`ApprovalRead`, libs/store/src/approvals-repository.ts). */
export const presentApproval = (a: ApprovalRead): ApprovalResponse => ({
  id: a.id,
  sessionId: a.sessionId,
  turnId: a.turnId,
  callId: a.callId,
  toolName: a.toolName,
  arguments: a.arguments,
  sideEffect: a.sideEffect as A['sideEffect'],
  policy: a.policy as A['policy'],
  status: a.status as A['status'],
  reason: a.reason,
  decidedBy: a.decidedBy,
  decidedAt: a.decidedAt?.toISOString() ?? null,
  expiresAt: a.expiresAt.toISOString(),
  createdAt: a.createdAt.toISOString(),
  agentId: a.agentId,
  agentName: a.agentName,
  provenance: a.provenance && {
    messageId: a.provenance.messageId,
    kind: a.provenance.kind as P['kind'],
    origin: a.provenance.origin as P['origin'],
    trust: a.provenance.trust as P['trust'],
    authorityClass: a.provenance.authorityClass as P['authorityClass'],
  },
});

/** One agent version (docs/adr/0061). */
export const presentAgentVersion = (v: AgentVersion): AgentVersionResponse => ({
  agentId: v.agentId,
  version: v.version,
  config: v.config as AgentVersionResponse['config'],
  createdBy: v.createdBy,
  note: v.note,
  createdAt: v.createdAt.toISOString(),
});

/** An agent's canary (docs/adr/0064). */
export const presentCanary = (c: AgentCanary): CanaryResponse => ({
  agentId: c.agentId,
  runId: c.runId,
  status: c.status as CanaryResponse['status'],
  baselineVersion: c.baselineVersion,
  candidateVersion: c.candidateVersion,
  sharePercent: c.sharePercent,
  margin: c.margin,
  minScored: c.minScored,
  scorer: c.scorer,
  observed: (c.observed as CanaryResponse['observed']) ?? null,
  decision: (c.decision as CanaryResponse['decision']) ?? null,
  createdBy: c.createdBy,
  startedAt: c.startedAt.toISOString(),
  decidedAt: c.decidedAt?.toISOString() ?? null,
});
