import { Inject } from '@nestjs/common';
import { InjectQueue } from '@nestjs/bullmq';
import type { Job, Queue } from 'bullmq';
import { Jobs, QueueName, type MaintenanceTask } from '@switchboard/contracts';
import type { Db } from '@switchboard/database';
import type { Metrics } from '@switchboard/observability';
import { DB, METRICS, QueueProcessor, QueueWorker } from '@switchboard/platform';
import { consume } from '@switchboard/queue';
import { reconcileTurns } from '@switchboard/turns';

/** Turns younger than this are left alone: their own enqueue may still be in flight. */
export const RECONCILE_MIN_AGE_MS = 2000;

/**
 * Cluster-wide housekeeping jobs made by the job schedulers (`ReconcilerService`):
 * one job per interval for the whole cluster, run by whichever harness takes it.
 */
@QueueProcessor(QueueName.Maintenance, 1)
export class MaintenanceProcessor extends QueueWorker {
  constructor(
    @Inject(DB) private readonly db: Db,
    @InjectQueue(QueueName.Turns) private readonly turns: Queue,
    @Inject(METRICS) private readonly metrics: Metrics,
  ) {
    super();
  }

  async process(job: Job): Promise<number> {
    return consume(Jobs.maintenance, job, (data) => this.run(data.task), this.metrics);
  }

  private async run(task: MaintenanceTask): Promise<number> {
    switch (task) {
      case 'reconcile': {
        const requeued = await reconcileTurns(this.db, this.turns, this.logger, {
          olderThanMs: RECONCILE_MIN_AGE_MS,
        });
        this.logger.info({ task, requeued }, 'maintenance task ran');
        return requeued;
      }
    }
  }
}
