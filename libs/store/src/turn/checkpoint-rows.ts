import { join, json, sql, type Sql } from '../sql';

/**
 * The rows a checkpoint inserts (docs/adr/0010): each row type beside the CTE that writes it. Every
 * insert selects from the fenced session update `s`, so a lost lease inserts nothing.
 */

/** Whose checkpoint: the turn and its session and tenant. */
export interface TurnFrame {
  tenantId: string;
  sessionId: string;
  turnId: string;
}

/** Only when the fenced session update matched. */
const FENCED = sql`WHERE EXISTS (SELECT 1 FROM s)`;

export interface MessageInsert {
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
  body: unknown;
  toolCalls?: unknown;
  toolCallId?: string | null;
  metadata?: Record<string, unknown>;
}

/** `m`: the checkpoint's transcript messages. */
export function messagesCte(messages: MessageInsert[] | undefined): Sql | undefined {
  if (!messages || messages.length === 0) return undefined;
  const rows = messages.map(
    (
      m,
    ) => sql`(${m.id}::uuid, ${m.tenantId}::uuid, ${m.agentId}::uuid, ${m.sessionId}::uuid, ${m.turnId}::uuid,
      ${m.turnSeq}::int, ${m.position}::int, ${m.role}::text, ${m.kind}::text, ${json(m.origin)}::jsonb,
      ${m.trust}::text, ${m.authorityClass}::text, ${m.priority}::text, ${json(m.body)}::jsonb,
      ${json(m.toolCalls)}::jsonb, ${m.toolCallId ?? null}::text, ${json(m.metadata ?? {})}::jsonb)`,
  );
  return sql`m AS (
    INSERT INTO messages (id, tenant_id, agent_id, session_id, turn_id, turn_seq, position, role, kind, origin,
      trust, authority_class, priority, body, tool_calls, tool_call_id, metadata)
    SELECT v.* FROM (VALUES ${join(rows)}) AS v ${FENCED})`;
}

export interface LedgerInsert {
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
  cacheWriteTokens: number;
  /** Decimal as a string, 8 places. */
  costUsd: string;
  /** What the prompt cache saved (docs/adr/0032); decimal, 8 places, negative when it only wrote. */
  cacheSavedUsd: string;
  costSource: string;
  /** chat (default) | embedding (docs/adr/0050). */
  kind?: 'chat' | 'embedding';
}

/** `l`: the checkpoint's ledger lines. */
export function ledgerCte(ledger: LedgerInsert[] | undefined): Sql | undefined {
  if (!ledger || ledger.length === 0) return undefined;
  const rows = ledger.map(
    (
      e,
    ) => sql`(${e.id}::uuid, ${e.tenantId}::uuid, ${e.agentId}::uuid, ${e.sessionId}::uuid, ${e.turnId}::uuid,
      sb_uuid7_time(${e.turnId}::uuid), ${e.key}::text, ${e.provider}::text, ${e.model}::text, ${e.inputTokens}::int, ${e.outputTokens}::int,
      ${e.cachedTokens}::int, ${e.cacheWriteTokens}::int, ${e.costUsd}::numeric, ${e.cacheSavedUsd}::numeric,
      ${e.costSource}::text, ${e.kind ?? 'chat'}::text)`,
  );
  return sql`l AS (
    INSERT INTO ledger_entries (id, tenant_id, agent_id, session_id, turn_id, turn_at, key, provider, model,
      input_tokens, output_tokens, cached_tokens, cache_write_tokens, cost_usd, cache_saved_usd, cost_source,
      kind)
    SELECT v.* FROM (VALUES ${join(rows)}) AS v ${FENCED})`;
}

/** A tool call's row: its start (`running`), or its outcome (with the start when none was written). */
export interface ToolCallUpsert {
  id: string;
  callId: string;
  name: string;
  arguments: unknown;
  sideEffect: string;
  idempotencyKey: string;
  status: 'running' | 'completed' | 'failed';
  result?: unknown;
  error?: unknown;
  durationMs?: number;
  /** A replay's call answered from this recorded call of the original, not executed (docs/adr/0054). */
  replayedFromToolCallId?: string;
}

