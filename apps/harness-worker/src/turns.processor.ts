import { Inject } from '@nestjs/common';
import { UnrecoverableError, type Job } from 'bullmq';
import { Jobs, QueueName } from '@switchboard/contracts';
import { traceIdOf, type Metrics } from '@switchboard/observability';
import { METRICS, QueueProcessor, QueueWorker } from '@switchboard/platform';
import { consume } from '@switchboard/queue';
import { concludeTurnJob, type TurnRunner } from '@switchboard/turns';
import { TURN_RUNNER } from './tokens';

@QueueProcessor(QueueName.Turns, 'HARNESS_CONCURRENCY')
export class TurnsProcessor extends QueueWorker {
  constructor(
    @Inject(TURN_RUNNER) private readonly runner: TurnRunner,
    @Inject(METRICS) private readonly metrics: Metrics,
  ) {
    super();
  }

  async process(job: Job, token?: string): Promise<void> {
    const result = await consume(Jobs.turn, job, (data) => this.runner.handle(data), this.metrics);
    await concludeTurnJob(result, job, token);
  }

  /**
   * A graceful drain (SIGTERM) waits for the turns claimed without a job too (the Postgres intake,
   * docs/adr/0075), as the BullMQ worker's close waits for its active jobs.
   */
  override async beforeApplicationShutdown(): Promise<void> {
    await Promise.all([this.runner.stopIntake(), super.beforeApplicationShutdown()]);
  }

  protected override async onFailed(job: Job | undefined, err: Error): Promise<void> {
    if (!job || err instanceof UnrecoverableError) return;
    const parsed = Jobs.turn.schema.safeParse(job.data);
    const turn = parsed.success ? parsed.data : undefined;
    const final = job.attemptsMade >= (job.opts.attempts ?? 1);
    // Outside any span here: the trace id comes from the job's trace context.
    this.logger.error(
      {
        err,
        jobId: job.id,
        turnId: turn?.turnId,
        trace_id: traceIdOf(turn?.trace),
        attempt: job.attemptsMade,
        maxAttempts: job.opts.attempts,
      },
      final ? 'turn job failed; no attempts left' : 'turn job failed; will retry',
    );
    if (final && turn) await this.runner.failPermanently(turn.turnId, err).catch(() => undefined);
  }
}
