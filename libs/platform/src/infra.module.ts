import {
  Global,
  Inject,
  Injectable,
  Module,
  type DynamicModule,
  type OnApplicationShutdown,
} from '@nestjs/common';
import { ModuleRef } from '@nestjs/core';
import { BullModule, getQueueToken } from '@nestjs/bullmq';
import type { Queue } from 'bullmq';
import { TurnSteering } from '@switchboard/admission';
import type { Config } from '@switchboard/config';
import { QueueName } from '@switchboard/contracts';
import { createPrisma, poolOf, setContentCipher, type Db } from '@switchboard/database';
import { MemoryBlockStore, memoryBlockTools, MemorySearch, memoryTools } from '@switchboard/memory';
import { sleepTool, WorkItemStore, workItemTools } from '@switchboard/work-items';
import { RedisLivePublisher } from '@switchboard/live';
import { createLogger, Metrics, type Logger } from '@switchboard/observability';
import { closeQueue, createRedis, redisTarget, type RedisConnection } from '@switchboard/queue';
import { setPreparedStatements, sqlDbFor } from '@switchboard/store';
import { subagentTools, TaskService } from '@switchboard/subagents';
import { OriginalsStore, tokenjuiceRetrieveTool } from '@switchboard/tokenjuice/store';
import { builtinTools, loadToolModules, ToolRegistry } from '@switchboard/tools';
import { CIPHER, CONFIG, DB, EMBEDDERS, LOGGER, METRICS, READ_DB, REDIS, TASKS, TOOLS } from './tokens';
import { keyProviderFromConfig, tenantCipherFromConfig } from './encryption';
import { QueueWorkers, WorkerFailures } from './worker';
import { embedderRegistryFromConfig } from './providers';
import type { EmbedderRegistry } from '@switchboard/providers';

@Injectable()
class InfraLifecycle implements OnApplicationShutdown {
  constructor(
    @Inject(DB) private readonly db: Db,
    @Inject(READ_DB) private readonly readDb: Db | null,
    @Inject(REDIS) private readonly redis: RedisConnection,
    private readonly modules: ModuleRef,
  ) {}

  async onApplicationShutdown(): Promise<void> {
    await this.db.$disconnect().catch(() => undefined);
    await this.readDb?.$disconnect().catch(() => undefined);
    // Every queue closed before the shared connection goes (see closeQueue: a Redis that was never
    // reached must not fail the shutdown).
    await Promise.all(
      Object.values(QueueName).map((name) =>
        closeQueue(this.modules.get<Queue>(getQueueToken(name), { strict: false })),
      ),
    );
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
    // Behind a transaction-pooling PgBouncer before 1.21 no statement may be named (docs/adr/0041).
    setPreparedStatements(config.DATABASE_PREPARED_STATEMENTS);
    const redis = createRedis(redisTarget(config));
    const providers = [
      { provide: CONFIG, useValue: config },
      {
        provide: LOGGER,
        useValue: createLogger({ service, level: config.LOG_LEVEL, file: config.LOG_FILE }),
      },
      { provide: METRICS, useValue: new Metrics(service) },
      {
        provide: DB,
        // With a key provider, Prisma's reads open content sealed per tenant (docs/adr/0067).
        useFactory: () =>
          createPrisma(config.DATABASE_URL, {
            idleMs: config.DATABASE_POOL_IDLE_MS,
            openSealed: !!keyProviderFromConfig(config),
          }),
      },
      {
        // The read replica (docs/adr/0042): its pool connects on the first routed read, so a worker
        // given the setting holds no connection to it. A replica that does not answer within 2 s
        // sends the read to the primary.
        provide: READ_DB,
        useFactory: () =>
          config.DATABASE_READ_URL
            ? createPrisma(config.DATABASE_READ_URL, {
                connectTimeoutMs: 2_000,
                idleMs: config.DATABASE_POOL_IDLE_MS,
                openSealed: !!keyProviderFromConfig(config),
              })
            : null,
      },
      { provide: REDIS, useValue: redis },
      // Per-tenant encryption at rest (docs/adr/0067): without a key provider every tenant is `off`.
      {
        provide: CIPHER,
        inject: [DB],
        useFactory: (db: Db) => {
          const cipher = tenantCipherFromConfig(config, db);
          // The store seals and opens content through it (only with a provider: else nothing to do).
          if (cipher.available) setContentCipher(cipher);
          return cipher;
        },
      },
      {
        // Sub-agent tasks (docs/adr/0024): spawns enqueue child turns; close_subagent cancels through ADR 0014.
        provide: TASKS,
        inject: [DB, LOGGER, METRICS, getQueueToken(QueueName.Turns), getQueueToken(QueueName.PostTurn)],
        useFactory: (db: Db, logger: Logger, metrics: Metrics, turns: Queue, postTurn: Queue) => {
          const live = new RedisLivePublisher(redis, { prefix: config.QUEUE_PREFIX, logger });
          const control = new TurnSteering(sqlDbFor(poolOf(db), 'subagents'), {
            redis,
            prefix: config.QUEUE_PREFIX,
            postTurnQueue: postTurn,
            turnsQueue: turns,
            live,
            logger,
            metrics,
          });
          return new TaskService(db, {
            turnsQueue: turns,
            logger,
            live,
            control,
            cancelTurn: (tenantId, turnId, cause) => control.cancel(tenantId, turnId, cause),
          });
        },
      },
      // The embedders (docs/adr/0049): memory's vectors (0050) and the API's checks of an agent's embedder.
      { provide: EMBEDDERS, useFactory: () => embedderRegistryFromConfig(config) },
      {
        provide: TOOLS,
        inject: [DB, METRICS, TASKS, EMBEDDERS],
        // Tools that need the database (memory_search, memory_get) share the process's pool.
        useFactory: (db: Db, metrics: Metrics, tasks: TaskService, embedders: EmbedderRegistry) =>
          new ToolRegistry([
            ...builtinTools({ httpFetch: { allowHosts: config.HTTP_FETCH_ALLOW_HOSTS } }),
            ...memoryTools(new MemorySearch(sqlDbFor(poolOf(db), 'memory', metrics), embedders)),
            ...memoryBlockTools(new MemoryBlockStore(sqlDbFor(poolOf(db), 'memory', metrics))),
            tokenjuiceRetrieveTool(
              new OriginalsStore(
                sqlDbFor(poolOf(db), 'tokenjuice', metrics),
                config.TOKENJUICE_RETENTION_HOURS * 3_600_000,
              ),
            ),
            ...subagentTools(tasks),
            ...workItemTools(
              new WorkItemStore(sqlDbFor(poolOf(db), 'work-items', metrics), config.WORK_ITEM_RECHECK_MS),
            ),
            sleepTool(sqlDbFor(poolOf(db), 'work-items', metrics)),
            ...loadToolModules(config.EXTRA_TOOL_MODULES),
          ]),
      },
      WorkerFailures,
      QueueWorkers,
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
