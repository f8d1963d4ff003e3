import { join, json, sql, type Sql, type SqlDb, type SqlRunner } from './sql';
import { descendantsCostUsd } from './subagent-cost';
import { tenantCapUsd } from './tenant-spend';

/**
 * The turn's statements on the hot path (docs/adr/0010-turn-store-on-pg.md): the lease claim with
 * everything a turn needs loaded in the same statement, and each checkpoint as one statement that
 * is fenced by the session lease and commits the step's rows, the turn's counters and the step's
 * journal events together. A simple turn (two model rounds, one read-only tool) is four statements.
 */

/** Statuses of a turn that is still to run (queued) or was interrupted (running). */
const UNFINISHED = sql`('queued', 'running')`;

/**
 * Statuses that hold a session's order: the unfinished ones and a turn paused on a wait
 * (`awaiting_approval`, docs/adr/0013; `awaiting_subagent`, docs/adr/0024), which blocks the turns
 * behind it without being runnable.
 */
const HOLDS_SESSION = sql`('queued', 'running', 'awaiting_approval', 'awaiting_subagent')`;

/** A turn paused on a wait (docs/adr/0013, 0024). */
export type WaitingStatus = 'awaiting_approval' | 'awaiting_subagent';
const WAITING = sql`('awaiting_approval', 'awaiting_subagent')`;

/** A queued interject turn waiting to be delivered into the session's running turn (docs/adr/0014). */
const PENDING_INTERJECTION = (t: Sql) => sql`${t}.status = 'queued' AND ${t}.priority = 'interject'
  AND ${t}.started_at IS NULL AND ${t}.cancel_requested_at IS NULL`;

/** An interjection delivered into a running turn: its message, now part of that turn's transcript. */
export interface DeliveredInterjection {
  messageId: string;
  kind: string;
  origin: unknown;
  trust: string;
  authorityClass: string;
  priority: string;
  body: unknown;
  metadata: unknown;
}

/** Statuses of a turn that ended. */
const ENDED = sql`('completed', 'failed', 'cancelled')`;

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
  /** The reason given with the cancel, if any. */
  cancelReason: string | null;
  /** The sub-agent task this turn runs as a child (docs/adr/0024); null for every other turn. */
  taskId: string | null;
  /** What its sub-agents' child turns (and theirs) have cost so far: it counts against its maxUsd (docs/adr/0025). */
  childrenCostUsd: string;
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

export interface AgentRow {
  id: string;
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
}

/** A turn ready to run: the turn (now `running`), its session, agent, tenant settings and transcript. */
export interface TurnLoad {
  turn: TurnRow;
  /** An earlier run of this turn was interrupted (it had been claimed before). */
  resumed: boolean;
  session: { systemPrompt: string | null; summarizerFailures: number; compaction: unknown };
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
  /** Time the turn spent paused for decisions (each pause to its last decision): not deadline time. */
  waitedMs: number;
}

/** A decided approval of the turn, as the engine acts on it. */
export interface StoredDecision {
  approvalId: string;
  callId: string;
  status: 'approved' | 'rejected' | 'expired' | 'cancelled';
  reason: string | null;
}

/** One approval row a paused turn writes (docs/adr/0013). */
export interface ApprovalInsert {
  id: string;
  callId: string;
  toolName: string;
  /** Already redacted. */
  arguments: unknown;
  sideEffect: string;
  policy: string;
  expiresAt: Date;
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
  /** The session's next turn is paused on a wait (docs/adr/0013): nothing of it can run now. */
  blocked?: boolean;
}

export interface Fence {
  token: string;
  ms: number;
}

export interface EventInsert {
  id: string;
  turnId: string | null;
  type: string;
  /** Already redacted. */
  data: unknown;
  /** The turn's total cost after this statement is added to `data.costUsd` (terminal events). */
  withTurnCost?: boolean;
}

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
  /** Decimal as a string, 8 places. */
  costUsd: string;
  costSource: string;
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
}

export type CostStatus = 'priced' | 'provider_reported' | 'unpriced';

/** What a step changes on the turn row (one UPDATE). */
export interface TurnChanges {
  /** Usage of the step's provider calls, summed, with their combined cost status. */
  usage?: {
    inputTokens: number;
    outputTokens: number;
    cachedTokens: number;
    costUsd: string;
    costStatus: CostStatus;
  };
  iterations?: number;
  attempts?: unknown[];
  model?: string;
  toolCallsAdded?: number;
  /** The turn pauses on its waits (docs/adr/0013, 0024): not terminal. */
  waiting?: WaitingStatus;
  terminal?: {
    status: string;
    stopReason: string;
    finalText: string;
    iterations: number;
    toolCalls: number;
    failure: unknown;
    costStatus: string | null;
    decision: { strategy: string; model: string; iterations: number; toolCalls: number; stopReason: string };
  };
}

/** What a step changes on the session row (the same UPDATE that fences it and allocates event seqs). */
export interface SessionChanges {
  summarizerFailures?: number;
  compaction?: unknown;
  /** Stored when the session has none yet (rendered on its first turn, then reused byte for byte). */
  systemPrompt?: string;
  /** Add the turn's totals (after this step) to the session's: the terminal step. */
  rollUpTurn?: boolean;
  /**
   * Release the lease in the same statement when no turn was admitted after this seq
   * (`last_turn_seq`, which admission increments under this row's lock, is re-read at commit) and
   * no other turn of the session is unfinished (an earlier seq in a lower priority band).
   */
  releaseIfNoTurnAfter?: number;
  /** Release the lease whatever is queued: the turn paused and blocks the session (docs/adr/0013). */
  release?: boolean;
}

