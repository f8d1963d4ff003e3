import { Inject } from '@nestjs/common';
import { getQueueToken } from '@nestjs/bullmq';
import type { Job, Queue } from 'bullmq';
import { Jobs, QueueName } from '@switchboard/contracts';
import type { PostTurnBatchOutcomes, PostTurnHooks, PostTurnOutcomes } from '@switchboard/hooks';
import type { Metrics } from '@switchboard/observability';
import { METRICS, QueueProcessor, QueueWorker } from '@switchboard/platform';
import { embedAfterTurn } from '@switchboard/memory';
import { consume } from '@switchboard/queue';
import type { SqlDb } from '@switchboard/store';
import { HOOKS_SQL, POST_TURN_HOOKS } from './tokens';

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
    @Inject(HOOKS_SQL) private readonly sql: SqlDb,
    @Inject(getQueueToken(QueueName.MemoryEmbed)) private readonly embedQueue: Queue,
  ) {
    super();
  }

  async process(job: Job): Promise<string | PostTurnOutcomes | PostTurnBatchOutcomes> {
    const attempt = { attempt: job.attemptsMade + 1, attempts: job.opts.attempts ?? 1 };
    return consume(
      Jobs.postTurn,
      job,
      async (data) => {
        const outcomes = await this.hooks.run(data, attempt);
        // Records the hooks wrote get their vectors (docs/adr/0050) when the agent has an embedder.
        // A publish that fails does not fail the hooks: the agent's next job embeds them too.
        // A turn's (or a group's) job asks for them itself, in its transaction (docs/adr/0070).
        if (data.hook !== undefined) await embedAfterTurn(this.sql, this.embedQueue, data).catch(() => false);
        return outcomes;
      },
      this.metrics,
    );
  }
}
