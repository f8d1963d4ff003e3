import { Prisma, type ToolCall, type Turn } from '@prisma/client';
import type { Db } from '@switchboard/database';
import { ofTenant, sql, type Sql, type SqlDb } from './sql';
import { descendantsCostUsd } from './subagent-cost';

/** The tool-call columns a client sees. */
export type ToolCallRead = Pick<
  ToolCall,
  | 'id'
  | 'callId'
  | 'name'
  | 'arguments'
  | 'sideEffect'
  | 'status'
  | 'result'
  | 'error'
  | 'startedAt'
  | 'completedAt'
  | 'durationMs'
  | 'replayedFromToolCallId'
>;

/** The turn columns a client sees, with its tool calls (Prisma's row, or `readTurn`'s one statement). */
export type TurnRead = Pick<
  Turn,
  | 'id'
  | 'sessionId'
  | 'agentId'
  | 'inputMessageId'
  | 'seq'
  | 'status'
  | 'priority'
  | 'model'
  | 'stopReason'
  | 'finalText'
  | 'iterations'
  | 'inputTokens'
  | 'outputTokens'
  | 'cachedTokens'
  | 'cacheWriteTokens'
  | 'costUsd'
  | 'cacheSavedUsd'
  | 'costStatus'
  | 'attempts'
  | 'failure'
  | 'decision'
  | 'finalisationErrors'
  | 'createdAt'
  | 'startedAt'
  | 'completedAt'
  | 'cancelRequestedAt'
  | 'cancelReason'
  | 'cancelNote'
  | 'workItemId'
  | 'closure'
  | 'continuation'
  | 'rewoundAt'
  | 'copiedFromTurnId'
  | 'replayOfTurnId'
  | 'agentVersion'
> & { toolCalls?: ToolCallRead[] };

/**
 * The turn of the tenant with its tool calls (ties by id: the order `readTurn` uses too), through Prisma.
 * Found by its key and its tenant checked on the row (`ofTenant`'s reason: a tenant_id condition would
 * read every turn of a tenant newer than the last ANALYZE).
 */
export async function findTurn(db: Db, tenantId: string, turnId: string): Promise<TurnRead | null> {
  const turn = await db.turn.findUnique({
    where: { id: turnId },
    include: { toolCalls: { orderBy: [{ startedAt: 'asc' }, { id: 'asc' }] } },
  });
  return turn?.tenantId === tenantId ? turn : null;
}

/**
 * `readTurn`'s row: the turn, its tool calls, and what GET /v1/turns/:id adds (docs/adr/0025): the
 * cost of the turns below it (`descendantsCostUsd`, in the same statement) and whether it spawned
 * sub-agent tasks at all, so their list is read only for a turn that did.
 */
export type TurnDetailRead = TurnRead & {
  childrenCostUsd: string;
  totalCostUsd: string;
  spawned: boolean;
  /**
   * The memory records recalled into the turn's context (docs/adr/0060), from its `memory_recalled`
   * events (one per run that recalled anything), each record once, first recall first.
   */
  recalled: RecalledRead[];
  /** The turn's scores (docs/adr/0062): its scorers' verdicts and any feedback, oldest first. */
  scores: ScoreRead[];
};

/** One `turn_scores` row as GET /v1/turns/:id shows it. */
export interface ScoreRead {
  scorer: string;
  kind: string;
  source: string;
  status: string;
  score: number | null;
  passed: boolean | null;
  reason: string | null;
  label: string | null;
  value: number | null;
  givenBy: string | null;
  traceId: string | null;
  createdAt: string;
}

/** One recalled record as `memory_recalled` journals it (libs/contracts events.ts). */
export interface RecalledRead {
  ref: string;
  kind: string;
  title: string;
  score: number | null;
  path: string | null;
  via: 'episodic' | 'facts' | 'preferences';
  source: string | null;
  sourceTurnId: string | null;
  sourceSessionId: string | null;
}

