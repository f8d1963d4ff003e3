import type { Agent, ApiKey, Event, Message, Session, Tenant, ToolCall, Turn } from '@prisma/client';
import { AppError, isUuid, notFound, parseTenantSettings } from '@switchboard/contracts';

/** Rows → API JSON. One place decides what a client sees. */

export const presentTenant = (t: Tenant) => ({
  id: t.id,
  name: t.name,
  createdAt: t.createdAt.toISOString(),
});

/** A tenant's settings as stored, read tolerantly, plus the deployment's model for unset route hints. */
export const presentSettings = (settings: unknown, defaultModel: string) => {
  const { modelRoutes, blockedTools, toolSchemaMode } = parseTenantSettings(settings);
  return { modelRoutes, blockedTools, toolSchemaMode, defaultModel };
};

export const presentApiKey = (k: ApiKey) => ({
  id: k.id,
  name: k.name,
  prefix: k.prefix,
  createdAt: k.createdAt.toISOString(),
  lastUsedAt: k.lastUsedAt?.toISOString() ?? null,
  revokedAt: k.revokedAt?.toISOString() ?? null,
});

export const presentAgent = (a: Agent) => ({
  id: a.id,
  name: a.name,
  archetype: a.archetype,
  tier: a.tier,
  instructions: a.instructions,
  model: a.model,
  fallbackModels: a.fallbackModels,
  tools: a.tools,
  allowedSubagents: a.allowedSubagents,
  budgets: a.budgets,
  createdAt: a.createdAt.toISOString(),
  updatedAt: a.updatedAt.toISOString(),
});

export const presentSession = (s: Session) => ({
  id: s.id,
  agentId: s.agentId,
  status: s.status,
  title: s.title,
  metadata: s.metadata,
  usage: { inputTokens: s.inputTokens, outputTokens: s.outputTokens, costUsd: s.costUsd.toString() },
  createdAt: s.createdAt.toISOString(),
  updatedAt: s.updatedAt.toISOString(),
  closedAt: s.closedAt?.toISOString() ?? null,
});

export const presentMessage = (m: Message) => ({
  id: m.id,
  sessionId: m.sessionId,
  turnId: m.turnId,
  role: m.role,
  kind: m.kind,
  origin: m.origin,
  trust: m.trust,
  authorityClass: m.authorityClass,
  priority: m.priority,
  deliverySurface: m.deliverySurface,
  admissionContext: m.admissionContext,
  body: m.body,
  toolCalls: m.toolCalls ?? [],
  toolCallId: m.toolCallId,
  metadata: m.metadata,
  correlationId: m.correlationId,
  causationId: m.causationId,
  createdAt: m.createdAt.toISOString(),
});

export const presentToolCall = (c: ToolCall) => ({
  id: c.id,
  callId: c.callId,
  name: c.name,
  arguments: c.arguments,
  sideEffect: c.sideEffect,
  status: c.status,
  result: c.result,
  error: c.error,
  startedAt: c.startedAt?.toISOString() ?? null,
  completedAt: c.completedAt?.toISOString() ?? null,
  durationMs: c.durationMs,
});

export const presentTurn = (t: Turn & { toolCalls?: ToolCall[] }) => ({
  id: t.id,
  sessionId: t.sessionId,
  agentId: t.agentId,
  inputMessageId: t.inputMessageId,
  seq: t.seq,
  status: t.status,
  priority: t.priority,
  model: t.model,
  stopReason: t.stopReason,
  finalText: t.finalText,
  iterations: t.iterations,
  usage: { inputTokens: t.inputTokens, outputTokens: t.outputTokens, cachedTokens: t.cachedTokens },
  costUsd: t.costUsd.toString(),
  attempts: t.attempts,
  failure: t.failure,
  decision: t.decision,
  finalisationErrors: t.finalisationErrors,
  toolCalls: (t.toolCalls ?? []).map(presentToolCall),
  createdAt: t.createdAt.toISOString(),
  startedAt: t.startedAt?.toISOString() ?? null,
  completedAt: t.completedAt?.toISOString() ?? null,
});

export const presentEvent = (e: Event) => ({
  seq: e.seq,
  type: e.type,
  turnId: e.turnId,
  data: e.data,
  createdAt: e.createdAt.toISOString(),
});

/** An id in a path: anything that is not a UUID cannot name an object, so it is a 404. */
export function pathId(id: string, what: string): string {
  if (!isUuid(id)) throw notFound(what);
  return id;
}

export function encodeCursor(parts: (string | number)[]): string {
  return Buffer.from(JSON.stringify(parts)).toString('base64url');
}

export function decodeCursor<T extends (string | number)[]>(
  cursor: string | undefined,
  shape: string[],
): T | undefined {
  if (cursor === undefined) return undefined;
  try {
    const parts = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8')) as unknown;
    if (
      Array.isArray(parts) &&
      parts.length === shape.length &&
      parts.every((p, i) => typeof p === shape[i] && (typeof p !== 'string' || isUuid(p)))
    ) {
      return parts as T;
    }
  } catch {
    // fall through
  }
  throw new AppError('bad_request', 'invalid cursor');
}
