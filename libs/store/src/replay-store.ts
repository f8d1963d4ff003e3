import { configure } from 'safe-stable-stringify';
import {
  AgentStoppedError,
  AppError,
  isEnded,
  newId,
  notFound,
  TenantPausedError,
} from '@switchboard/contracts';
import { admitWithin } from './admission-store';
import { auditInsert } from './audit-log';
import { forkSession, type ForkResult, type SessionOverrides } from './fork-store';
import { ofTenant, sql, within, type Sql, type SqlRunner, type SqlTransactor } from './sql';
import { waitedMsOf } from './turn/claim';
import type { CommittedEvent } from './turn/checkpoint-rows';

/**
 * Replay (issue 34, docs/adr/0054-replay-without-repeating-side-effects.md): an ended turn's input
 * run again in a fork of its session taken just before it, optionally on another model or with other
 * instructions. The replay turn names the turn it replays (`replay_of_turn_id`); the engine answers its
 * side-effecting calls from that turn's recorded results or makes them wait for a person.
 */

export interface ReplayTurn {
  tenantId: string;
  /** The turn to replay: an ended turn of the tenant (a replay, or a fork's copy, included). */
  turnId: string;
  /** The fork's overrides (docs/adr/0053), over the session's own. */
  overrides?: SessionOverrides;
  /** Who asked, for the audit log (docs/adr/0030). */
  actor: string;
  /** The agent version the replay runs on (docs/adr/0061); absent: the original turn's. */
  agentVersion?: number;
  /** The request's W3C trace context, stored on the replay turn so its worker joins the trace. */
  traceContext: unknown;
}

export interface ReplayResult {
  /** The replay turn, `queued` in the fork. */
  turnId: string;
  /** The fork it runs in. */
  sessionId: string;
  /**
   * The turn whose recorded calls answer the replay's and which the comparison compares it with: the
   * turn asked for, or, for a fork's copy of a turn, the turn it copies (the copy has no tool calls).
   */
  originalTurnId: string;
  /** The turn asked for (its session is the fork's parent). */
  replayedTurnId: string;
  status: 'queued';
  seq: number;
  /** The admission's priority (the replay's job is published with it). */
  priority: string;
  fork: ForkResult;
  /** `message_admitted` of the replay turn, as journaled in the fork. */
  admitted: CommittedEvent;
}

interface TurnToReplay {
  id: string;
  session_id: string;
  status: string;
  input_message_id: string;
  response_format: unknown;
  tool_choice: unknown;
  /** The version the turn ran on (docs/adr/0061). */
  agent_version: number | null;
  /** The first turn up the chain of copies that is not itself a copy (the turn's own id when it is none). */
  source_id: string;
}

interface InputMessage {
  kind: string;
  origin: unknown;
  trust: string;
  authority_class: string;
  delivery_surface: string;
  admission_context: string;
  body: unknown;
}

/** The turn, the tenant's; and, for a fork's copy, the turn it copies (up the chain of copies). */
const turnToReplay = (tenantId: string, turnId: string) => sql`
  WITH RECURSIVE chain AS (
    SELECT t.id, t.copied_from_turn_id, 0 AS depth FROM turns t
    WHERE t.id = ${turnId}::uuid AND ${ofTenant('t.tenant_id', tenantId)}
    UNION ALL
    SELECT p.id, p.copied_from_turn_id, chain.depth + 1 FROM chain
    JOIN turns p ON p.id = chain.copied_from_turn_id AND p.tenant_id = ${tenantId}::uuid
    WHERE chain.depth < 100
  )
  SELECT t.id, t.session_id, t.status, t.input_message_id, t.response_format, t.tool_choice, t.agent_version,
    (SELECT c.id FROM chain c ORDER BY (c.copied_from_turn_id IS NULL) DESC, c.depth DESC LIMIT 1) AS source_id
  FROM turns t WHERE t.id = ${turnId}::uuid AND ${ofTenant('t.tenant_id', tenantId)}`;

/**
 * Replays an ended turn (docs/adr/0054), one transaction: the session forked just before the turn
 * (`forkSession`, position `before`, with the overrides), the turn's input message admitted into the
 * fork through admission's own statement (`admitWithin`: the next seq, the session's order, its
 * `message_admitted` event) as a `queued` turn with `replay_of_turn_id`, and the audit entry. The
 * input keeps its kind, origin, trust and authority class (an untrusted input still cannot authorise
 * a side effect), the turn its structured output and tool choice; tools a client declared are not
 * carried over (no client waits for the replay's calls).
 *
 * Throws before anything is written: 404 for a turn that is not the tenant's, 409 for one that has
 * not ended (`turn_not_ended`) or whose input retention no longer holds (`transcript_retired`), 403
 * `tenant_paused`, 409 `agent_stopped`. The caller publishes the turn's job after the commit.
 */