/** What a child turn's step writes on its task row (docs/adr/0024). */
export interface TaskChanges {
  id: string;
  /** Absent: the task starts running (from pending). */
  end?: { status: 'completed' | 'failed' | 'cancelled'; handback: unknown; output: string };
}

export interface Step {
  tenantId: string;
  sessionId: string;
  turnId: string;
  /** The lease the step is fenced by (and extends); null only for writes outside a lease. */
  fence: Fence | null;
  events: EventInsert[];
  turn?: TurnChanges;
  session?: SessionChanges;
  messages?: MessageInsert[];
  ledger?: LedgerInsert[];
  toolCalls?: ToolCallUpsert[];
  /** Approvals a paused turn asks for (docs/adr/0013). */
  approvals?: ApprovalInsert[];
  /** The sub-agent task the turn runs (docs/adr/0024): `running` with its first commit, its end with the terminal one. */
  task?: TaskChanges;
  /** Return the events as committed (seq, data with the cost filled in) for the live channel (libs/live). */
  returnEvents?: boolean;
}

/** A journal event as one step committed it. */
export interface CommittedEvent {
  /** The journal row's id: a live reader matches it to the ephemeral copy it already had (ADR 0015). */
  id?: string;
  seq: number;
  type: string;
  turnId: string | null;
  data: Record<string, unknown>;
  createdAt: string;
}

export interface StepResult {
  /** False when the fence failed: nothing was written. */
  applied: boolean;
  /** The lease was released by this step. */
  released: boolean;
  /** The tenant's kill switch as this statement saw it. */
  killSwitch: boolean;
  /**
   * What the turn may still spend under the tenant's daily cap, as this statement saw it (docs/adr/0026):
   * the key is present (undefined: no cap) when the statement read it.
   */
  tenantCapUsd?: number;
  /** A cancel of the step's turn was requested (docs/adr/0014): the runner stops it at its next safe point. */
  cancelRequested: boolean;
  /** With `returnEvents`: what the step journaled, in seq order. */
  events?: CommittedEvent[];
}

interface ClaimRow {
  own_status: string | null;
  own_task_id: string | null;
  leased: boolean;
  pending: boolean;
  turn: Record<string, unknown> | null;
  system_prompt: string | null;
  summarizer_failures: number | null;
  compaction: unknown;
  agent: AgentRow | null;
  settings: unknown;
  kill_switch: boolean | null;
  tenant_cap_usd: string | null;
  transcript: TranscriptEntry[] | null;
  started_calls: string[] | null;
  blocked: boolean;
  decisions: StoredDecision[] | null;
  waited_ms: number | null;
}

const TURN_JSON = sql`json_build_object(
  'id', ut.id, 'tenantId', ut.tenant_id, 'sessionId', ut.session_id, 'agentId', ut.agent_id, 'seq', ut.seq,
  'inputMessageId', ut.input_message_id, 'status', ut.status, 'priority', ut.priority, 'model', ut.model,
  'iterations', ut.iterations, 'toolCallCount', ut.tool_call_count, 'costUsd', ut.cost_usd::text,
  'traceContext', ut.trace_context, 'runCount', ut.run_count, 'createdAt', ut.created_at,
  'startedAt', ut.started_at, 'cancelRequested', ut.cancel_requested_at IS NOT NULL,
  'cancelReason', ut.cancel_reason, 'taskId', ut.task_id,
  'childrenCostUsd', ${descendantsCostUsd(sql`ut.id`)}::text)`;

/**
 * The order a session's pending turns run in (SPEC §2 priority, docs/adr/0014): a turn that already
 * started (interrupted, or resumed) first, then by priority band, FIFO (admission seq) within a band.
 */
export const DRAIN_ORDER = (t: Sql) => sql`(${t}.started_at IS NULL),
  CASE ${t}.priority WHEN 'interject' THEN 1 WHEN 'next' THEN 2 WHEN 'normal' THEN 3 ELSE 4 END, ${t}.seq`;

export class TurnStore {
  constructor(readonly db: SqlDb) {}

