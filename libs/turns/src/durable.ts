import pRetry from 'p-retry';
import { isTransientDbError } from '@switchboard/database';

export interface TransientRetryOptions {
  /** Give up once this much time has passed since the first attempt. */
  maxMs: number;
  /** First backoff; it doubles (with jitter) up to `maxBackoffMs`. */
  minBackoffMs?: number;
  maxBackoffMs?: number;
  /** Backoff timers do not keep the process alive (for retries nobody waits on). */
  unref?: boolean;
  /** Called after each failed attempt that will be retried. */
  onRetry?: (err: Error, attempt: number) => void;
}

/**
 * Runs `fn` until it succeeds, retrying transient database errors (a restarted server, a dropped
 * connection) with exponential backoff for at most `maxMs`. Any other error, or the last transient
 * one, is thrown as it is. `fn` gets the attempt number (1 first) so a retried write can first check
 * whether an attempt whose answer was lost had in fact committed.
 */
export async function retryTransient<T>(
  fn: (attempt: number) => Promise<T>,
  o: TransientRetryOptions,
): Promise<T> {
  const started = Date.now();
  const minBackoffMs = o.minBackoffMs ?? 100;
  const maxBackoffMs = o.maxBackoffMs ?? 2_000;
  return pRetry(
    async (attempt) => {
      try {
        return await fn(attempt);
      } catch (err) {
        // node-postgres' socket errors are not `instanceof Error` inside Jest's sandbox: classify the original.
        const error = err instanceof Error ? err : new Error(String(err), { cause: err });
        // The worst next backoff must still fit in the budget; otherwise this error is the answer.
        const next = Math.min(maxBackoffMs, minBackoffMs * 2 ** attempt);
        if (!isTransientDbError(err) || Date.now() - started + next > o.maxMs) {
          throw new pRetry.AbortError(error);
        }
        throw error;
      }
    },
    {
      // At least what the time budget can use; the budget is what stops the retries (above).
      retries: retriesWithin(o.maxMs, minBackoffMs, maxBackoffMs),
      factor: 2,
      minTimeout: minBackoffMs,
      maxTimeout: maxBackoffMs,
      randomize: true,
      unref: o.unref ?? false,
      onFailedAttempt: (err) => o.onRetry?.(err, err.attemptNumber),
    },
  );
}

/**
 * How many retries backoffs of `min * 2^k` capped at `max` fit in `maxMs`, plus one: an upper bound
 * on what the budget allows, since randomized backoffs are only longer. p-retry computes every
 * backoff of the schedule before the first attempt, so a generous bound (`maxMs / min`, 300 for a
 * 30 s budget) cost about 40 µs of CPU on every checkpoint that succeeds at once.
 */
export function retriesWithin(maxMs: number, minBackoffMs: number, maxBackoffMs: number): number {
  let retries = 0;
  for (let spent = 0; spent <= maxMs; retries++) {
    spent += Math.max(1, Math.min(maxBackoffMs, minBackoffMs * 2 ** retries));
  }
  return retries + 1;
}
