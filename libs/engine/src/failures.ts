import type { ToolOutcome } from './types';

/** Seed 000 "Classified tool failures": what went wrong, in terms a UI and an operator act on. */
export type FailureClass =
  | 'MissingPermission'
  | 'MissingApp'
  | 'ServiceUnavailable'
  | 'BadCredentials'
  | 'BlockedByPolicy'
  | 'ModelConnection'
  | 'Timeout'
  | 'OutcomeUnknown'
  | 'Denied'
  | 'ApprovalExpired'
  | 'BadArguments'
  | 'ToolError';

/** One category per UI state: safe to retry, change settings, ask the user, or never retry. */
export type FailureCategory =
  'recoverable' | 'blocked_by_policy' | 'needs_user_confirmation' | 'user_declined';

export interface ClassifiedFailure {
  class: FailureClass;
  category: FailureCategory;
  causePlain: string;
  nextAction: string;
  recoverable: boolean;
}

type Failure = Extract<ToolOutcome, { ok: false }>;

const RULES: {
  test: (f: Failure) => boolean;
  class: FailureClass;
  category: FailureCategory;
  next: string;
}[] = [
  {
    // `mcp_timeout`: an MCP server did not answer within its timeout (docs/adr/0023).
    test: (f) => f.kind === 'timeout' || f.kind === 'mcp_timeout',
    class: 'Timeout',
    category: 'recoverable',
    next: 'Retry, or ask for less.',
  },
  {
    test: (f) => f.kind === 'outcome_unknown',
    class: 'OutcomeUnknown',
    category: 'needs_user_confirmation',
    next: 'Check whether the action took effect before repeating it.',
  },
  {
    test: (f) => f.kind === 'unknown_tool',
    class: 'MissingApp',
    category: 'recoverable',
    next: 'Use one of the available tools.',
  },
  {
    test: (f) => f.kind === 'invalid_arguments' || f.kind === 'invalid_result',
    class: 'BadArguments',
    category: 'recoverable',
    next: 'Call the tool again with arguments that match its schema.',
  },
  {
    test: (f) => f.kind === 'blocked',
    class: 'BlockedByPolicy',
    category: 'blocked_by_policy',
    next: 'An operator must allow this tool.',
  },
  {
    // The hourly side-effect budget is spent (docs/adr/0058): a policy limit, lifted by time or by
    // an operator raising maxActionsPerHour.
    test: (f) => f.kind === 'action_budget_exceeded',
    class: 'BlockedByPolicy',
    category: 'blocked_by_policy',
    next: 'Wait until the hourly action budget frees a slot (details.retryAfterMs), or raise maxActionsPerHour.',
  },
  {
    test: (f) => f.kind === 'action_budget_unavailable',
    class: 'ServiceUnavailable',
    category: 'recoverable',
    next: 'Retry later.',
  },
  {
    // http_fetch refused a private, loopback, link-local or metadata address (docs/adr/0021).
    test: (f) => f.kind === 'blocked_address',
    class: 'BlockedByPolicy',
    category: 'blocked_by_policy',
    next: 'Use a public URL; an operator can exempt an internal host (HTTP_FETCH_ALLOW_HOSTS).',
  },
  {
    test: (f) => f.kind === 'denied' || f.kind === 'approval_rejected',
    class: 'Denied',
    category: 'user_declined',
    next: 'Do not retry; the user declined.',
  },
  {
    test: (f) => f.kind === 'approval_expired',
    class: 'ApprovalExpired',
    category: 'needs_user_confirmation',
    next: 'Ask for approval again.',
  },
  {
    test: (f) =>
      /\b(401|unauthori[sz]ed|invalid (api )?key|bad credentials|expired token)\b/i.test(f.message),
    class: 'BadCredentials',
    category: 'needs_user_confirmation',
    next: 'Reconnect the integration or renew its credentials.',
  },
  {
    test: (f) => /\b(403|forbidden|permission|not allowed|scope)\b/i.test(f.message),
    class: 'MissingPermission',
    category: 'needs_user_confirmation',
    next: 'Grant the missing permission.',
  },
  {
    test: (f) =>
      /\b(50[234]|unavailable|ECONNREFUSED|ECONNRESET|ETIMEDOUT|EAI_AGAIN|socket hang up)\b/i.test(f.message),
    class: 'ServiceUnavailable',
    category: 'recoverable',
    next: 'Retry later.',
  },
];

/** Classifies a tool failure; anything unrecognised is a plain tool error the model may work around. */
export function classifyToolFailure(failure: Failure): ClassifiedFailure {
  const rule = RULES.find((r) => r.test(failure));
  const cls = rule?.class ?? 'ToolError';
  const category = rule?.category ?? 'recoverable';
  return {
    class: cls,
    category,
    causePlain: failure.message,
    nextAction: rule?.next ?? failure.hint ?? 'Try another approach.',
    // An unrecognised tool error is safe to retry only when the tool said so.
    recoverable: rule ? category === 'recoverable' : failure.retryable,
  };
}