/** The runs' recalled lists as one, each record (by ref) once, in the order first recalled. */
export function mergeRecalled(runs: unknown): RecalledRead[] {
  const seen = new Set<string>();
  const out: RecalledRead[] = [];
  for (const run of Array.isArray(runs) ? runs : []) {
    for (const r of Array.isArray(run) ? (run as RecalledRead[]) : []) {
      if (!r || typeof r.ref !== 'string' || seen.has(r.ref)) continue;
      seen.add(r.ref);
      out.push({
        ref: r.ref,
        kind: r.kind,
        title: r.title,
        score: r.score ?? null,
        path: r.path ?? null,
        via: r.via,
        source: r.source ?? null,
        sourceTurnId: r.sourceTurnId ?? null,
        sourceSessionId: r.sourceSessionId ?? null,
      });
    }
  }
  return out;
}

type ToolCallJson = Omit<ToolCallRead, 'startedAt' | 'completedAt'> & {
  startedAt: string | null;
  completedAt: string | null;
};

type Iso = string | null;

/**
 * GET /v1/turns/:id's row as one JSON object (`turnDetailColumns` under `row_to_json`): what `readTurn`
 * reads, and what a turn's end publishes on the live channel (docs/adr/0071) so a waiting request
 * answers without reading it again. `turnDetailOf` makes the row `readTurn` returns of it, whichever
 * way it came: the same body either way.
 */
export type TurnDetailJson = Omit<
  TurnDetailRead,
  | 'costUsd'
  | 'cacheSavedUsd'
  | 'toolCalls'
  | 'recalled'
  | 'scores'
  | 'createdAt'
  | 'startedAt'
  | 'completedAt'
  | 'cancelRequestedAt'
  | 'rewoundAt'
> & {
  costUsd: string;
  cacheSavedUsd: string;
  createdAt: string;
  startedAt: Iso;
  completedAt: Iso;
  cancelRequestedAt: Iso;
  rewoundAt: Iso;
  toolCalls: ToolCallJson[];
  /** Each run's `memory_recalled` records, in seq order (`mergeRecalled` makes the list). */
  recalledRuns: unknown;
  scores: ScoreRead[] | null;
};

/**
 * The columns of `TurnDetailJson` for the turn row `t` (the turns table, or a checkpoint's turn
 * update returning every column): its tool calls, the cost below it, whether it spawned tasks, its
 * recalled records and its scores, each read in the same statement.
 */
export const turnDetailColumns = (t: Sql): Sql => sql`
    ${t}.id, ${t}.session_id AS "sessionId", ${t}.agent_id AS "agentId",
    ${t}.input_message_id AS "inputMessageId", ${t}.seq, ${t}.status, ${t}.priority, ${t}.model,
    ${t}.stop_reason AS "stopReason", ${t}.final_text AS "finalText", ${t}.iterations,
    ${t}.input_tokens AS "inputTokens", ${t}.output_tokens AS "outputTokens",
    ${t}.cached_tokens AS "cachedTokens", ${t}.cache_write_tokens AS "cacheWriteTokens",
    ${t}.cost_usd::text AS "costUsd", ${t}.cache_saved_usd::text AS "cacheSavedUsd",
    ${t}.cost_status AS "costStatus", ${t}.attempts, ${t}.failure, ${t}.decision,
    ${t}.finalisation_errors AS "finalisationErrors", ${t}.created_at AS "createdAt",
    ${t}.started_at AS "startedAt", ${t}.completed_at AS "completedAt",
    ${t}.cancel_requested_at AS "cancelRequestedAt", ${t}.cancel_reason AS "cancelReason",
    ${t}.cancel_note AS "cancelNote", ${t}.work_item_id AS "workItemId", ${t}.closure, ${t}.continuation,
    ${t}.rewound_at AS "rewoundAt", ${t}.copied_from_turn_id AS "copiedFromTurnId",
    ${t}.replay_of_turn_id AS "replayOfTurnId", ${t}.agent_version AS "agentVersion",
    COALESCE((
      SELECT json_agg(json_build_object(
               'id', c.id, 'callId', c.call_id, 'name', c.name, 'arguments', c.arguments,
               'sideEffect', c.side_effect, 'status', c.status, 'result', c.result,
               'error', c.error, 'startedAt', c.started_at, 'completedAt', c.completed_at,
               'durationMs', c.duration_ms, 'replayedFromToolCallId', c.replayed_from_tool_call_id)
             ORDER BY c.started_at, c.id)
      FROM tool_calls c WHERE c.turn_id = ${t}.id
    ), '[]'::json) AS "toolCalls",
    d.children::text AS "childrenCostUsd", (${t}.cost_usd + d.children)::text AS "totalCostUsd",
    EXISTS (SELECT 1 FROM tasks k WHERE k.parent_turn_id = ${t}.id) AS spawned,
    (SELECT json_agg(e.data->'records' ORDER BY e.seq) FROM events e
      WHERE e.turn_id = ${t}.id AND e.type = 'memory_recalled') AS "recalledRuns",
    (SELECT json_agg(json_build_object('scorer', s.scorer, 'kind', s.kind, 'source', s.source,
               'status', s.status, 'score', s.score, 'passed', s.passed, 'reason', s.reason,
               'label', s.label, 'value', s.value, 'givenBy', s.given_by, 'traceId', s.trace_id,
               'createdAt', to_char(s.created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'))
             ORDER BY s.created_at, s.scorer, s.id)
      FROM turn_scores s WHERE s.turn_id = ${t}.id AND s.tenant_id = ${t}.tenant_id) AS scores`;

