import { z } from 'zod';

/**
 * Why a turn was cancelled (docs/adr/0055): one value per cause, stored in `turns.cancel_reason`
 * (a CHECK holds it to this list), shown by GET /v1/turns/:id as `cancelReason`, carried by the
 * journal's `turn_cancelled` as `data.reason`, by the turn span as `switchboard.turn.cancel_reason`
 * and by `switchboard_turns_cancelled_total{reason}`.
 *
 * - `api_cancel`: a client asked: POST /v1/turns/:id/cancel, a protocol's own cancel (Responses
 *   `/cancel`, A2A `tasks/cancel`, LangGraph `runs.cancel`, MCP `notifications/cancelled`), or a
 *   parent agent's `close_subagent`.
 * - `client_disconnected`: the client left a stream that cancels when it does (LangGraph
 *   `on_disconnect: cancel` / `cancel_on_disconnect`, an MCP call whose stream closed).
 * - `superseded`: a newer message with `multitask: interrupt` (LangGraph `multitask_strategy: interrupt`).
 * - `tenant_paused`: the operator paused the tenant (the kill switch stopped the running turn).
 * - `agent_stopped`: POST /v1/agents/:id/stop.
 * - `deadline` / `budget`: the turn's parent ended at its wall-clock deadline or its budget (`max_usd`,
 *   the tenant's daily cap) while this child turn still ran. A turn's own deadline or budget ends it
 *   `completed` with that stop reason, not cancelled.
 * - `operator`: the operator's POST /v1/admin/tenants/:id/turns/:turnId/cancel.
 *
 * A sub-agent's child turn cancelled with its parent carries the parent's reason (the note names the parent).
 */
export const CancelReason = z.enum([
  'api_cancel',
  'client_disconnected',
  'superseded',
  'tenant_paused',
  'agent_stopped',
  'deadline',
  'budget',
  'operator',
]);
export type CancelReason = z.infer<typeof CancelReason>;

export const CANCEL_REASONS: readonly CancelReason[] = CancelReason.options;

/** What a cancel carries: the typed reason, and the free text given with it (the client's reason, a parent's id). */
export interface CancelCause {
  reason: CancelReason;
  /** At most 500 characters; null: none. */
  note?: string | null;
}

/** The longest note kept (a client's `reason` is refused above it; built notes are cut). */
export const CANCEL_NOTE_MAX = 500;

/** A cause with its note cut to what is kept (empty → none). */
export function cancelCause(reason: CancelReason, note?: string | null): CancelCause {
  const n = note?.trim();
  return { reason, note: n ? n.slice(0, CANCEL_NOTE_MAX) : null };
}

/**
 * The stop reasons (`turns.stop_reason`) that end a turn early at its deadline or its budget, and the
 * cancel reason their sub-agents' child turns still running are cancelled with (docs/adr/0055).
 */
export const STOP_REASON_CANCELS: Readonly<Record<string, CancelReason>> = {
  deadline: 'deadline',
  max_usd: 'budget',
  tenant_budget_exhausted: 'budget',
};

/** The cancel reason a turn's stop reason passes to its still-running children; undefined: none. */
export const cascadeReasonOf = (stopReason: string | null | undefined): CancelReason | undefined =>
  stopReason ? STOP_REASON_CANCELS[stopReason] : undefined;

/**
 * What a parent that ended at its deadline or budget passes to its children still running
 * (docs/adr/0055); undefined for any other end.
 */
export function stoppedParentCause(parentTurnId: string, stopReason: string | null): CancelCause | undefined {
  const reason = cascadeReasonOf(stopReason);
  if (!reason) return undefined;
  const what = reason === 'deadline' ? 'its deadline' : `its budget (${stopReason})`;
  return cancelCause(reason, `parent turn ${parentTurnId} stopped at ${what}`);
}

/**
 * What a protocol that carries only text says of a cancelled turn (Chat Completions' and Responses'
 * error message, MCP's tool error, A2A's status message): `turn <id> was cancelled before it
 * answered (<reason>: <note>)`.
 */
export function cancelledText(
  turn: { id: string; cancelReason?: string | null; cancelNote?: string | null },
  what = 'was cancelled before it answered',
): string {
  const why = turn.cancelReason
    ? ` (${turn.cancelReason}${turn.cancelNote ? `: ${turn.cancelNote}` : ''})`
    : '';
  return `turn ${turn.id} ${what}${why}`;
}
