import {
  CLAIMED_PREFERENCES_LIMIT,
  PREFERENCE_CHARS,
  type CancelReason,
  type ClaimedMemory,
} from '@switchboard/contracts';
import { join, sql, type Sql, type SqlRunner } from '../sql';
import { descendantsCostUsd } from '../subagent-cost';
import { tenantCapUsd } from '../tenant-spend';
import type { Lease } from './lease';
import { continuationSet, type ContinuationResolution } from './continuation';
import { TASK_START_CTE } from './task';
import { DRAIN_ORDER, ENDED, HOLDS_SESSION, OTHER_TENANT_QUEUED, UNFINISHED, WAITING } from './statuses';

/**
 * The claim (docs/adr/0010, statement 1): one statement takes (or, holding it, extends) the session
 * lease when the job's turn belongs to the session and the session has unfinished turns; marks the
 * session's next turn in drain order running; and loads it with its session, agent, tenant settings,
 * transcript, interrupted calls and decisions.
 *
 * Its CTEs, in order: `own` (the job's turn), `pending` (the session has unfinished turns), `s` (the
 * lease), `nt` (the session's next turn, any that holds the session), `ut` (that turn marked running
 * when it is runnable), `kt` (a child turn's sub-agent task marked running with it, docs/adr/0024).
 * The select list then loads what the turn needs from `ut` and `s`.
 */

/** The turn row as the runner uses it. */
export interface TurnRow {
  id: string;
  tenantId: string;
  sessionId: string;
  agentId: string;
  seq: number;
  inputMessageId: string;
  status: string;
  priority: string;
  model: string | null;
  iterations: number;
  toolCallCount: number;
  /** Decimal, 8 places. */
  costUsd: string;
  traceContext: unknown;
  runCount: number;
  createdAt: Date;
  startedAt: Date | null;
  /** A cancel was requested (docs/adr/0014): the claim that returns it must not run it. */
  cancelRequested: boolean;
  /** Why the cancel was requested (docs/adr/0055), if one was. */
  cancelReason: CancelReason | null;
  /** The sub-agent task this turn runs as a child (docs/adr/0024); null for every other turn. */
  taskId: string | null;
  /** What its sub-agents' child turns (and theirs) have cost so far: it counts against its maxUsd (docs/adr/0025). */
  childrenCostUsd: string;
  /**
   * The session whose provider prompt cache the turn shares (docs/adr/0032): its own, or for a child
   * turn running its parent's agent, the parent's session (same instructions, tools and model).
   */
  cacheSessionId?: string;
  /** The structured output the answer must have (docs/adr/0048), as admitted; null: text. */
  responseFormat?: unknown;
  /** Tools the request declared for the client to run (docs/adr/0047); null for most turns. */
  clientTools?: { name: string; description: string; parameters: Record<string, unknown> }[] | null;
  /**
   * Whether an A2A push config named the turn when it was claimed (docs/adr/0037): a turn without
   * one costs no extra statement when it starts running.
   */
  hasPushConfigs?: boolean;
  /** The tool choice forced for the turn's first round (docs/adr/0047); null: auto. */
  toolChoice?: unknown;
  /** The turn this one replays (docs/adr/0054); null for every other turn. */
  replayOfTurnId?: string | null;
  /** Which waiting reason of the previous turn its input matched (docs/adr/0057); null: it was not waiting. */
  continuation?: ContinuationResolution | null;
  /** The agent version the turn runs on (docs/adr/0061). */
  agentVersion?: number | null;
}

/** A transcript entry with what the model's view of it needs (a subset of the messages row). */
export interface TranscriptEntry {
  role: string;
  kind: string;
  trust: string;
  authorityClass: string;
  body: unknown;
  toolCalls: unknown;
  toolCallId: string | null;
  metadata: unknown;
  turnSeq: number;
  position: number;
}

/** What the claim reads of an agent's learning (docs/adr/0059). */
export interface AgentLearning {
  /** Newest first. */
  reflections: string[];
  toolHints: {
    tool: string;
    calls: number;
    failures: number;
    failuresByKind: Record<string, number>;
    lastFailureKind: string | null;
  }[];
  userProfile: string | null;
}

