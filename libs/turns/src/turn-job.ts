import { DelayedError, type Job } from 'bullmq';
import type { HandleResult } from './runner';

/** How long a job that stopped with work perhaps left (its bound, a lost lease) waits before it looks again. */
export const laterDelayMs = () => 200 + Math.floor(Math.random() * 400);

/**
 * What a turn job does with `TurnRunner.handle`'s answer. `done` completes it: nothing was runnable
 * when it last chose, and whoever frees a turn chooses again (docs/adr/0029). `later` (it ran its
 * bound, or lost a lease) moves it back to delayed for a moment, without spending an attempt.
 */
export async function settleTurnJob(result: HandleResult, job: Job, token?: string): Promise<void> {
  if (result !== 'later') return;
  await job.moveToDelayed(Date.now() + laterDelayMs(), token);
  throw new DelayedError();
}
