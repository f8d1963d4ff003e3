import { Inject } from '@nestjs/common';
import { UnrecoverableError, type Job } from 'bullmq';
import { Jobs, QueueName } from '@switchboard/contracts';
import type { Db } from '@switchboard/database';
import type { Metrics } from '@switchboard/observability';
import { DB, METRICS, QueueProcessor, QueueWorker } from '@switchboard/platform';
import { consume } from '@switchboard/queue';
import { RefusedAddressError, sendNotification } from '@switchboard/triage';

/**
 * Sends signed notifications — triage `notify` and completion webhooks (Standard Webhooks,
 * docs/adr/0018), one attempt per job attempt; retries are the job definition's
 * (`Jobs.outboundWebhook`), the backoff the producer's (OUTBOUND_WEBHOOK_BACKOFF_MS). Every attempt
 * is logged in `outbound_webhook_attempts`. A private endpoint is refused without retrying.
 */
@QueueProcessor(QueueName.OutboundWebhooks, 'TRIAGE_CONCURRENCY')
export class OutboundWebhookProcessor extends QueueWorker {
  private allowHosts?: ReadonlySet<string>;

  constructor(
    @Inject(DB) private readonly db: Db,
    @Inject(METRICS) private readonly metrics: Metrics,
  ) {
    super();
  }

  async process(job: Job): Promise<string> {
    return consume(
      Jobs.outboundWebhook,
      job,
      async (data) => {
        try {
          return await sendNotification(
            {
              db: this.db,
              logger: this.logger,
              allowHosts: (this.allowHosts ??= new Set(this.config.OUTBOUND_WEBHOOK_ALLOW_HOSTS ?? [])),
              timeoutMs: this.config.OUTBOUND_WEBHOOK_TIMEOUT_MS,
            },
            data,
            job.attemptsMade + 1,
          );
        } catch (err) {
          if (err instanceof RefusedAddressError) throw new UnrecoverableError(err.message);
          throw err;
        }
      },
      this.metrics,
    );
  }
}