export interface AgentRow {
  id: string;
  /** The agent's latest version, or (laid over by `versioned`) the version the turn runs on (docs/adr/0061). */
  version?: number;
  name: string;
  instructions: string;
  model: string;
  fallbackModels: string[];
  tools: string[];
  /** chat | reasoning | worker (docs/adr/0025): a worker is never offered the delegation tools. */
  tier?: string;
  /** Tools whose calls by this agent need a human decision (docs/adr/0013). */
  approvalRequired: string[];
  budgets: unknown;
  /** TokenJuice (docs/adr/0033): auto | full | light | off. */
  toolResultCompression?: string;
  /** Semantic tool selection as stored, `{ maxPerTurn?, pinned? }` (docs/adr/0049). */
  toolSelection?: unknown;
  /** The agent's embedder, `<provider>/<model>`; null: the built-in default (docs/adr/0049). */
  embedder?: string | null;
  /** The agent's hourly side-effect budget (docs/adr/0058); null: unlimited. */
  maxActionsPerHour?: number | null;
  /** The agent's memory settings as stored (`{ recall?, citations? }`, docs/adr/0050, 0060). */
  memory?: unknown;
  /**
   * Whether the agent has any memory record, read in the claim itself (an index probe, always current
   * whichever process wrote): recall is skipped without one (docs/adr/0032).
   */
  hasMemory?: boolean;
  /**
   * Whether the agent has ever had a work item (docs/adr/0031), read in the claim the same way: an
   * agent that never had one gets no work-item projection statement.
   */
  hasWorkItems?: boolean;
  /** The agent's learning feedback (docs/adr/0059); null or absent when its `memory.learning` is off. */
  learning?: AgentLearning | null;
  /**
   * The agent's memory blocks (docs/adr/0051) as this claim read them, by name: rendered after the
   * session's system prompt, so a turn sees every edit committed before it started.
   */
  memoryBlocks?: PromptMemoryBlock[];
  /**
   * The agent's memory settings, embedder, active vector set and newest preferences, from its row
   * (never a version's), read by this claim (docs/adr/0076): the turn's memory sources read none of
   * it again. Absent from a claim that did not read it.
   */
  claimedMemory?: ClaimedMemory;
}

/** A memory block as the system prompt renders it (docs/adr/0051). */
export interface PromptMemoryBlock {
  name: string;
  description: string;
  content: string;
  limitChars: number;
  readOnly: boolean;
  /** Who wrote the current text: `operator` text is framed as instructions, `agent` text as notes. */
  writtenBy: 'operator' | 'agent';
}

/**
 * A decided approval of the turn, as the engine acts on it; or (`kind: client_tool`, docs/adr/0047)
 * a client tool call the client answered (`answered`, with its `output`) or that expired.
 */
export interface StoredDecision {
  approvalId: string;
  callId: string;
  status: 'approved' | 'rejected' | 'expired' | 'cancelled' | 'answered';
  reason: string | null;
  kind?: 'approval' | 'client_tool';
  output?: string | null;
}

/** A turn ready to run: the turn (now `running`), its session, agent, tenant settings and transcript. */
export interface TurnLoad {
  turn: TurnRow;
  /** An earlier run of this turn was interrupted (it had been claimed before). */
  resumed: boolean;
  session: {
    systemPrompt: string | null;
    summarizerFailures: number;
    compaction: unknown;
    /**
     * The session's own agent settings (docs/adr/0053), `{model?, instructions?}` as stored (a fork's):
     * the turn plan puts them over the agent's. Null for most sessions.
     */
    overrides?: unknown;
  };
  agent: AgentRow;
  tenant: {
    settings: unknown;
    killSwitch: boolean;
    /**
     * Under the tenant's daily spend cap (docs/adr/0026): what this turn may still spend (USD, the
     * limit less the tenant's other spend today; zero or less: nothing). Absent: no cap.
     */
    capUsd?: number;
  };
  /** Earlier turns' entries (the compacted middle left out), in order. */
  earlier: TranscriptEntry[];
  /** This turn's entries so far (its input, and what an interrupted run committed), in order. */
  own: TranscriptEntry[];
  /** Calls an interrupted run started and never recorded (ADR 0004). */
  startedCalls: string[];
  /** Decisions on this turn's gated calls (approved, rejected, expired, cancelled): docs/adr/0013. */
  decisions: StoredDecision[];
  /** Time the turn spent waiting for decisions (each wait to its last decision): not deadline time. */
  waitedMs: number;
  /**
   * A replay turn's view of the turn it replays (docs/adr/0054): the original's completed
   * side-effecting calls in the order they were made, and those this turn's committed calls were
   * already answered from. Absent for every other turn.
   */
  replay?: ReplayLoad;
}

