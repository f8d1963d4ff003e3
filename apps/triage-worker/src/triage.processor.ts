import { Inject } from '@nestjs/common';
import { Processor } from '@nestjs/bullmq';
import type { Job } from 'bullmq';
import type { Admission } from '@switchboard/admission';
import { Jobs, QueueName } from '@switchboard/contracts';
import type { Db } from '@switchboard/database';
import type { Logger, Metrics } from '@switchboard/observability';
import { ADMISSION, ConfiguredWorkerHost, DB, LOGGER, METRICS } from '@switchboard/platform';
import { consume } from '@switchboard/queue';
import { triageDelivery } from '@switchboard/triage';

/** Triages trigger deliveries: rules first; forwarded ones are admitted as turns. */
@Processor(QueueName.Triage, { autorun: false })
export class TriageProcessor extends ConfiguredWorkerHost {
  constructor(
    @Inject(DB) private readonly db: Db,
    @Inject(ADMISSION) private readonly admission: Admission,
    @Inject(METRICS) private readonly metrics: Metrics,
    @Inject(LOGGER) private readonly logger: Logger,
  ) {
    super();
  }

  protected readonly concurrencySetting = 'TRIAGE_CONCURRENCY' as const;

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
