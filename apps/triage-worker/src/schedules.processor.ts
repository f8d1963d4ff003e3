import { Inject, type OnApplicationShutdown } from '@nestjs/common';
import type { Job } from 'bullmq';
import type { Admission } from '@switchboard/admission';
import { Jobs, QueueName } from '@switchboard/contracts';
import type { Db } from '@switchboard/database';
import type { Metrics } from '@switchboard/observability';
import { ADMISSION, DB, METRICS, QueueProcessor, QueueWorker, REDIS } from '@switchboard/platform';
import { consume, type RedisConnection } from '@switchboard/queue';
import { fireSchedule, fireTimeOf, type ScheduleScheduler } from '@switchboard/schedules';

export const SCHEDULE_SCHEDULER = Symbol('SCHEDULE_SCHEDULER');

/**
 * Runs the `schedules` queue (docs/adr/0020): each `fire` admits one `timer_tick`; `sync` makes the
 * job schedulers match Postgres. Every triage process also syncs when it starts and whenever its
 * Redis connection comes back (a Redis that restarted empty lost every job scheduler), and upserts
 * the `sync` scheduler (every RECONCILE_INTERVAL_MS) that heals changes the gateway could not push.
 */
@QueueProcessor(QueueName.Schedules, 'TRIAGE_CONCURRENCY')
export class SchedulesProcessor extends QueueWorker implements OnApplicationShutdown {
  private readonly onReady = () => void this.syncNow();

  constructor(
    @Inject(DB) private readonly db: Db,
    @Inject(ADMISSION) private readonly admission: Admission,
    @Inject(SCHEDULE_SCHEDULER) private readonly scheduler: ScheduleScheduler,
    @Inject(REDIS) private readonly redis: RedisConnection,
    @Inject(METRICS) private readonly metrics: Metrics,
  ) {
    super();
  }

  override onApplicationBootstrap(): void {
    super.onApplicationBootstrap();
    void this.syncNow();
    this.redis.on('ready', this.onReady);
  }

  onApplicationShutdown(): void {
    this.redis.off('ready', this.onReady);
  }

  async process(job: Job): Promise<string> {
    return consume(
      Jobs.schedule,
      job,
      async (data) => {
        if (data.kind === 'sync') {
          const { upserted, removed } = await this.scheduler.syncAll();
          return `synced: ${upserted} upserted, ${removed} removed`;
        }
        const fireTime = fireTimeOf(job);
        const outcome = await fireSchedule(
          { db: this.db, admission: this.admission, scheduler: this.scheduler, logger: this.logger },
          data,
          fireTime,
        );
        this.logger.debug({ scheduleId: data.scheduleId, fireTime, outcome }, 'schedule fired');
        return outcome;
      },
      this.metrics,
    );
  }

  private async syncNow(): Promise<void> {
    try {
      if (this.config.RECONCILE_INTERVAL_MS > 0) {
        await this.scheduler.scheduleSync(this.config.RECONCILE_INTERVAL_MS);
      }
      await this.scheduler.syncAll();
    } catch (err) {
      this.logger.warn({ err }, 'could not sync schedules; the next sync retries');
    }
  }
}