/** What a replay turn's claim loads of its original (docs/adr/0054). */
export interface ReplayLoad {
  originalTurnId: string;
  recorded: { id: string; name: string; arguments: unknown; result: unknown }[];
  used: string[];
}

/** What the claim is asked. */
export interface ClaimNext {
  sessionId: string;
  /** The job's turn: it must be in this session and tenant. */
  turnId: string;
  tenantId: string;
  owner: string;
  lease: Lease;
  /**
   * The tenant's concurrency cap (docs/adr/0029), when it has one: the lease is taken only while the
   * tenant's other sessions under a live lease are fewer. The caller holds the tenant's advisory lock.
   */
  cap?: number;
}

export interface ClaimResult {
  /** The job's own turn status; undefined when no such turn is in that session and tenant. */
  ownStatus?: string;
  /** The job's own turn's sub-agent task, when it runs one (docs/adr/0024). */
  ownTaskId?: string;
  /** The lease is ours. */
  leased: boolean;
  /** The session had unfinished turns (seen before the claim). */
  pending: boolean;
  /** The oldest unfinished turn, marked running; none when another run finished it meanwhile. */
  next?: TurnLoad;
  /** The session's next turn is waiting (docs/adr/0013): nothing of it can run now. */
  waiting?: boolean;
  /**
   * Another tenant has a turn queued (docs/adr/0029): the holder gives the session back after this
   * turn and chooses again, rather than draining it while others wait.
   */
  contended?: boolean;
  /** The tenant is paused (docs/adr/0030): its turns stay queued, none was marked running. */
  paused?: boolean;
}

export interface ClaimRow {
  own_status: string | null;
  own_task_id: string | null;
  leased: boolean;
  pending: boolean;
  turn: Record<string, unknown> | null;
  system_prompt: string | null;
  summarizer_failures: number | null;
  compaction: unknown;
  overrides: unknown;
  agent: AgentRow | null;
  /** The pinned version's stored configuration when the turn does not run on the agent's latest (docs/adr/0061). */
  version_config?: unknown;
  settings: unknown;
  kill_switch: boolean | null;
  tenant_cap_usd: string | null;
  transcript: TranscriptEntry[] | null;
  started_calls: string[] | null;
  waiting: boolean;
  contended: boolean;
  paused: boolean;
  decisions: StoredDecision[] | null;
  waited_ms: number | null;
  replay: ReplayLoad | null;
}

// --- The CTEs ---

/**
 * Whom a claim is for, as SQL: the bound values of a `ClaimNext`, or the columns of the fair choice
 * it runs in the same statement (`turn/pick.ts`), with the condition under which it may take the lease.
 */
export interface ClaimTarget {
  session: Sql;
  turn: Sql;
  tenant: Sql;
  owner: string;
  lease: Lease;
  /** An extra condition on taking the lease. */
  when?: Sql;
}

/** The target of a claim asked with bound values; a cap adds its guard. */
export function targetOf(a: ClaimNext): ClaimTarget {
  const target: ClaimTarget = {
    session: sql`${a.sessionId}::uuid`,
    turn: sql`${a.turnId}::uuid`,
    tenant: sql`${a.tenantId}::uuid`,
    owner: a.owner,
    lease: a.lease,
  };
  return a.cap ? { ...target, when: capGuard(target, a.cap) } : target;
}

/** `own`: the job's turn, only when it is in this session and tenant. */
const ownCte = (t: ClaimTarget) => sql`own AS (
  SELECT status, task_id FROM turns
  WHERE id = ${t.turn} AND session_id = ${t.session} AND tenant_id = ${t.tenant}
)`;

/** `pending`: the session has unfinished turns (in the statement's snapshot). */
const pendingCte = (t: ClaimTarget) => sql`pending AS (
  SELECT EXISTS (
    SELECT 1 FROM turns WHERE session_id = ${t.session} AND status IN ${UNFINISHED}
  ) AS found
)`;

/** `s`: the lease taken when free, expired or already ours; only for the job's own session with work in it. */
const leaseCte = (t: ClaimTarget) => sql`s AS (
  UPDATE sessions SET lease_owner = ${t.owner}, lease_token = ${t.lease.token}::uuid,
    lease_expires_at = now() + (${t.lease.ms} * interval '1 millisecond')
  WHERE id = ${t.session}
    AND (lease_token = ${t.lease.token}::uuid OR lease_token IS NULL OR lease_expires_at < now())
    AND EXISTS (SELECT 1 FROM own) AND (SELECT found FROM pending)${
      t.when
        ? sql`
    AND ${t.when}`
        : sql``
    }
  RETURNING id, tenant_id, system_prompt, summarizer_failures, compaction, overrides, agent_version, created_at
)`;