/** One tool call's VALUES row: an outcome's start is `durationMs` before now. */
function toolCallRow(f: TurnFrame, c: ToolCallUpsert): Sql {
  const done = c.status !== 'running';
  return sql`(${c.id}::uuid, ${f.tenantId}::uuid, ${f.sessionId}::uuid, ${f.turnId}::uuid,
    ${c.callId}::text, ${c.name}::text, ${json(c.arguments ?? {})}::jsonb, ${c.sideEffect}::text,
    ${c.status}::text, ${c.idempotencyKey}::text,
    now() - (${done ? (c.durationMs ?? 0) : 0}::int * interval '1 millisecond'),
    ${done && c.status === 'completed' ? json(c.result) : null}::jsonb,
    ${done && c.status === 'failed' ? json(c.error) : null}::jsonb,
    ${done ? sql`now()` : sql`NULL::timestamptz`}, ${done ? (c.durationMs ?? 0) : null}::int,
    ${c.replayedFromToolCallId ?? null}::uuid)`;
}

/** `c`: the checkpoint's tool call starts and outcomes, one row per call. */
export function toolCallsCte(f: TurnFrame, calls: ToolCallUpsert[] | undefined): Sql | undefined {
  if (!calls || calls.length === 0) return undefined;
  const rows = calls.map((c) => toolCallRow(f, c));
  // A resumed turn starts the same call again (its start renewed); an outcome keeps the start.
  return sql`c AS (
    INSERT INTO tool_calls (id, tenant_id, session_id, turn_id, call_id, name, arguments, side_effect, status,
      idempotency_key, started_at, result, error, completed_at, duration_ms, replayed_from_tool_call_id)
    SELECT v.* FROM (VALUES ${join(rows)}) AS v ${FENCED}
    ON CONFLICT (turn_id, call_id) DO UPDATE SET status = excluded.status,
      started_at = CASE WHEN excluded.status = 'running' THEN now() ELSE tool_calls.started_at END,
      result = excluded.result, error = excluded.error, completed_at = excluded.completed_at,
      duration_ms = excluded.duration_ms, replayed_from_tool_call_id = excluded.replayed_from_tool_call_id)`;
}

export interface EventInsert {
  id: string;
  turnId: string | null;
  type: string;
  /** Already redacted. */
  data: unknown;
  /** The turn's total cost after this statement is added to `data.costUsd` (events of its end). */
  withTurnCost?: boolean;
}

/** A journal event as one checkpoint committed it. */
export interface CommittedEvent {
  /** The journal row's id: a live reader matches it to the ephemeral copy it already had (ADR 0015). */
  id?: string;
  seq: number;
  type: string;
  turnId: string | null;
  data: Record<string, unknown>;
  createdAt: string;
}

/** Some event carries the turn's cost after the checkpoint (read from `t`). */
export const carriesTurnCost = (events: EventInsert[]): boolean =>
  events.length > 0 && events.some((e) => e.withTurnCost);

/**
 * `e`: the checkpoint's journal events at the seqs the session update allocated (`s.base + i`),
 * returned as committed when asked.
 */
export function eventsCte(f: TurnFrame, events: EventInsert[], returnEvents?: boolean): Sql | undefined {
  if (events.length === 0) return undefined;
  const rows = events.map(
    (e, i) =>
      sql`(${e.id}::uuid, ${e.turnId}::uuid, ${i + 1}::int, ${e.type}::text, ${json(e.data ?? {})}::jsonb,
        ${e.withTurnCost ?? false}::boolean)`,
  );
  const data = carriesTurnCost(events)
    ? sql`CASE WHEN v.with_cost THEN v.data || jsonb_build_object('costUsd', (SELECT cost_usd::text FROM t))
        ELSE v.data END`
    : sql`v.data`;
  return sql`e AS (
    INSERT INTO events (id, tenant_id, session_id, turn_id, seq, type, data)
    SELECT v.id, ${f.tenantId}::uuid, ${f.sessionId}::uuid, v.turn_id, s.base + v.ord, v.type, ${data}
    FROM s, (VALUES ${join(rows)}) AS v (id, turn_id, ord, type, data, with_cost)
    ${returnEvents ? sql`RETURNING id, seq, type, turn_id AS "turnId", data, created_at AS "createdAt"` : sql``})`;
}
