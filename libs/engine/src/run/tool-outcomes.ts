import type { EventData } from '@switchboard/contracts';
import type { ToolCallRequest } from '@switchboard/providers';
import { classifyToolFailure } from '../failures';
import type { ApprovalDecision, ToolOutcome } from '../types';

/** A tool call's failure: seed 002's tool error envelope. */
export type Failure = Extract<ToolOutcome, { ok: false }>;

/** A call to a tool the turn does not have (recoverable: the model may pick another). */
export function unknownTool(name: string, available: string[]): Failure {
  return {
    ok: false,
    kind: 'unknown_tool',
    message: `no tool named "${name}" is available`,
    hint: `available tools: ${available.join(', ') || 'none'}`,
    retryable: true,
  };
}

/** Arguments that are not JSON. */
export function invalidJson(error: string): Failure {
  return {
    ok: false,
    kind: 'invalid_arguments',
    message: `arguments are not valid JSON: ${error}`,
    hint: 'send a JSON object',
    retryable: true,
  };
}

/** What the tool's schema says about arguments it refused (a zod issue). */
interface SchemaIssue {
  readonly path: readonly PropertyKey[];
  readonly message: string;
}

/** Arguments that do not match the tool's schema; `field` is the first issue's path. */
export function invalidArguments(issues: readonly SchemaIssue[]): Failure {
  return {
    ok: false,
    kind: 'invalid_arguments',
    message: issues.map((i) => `${i.path.join('.') || '(root)'}: ${i.message}`).join('; '),
    hint: 'fix the arguments to match the tool schema',
    field: issues[0]?.path.join('.') || undefined,
    retryable: true,
  };
}

/** A tool the tenant or policy blocks outright (the blocked-tool gate). */
export function blockedTool(message: string): Failure {
  return { ok: false, kind: 'blocked', message, hint: 'this tool is not allowed here', retryable: false };
}

/**
 * A side-effecting call the hourly side-effect budget refused (docs/adr/0058): not run. The model is
 * told whose budget is spent and when a slot frees; it should go on without the effect or tell the
 * user, not retry at once.
 */
export function actionBudgetExceeded(
  scope: 'agent' | 'tenant',
  limit: number,
  windowMs: number,
  retryAfterMs: number,
): Failure {
  const whose = scope === 'agent' ? "this agent's" : "this tenant's";
  const window = windowMs === 3_600_000 ? 'hour' : `${Math.round(windowMs / 1000)} s`;
  return {
    ok: false,
    kind: 'action_budget_exceeded',
    message: `${whose} budget of ${limit} side-effecting tool calls per ${window} is spent; this call was not run`,
    hint: `a slot frees in about ${Math.ceil(retryAfterMs / 1000)} s; continue without this effect or tell the user, do not retry it now`,
    retryable: false,
    details: { scope, limit, windowMs, retryAfterMs },
  };
}

/** The action budget could not be read (Redis away) while a budget is set: refused, safe to retry later. */
export function actionBudgetUnavailable(error: string): Failure {
  return {
    ok: false,
    kind: 'action_budget_unavailable',
    message: `the hourly side-effect budget could not be checked (${error}); this call was not run`,
    hint: 'retry later',
    retryable: true,
  };
}

/** A call a `before` tool gate refused. */
export function refusedBeforeRun(message: string): Failure {
  return { ok: false, kind: 'blocked', message, retryable: false };
}

/** The result a gated call gets when its decision was not an approval (classified; never retried as is). */
export function refusedByDecision(d: ApprovalDecision): Failure {
  const why = d.reason ? `: ${d.reason}` : '';
  switch (d.status) {
    case 'expired':
      return {
        ok: false,
        kind: 'approval_expired',
        message: `nobody decided on this call before its approval expired${why}`,
        hint: 'ask the user whether to try again; do not repeat the call unasked',
        retryable: false,
      };
    case 'cancelled':
      return stoppedOutcome(`the approval of this call was cancelled${why}`);
    case 'approved':
    case 'rejected':
      return {
        ok: false,
        kind: 'approval_rejected',
        message: `a person rejected this call${why}`,
        hint: 'do not retry this call; continue without it or ask the user what to do instead',
        retryable: false,
      };
  }
}

/** A call cut off, or never run, because the turn stopped (cancel, deadline, lost lease). */
export function stoppedOutcome(message: string): Failure {
  return {
    ok: false,
    kind: 'cancelled',
    message,
    hint: 'the call may be made again in a later turn',
    retryable: true,
  };
}

/**
 * Seed 002's envelope for a side-effecting call an earlier run started but never recorded: the
 * effect may or may not have happened, so the call is not repeated blindly (ADR 0004).
 */
export function outcomeUnknown(tool: string, idempotencyKey: string): Failure {
  return {
    ok: false,
    kind: 'outcome_unknown',
    message: `an earlier run of this turn started "${tool}" and stopped before its result was recorded; its effect may or may not have happened`,
    hint: 'verify whether the effect happened (read back what the call would have changed) before calling the tool again',
    retryable: false,
    details: { idempotencyKey },
  };
}

/** The `tool_call_completed` event: outcome, and for a failure its class and seed 002's error object. */
export function completedEvent(
  call: ToolCallRequest,
  result: ToolOutcome,
  durationMs: number,
): EventData<'tool_call_completed'> {
  return {
    callId: call.id,
    name: call.name,
    ok: result.ok,
    durationMs,
    ...(result.ok
      ? {}
      : {
          failure: { kind: result.kind, retryable: result.retryable, ...classifyToolFailure(result) },
          // Audit events keep the structured error object, and `error` flattened.
          tool_error: result,
          error: `${result.kind}: ${result.message}`,
        }),
  };
}
