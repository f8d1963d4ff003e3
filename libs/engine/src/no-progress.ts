import type { ToolCallRequest } from '@switchboard/providers';
import type { ToolOutcome } from './types';

export type Verdict =
  { action: 'continue' } | { action: 'nudge'; hint: string } | { action: 'halt'; summary: string };

/**
 * The no-progress circuit breaker (seed 000): each tool call is fingerprinted by
 * its name and canonical arguments; identical calls that keep failing escalate
 * continue → nudge → halt. Recoverable failures (timeouts, rate limits, transient
 * errors) get more headroom than permanent ones. A success clears its fingerprint.
 */
export class NoProgressTracker {
  private readonly failures = new Map<string, number>();

  constructor(
    private readonly limits: { permanent: number; recoverable: number } = { permanent: 3, recoverable: 5 },
  ) {}

  record(call: ToolCallRequest, outcome: ToolOutcome): Verdict {
    const key = fingerprint(call);
    if (outcome.ok) {
      this.failures.delete(key);
      return { action: 'continue' };
    }
    const count = (this.failures.get(key) ?? 0) + 1;
    this.failures.set(key, count);
    const limit = outcome.retryable ? this.limits.recoverable : this.limits.permanent;
    if (count >= limit) {
      return {
        action: 'halt',
        summary:
          `No progress: ${call.name} failed ${count} times in a row with the same arguments ` +
          `(last failure ${outcome.kind}: ${outcome.message}). The turn was stopped instead of retrying it again.`,
      };
    }
    if (count === limit - 1) {
      return {
        action: 'nudge',
        hint:
          `This exact call has failed ${count} times with the same arguments (${outcome.kind}). ` +
          'Do not repeat it: change the arguments, use another tool, or answer with what you have.',
      };
    }
    return { action: 'continue' };
  }
}

/** Name plus arguments with keys sorted, so `{"a":1,"b":2}` and `{"b":2,"a":1}` are the same call. */
export function fingerprint(call: ToolCallRequest): string {
  let args: unknown;
  try {
    args = JSON.parse(call.arguments);
  } catch {
    return `${call.name}:${call.arguments.trim()}`;
  }
  return `${call.name}:${canonicalJson(args)}`;
}

/** A JSON value as one string with object keys sorted: equal values, equal strings. */
export function canonicalJson(v: unknown): string {
  if (Array.isArray(v)) return `[${v.map(canonicalJson).join(',')}]`;
  if (v && typeof v === 'object') {
    return `{${Object.keys(v)
      .sort()
      .map((k) => `${JSON.stringify(k)}:${canonicalJson((v as Record<string, unknown>)[k])}`)
      .join(',')}}`;
  }
  return JSON.stringify(v);
}
