import {
  Inject,
  Module,
  type BeforeApplicationShutdown,
  type DynamicModule,
  type OnApplicationShutdown,
  type OnModuleInit,
} from '@nestjs/common';
import { APP_FILTER, APP_GUARD, APP_PIPE, DiscoveryModule } from '@nestjs/core';
import { getQueueToken } from '@nestjs/bullmq';
import { TerminusModule } from '@nestjs/terminus';
import type { Queue } from 'bullmq';
import { Gauge } from 'prom-client';
import { Admission, TurnSteering } from '@switchboard/admission';
import {
  AGENT_TURNS,
  AgentTurns,
  EVENT_STREAMS,
  EventStreams,
  TURN_WAITER,
  TurnWaiter,
} from '@switchboard/agent-turns';
import type { Config } from '@switchboard/config';
import { QueueName } from '@switchboard/contracts';
import { poolOf, type Db } from '@switchboard/database';
import { LiveSubscriber, RedisLivePublisher } from '@switchboard/live';
import type { Logger, Metrics } from '@switchboard/observability';
import {
  ADMISSION,
  CONFIG,
  DB,
  InfraModule,
  LOGGER,
  METRICS,
  READ_DB,
  REDIS,
  TASKS,
  TOOLS,
} from '@switchboard/platform';
import type { ToolRegistry } from '@switchboard/tools';
import { AgentsRepository, type TaskService } from '@switchboard/subagents';
import {
  ApprovalStore,
  ClientToolStore,
  SessionsRepository,
  sqlDbFor,
  TenantsRepository,
  TurnStore,
  type SqlDb,
} from '@switchboard/store';
import { Approvals, ClientTools, TenantPause } from '@switchboard/turns';
import { AuthGuard } from './platform/auth/guard';
import { RouteScopes } from './platform/auth/scopes';
import { API_KEY_CACHE, ApiKeyCache } from './platform/auth/key-cache';
import { KEY_REVOCATIONS, KeyRevocations } from './platform/auth/key-revocations';
import { KEY_USAGE, KeyUsage } from './platform/auth/key-usage';
import { AdminController, TENANT_PAUSE } from './api/admin.controller';
import { DataKeysController } from './api/data-keys.controller';
import { AuditController } from './api/audit.controller';
import { ConsoleController } from './api/console.controller';
import { OperatorController, operatorQueuesProvider } from './api/operator.controller';
import { AgentsController } from './api/agents.controller';
import { ArchetypesController } from './api/archetypes.controller';
import { APPROVALS, ApprovalsController } from './api/approvals.controller';
import { ApiKeysController } from './api/api-keys.controller';
import { ChatCompletionsController } from './protocols/openai-chat/chat-completions.controller';
import { ModelsController } from './api/models.controller';
import { ResponsesController } from './protocols/responses/responses.controller';
import { OpsController } from './api/ops.controller';
import { GATEWAY_SQL, StreamsController } from './api/streams.controller';
import { McpServersController } from './api/mcp-servers.controller';
import { SESSION_HISTORY, SessionHistory } from './api/session-history';
import { GATEWAY_READS, gatewayReads, type GatewayReads } from './api/reads';
import { McpController } from './protocols/mcp/mcp.controller';
import { A2aController } from './protocols/a2a/a2a.controller';
import { SessionsController } from './api/sessions.controller';
import { DatasetsController, ExperimentsController } from './api/datasets.controller';
import { TasksController } from './api/tasks.controller';
import { HooksController } from './ingress/hooks.controller';
import { TriggersController } from './api/triggers.controller';
import { SchedulesController } from './api/schedules.controller';
import { SettingsController } from './api/settings.controller';
import {
  exportOpenProvider,
  TenantDataAdminController,
  TenantExportController,
} from './api/tenant-data.controller';
import { TurnsController } from './api/turns.controller';
import { ToolResultsController } from './api/tool-results.controller';
import { UsageController } from './api/usage.controller';
import { MemoryController } from './api/memory.controller';
import { MemoryBlocksController } from './api/memory-blocks.controller';
import { WorkItemsController } from './api/work-items.controller';
import { AgentLifecycleController } from './api/agent-lifecycle.controller';
import { ChatCompletionStreamer } from './protocols/openai-chat/chat-completion-stream';
import { ResponsesStreamer } from './protocols/responses/responses-stream';
import { ResponsesService } from './protocols/responses/responses.service';
import { ResponsesSocket } from './protocols/responses/responses-socket';
import { LangGraphController } from './protocols/langgraph/langgraph.controller';
import { LangGraphReads } from './protocols/langgraph/reads';
import { LangGraphRunStreamer } from './protocols/langgraph/run-stream';
import { LangGraphSnapshots } from './protocols/langgraph/snapshots';
import { ErrorFilter, ErrorShapes } from './platform/errors';
import { protocolErrorShapes } from './protocols/error-shapes';
import { ApiRateLimits, RateLimitGuard } from './platform/rate-limit';
import { EarlyRateLimitRefusal } from './platform/early-refusal';
import { InFlightRequests } from './platform/in-flight';
import { TURN_STEERING } from './api/turn-steering';
import { turnDetail } from './api/turn-detail';
import { ValidationPipe } from './platform/validation';
import { REPOSITORIES } from './repositories';
import { redisTarget, type RedisConnection } from '@switchboard/queue';

