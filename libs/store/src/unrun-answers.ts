import { newId } from '@switchboard/contracts';
import { sealJson } from '@switchboard/database';
import { join, json, sql, type SqlRunner } from './sql';
import type { CommittedEvent } from './turn-store';

/**
 * A turn ended where no worker holds it (a cancel or `multitask: interrupt` of a turn that is queued
 * or waits on a person or a sub-agent, docs/adr/0014) gets what the engine's `answerUnrun` gives a
 * turn stopped at a safe point: every call of its rounds that has no result is answered `cancelled`,
 * so the transcript keeps the round, the calls that ran with their real results, and the model of a
 * later turn is told what happened (issue 18).
 */

/** A call the model asked for, as the assistant message stores it. */
export interface StoredCall {
  id: string;
  name: string;
  arguments: string;
}

/** What a transcript row says about tool calls: an assistant message's calls, or the call a result answers. */
export interface CallRow {
  role: string;
  toolCalls: unknown;
  toolCallId: string | null;
}

/** The calls of the rows' assistant messages that no tool result answers, in the model's order. */
export function unansweredCalls(rows: readonly CallRow[]): StoredCall[] {
  const answered = new Set(rows.filter((r) => r.role === 'tool').map((r) => r.toolCallId));
  return rows
    .filter((r) => r.role === 'assistant' && Array.isArray(r.toolCalls))
    .flatMap((r) => r.toolCalls as StoredCall[])
    .filter((c) => !answered.has(c.id));
}

/**
 * Seed 002's envelope for a call the stop kept from running: the engine's `stoppedOutcome` with the
 * message its `answerUnrun` uses, and the classification `classifyToolFailure` gives it (checked
 * against the engine in libs/turns/src/unrun-answers.spec.ts).
 */
export function cancelledAnswer(call: Pick<StoredCall, 'name'>) {
  const result = {
    ok: false as const,
    kind: 'cancelled',
    message: 'the turn was stopped before this call ran',
    hint: 'the call may be made again in a later turn',
    retryable: true,
    tool_name: call.name,
  };
  const failure = {
    kind: result.kind,
    retryable: result.retryable,
    class: 'ToolError',
    category: 'recoverable',
    causePlain: result.message,
    nextAction: result.hint,
    recoverable: true,
  };
  return { result, failure, error: `${result.kind}: ${result.message}` };
}

function parsedArguments(raw: string): unknown {
  try {
    return raw.trim() === '' ? {} : (JSON.parse(raw) as unknown);
  } catch {
    return { _raw: raw };
  }
}

/**
 * Answers the turn's unanswered calls inside the caller's transaction, which has locked the session
 * row and is about to end the turn: one tool result per call in the transcript (the next positions of
 * the turn's seq), a `failed` tool_calls row for each call whose side effect is known (a gated call's
 * approval, or the row of one that started), `tool_call_completed` journaled for each, and the turn's
 * tool-call count. A held call (never gated by a person, never started) has no row: nothing here knows
 * its side effect. Returns the journaled events, in order.
 */