export async function replayTurn(db: SqlTransactor, a: ReplayTurn): Promise<ReplayResult> {
  return db.transaction(async (tx) => {
    const turn = await tx.first<TurnToReplay>(turnToReplay(a.tenantId, a.turnId));
    if (!turn) throw notFound('turn');
    if (!isEnded(turn.status)) throw notEnded(turn);
    // Locks the turn's session and checks again that the turn has ended (it may have meanwhile).
    const fork = await forkSession(within(tx), {
      tenantId: a.tenantId,
      sessionId: turn.session_id,
      turnId: turn.id,
      position: 'before',
      ...(a.overrides ? { overrides: a.overrides } : {}),
      // The replay runs on the version asked for, else the one the original ran on (docs/adr/0061).
      ...((a.agentVersion ?? turn.agent_version) != null
        ? { agentVersion: a.agentVersion ?? turn.agent_version! }
        : {}),
    });
    const input = await tx.first<InputMessage>(sql`
      SELECT m.kind, m.origin, m.trust, m.authority_class, m.delivery_surface, m.admission_context, m.body
      FROM messages m JOIN sessions s ON s.id = m.session_id
      WHERE m.id = ${turn.input_message_id}::uuid AND m.session_id = ${turn.session_id}::uuid
        AND m.created_at >= s.created_at - interval '1 day'`);
    if (!input) {
      throw new AppError(
        'conflict',
        "the turn's input is no longer held (retention): it cannot be replayed",
        {
          reason: 'transcript_retired',
          turnId: turn.id,
        },
      );
    }
    const turnId = newId();
    const messageId = newId();
    const eventId = newId();
    const admitted = await admitWithin(tx, {
      tenantId: a.tenantId,
      sessionId: fork.sessionId,
      messageId,
      turnId,
      eventId,
      kind: input.kind,
      origin: input.origin,
      trust: input.trust,
      authorityClass: input.authority_class,
      priority: 'normal',
      deliverySurface: input.delivery_surface,
      admissionContext: input.admission_context,
      body: input.body,
      metadata: { replay: { originalTurnId: turn.source_id, replayedTurnId: turn.id } },
      correlationId: turn.source_id,
      causationId: turn.id,
      traceContext: a.traceContext,
      rejectIfBusy: false,
      responseFormat: turn.response_format,
      toolChoice: turn.tool_choice,
      replayOfTurnId: turn.source_id,
    });
    if (admitted.kind === 'paused') throw new TenantPausedError();
    if (admitted.kind === 'stopped') throw new AgentStoppedError(admitted.agentId);
    if (admitted.kind !== 'admitted') throw new Error(`replay admission refused: ${admitted.kind}`);
    await tx.execute(
      auditInsert({
        tenantId: a.tenantId,
        actor: a.actor,
        action: 'turn.replayed',
        targetType: 'turn',
        targetId: turnId,
        details: {
          replayedTurnId: turn.id,
          originalTurnId: turn.source_id,
          fromSessionId: turn.session_id,
          forkSessionId: fork.sessionId,
          overrides: Object.keys(a.overrides ?? {}),
        },
      }),
    );
    return {
      turnId,
      sessionId: fork.sessionId,
      originalTurnId: turn.source_id,
      replayedTurnId: turn.id,
      status: 'queued',
      seq: admitted.seq,
      priority: 'normal',
      fork,
      admitted: {
        id: eventId,
        seq: admitted.eventSeq,
        type: 'message_admitted',
        turnId,
        data: admitted.event.data,
        createdAt: admitted.event.createdAt,
      },
    };
  });
}

function notEnded(turn: TurnToReplay): AppError {
  return new AppError('conflict', `only a turn that has ended can be replayed; this one is ${turn.status}`, {
    reason: 'turn_not_ended',
    turnId: turn.id,
    status: turn.status,
  });
}

// --- The comparison (GET /v1/turns/:id/comparison) ---

/** One call of a compared turn, in the order the model asked for them. */
export interface ComparedToolCall {
  name: string;
  arguments: unknown;
  sideEffect: string;
  status: string;
  /** Answered from the original's recorded result, not executed (docs/adr/0054). */
  replayed: boolean;
}

/** One side of a comparison. */
export interface TurnSummary {
  turnId: string;
  sessionId: string;
  status: string;
  model: string | null;
  finalText: string | null;
  toolCalls: ComparedToolCall[];
  inputTokens: number;
  outputTokens: number;
  /** Decimal, as the API shows costs. */
  costUsd: string;
  /** Start to end, less the time it waited for a person or a sub-agent; null until it ended. */
  latencyMs: number | null;
}

export interface TurnComparison {
  original: TurnSummary;
  replay: TurnSummary;
  /** Null while the replay has not ended. */
  diff: {
    finalTextEqual: boolean;
    /** The same tools with canonically equal arguments, in the same order. */
    toolCallsEqual: boolean;
    inputTokensDelta: number;
    outputTokensDelta: number;
    /** replay − original, decimal. */
    costDeltaUsd: string;
    /** replay − original; null when either has no latency. */
    latencyDeltaMs: number | null;
  } | null;
}

