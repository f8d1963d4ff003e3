import { retryBackoffMs, type ProviderError } from '@switchboard/providers';
import type { AttemptOutcome, ProviderAttempt } from './types';

/** How a model round retries (seed 002), fixed when the engine is built: the provider layer's policy. */
export type { RetryPolicy } from '@switchboard/providers';

/** Where a failed provider attempt stands in its round. */
export interface AttemptContext {
  /** `resolve`: the model reference named no provider; `call`: the provider call itself failed. */
  stage: 'resolve' | 'call';
  /** This attempt on this model, from 1. */
  attempt: number;
  /** Attempts a model gets: the retries plus one. */
  maxAttempts: number;
  /** Another configured model follows this one. */
  hasNextModel: boolean;
  /** The turn's signal has aborted: a cancel, an interrupt, a lost lease or the deadline. */
  aborted: boolean;
  maxBackoffMs: number;
}

/**
 * What the round does after a failed attempt:
 * - `retry`: the same model again, after `backoffMs`;
 * - `next_model`: this model is done; the next configured model, or, after the last, the round
 *   fails with `provider_error`;
 * - `stop`: the turn stopped, no further attempt; the round fails and the loop ends the turn
 *   `cancelled`;
 * - `end_turn`: the failure ends the turn whatever models are left (`context_length_exceeded`).
 */
export type AttemptNext = 'retry' | 'next_model' | 'stop' | 'end_turn';

/** A failed attempt, classified: what the timeline records of it and what the round does next. */
export interface AttemptVerdict {
  outcome: Exclude<AttemptOutcome, 'succeeded'>;
  disposition: NonNullable<ProviderAttempt['disposition']>;
  /** This attempt ended its model's candidacy and the next configured model is tried. */
  advancedToFallback: boolean;
  next: AttemptNext;
  /** The wait before the retry; only when `next` is `retry`. */
  backoffMs?: number;
}

/**
 * A failed provider attempt → its outcome, disposition and backoff (seed 002), in this order:
 *
 * | failure                               | outcome             | disposition | next        | advanced |
 * | ------------------------------------- | ------------------- | ----------- | ----------- | -------- |
 * | the model reference resolves to none  | `fail_fast_aborted` | `fail_fast` | next model  | if any   |
 * | the turn's signal aborted             | `fail_fast_aborted` | `cancelled` | stop        | no       |
 * | `cancelled` without the turn aborting | `fail_fast_aborted` | `cancelled` | next model  | no       |
 * | `context_length`                      | `fail_fast_aborted` | `terminal`  | end turn    | no       |
 * | not retryable (auth, bad_request, …)  | `fail_fast_aborted` | `fail_fast` | next model  | if any   |
 * | retryable, the model's last attempt   | `retries_exhausted` | `retryable` | next model  | if any   |
 * | retryable (timeout, connection, …)    | `retrying`          | `retryable` | retry       | no       |
 *
 * Another model would only hide that the conversation is too long, so `context_length` ends the turn.
 * The backoff is the provider's Retry-After when it sent one, else 500 ms doubling per attempt;
 * either is capped at `maxBackoffMs`.
 */
export function classifyAttempt(error: ProviderError, at: AttemptContext): AttemptVerdict {
  const moveOn = { advancedToFallback: at.hasNextModel, next: 'next_model' } as const;
  if (at.stage === 'resolve') return { outcome: 'fail_fast_aborted', disposition: 'fail_fast', ...moveOn };
  if (at.aborted || error.kind === 'cancelled') {
    return {
      outcome: 'fail_fast_aborted',
      disposition: 'cancelled',
      advancedToFallback: false,
      next: at.aborted ? 'stop' : 'next_model',
    };
  }
  if (error.kind === 'context_length') {
    return {
      outcome: 'fail_fast_aborted',
      disposition: 'terminal',
      advancedToFallback: false,
      next: 'end_turn',
    };
  }
  if (!error.retryable) return { outcome: 'fail_fast_aborted', disposition: 'fail_fast', ...moveOn };
  if (at.attempt >= at.maxAttempts)
    return { outcome: 'retries_exhausted', disposition: 'retryable', ...moveOn };
  return {
    outcome: 'retrying',
    disposition: 'retryable',
    advancedToFallback: false,
    next: 'retry',
    backoffMs: retryBackoffMs(error, at.attempt, at.maxBackoffMs),
  };
}
