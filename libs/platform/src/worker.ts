import type { Worker } from 'bullmq';

/**
 * Applies configuration to a `@Processor(..., { autorun: false })` worker and
 * starts it: decorator options are fixed at import time, configuration is not.
 */
export function startWorker(
  worker: Worker,
  options: { concurrency: number; lockDuration: number; stalledInterval: number },
): void {
  const opts = worker.opts as { lockDuration?: number; stalledInterval?: number; maxStalledCount?: number };
  opts.lockDuration = options.lockDuration;
  opts.stalledInterval = options.stalledInterval;
  worker.concurrency = options.concurrency;
  void worker.run().catch(() => undefined);
}
