import { Inject, type OnApplicationBootstrap } from '@nestjs/common';
import { WorkerHost } from '@nestjs/bullmq';
import type { Config } from '@switchboard/config';
import { CONFIG } from './tokens';

type ConcurrencySetting = 'HARNESS_CONCURRENCY' | 'HOOKS_CONCURRENCY' | 'TRIAGE_CONCURRENCY';

/**
 * A `@Processor(queue, { autorun: false })` worker that takes its concurrency,
 * lock duration and stalled-job interval from configuration, then starts:
 * decorator options are fixed at import time, configuration is not.
 */
export abstract class ConfiguredWorkerHost extends WorkerHost implements OnApplicationBootstrap {
  @Inject(CONFIG) protected readonly config!: Config;
  protected abstract readonly concurrencySetting: ConcurrencySetting;

  onApplicationBootstrap(): void {
    const opts = this.worker.opts as { lockDuration?: number; stalledInterval?: number };
    opts.lockDuration = this.config.QUEUE_LOCK_MS;
    opts.stalledInterval = this.config.QUEUE_STALLED_INTERVAL_MS;
    this.worker.concurrency = this.config[this.concurrencySetting];
    void this.worker.run().catch(() => undefined);
  }
}
