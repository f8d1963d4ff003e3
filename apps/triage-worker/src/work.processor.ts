import { Inject } from '@nestjs/common';
import { InjectQueue } from '@nestjs/bullmq';
import type { Job, Queue } from 'bullmq';
import type { Admission } from '@switchboard/admission';
import { Jobs, QueueName } from '@switchboard/contracts';
import type { Db } from '@switchboard/database';
import type { Metrics } from '@switchboard/observability';
import { ADMISSION, DB, METRICS, QueueProcessor, QueueWorker } from '@switchboard/platform';
import { consume } from '@switchboard/queue';
import { activateWork } from '@switchboard/work-items';

/**
 * Runs the `work` queue (docs/adr/0031): one activation pass per job, next to the other system-tick
 * producers of this worker (wake hints, schedule fires). It admits at most one runtime
 * `system_tick`, and schedules the timer of the agent's next recheck.
 */
@QueueProcessor(QueueName.Work, 'TRIAGE_CONCURRENCY')
export class WorkProcessor extends QueueWorker {
  constructor(
    @Inject(DB) private readonly db: Db,
    @Inject(ADMISSION) private readonly admission: Admission,
    @InjectQueue(QueueName.Work) private readonly work: Queue,
    @Inject(METRICS) private readonly metrics: Metrics,
  ) {
    super();
  }

  async process(job: Job): Promise<string> {
    return consume(
      Jobs.work,
      job,
      async (data) => {
        const outcome = await activateWork(
          {
            db: this.db,
            admission: this.admission,
            logger: this.logger,
            workQueue: this.work,
            maxIdleTicks: this.config.WORK_TICK_MAX_IDLE,
          },
          { tenantId: data.tenantId, agentId: data.agentId },
        );
        return outcome.kind;
      },
      this.metrics,
    );
  }
}
