import {
  Global,
  Inject,
  Injectable,
  Module,
  type DynamicModule,
  type OnApplicationShutdown,
} from '@nestjs/common';
import { BullModule } from '@nestjs/bullmq';
import type IORedis from 'ioredis';
import type { Config } from '@switchboard/config';
import { QueueName } from '@switchboard/contracts';
import { createPrisma, poolOf, type Db } from '@switchboard/database';
import { MemoryStore, memoryTools } from '@switchboard/memory';
import { createLogger, Metrics } from '@switchboard/observability';
import { createRedis } from '@switchboard/queue';
import { sqlDbFor } from '@switchboard/store';
import { builtinTools, loadToolModules, ToolRegistry } from '@switchboard/tools';
import { CONFIG, DB, LOGGER, METRICS, REDIS, TOOLS } from './tokens';
import { WorkerFailures } from './worker';

@Injectable()
class InfraLifecycle implements OnApplicationShutdown {
  constructor(
    @Inject(DB) private readonly db: Db,
    @Inject(REDIS) private readonly redis: IORedis,
  ) {}

  async onApplicationShutdown(): Promise<void> {
    await this.db.$disconnect().catch(() => undefined);
    this.redis.disconnect();
  }
}

/**
 * The process's connections and cross-cutting services, built once from the
 * parsed configuration: Postgres, Redis, BullMQ root options, logger, metrics.
 */
@Global()
@Module({})
export class InfraModule {
  static forRoot(config: Config, service: string): DynamicModule {
    const redis = createRedis(config.REDIS_URL);
    const providers = [
      { provide: CONFIG, useValue: config },
      { provide: LOGGER, useValue: createLogger({ service, level: config.LOG_LEVEL }) },
      { provide: METRICS, useValue: new Metrics(service) },
      { provide: DB, useFactory: () => createPrisma(config.DATABASE_URL) },
      { provide: REDIS, useValue: redis },
      {
        provide: TOOLS,
        inject: [DB, METRICS],
        // Tools that need the database (memory_search, memory_get) share the process's pool.
        useFactory: (db: Db, metrics: Metrics) =>
          new ToolRegistry([
            ...builtinTools({ httpFetch: { allowHosts: config.HTTP_FETCH_ALLOW_HOSTS } }),
            ...memoryTools(new MemoryStore(sqlDbFor(poolOf(db), 'memory', metrics))),
            ...loadToolModules(config.EXTRA_TOOL_MODULES),
          ]),
      },
      WorkerFailures,
      InfraLifecycle,
    ];
    return {
      module: InfraModule,
      imports: [
        BullModule.forRoot({ connection: redis, prefix: config.QUEUE_PREFIX }),
        BullModule.registerQueue(...Object.values(QueueName).map((name) => ({ name }))),
      ],
      providers,
      exports: [...providers.filter((p) => p !== InfraLifecycle), BullModule],
    };
  }
}