/** The tenant's cap (docs/adr/0029): its other sessions under a live lease, fewer than the cap. */
const capGuard = (t: ClaimTarget, cap: number) => sql`(lease_token = ${t.lease.token}::uuid
      OR (SELECT count(*) FROM sessions o WHERE o.tenant_id = ${t.tenant} AND o.id <> ${t.session}
        AND o.lease_token IS NOT NULL AND o.lease_expires_at > now()) < ${cap}::int)`;

/** `nt`: the session's next turn in drain order, a waiting one included (it holds the session). */
const NEXT_TURN_CTE = sql`nt AS (
  SELECT t.id, t.status FROM turns t JOIN s ON t.session_id = s.id
  WHERE t.status IN ${HOLDS_SESSION} ORDER BY ${DRAIN_ORDER(sql`t`)} LIMIT 1
)`;

/** The tenant of the leased session is paused (docs/adr/0030): its turns stay where they are. */
const TENANT_PAUSED = sql`EXISTS (SELECT 1 FROM tenants tp WHERE tp.id = s.tenant_id AND tp.kill_switch)`;

/**
 * The turn's agent is paused or stopped (docs/adr/0031): held, as the scheduler's choice holds it
 * (`RUNNABLE`, turn/pick.ts), also when the holder of its session drains the session after the turn
 * before it (a turn queued behind one that the agent's stop cancelled, docs/adr/0055).
 */
const AGENT_HELD = sql`EXISTS (SELECT 1 FROM agents ah WHERE ah.id = t.agent_id AND ah.lifecycle <> 'active')`;

/**
 * `ut`: that turn marked running when it is unfinished, re-checked on its latest row version (a turn
 * another holder finished while this statement waited for the session row is not taken), unless the
 * tenant is paused or the turn's agent held: the turn stays `queued` (or `running`, interrupted)
 * until the resume wakes it. Its agent version (docs/adr/0061) is fixed on its first claim: the one it
 * was admitted with (a replay's), else the session's pin, else the agent's latest. `started_at` is the
 * claiming statement's time, not its transaction's: a capped tenant's claim first waits for the
 * tenant's advisory lock, and `now()` would date the start to before that wait, before the turn
 * whose freed slot it takes had ended.
 */
const RUN_TURN_CTE = sql`ut AS (
  UPDATE turns t SET status = 'running', started_at = coalesce(t.started_at, statement_timestamp()),
    run_count = t.run_count + 1, ${continuationSet(sql`t`)},
    agent_version = coalesce(t.agent_version, s.agent_version,
      (SELECT av.version FROM agents av WHERE av.id = t.agent_id))
  FROM nt, s WHERE t.id = nt.id AND t.status IN ${UNFINISHED} AND NOT ${TENANT_PAUSED} AND NOT ${AGENT_HELD}
  RETURNING t.*
)`;

// --- The select list: what the turn needs, from `ut` and `s` ---

/** The claim's own answers: the job's turn, the lease, work seen, the next turn waiting, contention. */
const claimFlags = (t: ClaimTarget) => sql`(SELECT status FROM own) AS own_status,
  (SELECT task_id FROM own) AS own_task_id,
  s.id IS NOT NULL AS leased,
  (SELECT found FROM pending) AS pending,
  EXISTS (SELECT 1 FROM nt WHERE nt.status IN ${WAITING}) AS waiting,
  ${OTHER_TENANT_QUEUED(t.tenant)} AS contended,
  coalesce(${TENANT_PAUSED}, false) AS paused`;

