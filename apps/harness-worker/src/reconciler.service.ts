import { Inject, Injectable, type OnApplicationBootstrap, type OnApplicationShutdown } from '@nestjs/common';
import { InjectQueue } from '@nestjs/bullmq';
import type { Queue } from 'bullmq';
import type { Config } from '@switchboard/config';
import { QueueName } from '@switchboard/contracts';
import type { Db } from '@switchboard/database';
import type { Logger } from '@switchboard/observability';
import { CONFIG, DB, LOGGER } from '@switchboard/platform';
import { reconcileTurns } from '@switchboard/turns';

/** Re-enqueues unfinished turns from Postgres at start-up and then periodically. */
@Injectable()
export class ReconcilerService implements OnApplicationBootstrap, OnApplicationShutdown {
  private timer?: NodeJS.Timeout;

  constructor(
    @Inject(DB) private readonly db: Db,
    @InjectQueue(QueueName.Turns) private readonly turns: Queue,
    @Inject(LOGGER) private readonly logger: Logger,
    @Inject(CONFIG) private readonly config: Config,
  ) {}

  onApplicationBootstrap(): void {
    void this.tick();
    if (this.config.RECONCILE_INTERVAL_MS > 0) {
      this.timer = setInterval(() => void this.tick(), this.config.RECONCILE_INTERVAL_MS);
      this.timer.unref();
    }
  }

  onApplicationShutdown(): void {
    clearInterval(this.timer);
  }

  private async tick(): Promise<void> {
    try {
      await reconcileTurns(this.db, this.turns, this.logger, { olderThanMs: 2000 });
    } catch (err) {
      this.logger.warn({ err }, 'reconcile failed; will retry');
    }
  }
}