export async function answerUnrunCalls(
  tx: SqlRunner,
  a: { tenantId: string; sessionId: string; turnId: string },
): Promise<CommittedEvent[]> {
  const turn = await tx.first<{ seq: number; agent_id: string; priority: string }>(sql`
    SELECT seq, agent_id, priority FROM turns WHERE id = ${a.turnId}::uuid`);
  if (!turn) return [];
  const rows = await tx.rows<CallRow & { position: number }>(sql`
    SELECT position, role, tool_calls AS "toolCalls", tool_call_id AS "toolCallId" FROM messages
    WHERE session_id = ${a.sessionId}::uuid AND turn_seq = ${turn.seq}::int ORDER BY position`);
  const calls = unansweredCalls(rows);
  if (calls.length === 0) return [];
  const next = Math.max(...rows.map((r) => r.position)) + 1;
  const answers = calls.map((call, i) => ({ call, position: next + i, ...cancelledAnswer(call) }));
  // The calls' arguments are the model's content: sealed for an encrypting tenant (docs/adr/0067).
  const args = await Promise.all(answers.map((x) => sealJson(a.tenantId, parsedArguments(x.call.arguments))));
  // The cancelled answer is fixed text, sealed all the same: every transcript body and tool-call error
  // of an encrypting tenant is (one rule per column, which an import follows too, docs/adr/0068).
  const bodies = await Promise.all(
    answers.map((x) => sealJson(a.tenantId, { type: 'text', text: JSON.stringify(x.result) })),
  );
  const errors = await Promise.all(answers.map((x) => sealJson(a.tenantId, x.result)));

  await tx.execute(sql`
    INSERT INTO messages (id, tenant_id, agent_id, session_id, turn_id, turn_seq, position, role, kind, origin,
      trust, authority_class, priority, body, tool_call_id, metadata)
    VALUES ${join(
      answers.map(
        (x, i) => sql`(${newId()}::uuid, ${a.tenantId}::uuid, ${turn.agent_id}::uuid, ${a.sessionId}::uuid,
          ${a.turnId}::uuid, ${turn.seq}::int, ${x.position}::int, 'tool', 'internal_followup',
          ${json({ kind: 'system', subsystem: 'tools' })}::jsonb, 'untrusted_external', 'external_evidence',
          ${turn.priority}::text, ${json(bodies[i])}::jsonb,
          ${x.call.id}::text, ${json({ tool: x.call.name })}::jsonb)`,
      ),
    )}`);

  await tx.execute(sql`
    INSERT INTO tool_calls (id, tenant_id, session_id, turn_id, call_id, name, arguments, side_effect, status,
      idempotency_key, error, completed_at, duration_ms)
    SELECT v.id, ${a.tenantId}::uuid, ${a.sessionId}::uuid, ${a.turnId}::uuid, v.call_id, v.name, v.arguments,
      coalesce(ap.side_effect, tc.side_effect), 'failed', ${a.turnId}::text || ':' || v.call_id, v.error, now(), 0
    FROM (VALUES ${join(
      answers.map(
        (x, i) => sql`(${newId()}::uuid, ${x.call.id}::text, ${x.call.name}::text,
          ${json(args[i])}::jsonb, ${json(errors[i])}::jsonb)`,
      ),
    )}) AS v (id, call_id, name, arguments, error)
      LEFT JOIN approvals ap ON ap.turn_id = ${a.turnId}::uuid AND ap.call_id = v.call_id
      LEFT JOIN tool_calls tc ON tc.turn_id = ${a.turnId}::uuid AND tc.call_id = v.call_id
    WHERE coalesce(ap.side_effect, tc.side_effect) IS NOT NULL
    ON CONFLICT (turn_id, call_id) DO UPDATE SET status = excluded.status, error = excluded.error,
      completed_at = excluded.completed_at, duration_ms = excluded.duration_ms`);

  await tx.execute(sql`
    UPDATE turns SET tool_call_count = tool_call_count + ${answers.length}::int WHERE id = ${a.turnId}::uuid`);

  const events = await tx.rows<CommittedEvent>(sql`
    WITH s AS (
      UPDATE sessions SET last_event_seq = last_event_seq + ${answers.length}::int
      WHERE id = ${a.sessionId}::uuid
      RETURNING last_event_seq - ${answers.length}::int AS base
    )
    INSERT INTO events (id, tenant_id, session_id, turn_id, seq, type, data)
    SELECT v.id, ${a.tenantId}::uuid, ${a.sessionId}::uuid, ${a.turnId}::uuid, s.base + v.n, 'tool_call_completed',
      v.data
    FROM s, (VALUES ${join(
      answers.map(
        (x, i) =>
          sql`(${newId()}::uuid, ${i + 1}::int, ${json({
            callId: x.call.id,
            name: x.call.name,
            ok: false,
            durationMs: 0,
            failure: x.failure,
            tool_error: x.result,
            error: x.error,
          })}::jsonb)`,
      ),
    )}) AS v (id, n, data)
    RETURNING id, seq, type, turn_id AS "turnId", data, created_at AS "createdAt"`);
  return events.sort((x, y) => x.seq - y.seq);
}