const LIVE_SUBSCRIBER = Symbol('LIVE_SUBSCRIBER');

/**
 * Shutdown drains: waiting requests answer 202 at once, requests in flight finish (bounded by
 * SHUTDOWN_GRACE_MS) before the HTTP server closes its connections, and the process's one
 * live-channel subscriber connection closes after it.
 */
class LiveLifecycle implements BeforeApplicationShutdown, OnApplicationShutdown {
  constructor(
    @Inject(LIVE_SUBSCRIBER) private readonly live: LiveSubscriber,
    @Inject(TURN_WAITER) private readonly waiter: TurnWaiter,
    @Inject(InFlightRequests) private readonly inFlight: InFlightRequests,
    @Inject(CONFIG) private readonly config: Config,
  ) {}

  async beforeApplicationShutdown(): Promise<void> {
    this.waiter.stop();
    await this.inFlight.settled(this.config.SHUTDOWN_GRACE_MS);
  }

  async onApplicationShutdown(): Promise<void> {
    await this.live.close();
  }
}

const QUEUES = Object.values(QueueName);

/** Queue depth by state, read from Redis when Prometheus scrapes. */
class QueueDepthMetrics implements OnModuleInit {
  constructor(
    @Inject(METRICS) private readonly metrics: Metrics,
    @Inject(getQueueToken(QueueName.Triage)) private readonly triage: Queue,
    @Inject(getQueueToken(QueueName.Turns)) private readonly turns: Queue,
    @Inject(getQueueToken(QueueName.PostTurn)) private readonly postTurn: Queue,
    @Inject(getQueueToken(QueueName.OutboundWebhooks)) private readonly outbound: Queue,
  ) {}

  onModuleInit() {
    const queues = [this.triage, this.turns, this.postTurn, this.outbound];
    new Gauge({
      name: 'switchboard_queue_jobs',
      help: 'Jobs per queue and state',
      labelNames: ['queue', 'state'] as const,
      registers: [this.metrics.registry],
      async collect() {
        const counts = await Promise.all(
          queues.map((q) => q.getJobCounts('waiting', 'prioritized', 'active', 'delayed', 'failed')),
        );
        counts.forEach((c, i) => {
          for (const [state, n] of Object.entries(c)) this.set({ queue: QUEUES[i], state }, n);
        });
      },
    });
  }
}

