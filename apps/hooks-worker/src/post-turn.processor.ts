import { Inject } from '@nestjs/common';
import { Processor } from '@nestjs/bullmq';
import type { Job } from 'bullmq';
import { Jobs, QueueName } from '@switchboard/contracts';
import type { Db } from '@switchboard/database';
import { runCostLog } from '@switchboard/hooks';
import type { Logger, Metrics } from '@switchboard/observability';
import { ConfiguredWorkerHost, DB, LOGGER, METRICS } from '@switchboard/platform';
import { consume } from '@switchboard/queue';

/** Runs post-turn hooks, one job per (turn, hook), each retried on its own. */
@Processor(QueueName.PostTurn, { autorun: false })
export class PostTurnProcessor extends ConfiguredWorkerHost {
  constructor(
    @Inject(DB) private readonly db: Db,
    @Inject(METRICS) private readonly metrics: Metrics,
    @Inject(LOGGER) private readonly logger: Logger,
  ) {
    super();
  }

  protected readonly concurrencySetting = 'HOOKS_CONCURRENCY' as const;

  async process(job: Job): Promise<string> {
    return consume(
      Jobs.postTurn,
      job,
      async (data) => {
        try {
          const outcome = await runCostLog({ db: this.db, logger: this.logger, metrics: this.metrics }, data);
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
