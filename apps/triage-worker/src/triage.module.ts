import { Module, type DynamicModule } from '@nestjs/common';
import { getQueueToken } from '@nestjs/bullmq';
import type { Queue } from 'bullmq';
import { Admission } from '@switchboard/admission';
import type { Config } from '@switchboard/config';
import { QueueName } from '@switchboard/contracts';
import type { Db } from '@switchboard/database';
import type { Logger } from '@switchboard/observability';
import { ADMISSION, DB, InfraModule, LOGGER } from '@switchboard/platform';
import { ScheduleScheduler } from '@switchboard/schedules';
import { SCHEDULE_SCHEDULER, SchedulesProcessor } from './schedules.processor';
import { TriageProcessor } from './triage.processor';

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
        TriageProcessor,
        {
          provide: SCHEDULE_SCHEDULER,
          inject: [getQueueToken(QueueName.Schedules), DB, LOGGER],
          useFactory: (queue: Queue, db: Db, logger: Logger) => new ScheduleScheduler(queue, db, logger),
        },
        SchedulesProcessor,
      ],
    };
  }
}