/** The claimed turn as `TurnRow`. */
const TURN_JSON = sql`json_build_object(
  'id', ut.id, 'tenantId', ut.tenant_id, 'sessionId', ut.session_id, 'agentId', ut.agent_id, 'seq', ut.seq,
  'inputMessageId', ut.input_message_id, 'status', ut.status, 'priority', ut.priority, 'model', ut.model,
  'iterations', ut.iterations, 'toolCallCount', ut.tool_call_count, 'costUsd', ut.cost_usd::text,
  'traceContext', ut.trace_context, 'runCount', ut.run_count, 'createdAt', ut.created_at,
  'startedAt', ut.started_at, 'cancelRequested', ut.cancel_requested_at IS NOT NULL,
  'cancelReason', ut.cancel_reason, 'taskId', ut.task_id, 'responseFormat', ut.response_format,
  'clientTools', ut.client_tools, 'toolChoice', ut.tool_choice, 'replayOfTurnId', ut.replay_of_turn_id,
  'continuation', ut.continuation, 'agentVersion', ut.agent_version,
  'hasPushConfigs', EXISTS (SELECT 1 FROM a2a_push_configs pc WHERE pc.turn_id = ut.id),
  'childrenCostUsd', ${descendantsCostUsd(sql`ut.id`)}::text,
  'cacheSessionId', coalesce((SELECT tk.parent_session_id FROM tasks tk JOIN turns pt ON pt.id = tk.parent_turn_id
    WHERE tk.id = ut.task_id AND pt.agent_id = ut.agent_id), ut.session_id))`;

/** Kept reflections a turn is shown, newest first (docs/adr/0059). */
export const LEARNING_REFLECTIONS = 3;
/** Tools with hints at most; a tool gets one when at least this share of its calls failed. */
export const LEARNING_TOOL_HINTS = 5;
export const LEARNING_FAILURE_RATE = 0.2;

/**
 * The agent's learning feedback (docs/adr/0059), read only when its `memory.learning` is on: its
 * newest kept reflections (not of rewound turns), the tools whose calls often fail, from its tool
 * statistics, and its user profile record. Null when learning is off: no statement runs.
 */
const LEARNING_JSON = sql`CASE WHEN coalesce(a.memory->>'learning', 'false') = 'true' THEN json_build_object(
    'reflections', (SELECT coalesce(json_agg(r.text ORDER BY r.created_at DESC, r.id DESC), '[]'::json) FROM (
      SELECT ar.id, ar.text, ar.created_at FROM agent_reflections ar
      WHERE ar.tenant_id = a.tenant_id AND ar.agent_id = a.id
        AND NOT EXISTS (SELECT 1 FROM turns rt WHERE rt.id = ar.turn_id AND rt.rewound_at IS NOT NULL)
      ORDER BY ar.created_at DESC, ar.id DESC LIMIT ${LEARNING_REFLECTIONS}) r),
    'toolHints', (SELECT coalesce(json_agg(json_build_object('tool', h.tool, 'calls', h.calls,
        'failures', h.failures, 'failuresByKind', h.failures_by_kind, 'lastFailureKind', h.last_failure_kind)
        ORDER BY h.failures DESC, h.tool), '[]'::json) FROM (
      SELECT * FROM agent_tool_stats st
      WHERE st.tenant_id = a.tenant_id AND st.agent_id = a.id AND st.failures > 0
        AND st.failures >= ${LEARNING_FAILURE_RATE}::float8 * st.calls
      ORDER BY st.failures DESC, st.tool LIMIT ${LEARNING_TOOL_HINTS}) h),
    'userProfile', (SELECT p.content FROM agent_user_profiles p WHERE p.tenant_id = a.tenant_id AND p.agent_id = a.id))
  END`;

/**
 * What the memory context sources need of the agent that does not depend on the turn's input
 * (docs/adr/0076): its memory settings, embedder and active vector set as its row has them (not the
 * version's: recall compares with the vectors of the row's embedder), and its newest preferences as
 * `MemoryStore.preferences` reads them (tagged `preference`, the literal test the partial index
 * `memory_records_preference_idx` matches; records of rewound turns left out, docs/adr/0053; a
 * sealed content read whole, since a cut sealed value does not open). One partial-index probe for an
 * agent without preferences.
 */