  /**
   * One statement: takes (or, holding it, extends) the session lease when the job's turn belongs to
   * the session and the session has unfinished turns; marks the oldest unfinished turn running;
   * and returns it with its session, agent, tenant settings, transcript and interrupted calls.
   *
   * The turn is re-checked on its latest row version (a turn another holder finished while this
   * statement waited for the session row is not taken), so `next` can be absent with `leased`.
   */
  async claimNext(a: {
    sessionId: string;
    /** The job's turn: it must be in this session and tenant. */
    turnId: string;
    tenantId: string;
    owner: string;
    lease: Fence;
  }): Promise<ClaimResult> {
    const row = await this.db.first<ClaimRow>(sql`
      WITH own AS (
        SELECT status, task_id FROM turns
        WHERE id = ${a.turnId}::uuid AND session_id = ${a.sessionId}::uuid AND tenant_id = ${a.tenantId}::uuid
      ),
      pending AS (
        SELECT EXISTS (
          SELECT 1 FROM turns WHERE session_id = ${a.sessionId}::uuid AND status IN ${UNFINISHED}
        ) AS found
      ),
      s AS (
        UPDATE sessions SET lease_owner = ${a.owner}, lease_token = ${a.lease.token}::uuid,
          lease_expires_at = now() + (${a.lease.ms} * interval '1 millisecond')
        WHERE id = ${a.sessionId}::uuid
          AND (lease_token = ${a.lease.token}::uuid OR lease_token IS NULL OR lease_expires_at < now())
          AND EXISTS (SELECT 1 FROM own) AND (SELECT found FROM pending)
        RETURNING id, tenant_id, system_prompt, summarizer_failures, compaction
      ),
      nt AS (
        SELECT t.id, t.status FROM turns t JOIN s ON t.session_id = s.id
        WHERE t.status IN ${HOLDS_SESSION} ORDER BY ${DRAIN_ORDER(sql`t`)} LIMIT 1
      ),
      ut AS (
        UPDATE turns t SET status = 'running', started_at = coalesce(t.started_at, now()),
          run_count = t.run_count + 1
        FROM nt WHERE t.id = nt.id AND t.status IN ${UNFINISHED}
        RETURNING t.*
      )
      SELECT
        (SELECT status FROM own) AS own_status, (SELECT task_id FROM own) AS own_task_id,
        s.id IS NOT NULL AS leased,
        (SELECT found FROM pending) AS pending,
        EXISTS (SELECT 1 FROM nt WHERE nt.status IN ${WAITING}) AS blocked,
        CASE WHEN ut.id IS NULL THEN NULL ELSE ${TURN_JSON} END AS turn,
        s.system_prompt, s.summarizer_failures, s.compaction,
        CASE WHEN a.id IS NULL THEN NULL ELSE json_build_object(
          'id', a.id, 'name', a.name, 'instructions', a.instructions, 'model', a.model,
          'fallbackModels', a.fallback_models, 'tools', a.tools, 'budgets', a.budgets,
          'approvalRequired', coalesce(a.approval_required, '{}'), 'tier', a.tier) END AS agent,
        tn.settings, tn.kill_switch,
        CASE WHEN ut.id IS NULL THEN NULL ELSE ${tenantCapUsd(sql`tn`, sql`ut.id`)} END AS tenant_cap_usd,
        (SELECT coalesce(json_agg(c.call_id), '[]'::json) FROM tool_calls c
          WHERE c.turn_id = ut.id AND c.status = 'running') AS started_calls,
        (SELECT coalesce(json_agg(json_build_object('approvalId', ap.id, 'callId', ap.call_id,
            'status', ap.status, 'reason', ap.reason)), '[]'::json) FROM approvals ap
          WHERE ap.turn_id = ut.id AND ap.status <> 'pending') AS decisions,
        -- One pause's approvals share their created_at (one statement): from it to its last decision.
        (SELECT coalesce(sum(w.ms), 0)::float8 FROM (
            SELECT extract(epoch FROM max(ap.decided_at) - ap.created_at) * 1000 AS ms FROM approvals ap
            WHERE ap.turn_id = ut.id AND ap.decided_at IS NOT NULL GROUP BY ap.created_at) w)
          -- Waits for sub-agents (docs/adr/0024): the span of the blocking children it waited for.
          + (SELECT coalesce(extract(epoch FROM max(k.completed_at) - min(k.created_at)) * 1000, 0)::float8
            FROM tasks k WHERE k.parent_turn_id = ut.id AND k.blocking AND k.completed_at IS NOT NULL)
          AS waited_ms,
        (SELECT coalesce(json_agg(json_build_object(
            'role', m.role, 'kind', m.kind, 'trust', m.trust, 'authorityClass', m.authority_class,
            'body', m.body, 'toolCalls', m.tool_calls, 'toolCallId', m.tool_call_id, 'metadata', m.metadata,
            'turnSeq', m.turn_seq, 'position', m.position) ORDER BY m.turn_seq, m.position), '[]'::json)
          FROM messages m
          WHERE m.session_id = ut.session_id AND (
            m.turn_seq = ut.seq
            -- Earlier turns are those that ran and ended: with priority bands a later seq may have run
            -- first, and a turn still waiting (or cancelled before it ran) is no part of the history.
            OR EXISTS (SELECT 1 FROM turns e WHERE e.session_id = m.session_id AND e.seq = m.turn_seq
              AND e.id <> ut.id AND e.status IN ${ENDED} AND e.started_at IS NOT NULL)
          ) AND (
            m.turn_seq = ut.seq
            OR jsonb_typeof(s.compaction -> 'headThroughSeq') IS DISTINCT FROM 'number'
            OR jsonb_typeof(s.compaction -> 'keepFromSeq') IS DISTINCT FROM 'number'
            OR m.turn_seq <= (s.compaction ->> 'headThroughSeq')::numeric
            OR m.turn_seq >= (s.compaction ->> 'keepFromSeq')::numeric)) AS transcript
      FROM (SELECT 1) one
      LEFT JOIN s ON true
      LEFT JOIN ut ON true
      LEFT JOIN agents a ON a.id = ut.agent_id
      LEFT JOIN tenants tn ON tn.id = s.tenant_id`);
    if (!row) throw new Error('claim returned no row');
    const result: ClaimResult = {
      ownStatus: row.own_status ?? undefined,
      ...(row.own_task_id ? { ownTaskId: row.own_task_id } : {}),
      leased: row.leased,
      pending: row.pending,
      blocked: row.blocked,
    };
    if (row.turn && row.agent) {
      const t = row.turn;
      const turn: TurnRow = {
        ...(t as unknown as TurnRow),
        createdAt: new Date(t.createdAt as string),
        startedAt: t.startedAt ? new Date(t.startedAt as string) : null,
      };
      const transcript = row.transcript ?? [];
      result.next = {
        turn,
        resumed: turn.runCount > 1,
        session: {
          systemPrompt: row.system_prompt,
          summarizerFailures: row.summarizer_failures ?? 0,
          compaction: row.compaction,
        },
        agent: row.agent,
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
      };
    }
    return result;
  }

