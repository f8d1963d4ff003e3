import { Prisma } from '@prisma/client';
import type { Tx } from './prisma';

/**
 * Hand-written inserts for the turn's hot path. Prisma's model queries cost
 * about 2-4 ms of CPU each through the query compiler (docs/adr/0002); these
 * statements run once or more per step of every turn, so they go as raw SQL
 * through the same client and transaction.
 */

const json = (v: unknown) => (v === undefined || v === null ? null : JSON.stringify(v));

export interface MessageRow {
  id: string;
  tenantId: string;
  agentId: string;
  sessionId: string;
  turnId: string | null;
  turnSeq: number;
  position: number;
  role: 'user' | 'assistant' | 'tool';
  kind: string;
  origin: unknown;
  trust: string;
  authorityClass: string;
  priority: string;
  deliverySurface?: string | null;
  admissionContext?: string | null;
  body: unknown;
  toolCalls?: unknown;
  toolCallId?: string | null;
  metadata?: Record<string, unknown>;
  correlationId?: string | null;
  causationId?: string | null;
  idempotencyKey?: string | null;
  idempotencyFingerprint?: string | null;
}

export async function insertMessage(tx: Tx, m: MessageRow): Promise<void> {
  await tx.$executeRaw`
    INSERT INTO messages (id, tenant_id, agent_id, session_id, turn_id, turn_seq, position, role, kind, origin,
      trust, authority_class, priority, delivery_surface, admission_context, body, tool_calls, tool_call_id,
      metadata, correlation_id, causation_id, idempotency_key, idempotency_fingerprint)
    VALUES (${m.id}::uuid, ${m.tenantId}::uuid, ${m.agentId}::uuid, ${m.sessionId}::uuid, ${m.turnId}::uuid,
      ${m.turnSeq}, ${m.position}, ${m.role}, ${m.kind}, ${json(m.origin)}::jsonb, ${m.trust}, ${m.authorityClass},
      ${m.priority}, ${m.deliverySurface ?? null}, ${m.admissionContext ?? null}, ${json(m.body)}::jsonb,
      ${json(m.toolCalls)}::jsonb, ${m.toolCallId ?? null}, ${json(m.metadata ?? {})}::jsonb,
      ${m.correlationId ?? null}, ${m.causationId ?? null}, ${m.idempotencyKey ?? null},
      ${m.idempotencyFingerprint ?? null})`;
}

export interface LedgerRow {
  id: string;
  tenantId: string;
  agentId: string;
  sessionId: string;
  turnId: string;
  key: string;
  provider: string;
  model: string;
  inputTokens: number;
  outputTokens: number;
  cachedTokens: number;
  /** Decimal as a string, 8 places. */
  costUsd: string;
  costSource: string;
}

export async function insertLedgerEntry(tx: Tx, e: LedgerRow): Promise<void> {
  await tx.$executeRaw`
    INSERT INTO ledger_entries (id, tenant_id, agent_id, session_id, turn_id, key, provider, model,
      input_tokens, output_tokens, cached_tokens, cost_usd, cost_source)
    VALUES (${e.id}::uuid, ${e.tenantId}::uuid, ${e.agentId}::uuid, ${e.sessionId}::uuid, ${e.turnId}::uuid,
      ${e.key}, ${e.provider}, ${e.model}, ${e.inputTokens}, ${e.outputTokens}, ${e.cachedTokens},
      ${e.costUsd}::numeric, ${e.costSource})`;
}

export interface EventRow {
  id: string;
  tenantId: string;
  sessionId: string;
  turnId: string | null;
  seq: number;
  type: string;
  data: unknown;
}

export async function insertEvents(tx: Tx, rows: EventRow[]): Promise<void> {
  if (rows.length === 0) return;
  const values = rows.map(
    (e) =>
      Prisma.sql`(${e.id}::uuid, ${e.tenantId}::uuid, ${e.sessionId}::uuid, ${e.turnId}::uuid, ${e.seq}, ${e.type}, ${json(e.data)}::jsonb)`,
  );
  await tx.$executeRaw`
    INSERT INTO events (id, tenant_id, session_id, turn_id, seq, type, data) VALUES ${Prisma.join(values)}`;
}
