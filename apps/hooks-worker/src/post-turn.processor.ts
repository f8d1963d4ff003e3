import { Inject, type OnApplicationBootstrap } from '@nestjs/common';
import { Processor, WorkerHost } from '@nestjs/bullmq';
import type { Job } from 'bullmq';
import type { Config } from '@switchboard/config';
import { Jobs, QueueName } from '@switchboard/contracts';
import type { Db } from '@switchboard/database';
import { runCostLog } from '@switchboard/hooks';
import type { Logger, Metrics } from '@switchboard/observability';
import { CONFIG, DB, LOGGER, METRICS, startWorker } from '@switchboard/platform';
import { consume } from '@switchboard/queue';

/** Runs post-turn hooks, one job per (turn, hook), each retried on its own. */
@Processor(QueueName.PostTurn, { autorun: false })
export class PostTurnProcessor extends WorkerHost implements OnApplicationBootstrap {
  constructor(
    @Inject(DB) private readonly db: Db,
    @Inject(CONFIG) private readonly config: Config,
    @Inject(METRICS) private readonly metrics: Metrics,
    @Inject(LOGGER) private readonly logger: Logger,
  ) {
    super();
  }

  onApplicationBootstrap(): void {
    startWorker(this.worker, {
      concurrency: this.config.HOOKS_CONCURRENCY,
      lockDuration: this.config.QUEUE_LOCK_MS,
      stalledInterval: this.config.QUEUE_STALLED_INTERVAL_MS,
    });
  }

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
