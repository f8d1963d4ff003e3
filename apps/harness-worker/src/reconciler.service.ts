import { Inject, Injectable, type OnApplicationBootstrap, type OnApplicationShutdown } from '@nestjs/common';
import { InjectQueue } from '@nestjs/bullmq';
import type { Queue } from 'bullmq';
import type { Config } from '@switchboard/config';
import { Jobs, QueueName, type MaintenanceJob } from '@switchboard/contracts';
import type { Db } from '@switchboard/database';
import type { Logger } from '@switchboard/observability';
import { CONFIG, DB, LOGGER, REDIS } from '@switchboard/platform';
import { reconcileTurns } from '@switchboard/turns';
import { RECONCILE_MIN_AGE_MS } from './maintenance.processor';
import type { RedisConnection } from '@switchboard/queue';

/**
 * Re-enqueues unfinished turns from Postgres once when this process starts, and keeps
 * the cluster's one `reconcile` job scheduler in place (every RECONCILE_INTERVAL_MS):
 * however many harness processes run, one reconcile job runs per interval. The scheduler
 * lives in Redis, so it is upserted again whenever the connection comes back (a Redis
 * that restarted empty has lost it). Upserting an existing scheduler keeps its next run.
 */
@Injectable()
export class ReconcilerService implements OnApplicationBootstrap, OnApplicationShutdown {
  private readonly onReady = () => void this.schedule();

  constructor(
    @Inject(DB) private readonly db: Db,
    @InjectQueue(QueueName.Turns) private readonly turns: Queue,
    @InjectQueue(QueueName.Maintenance) private readonly maintenance: Queue,
    @Inject(REDIS) private readonly redis: RedisConnection,
    @Inject(LOGGER) private readonly logger: Logger,
    @Inject(CONFIG) private readonly config: Config,
  ) {}

  onApplicationBootstrap(): void {
    void this.reconcileOnce();
    if (this.config.RECONCILE_INTERVAL_MS > 0 || this.config.LEASE_SWEEP_MS > 0) {
      void this.schedule();
      this.redis.on('ready', this.onReady);
    }
  }

  onApplicationShutdown(): void {
    this.redis.off('ready', this.onReady);
  }

  private async reconcileOnce(): Promise<void> {
    try {
      await reconcileTurns(this.db, this.turns, this.logger, { olderThanMs: RECONCILE_MIN_AGE_MS });
    } catch (err) {
      this.logger.warn({ err }, 'start-up reconcile failed; the scheduled one will retry');
    }
  }

  private async schedule(): Promise<void> {
    const tasks: [MaintenanceJob['task'], number][] = [
      ['reconcile', this.config.RECONCILE_INTERVAL_MS],
      ['leases', this.config.LEASE_SWEEP_MS],
      ['tokenjuice', this.config.TOKENJUICE_SWEEP_MS],
      ['partitions', this.config.PARTITION_MAINTENANCE_MS],
      ['retention', this.config.RETENTION_INTERVAL_MS],
    ];
    const def = Jobs.maintenance;
    try {
      for (const [task, every] of tasks) {
        if (every <= 0) continue;
        const data: MaintenanceJob = { task };
        await this.maintenance.upsertJobScheduler(
          def.jobId(data),
          { every },
          {
            name: data.task,
            data,
            opts: {
              attempts: def.attempts,
              removeOnComplete: { age: def.keepCompletedSeconds },
              removeOnFail: { age: def.keepFailedSeconds },
            },
          },
        );
      }
    } catch (err) {
      this.logger.warn({ err }, 'could not schedule the maintenance tasks; retrying when Redis is back');
    }
  }
}
