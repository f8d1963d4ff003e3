import { Inject } from '@nestjs/common';
import type { Job } from 'bullmq';
import type { Admission } from '@switchboard/admission';
import { Jobs, QueueName } from '@switchboard/contracts';
import type { Db } from '@switchboard/database';
import type { Metrics } from '@switchboard/observability';
import { ADMISSION, DB, METRICS, QueueProcessor, QueueWorker } from '@switchboard/platform';
import { consume } from '@switchboard/queue';
import { triageDelivery } from '@switchboard/triage';

/** Triages trigger deliveries: rules first; forwarded ones are admitted as turns. */
@QueueProcessor(QueueName.Triage, 'TRIAGE_CONCURRENCY')
export class TriageProcessor extends QueueWorker {
  constructor(
    @Inject(DB) private readonly db: Db,
    @Inject(ADMISSION) private readonly admission: Admission,
    @Inject(METRICS) private readonly metrics: Metrics,
  ) {
    super();
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
