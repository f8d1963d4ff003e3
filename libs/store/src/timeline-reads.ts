import { ofTenant, sql, type SqlRunner } from './sql';
import { descendantsCostUsd } from './subagent-cost';

/**
 * What a turn's timeline (GET /v1/turns/:id/timeline, docs/adr/0045) reads besides `readTurn`'s row,
 * in one statement: the turn's journal, tool calls, approvals, sub-agent tasks with their child
 * turns, post-turn hook runs, the rounds whose context was recorded, and the run facts `readTurn`
 * does not carry. Each list is an aggregate over its own index (turn_id), so the statement reads
 * only this turn's rows; the journal and hook runs are partitioned by time (docs/adr/0044) and
 * their reads name the partition key's lower bound.
 */
export interface TimelineRead {
  parentTurnId: string | null;
  runCount: number;
  traceContext: Record<string, unknown>;
  events: { seq: number; type: string; at: string; data: Record<string, unknown> | null }[];
  toolCalls: {
    id: string;
    callId: string;
    name: string;
    arguments: unknown;
    sideEffect: string;
    status: string;
    result: unknown;
    error: unknown;
    startedAt: string | null;
    completedAt: string | null;
    durationMs: number | null;
  }[];
  approvals: {
    id: string;
    /** approval | client_tool (docs/adr/0047). */
    kind: string;
    callId: string;
    toolName: string;
    arguments: unknown;
    sideEffect: string;
    policy: string;
    status: string;
    reason: string | null;
    decidedBy: string | null;
    decidedAt: string | null;
    createdAt: string;
  }[];
  children: {
    taskId: string;
    callId: string | null;
    agent: string;
    taskStatus: string;
    childSessionId: string | null;
    childTurnId: string | null;
    childTurnStatus: string | null;
    blocking: boolean;
    costUsd: string;
    totalCostUsd: string;
    createdAt: string;
    completedAt: string | null;
  }[];
  hooks: { hook: string; status: string; attempts: number; createdAt: string; completedAt: string | null }[];
  /** Rounds with a recorded context. */
  contextRounds: number[];
}

export async function readTimeline(
  db: SqlRunner,
  tenantId: string,
  turnId: string,
): Promise<TimelineRead | undefined> {
  return db.first<TimelineRead>(sql`
    SELECT t.parent_turn_id AS "parentTurnId", t.run_count AS "runCount", t.trace_context AS "traceContext",
      COALESCE((SELECT json_agg(json_build_object('seq', e.seq, 'type', e.type, 'at', e.created_at,
                  'data', e.data) ORDER BY e.seq)
                FROM events e
                WHERE e.turn_id = t.id AND e.session_id = t.session_id AND e.created_at >= t.created_at),
               '[]'::json) AS events,
      COALESCE((SELECT json_agg(json_build_object('id', c.id, 'callId', c.call_id, 'name', c.name,
                  'arguments', c.arguments, 'sideEffect', c.side_effect, 'status', c.status,
                  'result', c.result, 'error', c.error, 'startedAt', c.started_at,
                  'completedAt', c.completed_at, 'durationMs', c.duration_ms) ORDER BY c.started_at, c.id)
                FROM tool_calls c WHERE c.turn_id = t.id), '[]'::json) AS "toolCalls",
      COALESCE((SELECT json_agg(json_build_object('id', a.id, 'kind', a.kind, 'callId', a.call_id, 'toolName', a.tool_name,
                  'arguments', a.arguments, 'sideEffect', a.side_effect, 'policy', a.policy,
                  'status', a.status, 'reason', a.reason, 'decidedBy', a.decided_by,
                  'decidedAt', a.decided_at, 'createdAt', a.created_at) ORDER BY a.created_at, a.id)
                FROM approvals a WHERE a.turn_id = t.id), '[]'::json) AS approvals,
      COALESCE((SELECT json_agg(json_build_object('taskId', k.id, 'callId', k.call_id,
                  'agent', k.agent_name, 'taskStatus', k.status, 'childSessionId', k.session_id,
                  'childTurnId', k.child_turn_id, 'childTurnStatus', ct.status, 'blocking', k.blocking,
                  'costUsd', COALESCE(ct.cost_usd, k.cost_usd)::text,
                  'totalCostUsd', (COALESCE(ct.cost_usd, k.cost_usd)
                    + CASE WHEN ct.id IS NULL THEN 0 ELSE ${descendantsCostUsd(sql`ct.id`)} END)::text,
                  'createdAt', k.created_at, 'completedAt', k.completed_at) ORDER BY k.created_at, k.id)
                FROM tasks k LEFT JOIN turns ct ON ct.id = k.child_turn_id
                WHERE k.parent_turn_id = t.id), '[]'::json) AS children,
      COALESCE((SELECT json_agg(json_build_object('hook', h.hook, 'status', h.status,
                  'attempts', h.attempts, 'createdAt', h.created_at, 'completedAt', h.completed_at)
                  ORDER BY h.created_at, h.hook)
                FROM hook_runs h WHERE h.turn_id = t.id AND h.turn_at = sb_uuid7_time(t.id)), '[]'::json) AS hooks,
      COALESCE((SELECT array_agg(r.round_index ORDER BY r.round_index)
                FROM turn_round_contexts r WHERE r.turn_id = t.id), '{}'::int[]) AS "contextRounds"
    FROM turns t
    WHERE t.id = ${turnId}::uuid AND ${ofTenant('t.tenant_id', tenantId)}`);
}

/** The tenant's kept original of a compacted tool result (docs/adr/0033), unless it has expired. */
export interface ToolResultOriginalRead {
  id: string;
  tool: string;
  kind: string;
  content: string;
  bytes: number;
  sessionId: string | null;
  turnId: string | null;
  callId: string | null;
  createdAt: Date;
  expiresAt: Date;
}

export async function readToolResultOriginal(
  db: SqlRunner,
  tenantId: string,
  id: string,
): Promise<ToolResultOriginalRead | undefined> {
  return db.first<ToolResultOriginalRead>(sql`
    SELECT id, tool, kind, content, bytes, session_id AS "sessionId", turn_id AS "turnId",
      call_id AS "callId", created_at AS "createdAt", expires_at AS "expiresAt"
    FROM tool_result_originals
    WHERE tenant_id = ${tenantId}::uuid AND id = ${id} AND expires_at > now()`);
}
