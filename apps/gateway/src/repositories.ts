import { getQueueToken } from '@nestjs/bullmq';
import type { Provider } from '@nestjs/common';
import type { Queue } from 'bullmq';
import { QueueName } from '@switchboard/contracts';
import { poolOf, type Db } from '@switchboard/database';
import { McpServersRepository } from '@switchboard/mcp';
import type { Logger } from '@switchboard/observability';
import { DB, LOGGER } from '@switchboard/platform';
import { ScheduleScheduler, SchedulesRepository } from '@switchboard/schedules';
import {
  ApiKeysRepository,
  ApprovalsRepository,
  AuditLogRepository,
  SessionsRepository,
  TenantsRepository,
} from '@switchboard/store';
import { AgentsRepository, AgentVersionsRepository, CanaryRepository } from '@switchboard/subagents';
import { DeliveriesRepository, TriggersRepository } from '@switchboard/triage';

/** Each lib's repository on the process's Prisma client, provided by its class. */
const onDb = (repository: new (db: Db) => unknown): Provider => ({
  provide: repository,
  inject: [DB],
  useFactory: (db: Db) => new repository(db),
});

/**
 * The data access the controllers call: the libraries' repositories (plain classes), wired here.
 * Controllers validate, call these and present; none holds a query of its own.
 */
export const REPOSITORIES: Provider[] = [
  onDb(AgentsRepository),
  onDb(AgentVersionsRepository),
  onDb(CanaryRepository),
  onDb(ApiKeysRepository),
  onDb(ApprovalsRepository),
  onDb(AuditLogRepository),
  onDb(McpServersRepository),
  onDb(SchedulesRepository),
  onDb(SessionsRepository),
  onDb(TenantsRepository),
  onDb(TriggersRepository),
  {
    provide: DeliveriesRepository,
    inject: [DB],
    useFactory: (db: Db) => new DeliveriesRepository(poolOf(db)),
  },
  {
    provide: ScheduleScheduler,
    inject: [getQueueToken(QueueName.Schedules), DB, LOGGER],
    useFactory: (queue: Queue, db: Db, logger: Logger) => new ScheduleScheduler(queue, db, logger),
  },
];