  /** Extends the lease; false when it is no longer ours. */
  async renewLease(sessionId: string, lease: Fence): Promise<boolean> {
    const n = await this.db.execute(sql`
      UPDATE sessions SET lease_expires_at = now() + (${lease.ms} * interval '1 millisecond')
      WHERE id = ${sessionId}::uuid AND lease_token = ${lease.token}::uuid`);
    return n === 1;
  }

  /**
   * The running turn's heartbeat: extends the lease and says whether the turn was asked to stop, or
   * an interjection waits for it (docs/adr/0014): the backstop when a control message was lost.
   */
  async heartbeat(
    sessionId: string,
    lease: Fence,
    turnId: string,
  ): Promise<{ held: boolean; cancelRequested: boolean; interjection: boolean }> {
    const row = await this.db.first<{ held: boolean; cancel_requested: boolean; interjection: boolean }>(sql`
      WITH s AS (
        UPDATE sessions SET lease_expires_at = now() + (${lease.ms} * interval '1 millisecond')
        WHERE id = ${sessionId}::uuid AND lease_token = ${lease.token}::uuid
        RETURNING id
      )
      SELECT EXISTS (SELECT 1 FROM s) AS held,
        coalesce((SELECT cancel_requested_at IS NOT NULL FROM turns WHERE id = ${turnId}::uuid), false)
          AS cancel_requested,
        EXISTS (SELECT 1 FROM turns WHERE session_id = ${sessionId}::uuid AND ${PENDING_INTERJECTION(sql`turns`)})
          AS interjection`);
    return {
      held: row?.held ?? false,
      cancelRequested: row?.cancel_requested ?? false,
      interjection: row?.interjection ?? false,
    };
  }

  /**
   * Delivers the session's pending interjections into its running turn (docs/adr/0014), in one
   * transaction fenced by the lease: each interject turn (queued, never started, not cancelled) ends
   * `completed` with stop reason `interjected`, its input message moves into the running turn's
   * transcript at `fromPosition` onwards (so the next provider call, and any resumed run, sees it), and
   * `interjection_delivered` (on the running turn) and the interject turn's `turn_completed` are
   * journaled. Returns the delivered messages in order and the committed events; null when the lease
   * was lost.
   */
  async deliverInterjections(a: {
    tenantId: string;
    sessionId: string;
    turnId: string;
    turnSeq: number;
    fence: Fence;
    fromPosition: number;
  }): Promise<{ messages: DeliveredInterjection[]; events: CommittedEvent[] } | null> {
    return this.db.transaction(async (tx) => {
      const fenced = await tx.execute(sql`
        UPDATE sessions SET lease_expires_at = now() + (${a.fence.ms} * interval '1 millisecond')
        WHERE id = ${a.sessionId}::uuid AND lease_token = ${a.fence.token}::uuid`);
      if (fenced !== 1) return null;
      // The session row is locked: a cancel of an interject turn (which locks it first) cannot race this.
      const pending = await tx.rows<DeliveredInterjection & { interjectTurnId: string }>(sql`
        SELECT t.id AS "interjectTurnId", m.id AS "messageId", m.kind, m.origin, m.trust,
          m.authority_class AS "authorityClass", m.priority, m.body, m.metadata
        FROM turns t JOIN messages m ON m.id = t.input_message_id
        WHERE t.session_id = ${a.sessionId}::uuid AND ${PENDING_INTERJECTION(sql`t`)}
        ORDER BY t.seq FOR UPDATE OF t`);
      if (pending.length === 0) return { messages: [], events: [] };
      const n = pending.length;
      const seqRow = await tx.first<{ base: number }>(sql`
        UPDATE sessions SET last_event_seq = last_event_seq + ${2 * n}::int WHERE id = ${a.sessionId}::uuid
        RETURNING last_event_seq - ${2 * n}::int AS base`);
      const base = seqRow!.base;
      const events: CommittedEvent[] = [];
      for (const [i, p] of pending.entries()) {
        const position = a.fromPosition + i;
        await tx.execute(sql`
          UPDATE messages SET turn_id = ${a.turnId}::uuid, turn_seq = ${a.turnSeq}::int, position = ${position}::int,
            metadata = metadata || jsonb_build_object('interjectedFrom', ${p.interjectTurnId}::text)
          WHERE id = ${p.messageId}::uuid`);
        await tx.execute(sql`
          UPDATE turns SET status = 'completed', stop_reason = 'interjected', final_text = '',
            completed_at = now(), started_at = coalesce(started_at, now()),
            decision = jsonb_build_object('strategy', 'interjected', 'intoTurnId', ${a.turnId}::text,
              'iterations', 0, 'toolCalls', 0, 'stopReason', 'interjected')
          WHERE id = ${p.interjectTurnId}::uuid`);
        const delivered = { messageId: p.messageId, interjectTurnId: p.interjectTurnId, position };
        const completed = { stopReason: 'interjected', intoTurnId: a.turnId, iterations: 0, toolCalls: 0 };
        const rows = await tx.rows<CommittedEvent>(sql`
          INSERT INTO events (id, tenant_id, session_id, turn_id, seq, type, data) VALUES
            (gen_random_uuid(), ${a.tenantId}::uuid, ${a.sessionId}::uuid, ${a.turnId}::uuid, ${base + 2 * i + 1}::int,
              'interjection_delivered', ${json(delivered)}::jsonb),
            (gen_random_uuid(), ${a.tenantId}::uuid, ${a.sessionId}::uuid, ${p.interjectTurnId}::uuid,
              ${base + 2 * i + 2}::int, 'turn_completed', ${json(completed)}::jsonb)
          RETURNING id, seq, type, turn_id AS "turnId", data, created_at AS "createdAt"`);
        events.push(...rows.sort((x, y) => x.seq - y.seq));
      }
      return { messages: pending.map(({ interjectTurnId: _, ...m }) => m), events };
    });
  }

