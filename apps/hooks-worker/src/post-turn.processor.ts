import { Inject } from '@nestjs/common';
import type { Job } from 'bullmq';
import { Jobs, QueueName } from '@switchboard/contracts';
import type { PostTurnHooks, PostTurnOutcomes } from '@switchboard/hooks';
import type { Metrics } from '@switchboard/observability';
import { METRICS, QueueProcessor, QueueWorker } from '@switchboard/platform';
import { consume } from '@switchboard/queue';
import { POST_TURN_HOOKS } from './tokens';

/**
 * The `post-turn` queue's worker (docs/adr/0027, 0039): each job to `PostTurnHooks` (libs/hooks), which
 * decides which hooks run, which share a transaction and what a failure becomes. A job survives
 * HOOKS_MAX_STALLED_COUNT deaths of its worker; a job lost or failed on stalls is re-published by the
 * hooks reconcile.
 */
@QueueProcessor(QueueName.PostTurn, 'HOOKS_CONCURRENCY', { maxStalledCount: 'HOOKS_MAX_STALLED_COUNT' })
export class PostTurnProcessor extends QueueWorker {
  constructor(
    @Inject(POST_TURN_HOOKS) private readonly hooks: PostTurnHooks,
    @Inject(METRICS) private readonly metrics: Metrics,
  ) {
    super();
  }

  async process(job: Job): Promise<string | PostTurnOutcomes> {
    const attempt = { attempt: job.attemptsMade + 1, attempts: job.opts.attempts ?? 1 };
    return consume(Jobs.postTurn, job, (data) => this.hooks.run(data, attempt), this.metrics);
  }
}