@Module({})
export class GatewayModule {
  static forRoot(config: Config): DynamicModule {
    return {
      module: GatewayModule,
      imports: [
        InfraModule.forRoot(config, 'gateway'),
        TerminusModule.forRoot({ logger: false }),
        DiscoveryModule,
      ],
      controllers: [
        AdminController,
        DataKeysController,
        TenantDataAdminController,
        TenantExportController,
        ApiKeysController,
        AgentsController,
        ArchetypesController,
        SessionsController,
        DatasetsController,
        ExperimentsController,
        TurnsController,
        ToolResultsController,
        TasksController,
        ApprovalsController,
        SettingsController,
        OpsController,
        ChatCompletionsController,
        ModelsController,
        ResponsesController,
        StreamsController,
        TriggersController,
        HooksController,
        SchedulesController,
        McpServersController,
        UsageController,
        MemoryController,
        MemoryBlocksController,
        WorkItemsController,
        AgentLifecycleController,
        AuditController,
        ConsoleController,
        OperatorController,
        McpController,
        A2aController,
        LangGraphController,
      ],
      providers: [
        exportOpenProvider,
        {
          provide: API_KEY_CACHE,
          inject: [CONFIG],
          useFactory: (cfg: Config) => new ApiKeyCache({ ttlMs: cfg.API_KEY_CACHE_MS }),
        },
        {
          provide: KEY_REVOCATIONS,
          inject: [CONFIG, API_KEY_CACHE, REDIS, LOGGER],
          useFactory: (cfg: Config, cache: ApiKeyCache, redis: RedisConnection, logger: Logger) =>
            KeyRevocations.connect(redisTarget(cfg), cache, redis, {
              prefix: cfg.QUEUE_PREFIX,
              logger,
              enabled: cfg.API_KEY_CACHE_MS > 0,
            }),
        },
        {
          provide: KEY_USAGE,
          inject: [GATEWAY_SQL, LOGGER],
          useFactory: (sqlDb: SqlDb, logger: Logger) => new KeyUsage(sqlDb, logger),
        },
        // Every tenant route's scope, checked at start-up (docs/adr/0066).
        RouteScopes,
        // In this order: the rate limits count the tenant the AuthGuard found.
        { provide: APP_GUARD, useClass: AuthGuard },
        { provide: APP_GUARD, useClass: RateLimitGuard },
        // Also injectable by itself: WebSocket mode authenticates its upgrade with it.
        AuthGuard,
        ApiRateLimits,
        EarlyRateLimitRefusal,
        { provide: APP_PIPE, useClass: ValidationPipe },
        { provide: ErrorShapes, useFactory: protocolErrorShapes },
        { provide: APP_FILTER, useClass: ErrorFilter },
        {
          provide: TURN_STEERING,
          inject: [
            CONFIG,
            DB,
            REDIS,
            getQueueToken(QueueName.PostTurn),
            getQueueToken(QueueName.Turns),
            LOGGER,
            METRICS,
          ],
          useFactory: (
            cfg: Config,
            db: Db,
            redis: RedisConnection,
            postTurn: Queue,
            turns: Queue,
            logger: Logger,
            metrics: Metrics,
          ) =>
            new TurnSteering(sqlDbFor(poolOf(db), 'gateway', metrics), {
              redis,
              prefix: cfg.QUEUE_PREFIX,
              postTurnQueue: postTurn,
              turnsQueue: turns,
              live: new RedisLivePublisher(redis, { prefix: cfg.QUEUE_PREFIX, logger }),
              logger,
              metrics,
            }),
        },
        {
          provide: ADMISSION,
          inject: [CONFIG, DB, REDIS, getQueueToken(QueueName.Turns), LOGGER, METRICS, TURN_STEERING],
          useFactory: (
            cfg: Config,
            db: Db,
            redis: RedisConnection,
            turns: Queue,
            logger: Logger,
            metrics: Metrics,
            control: TurnSteering,
          ) =>
            new Admission(db, turns, logger, {
              metrics,
              control,
              live: new RedisLivePublisher(redis, { prefix: cfg.QUEUE_PREFIX, logger }),
              perTenantConcurrency: cfg.ADMISSION_CONCURRENCY_PER_TENANT,
              perTenantConcurrencyContended: cfg.ADMISSION_CONCURRENCY_PER_TENANT_CONTENDED,
            }),
        },
        {
          provide: APPROVALS,
          inject: [CONFIG, DB, REDIS, getQueueToken(QueueName.Turns), LOGGER, METRICS],
          useFactory: (
            cfg: Config,
            db: Db,
            redis: RedisConnection,
            turns: Queue,
            logger: Logger,
            metrics: Metrics,
          ) =>
            new Approvals(
              new ApprovalStore(sqlDbFor(poolOf(db), 'gateway', metrics)),
              turns,
              logger,
              new RedisLivePublisher(redis, { prefix: cfg.QUEUE_PREFIX, logger }),
            ),
        },
        {
          provide: TENANT_PAUSE,
          inject: [DB, TenantsRepository, getQueueToken(QueueName.Turns), LOGGER, METRICS],
          useFactory: (db: Db, tenants: TenantsRepository, turns: Queue, logger: Logger, metrics: Metrics) =>
            new TenantPause(tenants, new TurnStore(sqlDbFor(poolOf(db), 'gateway', metrics)), turns, logger),
        },
        {
          provide: LIVE_SUBSCRIBER,
          inject: [CONFIG, LOGGER],
          // Connects on the first wait: a gateway nobody waits on holds no subscriber connection.
          useFactory: (cfg: Config, logger: Logger) =>
            LiveSubscriber.connect(
              redisTarget(cfg),
              { prefix: cfg.QUEUE_PREFIX, logger },
              { lazyConnect: true },
            ),
        },
        {
          provide: TURN_WAITER,
          inject: [DB, METRICS, LIVE_SUBSCRIBER, TASKS],
          useFactory: (db: Db, metrics: Metrics, live: LiveSubscriber, tasks: TaskService) =>
            new TurnWaiter(sqlDbFor(poolOf(db), 'gateway', metrics), live, turnDetail(tasks)),
        },
        {
          provide: GATEWAY_SQL,
          inject: [DB, METRICS],
          useFactory: (db: Db, metrics: Metrics) => sqlDbFor(poolOf(db), 'gateway', metrics),
        },
        {
          provide: SESSION_HISTORY,
          inject: [CONFIG, GATEWAY_SQL, REDIS, LOGGER],
          useFactory: (cfg: Config, sql: SqlDb, redis: RedisConnection, logger: Logger) =>
            new SessionHistory(sql, new RedisLivePublisher(redis, { prefix: cfg.QUEUE_PREFIX, logger })),
        },
        {
          provide: GATEWAY_READS,
          inject: [CONFIG, GATEWAY_SQL, DB, READ_DB, METRICS],
          useFactory: (cfg: Config, sql: SqlDb, db: Db, readDb: Db | null, metrics: Metrics) =>
            gatewayReads(cfg, { sql, db }, readDb, metrics),
        },
        {
          provide: EVENT_STREAMS,
          inject: [GATEWAY_READS, LIVE_SUBSCRIBER, TURN_WAITER],
          // Streams end with the waits when the gateway begins to shut down (the drain does not wait for them).
          useFactory: (reads: GatewayReads, live: LiveSubscriber, waiter: TurnWaiter) =>
            new EventStreams(reads, live, waiter.shutdown),
        },
        {
          provide: AGENT_TURNS,
          inject: [
            AgentsRepository,
            SessionsRepository,
            ADMISSION,
            TURN_WAITER,
            EVENT_STREAMS,
            TURN_STEERING,
            GATEWAY_SQL,
            TASKS,
            CONFIG,
            DB,
            getQueueToken(QueueName.Turns),
            LOGGER,
            METRICS,
            REDIS,
            TOOLS,
          ],
          // Every protocol's one way in (libs/agent-turns; docs/adr/0016, 0035–0038).
          useFactory: (
            agents: AgentsRepository,
            sessions: SessionsRepository,
            admission: Admission,
            waiter: TurnWaiter,
            streams: EventStreams,
            control: TurnSteering,
            sql: SqlDb,
            tasks: TaskService,
            config: Config,
            db: Db,
            turnsQueue: Queue,
            logger: Logger,
            metrics: Metrics,
            redis: RedisConnection,
            tools: ToolRegistry,
          ) =>
            new AgentTurns({
              agents,
              sessions,
              admission,
              waiter,
              streams,
              control,
              sql,
              detail: turnDetail(tasks),
              config,
              // Client tool waits (docs/adr/0047): answered here, resumed by one turn job.
              clientTools: new ClientTools(
                new ClientToolStore(sqlDbFor(poolOf(db), 'gateway', metrics)),
                turnsQueue,
                logger,
                new RedisLivePublisher(redis, { prefix: config.QUEUE_PREFIX, logger }),
              ),
              toolNames: () => tools.names(),
            }),
        },
        ...REPOSITORIES,
        InFlightRequests,
        ChatCompletionStreamer,
        ResponsesStreamer,
        ResponsesService,
        ResponsesSocket,
        { provide: LangGraphReads, inject: [DB], useFactory: (db: Db) => new LangGraphReads(db) },
        LangGraphSnapshots,
        LangGraphRunStreamer,
        LiveLifecycle,
        QueueDepthMetrics,
        operatorQueuesProvider,
      ],
    };
  }
}
