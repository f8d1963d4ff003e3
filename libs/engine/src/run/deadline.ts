import type { TurnCheckpoints, TurnInput, TurnOutcome } from '../types';

/**
 * The wall-clock deadline (`budget.deadlineMs`, counted from when the turn first started) bounds
 * what is in flight too: at the deadline the run's signal aborts, so a hung model call or tool is
 * cut off, and the turn ends as the deadline stop hook would have ended it, not as cancelled. A
 * cancel from outside stays a cancel. Without a deadline the run gets the input and signal as they are.
 */
export async function withinDeadline(
  input: TurnInput,
  cp: TurnCheckpoints,
  signal: AbortSignal,
  run: (input: TurnInput, signal: AbortSignal) => Promise<TurnOutcome>,
): Promise<TurnOutcome> {
  const deadlineMs = input.budget.deadlineMs;
  if (deadlineMs === undefined) return run(input, signal);
  const startedAt = input.startedAt ?? Date.now();
  const bounded = new AbortController();
  const forward = () => bounded.abort(signal.reason);
  if (signal.aborted) forward();
  signal.addEventListener('abort', forward, { once: true });
  const timer = setTimeout(() => bounded.abort('deadline'), Math.max(0, startedAt + deadlineMs - Date.now()));
  try {
    const outcome = await run({ ...input, startedAt }, bounded.signal);
    if (outcome.status === 'cancelled' && bounded.signal.reason === 'deadline' && !signal.aborted) {
      await cp.emit('stop_hook_fired', {
        hook: 'deadline',
        reason: 'deadline',
        iteration: outcome.iterations,
      });
      return { ...outcome, status: 'completed', stopReason: 'deadline' };
    }
    return outcome;
  } finally {
    clearTimeout(timer);
    signal.removeEventListener('abort', forward);
  }
}
