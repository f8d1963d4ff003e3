import { Inject } from '@nestjs/common';
import { OnWorkerEvent, Processor } from '@nestjs/bullmq';
import { DelayedError, UnrecoverableError, type Job } from 'bullmq';
import { Jobs, QueueName } from '@switchboard/contracts';
import type { Logger, Metrics } from '@switchboard/observability';
import { ConfiguredWorkerHost, LOGGER, METRICS } from '@switchboard/platform';
import { consume } from '@switchboard/queue';
import type { TurnRunner } from '@switchboard/turns';
import { TURN_RUNNER } from './tokens';

/** How long a job whose session is busy waits before it looks again. */
const busyDelayMs = () => 200 + Math.floor(Math.random() * 400);

@Processor(QueueName.Turns, { autorun: false })
export class TurnsProcessor extends ConfiguredWorkerHost {
  constructor(
    @Inject(TURN_RUNNER) private readonly runner: TurnRunner,
    @Inject(METRICS) private readonly metrics: Metrics,
    @Inject(LOGGER) private readonly logger: Logger,
  ) {
    super();
  }

  protected readonly concurrencySetting = 'HARNESS_CONCURRENCY' as const;

  async process(job: Job, token?: string): Promise<void> {
    const result = await consume(Jobs.turn, job, (data) => this.runner.handle(data), this.metrics);
    if (result === 'busy') {
      // Another worker holds the session: look again shortly, without spending an attempt.
      await job.moveToDelayed(Date.now() + busyDelayMs(), token);
      throw new DelayedError();
    }
  }

  @OnWorkerEvent('failed')
  async onFailed(job: Job | undefined, err: Error): Promise<void> {
    if (!job || err instanceof UnrecoverableError) return;
    this.logger.error({ err, jobId: job.id, attempt: job.attemptsMade }, 'turn job failed');
    if (job.attemptsMade >= (job.opts.attempts ?? 1)) {
      const parsed = Jobs.turn.schema.safeParse(job.data);
      if (parsed.success) await this.runner.failPermanently(parsed.data.turnId, err).catch(() => undefined);
    }
  }
}