  /** Interjections already delivered into a turn at `fromPosition` or later, in order. */
  async interjectedSince(turnId: string, fromPosition: number): Promise<DeliveredInterjection[]> {
    return this.db.rows<DeliveredInterjection>(sql`
      SELECT id AS "messageId", kind, origin, trust, authority_class AS "authorityClass", priority, body, metadata
      FROM messages
      WHERE turn_id = ${turnId}::uuid AND position >= ${fromPosition}::int AND metadata ? 'interjectedFrom'
      ORDER BY position`);
  }

  /** Releases the lease if it is still ours. */
  async releaseLease(sessionId: string, token: string): Promise<void> {
    await this.db.execute(sql`
      UPDATE sessions SET lease_owner = NULL, lease_token = NULL, lease_expires_at = NULL
      WHERE id = ${sessionId}::uuid AND lease_token = ${token}::uuid`);
  }

  /** Takes the lease when it is free or expired (no turn is loaded): for tests and tools. */
  async claimLease(sessionId: string, owner: string, lease: Fence): Promise<boolean> {
    const n = await this.db.execute(sql`
      UPDATE sessions SET lease_owner = ${owner}, lease_token = ${lease.token}::uuid,
        lease_expires_at = now() + (${lease.ms} * interval '1 millisecond')
      WHERE id = ${sessionId}::uuid AND (lease_token IS NULL OR lease_expires_at < now())`);
    return n === 1;
  }

  /** The session's next unfinished turn in drain order, if any (read after a release: nothing left behind). */
  async nextUnfinished(
    sessionId: string,
  ): Promise<{ id: string; tenantId: string; priority: string; traceContext: unknown } | undefined> {
    return this.db.first(sql`
      SELECT id, tenant_id AS "tenantId", priority, trace_context AS "traceContext" FROM turns
      WHERE session_id = ${sessionId}::uuid AND status IN ${UNFINISHED} ORDER BY ${DRAIN_ORDER(sql`turns`)}
      LIMIT 1`);
  }

  /** The reason given with a turn's cancel request, if any. */
  async cancelReason(turnId: string): Promise<string | null> {
    const row = await this.db.first<{ cancel_reason: string | null }>(sql`
      SELECT cancel_reason FROM turns WHERE id = ${turnId}::uuid`);
    return row?.cancel_reason ?? null;
  }

  /** Whether a turn of the session is paused on a wait (docs/adr/0013): the turns behind it cannot run. */
  async sessionWaiting(sessionId: string): Promise<boolean> {
    const row = await this.db.first(sql`
      SELECT 1 AS one FROM turns WHERE session_id = ${sessionId}::uuid AND status IN ${WAITING} LIMIT 1`);
    return row !== undefined;
  }

  async killSwitch(tenantId: string): Promise<boolean> {
    const row = await this.db.first<{ kill_switch: boolean }>(sql`
      SELECT kill_switch FROM tenants WHERE id = ${tenantId}::uuid`);
    return row?.kill_switch ?? false;
  }

  /** Whether an event is in the journal: a retried step whose first attempt's answer was lost. */
  async eventExists(id: string): Promise<boolean> {
    return (await this.db.first(sql`SELECT 1 AS one FROM events WHERE id = ${id}::uuid`)) !== undefined;
  }

  /**
   * One checkpoint as one statement: the session row is updated first (fenced by the lease, which
   * it extends; event seqs allocated; the step's session changes), and every other write of the
   * step happens only when that row matched, so a lost lease writes nothing.
   */
  async commitStep(step: Step, runner: SqlRunner = this.db): Promise<StepResult> {
    const row = await runner.first<{
      applied: boolean;
      released: boolean;
      kill_switch: boolean | null;
      tenant_cap_usd: string | null;
      cancel_requested: boolean | null;
      events?: CommittedEvent[] | null;
    }>(stepStatement(step));
    return {
      applied: row?.applied ?? false,
      released: row?.released ?? false,
      killSwitch: !!row?.kill_switch,
      tenantCapUsd: row?.tenant_cap_usd == null ? undefined : Number(row.tenant_cap_usd),
      cancelRequested: !!row?.cancel_requested,
      ...(step.returnEvents ? { events: row?.events ?? [] } : {}),
    };
  }