const CLAIMED_MEMORY_JSON = sql`json_build_object(
  'settings', a.memory, 'embedder', a.embedder, 'vectorsModel', a.memory_vectors_model,
  'preferences', (SELECT coalesce(json_agg(json_build_object('id', p.id, 'kind', p.kind, 'title', p.title,
      'content', p.content, 'totalChars', p.total_chars, 'provenance', p.provenance, 'tags', p.tags,
      'createdAt', p.created_at, 'updatedAt', p.updated_at) ORDER BY p.created_at DESC, p.id DESC), '[]'::json)
    FROM (
      SELECT mp.id, mp.kind, mp.title, mp.provenance, mp.tags, mp.created_at, mp.updated_at,
        CASE WHEN mp.content LIKE 'sbe1.%' THEN mp.content ELSE left(mp.content, ${PREFERENCE_CHARS}::int) END AS content,
        CASE WHEN mp.content LIKE 'sbe1.%' THEN -1 ELSE char_length(mp.content) END AS total_chars
      FROM memory_records mp, LATERAL (SELECT ARRAY(SELECT rt.id::text FROM turns rt WHERE rt.tenant_id = a.tenant_id
          AND rt.agent_id = a.id AND rt.rewound_at IS NOT NULL) AS ids) rw
      WHERE mp.tenant_id = a.tenant_id AND mp.agent_id = a.id AND mp.tags @> '{preference}'::text[]
        AND NOT coalesce((mp.provenance->>'turnId') = ANY(rw.ids) OR (mp.provenance->'turnIds') ?| rw.ids, false)
      ORDER BY mp.created_at DESC, mp.id DESC LIMIT ${CLAIMED_PREFERENCES_LIMIT}::int) p))`;

/** The turn's agent as `AgentRow`. */
const AGENT_JSON = sql`json_build_object(
  'id', a.id, 'version', a.version, 'name', a.name, 'instructions', a.instructions, 'model', a.model,
  'fallbackModels', a.fallback_models, 'tools', a.tools, 'budgets', a.budgets,
  'approvalRequired', coalesce(a.approval_required, '{}'), 'tier', a.tier,
  'toolResultCompression', a.tool_result_compression,
  'toolSelection', a.tool_selection, 'embedder', a.embedder, 'maxActionsPerHour', a.max_actions_per_hour,
  'memory', a.memory,
  'hasMemory', EXISTS (SELECT 1 FROM memory_records mr WHERE mr.tenant_id = a.tenant_id AND mr.agent_id = a.id),
  'hasWorkItems', EXISTS (SELECT 1 FROM work_items wi WHERE wi.tenant_id = a.tenant_id AND wi.agent_id = a.id),
  'memoryBlocks', (SELECT coalesce(json_agg(json_build_object('name', mb.name, 'description', mb.description,
      'content', mb.content, 'limitChars', mb.limit_chars, 'readOnly', mb.read_only, 'writtenBy', mb.written_by)
      ORDER BY mb.name), '[]'::json)
    FROM memory_blocks mb WHERE mb.tenant_id = a.tenant_id AND mb.agent_id = a.id),
  'learning', ${LEARNING_JSON},
  'claimedMemory', ${CLAIMED_MEMORY_JSON})`;

/**
 * The configuration of the version the turn runs on (docs/adr/0061), read only when it is not the
 * agent's latest (a pinned session after a change): null, nothing read, on the latest.
 */
const VERSION_CONFIG = sql`CASE WHEN ut.agent_version IS DISTINCT FROM a.version THEN (
    SELECT v.config FROM agent_versions v WHERE v.agent_id = a.id AND v.version = ut.agent_version)
  END AS version_config`;

/** Calls an interrupted run started and never recorded (ADR 0004). */
const STARTED_CALLS = sql`(SELECT coalesce(json_agg(c.call_id), '[]'::json) FROM tool_calls c
  WHERE c.turn_id = ut.id AND c.status = 'running') AS started_calls`;

/** The turn's decided approvals (docs/adr/0013) and answered client tool calls (docs/adr/0047). */
const DECISIONS = sql`(SELECT coalesce(json_agg(json_build_object('approvalId', ap.id, 'callId', ap.call_id,
    'status', ap.status, 'reason', ap.reason, 'kind', ap.kind, 'output', ap.output)), '[]'::json) FROM approvals ap
  WHERE ap.turn_id = ut.id AND ap.status <> 'pending') AS decisions`;

/**
 * A replay turn's original (docs/adr/0054): its completed side-effecting calls in the order they were
 * made (a row's id is a UUIDv7 taken when the call started, or was answered without running), and the
 * ones this turn's committed calls were answered from. Null (nothing read) for every other turn.
 */
