import { DelayedError, type Job } from 'bullmq';
import type { HandleResult } from './runner';

/** How long a `later` job (it lost a lease) waits before it looks again. */
export const laterDelayMs = () => 200 + Math.floor(Math.random() * 400);

/**
 * What a turn job does with `TurnRunner.handle`'s answer, without spending an attempt. `done`
 * completes it: nothing was runnable when it last chose, and whoever frees a turn chooses again
 * (docs/adr/0029). `again` (it ran its bound with work left) goes back at once, behind the jobs
 * waiting: its slot must not stay idle. `later` (a lost lease) waits a moment.
 */
export async function concludeTurnJob(result: HandleResult, job: Job, token?: string): Promise<void> {
  if (result === 'done') return;
  await job.moveToDelayed(Date.now() + (result === 'again' ? 0 : laterDelayMs()), token);
  throw new DelayedError();
}