/** The lateral `d` `turnDetailColumns` reads the cost of the turns below `t` from. */
export const turnDetailLateral = (t: Sql): Sql =>
  sql`LATERAL (SELECT ${descendantsCostUsd(sql`${t}.id`)} AS children) d`;

/** `readTurn`'s row of a `TurnDetailJson`: the cost as Prisma's Decimal, timestamps as Dates. */
export function turnDetailOf(row: TurnDetailJson): TurnDetailRead {
  const date = (iso: string | null) => (iso === null ? null : new Date(iso));
  const { recalledRuns, scores, ...rest } = row;
  return {
    ...rest,
    recalled: mergeRecalled(recalledRuns),
    scores: scores ?? [],
    costUsd: new Prisma.Decimal(row.costUsd),
    cacheSavedUsd: new Prisma.Decimal(row.cacheSavedUsd),
    createdAt: new Date(row.createdAt),
    startedAt: date(row.startedAt),
    completedAt: date(row.completedAt),
    cancelRequestedAt: date(row.cancelRequestedAt),
    rewoundAt: date(row.rewoundAt),
    toolCalls: row.toolCalls.map((c) => ({
      ...c,
      startedAt: date(c.startedAt),
      completedAt: date(c.completedAt),
    })),
  };
}

/**
 * The turn with its tool calls in one statement on the shared pool (one transaction, no Prisma
 * query compilation on the hot path; Prisma's `include` is two). It builds the row Prisma would
 * (`findTurn`): the cost as Prisma's Decimal (from its string form), timestamps as Dates, tool calls
 * in the same order. The row travels as one JSON object, as a turn's end publishes it (`turnDetailOf`).
 */
export async function readTurn(
  db: SqlDb,
  tenantId: string,
  turnId: string,
): Promise<TurnDetailRead | undefined> {
  const row = await db.first<{ turn: TurnDetailJson }>(sql`
    SELECT row_to_json(x) AS turn FROM (
      SELECT ${turnDetailColumns(sql`t`)}
      FROM turns t, ${turnDetailLateral(sql`t`)}
      WHERE t.id = ${turnId}::uuid AND ${ofTenant('t.tenant_id', tenantId)}) x`);
  return row ? turnDetailOf(row.turn) : undefined;
}

/** The session of the tenant's turn; undefined when there is no such turn. */
export async function sessionOfTurn(
  db: SqlDb,
  tenantId: string,
  turnId: string,
): Promise<string | undefined> {
  const row = await db.first<{ session_id: string }>(
    sql`SELECT session_id FROM turns WHERE id = ${turnId}::uuid AND ${ofTenant('tenant_id', tenantId)}`,
  );
  return row?.session_id;
}

/** A turn's status; undefined when there is no such turn. */
export async function turnStatus(db: SqlDb, turnId: string): Promise<string | undefined> {
  const row = await db.first<{ status: string }>(sql`SELECT status FROM turns WHERE id = ${turnId}::uuid`);
  return row?.status;
}
