import { Inject, type OnApplicationBootstrap } from '@nestjs/common';
import { Processor, WorkerHost } from '@nestjs/bullmq';
import type { Job } from 'bullmq';
import type { Admission } from '@switchboard/admission';
import type { Config } from '@switchboard/config';
import { Jobs, QueueName } from '@switchboard/contracts';
import type { Db } from '@switchboard/database';
import type { Logger, Metrics } from '@switchboard/observability';
import { ADMISSION, CONFIG, DB, LOGGER, METRICS, startWorker } from '@switchboard/platform';
import { consume } from '@switchboard/queue';
import { triageDelivery } from '@switchboard/triage';

/** Triages trigger deliveries: rules first; forwarded ones are admitted as turns. */
@Processor(QueueName.Triage, { autorun: false })
export class TriageProcessor extends WorkerHost implements OnApplicationBootstrap {
  constructor(
    @Inject(DB) private readonly db: Db,
    @Inject(ADMISSION) private readonly admission: Admission,
    @Inject(CONFIG) private readonly config: Config,
    @Inject(METRICS) private readonly metrics: Metrics,
    @Inject(LOGGER) private readonly logger: Logger,
  ) {
    super();
  }

  onApplicationBootstrap(): void {
    startWorker(this.worker, {
      concurrency: this.config.TRIAGE_CONCURRENCY,
      lockDuration: this.config.QUEUE_LOCK_MS,
      stalledInterval: this.config.QUEUE_STALLED_INTERVAL_MS,
    });
  }

  async process(job: Job): Promise<string> {
    return consume(
      Jobs.triage,
      job,
      async (data) => {
        const result = await triageDelivery(
          { db: this.db, admission: this.admission, logger: this.logger },
          data,
        );
        return result?.decision.action ?? 'skipped';
      },
      this.metrics,
    );
  }
}