interface SummaryRow extends Omit<TurnSummary, 'costUsd'> {
  costUsd: string;
}

/**
 * A turn as the comparison shows it (`alias` is a row of turns): its calls in the order the model
 * asked for them (the position of the assistant message that asked, then the call's place in it).
 */
const summaryOf = (alias: Sql) => sql`json_build_object(
  'turnId', ${alias}.id, 'sessionId', ${alias}.session_id, 'status', ${alias}.status, 'model', ${alias}.model,
  'finalText', ${alias}.final_text, 'inputTokens', ${alias}.input_tokens, 'outputTokens', ${alias}.output_tokens,
  'costUsd', ${alias}.cost_usd::text,
  'latencyMs', CASE WHEN ${alias}.completed_at IS NULL OR ${alias}.started_at IS NULL THEN NULL
    ELSE greatest(0, round(extract(epoch FROM ${alias}.completed_at - ${alias}.started_at) * 1000
      - ${waitedMsOf(sql`${alias}.id`)}))::bigint END,
  'toolCalls', (SELECT coalesce(json_agg(json_build_object('name', c.name, 'arguments', c.arguments,
        'sideEffect', c.side_effect, 'status', c.status, 'replayed', c.replayed_from_tool_call_id IS NOT NULL)
      ORDER BY k.position NULLS LAST, k.ord NULLS LAST, c.id), '[]'::json)
    FROM tool_calls c LEFT JOIN LATERAL (
      SELECT m.position, tc.ord FROM messages m JOIN sessions ms ON ms.id = m.session_id,
        jsonb_array_elements(CASE WHEN jsonb_typeof(m.tool_calls) = 'array' THEN m.tool_calls ELSE '[]' END)
          WITH ORDINALITY AS tc(e, ord)
      WHERE m.session_id = ${alias}.session_id AND m.turn_seq = ${alias}.seq AND m.role = 'assistant'
        AND m.created_at >= ms.created_at - interval '1 day' AND tc.e ->> 'id' = c.call_id
      LIMIT 1) k ON true
    WHERE c.turn_id = ${alias}.id))`;

/** A decimal string as the API shows it: no trailing zeros (as `Decimal.toFixed()` of turn costs). */
function decimal(v: string): string {
  if (!v.includes('.')) return v;
  const trimmed = v.replace(/0+$/, '').replace(/\.$/, '');
  return trimmed === '-0' ? '0' : trimmed;
}

const canonical = configure({ deterministic: true });

/**
 * GET /v1/turns/:id/comparison (docs/adr/0054): the replay turn and the turn it replays, side by side,
 * in one statement; the diff once the replay has ended. Undefined when the turn is not the tenant's
 * or not a replay.
 */
export async function readComparison(
  db: SqlRunner,
  tenantId: string,
  turnId: string,
): Promise<TurnComparison | undefined> {
  const row = await db.first<{
    replay: SummaryRow;
    original: SummaryRow | null;
    cost_delta: string | null;
  }>(sql`
    SELECT ${summaryOf(sql`r`)} AS replay,
      (SELECT ${summaryOf(sql`o`)} FROM turns o WHERE o.id = r.replay_of_turn_id AND o.tenant_id = r.tenant_id)
        AS original,
      (SELECT (r.cost_usd - o.cost_usd)::text FROM turns o WHERE o.id = r.replay_of_turn_id) AS cost_delta
    FROM turns r
    WHERE r.id = ${turnId}::uuid AND ${ofTenant('r.tenant_id', tenantId)} AND r.replay_of_turn_id IS NOT NULL`);
  if (!row?.original) return undefined;
  const summary = (s: SummaryRow): TurnSummary => ({
    ...s,
    costUsd: decimal(s.costUsd),
    latencyMs: s.latencyMs === null ? null : Number(s.latencyMs),
  });
  const original = summary(row.original);
  const replay = summary(row.replay);
  if (!isEnded(replay.status)) return { original, replay, diff: null };
  const calls = (s: TurnSummary) => s.toolCalls.map((c) => `${c.name}:${canonical(c.arguments)}`);
  const [a, b] = [calls(original), calls(replay)];
  return {
    original,
    replay,
    diff: {
      finalTextEqual: original.finalText === replay.finalText,
      toolCallsEqual: a.length === b.length && a.every((x, i) => x === b[i]),
      inputTokensDelta: replay.inputTokens - original.inputTokens,
      outputTokensDelta: replay.outputTokens - original.outputTokens,
      costDeltaUsd: decimal(row.cost_delta ?? '0'),
      latencyDeltaMs:
        original.latencyMs === null || replay.latencyMs === null
          ? null
          : replay.latencyMs - original.latencyMs,
    },
  };
}
