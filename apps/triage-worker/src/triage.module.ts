import { Module, type DynamicModule } from '@nestjs/common';
import { getQueueToken } from '@nestjs/bullmq';
import type { Queue } from 'bullmq';
import { Admission } from '@switchboard/admission';
import type { Config } from '@switchboard/config';
import { Jobs, QueueName } from '@switchboard/contracts';
import type { Db } from '@switchboard/database';
import type { Logger } from '@switchboard/observability';
import { ADMISSION, DB, InfraModule, LOGGER, providerRegistryFromConfig } from '@switchboard/platform';
import { ScheduleScheduler } from '@switchboard/schedules';
import { publish } from '@switchboard/queue';
import type { TriageDeps } from '@switchboard/triage';
import { OutboundWebhookProcessor } from './outbound.processor';
import { SCHEDULE_SCHEDULER, SchedulesProcessor } from './schedules.processor';
import { WorkProcessor } from './work.processor';
import { TRIAGE_DEPS, TriageProcessor } from './triage.processor';

@Module({})
export class TriageModule {
  static forRoot(config: Config): DynamicModule {
    return {
      module: TriageModule,
      imports: [InfraModule.forRoot(config, 'triage-worker')],
      providers: [
        {
          provide: ADMISSION,
          inject: [DB, getQueueToken(QueueName.Turns), LOGGER],
          useFactory: (db: Db, turns: Queue, logger: Logger) => new Admission(db, turns, logger),
        },
        {
          provide: TRIAGE_DEPS,
          inject: [DB, ADMISSION, LOGGER, getQueueToken(QueueName.OutboundWebhooks)],
          useFactory: (db: Db, admission: Admission, logger: Logger, outbound: Queue): TriageDeps => ({
            db,
            admission,
            logger,
            // The triage model is called like any other (docs/adr/0018): the same providers and settings.
            providers: providerRegistryFromConfig(config),
            defaultModel: config.DEFAULT_MODEL,
            fallbackModel: config.TRIAGE_FALLBACK_MODEL,
            cacheTtlMs: config.TRIAGE_CACHE_TTL_MS,
            prices: config.MODEL_PRICES,
            notify: (job) =>
              publish(outbound, Jobs.outboundWebhook, job, {
                backoff: { type: 'exponential', delay: config.OUTBOUND_WEBHOOK_BACKOFF_MS },
              }),
          }),
        },
        TriageProcessor,
        {
          provide: SCHEDULE_SCHEDULER,
          inject: [getQueueToken(QueueName.Schedules), DB, LOGGER],
          useFactory: (queue: Queue, db: Db, logger: Logger) => new ScheduleScheduler(queue, db, logger),
        },
        SchedulesProcessor,
        WorkProcessor,
        OutboundWebhookProcessor,
      ],
    };
  }
}
