import { Inject } from '@nestjs/common';
import { UnrecoverableError, type Job } from 'bullmq';
import { Jobs, QueueName } from '@switchboard/contracts';
import type { Db } from '@switchboard/database';
import { postTurnHook } from '@switchboard/hooks';
import type { Metrics } from '@switchboard/observability';
import { DB, METRICS, QueueProcessor, QueueWorker } from '@switchboard/platform';
import { consume } from '@switchboard/queue';

/** Runs post-turn hooks, one job per (turn, hook), each retried on its own. */
@QueueProcessor(QueueName.PostTurn, 'HOOKS_CONCURRENCY')
export class PostTurnProcessor extends QueueWorker {
  constructor(
    @Inject(DB) private readonly db: Db,
    @Inject(METRICS) private readonly metrics: Metrics,
  ) {
    super();
  }

  async process(job: Job): Promise<string> {
    return consume(
      Jobs.postTurn,
      job,
      async (data) => {
        const hook = postTurnHook(data.hook);
        // A hook this build has no handler for will not get one by retrying.
        if (!hook) throw new UnrecoverableError(`no handler for post-turn hook ${data.hook}`);
        try {
          const outcome = await hook({ db: this.db, logger: this.logger, metrics: this.metrics }, data);
          this.metrics.hooks.inc({ hook: data.hook, outcome });
          return outcome;
        } catch (err) {
          this.metrics.hooks.inc({ hook: data.hook, outcome: 'error' });
          throw err;
        }
      },
      this.metrics,
    );
  }
}