  /**
   * A turn that could not be run after every retry, failed with its event, unless it already ended.
   * Returns the turn's tenant when it was failed here.
   */
  async failTurn(a: {
    turnId: string;
    failure: unknown;
    stopReason: string;
    eventId: string;
    eventData: unknown;
  }): Promise<{ tenantId: string; sessionId: string; eventSeq: number } | undefined> {
    return this.db.first(sql`
      WITH t AS (
        UPDATE turns SET status = 'failed', stop_reason = ${a.stopReason}, completed_at = now(),
          failure = ${json(a.failure)}::jsonb
        WHERE id = ${a.turnId}::uuid AND status IN ${UNFINISHED}
        RETURNING tenant_id, session_id
      ),
      s AS (
        UPDATE sessions SET last_event_seq = last_event_seq + 1 FROM t WHERE sessions.id = t.session_id
        RETURNING last_event_seq
      ),
      e AS (
        INSERT INTO events (id, tenant_id, session_id, turn_id, seq, type, data)
        SELECT ${a.eventId}::uuid, t.tenant_id, t.session_id, ${a.turnId}::uuid, s.last_event_seq, 'turn_failed',
          ${json(a.eventData)}::jsonb
        FROM t, s
      )
      SELECT tenant_id AS "tenantId", session_id AS "sessionId", (SELECT last_event_seq FROM s) AS "eventSeq" FROM t`);
  }

  /** A finalisation step's failure, recorded on the turn. */
  async recordFinalisationError(turnId: string, entry: { step: string; message: string; at: string }) {
    await this.db.execute(sql`
      UPDATE turns SET finalisation_errors = finalisation_errors || ${json([entry])}::jsonb
      WHERE id = ${turnId}::uuid`);
  }
}