const REPLAY = sql`CASE WHEN ut.replay_of_turn_id IS NULL THEN NULL ELSE json_build_object(
    'originalTurnId', ut.replay_of_turn_id,
    'recorded', (SELECT coalesce(json_agg(json_build_object('id', oc.id, 'name', oc.name,
        'arguments', oc.arguments, 'result', oc.result) ORDER BY oc.id), '[]'::json)
      FROM tool_calls oc WHERE oc.turn_id = ut.replay_of_turn_id AND oc.tenant_id = ut.tenant_id
        AND oc.status = 'completed' AND oc.side_effect <> 'read_only'),
    'used', (SELECT coalesce(json_agg(rc.replayed_from_tool_call_id), '[]'::json) FROM tool_calls rc
      WHERE rc.turn_id = ut.id AND rc.replayed_from_tool_call_id IS NOT NULL)) END AS replay`;

/**
 * Time a turn spent waiting (ms, float8): approvals (and client tool waits), then blocking sub-agents.
 * The claim's deadline leaves it out; so does a replay's comparison of latencies (docs/adr/0054).
 */
export const waitedMsOf = (turnId: Sql): Sql => sql`
  -- One wait's approvals share their created_at (one statement): from it to its last decision.
  ((SELECT coalesce(sum(w.ms), 0)::float8 FROM (
      SELECT extract(epoch FROM max(ap.decided_at) - ap.created_at) * 1000 AS ms FROM approvals ap
      WHERE ap.turn_id = ${turnId} AND ap.decided_at IS NOT NULL GROUP BY ap.created_at) w)
    -- Waits for sub-agents (docs/adr/0024): the span of the blocking children it waited for.
    + (SELECT coalesce(extract(epoch FROM max(k.completed_at) - min(k.created_at)) * 1000, 0)::float8
      FROM tasks k WHERE k.parent_turn_id = ${turnId} AND k.blocking AND k.completed_at IS NOT NULL))`;

/** Time the turn spent waiting: not deadline time. */
const WAITED_MS = sql`${waitedMsOf(sql`ut.id`)} AS waited_ms`;

/**
 * The turn's transcript: its own entries and the entries of earlier turns that ran and ended and
 * were not rewound (docs/adr/0053), the compacted middle (the session's compaction cut) left out.
 */
const TRANSCRIPT = sql`(SELECT coalesce(json_agg(json_build_object(
    'role', m.role, 'kind', m.kind, 'trust', m.trust, 'authorityClass', m.authority_class,
    'body', m.body, 'toolCalls', m.tool_calls, 'toolCallId', m.tool_call_id, 'metadata', m.metadata,
    'turnSeq', m.turn_seq, 'position', m.position) ORDER BY m.turn_seq, m.position), '[]'::json)
  FROM messages m
  WHERE m.session_id = ut.session_id
    -- A session's messages are written after it (a day's margin for clocks): the partitions of
    -- messages older than the session are not read (docs/adr/0044).
    AND m.created_at >= s.created_at - interval '1 day' AND (
    m.turn_seq = ut.seq
    -- Earlier turns are those that ran and ended: with priority bands a later seq may have run
    -- first, and a turn still waiting (or cancelled before it ran) is no part of the history.
    -- A rewound turn (docs/adr/0053) is no part of it either: the session goes on as if it had not run.
    OR EXISTS (SELECT 1 FROM turns e WHERE e.session_id = m.session_id AND e.seq = m.turn_seq
      AND e.id <> ut.id AND e.status IN ${ENDED} AND e.started_at IS NOT NULL AND e.rewound_at IS NULL)
  ) AND (
    m.turn_seq = ut.seq
    OR jsonb_typeof(s.compaction -> 'headThroughSeq') IS DISTINCT FROM 'number'
    OR jsonb_typeof(s.compaction -> 'keepFromSeq') IS DISTINCT FROM 'number'
    OR m.turn_seq <= (s.compaction ->> 'headThroughSeq')::numeric
    OR m.turn_seq >= (s.compaction ->> 'keepFromSeq')::numeric)) AS transcript`;

/** The claim's parts, for its own statement or one that chooses its target first (`turn/pick.ts`). */
export function claimParts(t: ClaimTarget): { ctes: Sql[]; columns: Sql[]; joins: Sql } {
  return {
    ctes: [ownCte(t), pendingCte(t), leaseCte(t), NEXT_TURN_CTE, RUN_TURN_CTE, TASK_START_CTE],
    columns: [
      claimFlags(t),
      sql`CASE WHEN ut.id IS NULL THEN NULL ELSE ${TURN_JSON} END AS turn`,
      sql`s.system_prompt, s.summarizer_failures, s.compaction, s.overrides`,
      sql`CASE WHEN a.id IS NULL THEN NULL ELSE ${AGENT_JSON} END AS agent`,
      VERSION_CONFIG,
      sql`tn.settings, tn.kill_switch`,
      sql`CASE WHEN ut.id IS NULL THEN NULL ELSE ${tenantCapUsd(sql`tn`, sql`ut.id`)} END AS tenant_cap_usd`,
      STARTED_CALLS,
      DECISIONS,
      WAITED_MS,
      TRANSCRIPT,
      REPLAY,
    ],
    joins: sql`LEFT JOIN s ON true
    LEFT JOIN ut ON true
    LEFT JOIN agents a ON a.id = ut.agent_id
    LEFT JOIN tenants tn ON tn.id = s.tenant_id`,
  };
}

