import { DelayedError, type Job } from 'bullmq';
import type { HandleResult } from './runner';

/** How long a job whose worker stopped with turns left in its session waits before it looks again. */
export const laterDelayMs = () => 200 + Math.floor(Math.random() * 400);

/**
 * What a turn job does with `TurnRunner.handle`'s answer. `done` and `busy` complete it: a busy
 * session's lease holder runs its turn (it releases only when no turn was admitted after the one it
 * finished, and looks again after any other release). `later` (this worker stopped with turns left)
 * moves it back to delayed for a moment, without spending an attempt.
 */
export async function settleTurnJob(result: HandleResult, job: Job, token?: string): Promise<void> {
  if (result !== 'later') return;
  await job.moveToDelayed(Date.now() + laterDelayMs(), token);
  throw new DelayedError();
}