/** The single statement of a step (see `TurnStore.commitStep`). */
export function stepStatement(step: Step): Sql {
  const n = step.events.length;
  const ses = step.session ?? {};
  const fenced = step.fence;
  const usage = step.turn?.usage;
  const ctes: Sql[] = [];

  // The turn's totals after this step, for the session roll-up (read before the turn is updated).
  if (ses.rollUpTurn) {
    ctes.push(sql`cur AS (
      SELECT input_tokens + ${usage?.inputTokens ?? 0}::int AS input_tokens,
        output_tokens + ${usage?.outputTokens ?? 0}::int AS output_tokens,
        cost_usd + ${usage?.costUsd ?? '0'}::numeric AS cost_usd
      FROM turns WHERE id = ${step.turnId}::uuid)`);
  }

  const sets: Sql[] = [sql`last_event_seq = sessions.last_event_seq + ${n}::int`];
  if (ses.summarizerFailures !== undefined)
    sets.push(sql`summarizer_failures = ${ses.summarizerFailures}::int`);
  if (ses.compaction !== undefined) sets.push(sql`compaction = ${json(ses.compaction)}::jsonb`);
  if (ses.systemPrompt !== undefined)
    sets.push(sql`system_prompt = coalesce(sessions.system_prompt, ${ses.systemPrompt}::text)`);
  if (ses.rollUpTurn) {
    sets.push(sql`input_tokens = sessions.input_tokens + cur.input_tokens,
      output_tokens = sessions.output_tokens + cur.output_tokens,
      cost_usd = sessions.cost_usd + cur.cost_usd, updated_at = now()`);
  }
  if (fenced) {
    const extend = sql`now() + (${fenced.ms}::int * interval '1 millisecond')`;
    if (ses.release) {
      sets.push(sql`lease_owner = NULL, lease_token = NULL, lease_expires_at = NULL`);
    } else if (ses.releaseIfNoTurnAfter !== undefined) {
      // Re-evaluated on the row's latest version: an admission that committed meanwhile keeps the lease.
      // Priority bands run turns out of seq order, so an earlier turn still waiting keeps it too (seen
      // in the statement's snapshot: it was admitted, and so committed, before this seq ran).
      const idle = sql`sessions.last_turn_seq <= ${ses.releaseIfNoTurnAfter}::int AND NOT EXISTS (
        SELECT 1 FROM turns o WHERE o.session_id = sessions.id AND o.status IN ${UNFINISHED}
          AND o.id <> ${step.turnId}::uuid)`;
      sets.push(sql`lease_owner = CASE WHEN ${idle} THEN NULL ELSE sessions.lease_owner END,
        lease_token = CASE WHEN ${idle} THEN NULL ELSE sessions.lease_token END,
        lease_expires_at = CASE WHEN ${idle} THEN NULL ELSE ${extend} END`);
    } else {
      sets.push(sql`lease_expires_at = ${extend}`);
    }
  }
  ctes.push(sql`s AS (
    UPDATE sessions SET ${join(sets)}
    ${ses.rollUpTurn ? sql`FROM cur` : sql``}
    WHERE sessions.id = ${step.sessionId}::uuid
      ${fenced ? sql`AND sessions.lease_token = ${fenced.token}::uuid` : sql``}
    RETURNING sessions.last_event_seq - ${n}::int AS base, sessions.lease_token IS NULL AS released)`);

  const t = step.turn;
  const turnSets: Sql[] = [];
  if (usage) {
    turnSets.push(sql`input_tokens = turns.input_tokens + ${usage.inputTokens}::int,
      output_tokens = turns.output_tokens + ${usage.outputTokens}::int,
      cached_tokens = turns.cached_tokens + ${usage.cachedTokens}::int,
      cost_usd = turns.cost_usd + ${usage.costUsd}::numeric`);
  }
  const combined = usage
    ? sql`CASE
        WHEN turns.cost_status = 'unpriced' OR ${usage.costStatus}::text = 'unpriced' THEN 'unpriced'
        WHEN turns.cost_status = 'priced' OR ${usage.costStatus}::text = 'priced' THEN 'priced'
        ELSE 'provider_reported' END`
    : sql`turns.cost_status`;
  if (t?.terminal) {
    const f = t.terminal;
    const d = f.decision;
    turnSets.push(sql`status = ${f.status}, stop_reason = ${f.stopReason}, final_text = ${f.finalText},
      iterations = ${f.iterations}::int, tool_call_count = ${f.toolCalls}::int,
      failure = ${json(f.failure)}::jsonb, completed_at = now(),
      cost_status = coalesce(${f.costStatus}::text, ${combined}),
      decision = jsonb_build_object(
        'strategy', ${d.strategy}::text,
        'model', coalesce(${t.model ?? null}::text, turns.model, ${d.model}::text),
        'tools', (SELECT coalesce(jsonb_agg(DISTINCT name), '[]'::jsonb) FROM tool_calls
                  WHERE turn_id = ${step.turnId}::uuid),
        'iterations', ${d.iterations}::int,
        'toolCalls', ${d.toolCalls}::int,
        'stopReason', ${d.stopReason}::text)`);
  } else {
    if (usage) turnSets.push(sql`cost_status = ${combined}`);
    if (t?.iterations !== undefined) turnSets.push(sql`iterations = ${t.iterations}::int`);
    if (t?.toolCallsAdded)
      turnSets.push(sql`tool_call_count = turns.tool_call_count + ${t.toolCallsAdded}::int`);
  }
  if (t?.attempts && t.attempts.length > 0)
    turnSets.push(sql`attempts = turns.attempts || ${json(t.attempts)}::jsonb`);
  if (t?.model !== undefined) turnSets.push(sql`model = ${t.model}`);
  if (t?.waiting) turnSets.push(sql`status = ${t.waiting}::text`);
  const costOut = n > 0 && step.events.some((e) => e.withTurnCost);
  if (turnSets.length > 0) {
    ctes.push(sql`t AS (
      UPDATE turns SET ${join(turnSets)}
      WHERE turns.id = ${step.turnId}::uuid AND EXISTS (SELECT 1 FROM s)
      RETURNING turns.cost_usd)`);
  } else if (costOut) {
    ctes.push(sql`t AS (SELECT cost_usd FROM turns WHERE id = ${step.turnId}::uuid)`);
  }

  if (step.ledger && step.ledger.length > 0) {
    const rows = step.ledger.map(
      (
        e,
      ) => sql`(${e.id}::uuid, ${e.tenantId}::uuid, ${e.agentId}::uuid, ${e.sessionId}::uuid, ${e.turnId}::uuid,
        ${e.key}::text, ${e.provider}::text, ${e.model}::text, ${e.inputTokens}::int, ${e.outputTokens}::int,
        ${e.cachedTokens}::int, ${e.costUsd}::numeric, ${e.costSource}::text)`,
    );
    ctes.push(sql`l AS (
      INSERT INTO ledger_entries (id, tenant_id, agent_id, session_id, turn_id, key, provider, model,
        input_tokens, output_tokens, cached_tokens, cost_usd, cost_source)
      SELECT v.* FROM (VALUES ${join(rows)}) AS v WHERE EXISTS (SELECT 1 FROM s))`);
  }

  if (step.task) {
    const k = step.task;
    // The child's end (or start) on its task row, in the child's own statement: no extra transaction.
    ctes.push(
      k.end
        ? sql`k AS (
      UPDATE tasks SET status = ${k.end.status}::text, handback = ${json(k.end.handback)}::jsonb,
        output = ${k.end.output}::text, completed_at = now(), updated_at = now(),
        cost_usd = coalesce((SELECT cost_usd FROM turns WHERE id = ${step.turnId}::uuid), 0)
          + ${usage?.costUsd ?? '0'}::numeric
      WHERE id = ${k.id}::uuid AND status IN ('pending', 'running') AND EXISTS (SELECT 1 FROM s))`
        : sql`k AS (
      UPDATE tasks SET status = 'running', updated_at = now()
      WHERE id = ${k.id}::uuid AND status = 'pending' AND EXISTS (SELECT 1 FROM s))`,
    );
  }

  if (step.approvals && step.approvals.length > 0) {
    const rows = step.approvals.map(
      (a) => sql`(${a.id}::uuid, ${step.tenantId}::uuid, ${step.sessionId}::uuid, ${step.turnId}::uuid,
        ${a.callId}::text, ${a.toolName}::text, ${json(a.arguments ?? {})}::jsonb, ${a.sideEffect}::text,
        ${a.policy}::text, ${a.expiresAt.toISOString()}::timestamptz)`,
    );
    // One approval per call: a pause replayed after its commit asks for nothing twice.
    ctes.push(sql`ap AS (
      INSERT INTO approvals (id, tenant_id, session_id, turn_id, call_id, tool_name, arguments, side_effect,
        policy, expires_at)
      SELECT v.* FROM (VALUES ${join(rows)}) AS v WHERE EXISTS (SELECT 1 FROM s)
      ON CONFLICT (turn_id, call_id) DO NOTHING)`);
  }

  if (step.toolCalls && step.toolCalls.length > 0) {
    const rows = step.toolCalls.map((c) => {
      const done = c.status !== 'running';
      return sql`(${c.id}::uuid, ${step.tenantId}::uuid, ${step.sessionId}::uuid, ${step.turnId}::uuid,
        ${c.callId}::text, ${c.name}::text, ${json(c.arguments ?? {})}::jsonb, ${c.sideEffect}::text,
        ${c.status}::text, ${c.idempotencyKey}::text,
        now() - (${done ? (c.durationMs ?? 0) : 0}::int * interval '1 millisecond'),
        ${done && c.status === 'completed' ? json(c.result) : null}::jsonb,
        ${done && c.status === 'failed' ? json(c.error) : null}::jsonb,
        ${done ? sql`now()` : sql`NULL::timestamptz`}, ${done ? (c.durationMs ?? 0) : null}::int)`;
    });
    // A resumed turn starts the same call again (its start renewed); an outcome keeps the start.
    ctes.push(sql`c AS (
      INSERT INTO tool_calls (id, tenant_id, session_id, turn_id, call_id, name, arguments, side_effect, status,
        idempotency_key, started_at, result, error, completed_at, duration_ms)
      SELECT v.* FROM (VALUES ${join(rows)}) AS v WHERE EXISTS (SELECT 1 FROM s)
      ON CONFLICT (turn_id, call_id) DO UPDATE SET status = excluded.status,
        started_at = CASE WHEN excluded.status = 'running' THEN now() ELSE tool_calls.started_at END,
        result = excluded.result, error = excluded.error, completed_at = excluded.completed_at,
        duration_ms = excluded.duration_ms)`);
  }

  if (step.messages && step.messages.length > 0) {
    const rows = step.messages.map(
      (
        m,
      ) => sql`(${m.id}::uuid, ${m.tenantId}::uuid, ${m.agentId}::uuid, ${m.sessionId}::uuid, ${m.turnId}::uuid,
        ${m.turnSeq}::int, ${m.position}::int, ${m.role}::text, ${m.kind}::text, ${json(m.origin)}::jsonb,
        ${m.trust}::text, ${m.authorityClass}::text, ${m.priority}::text, ${json(m.body)}::jsonb,
        ${json(m.toolCalls)}::jsonb, ${m.toolCallId ?? null}::text, ${json(m.metadata ?? {})}::jsonb)`,
    );
    ctes.push(sql`m AS (
      INSERT INTO messages (id, tenant_id, agent_id, session_id, turn_id, turn_seq, position, role, kind, origin,
        trust, authority_class, priority, body, tool_calls, tool_call_id, metadata)
      SELECT v.* FROM (VALUES ${join(rows)}) AS v WHERE EXISTS (SELECT 1 FROM s))`);
  }

  if (n > 0) {
    const rows = step.events.map(
      (e, i) =>
        sql`(${e.id}::uuid, ${e.turnId}::uuid, ${i + 1}::int, ${e.type}::text, ${json(e.data ?? {})}::jsonb,
          ${e.withTurnCost ?? false}::boolean)`,
    );
    const data = costOut
      ? sql`CASE WHEN v.with_cost THEN v.data || jsonb_build_object('costUsd', (SELECT cost_usd::text FROM t))
          ELSE v.data END`
      : sql`v.data`;
    ctes.push(sql`e AS (
      INSERT INTO events (id, tenant_id, session_id, turn_id, seq, type, data)
      SELECT v.id, ${step.tenantId}::uuid, ${step.sessionId}::uuid, v.turn_id, s.base + v.ord, v.type, ${data}
      FROM s, (VALUES ${join(rows)}) AS v (id, turn_id, ord, type, data, with_cost)
      ${step.returnEvents ? sql`RETURNING id, seq, type, turn_id AS "turnId", data, created_at AS "createdAt"` : sql``})`);
  }

  return sql`WITH ${join(ctes, ',\n')}
    SELECT EXISTS (SELECT 1 FROM s) AS applied, coalesce((SELECT released FROM s), false) AS released,
      (SELECT kill_switch FROM tenants WHERE id = ${step.tenantId}::uuid) AS kill_switch,
      (SELECT ${tenantCapUsd(sql`tn`, sql`${step.turnId}::uuid`)} FROM tenants tn
        WHERE tn.id = ${step.tenantId}::uuid) AS tenant_cap_usd,
      (SELECT cancel_requested_at IS NOT NULL FROM turns WHERE id = ${step.turnId}::uuid) AS cancel_requested
      ${step.returnEvents && n > 0 ? sql`, (SELECT json_agg(e ORDER BY e.seq) FROM e) AS events` : sql``}`;
}