/** The claim's one statement. */
export function claimStatement(a: ClaimNext): Sql {
  const { ctes, columns, joins } = claimParts(targetOf(a));
  return sql`
    WITH ${join(ctes, ',\n')}
    SELECT
      ${join(columns, ',\n')}
    FROM (SELECT 1) one
    ${joins}`;
}

/** The stored keys `versioned` lays over the agent row: those of `sb_agent_config()` (docs/adr/0061). */
const VERSIONED_KEYS = [
  'instructions',
  'model',
  'fallbackModels',
  'tools',
  'approvalRequired',
  'budgets',
  'toolResultCompression',
  'toolSelection',
  'embedder',
  'memory',
  'maxActionsPerHour',
  'scorers',
] as const;

/**
 * The agent as the turn's version configures it (docs/adr/0061): the pinned version's stored
 * configuration over the agent row (its memory records, blocks and learning stay the agent's own), so
 * the turn plan reads one shape whichever version runs. No configuration (the turn runs on the
 * latest, or the version is gone): the row as it is.
 */
export function versioned(agent: AgentRow, config: unknown, version?: number | null): AgentRow {
  if (!config || typeof config !== 'object') return agent;
  const c = config as Record<string, unknown>;
  const over = Object.fromEntries(VERSIONED_KEYS.filter((k) => k in c).map((k) => [k, c[k]]));
  return { ...agent, ...over, ...(version != null ? { version } : {}) };
}

/** The claimed turn, loaded for its run. */
function loadOf(row: ClaimRow & { turn: Record<string, unknown>; agent: AgentRow }): TurnLoad {
  const t = row.turn;
  const turn: TurnRow = {
    ...(t as unknown as TurnRow),
    createdAt: new Date(t.createdAt as string),
    startedAt: t.startedAt ? new Date(t.startedAt as string) : null,
  };
  const transcript = row.transcript ?? [];
  return {
    turn,
    resumed: turn.runCount > 1,
    session: {
      systemPrompt: row.system_prompt,
      summarizerFailures: row.summarizer_failures ?? 0,
      compaction: row.compaction,
      overrides: row.overrides ?? null,
    },
    agent: versioned(row.agent, row.version_config, turn.agentVersion),
    tenant: {
      settings: row.settings,
      killSwitch: row.kill_switch ?? false,
      ...(row.tenant_cap_usd === null ? {} : { capUsd: Number(row.tenant_cap_usd) }),
    },
    earlier: transcript.filter((m) => m.turnSeq !== turn.seq),
    own: transcript.filter((m) => m.turnSeq === turn.seq),
    startedCalls: row.started_calls ?? [],
    decisions: row.decisions ?? [],
    waitedMs: Math.max(0, Number(row.waited_ms ?? 0)),
    ...(row.replay ? { replay: row.replay } : {}),
  };
}

/**
 * Runs the claim. `next` can be absent with `leased`: the session's next turn is waiting
 * (`waiting`), or another holder finished it meanwhile.
 */
export async function claimNext(db: SqlRunner, a: ClaimNext): Promise<ClaimResult> {
  const row = await db.first<ClaimRow>(claimStatement(a));
  if (!row) throw new Error('claim returned no row');
  return claimResultOf(row);
}

/** A claim's row as its result. */
export function claimResultOf(row: ClaimRow): ClaimResult {
  const result: ClaimResult = {
    ownStatus: row.own_status ?? undefined,
    ...(row.own_task_id ? { ownTaskId: row.own_task_id } : {}),
    leased: row.leased,
    pending: row.pending,
    waiting: row.waiting,
    contended: row.contended,
    paused: row.paused,
  };
  const { turn, agent } = row;
  if (turn && agent) result.next = loadOf({ ...row, turn, agent });
  return result;
}
