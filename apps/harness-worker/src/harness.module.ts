import {
  Inject,
  Injectable,
  Module,
  type DynamicModule,
  type OnApplicationBootstrap,
  type OnApplicationShutdown,
} from '@nestjs/common';
import { randomUUID } from 'node:crypto';
import { getQueueToken } from '@nestjs/bullmq';
import type { Queue } from 'bullmq';
import { hostname } from 'node:os';
import type { Config } from '@switchboard/config';
import { Jobs, QueueName } from '@switchboard/contracts';
import { a2aTaskUpdates } from '@switchboard/hooks';
import { poolOf, type Db } from '@switchboard/database';
import {
  contextPack,
  defaultApprovalPolicy,
  TurnEngine,
  type ContextSources,
  type ToolGates,
} from '@switchboard/engine';
import { MemorySearch, memoryContext } from '@switchboard/memory';
import {
  workActivationStep,
  WorkItemStore,
  workItemContext,
  workItemReminder,
} from '@switchboard/work-items';
import type { Logger, Metrics } from '@switchboard/observability';
import {
  ControlSubscriber,
  HARNESS_PROCESS_KIND,
  ProcessHeartbeat,
  RedisLivePublisher,
} from '@switchboard/live';
import {
  ActionBudget,
  CONFIG,
  DB,
  EMBEDDERS,
  InfraModule,
  LOGGER,
  METRICS,
  providerRegistryFromConfig,
  embedderRegistryFromConfig,
  REDIS,
  SecretBox,
  TASKS,
  TOOLS,
} from '@switchboard/platform';
import { McpClients, McpToolSource } from '@switchboard/mcp';
import type { TaskService } from '@switchboard/subagents';
import type { EmbedderRegistry } from '@switchboard/providers';
import { sqlDbFor } from '@switchboard/store';
import { OriginalsStore } from '@switchboard/tokenjuice/store';
import type { ToolRegistry } from '@switchboard/tools';
import { TurnRunner } from '@switchboard/turns';
import { MaintenanceProcessor } from './maintenance.processor';
import { ReconcilerService } from './reconciler.service';
import { CONTEXT_SOURCES, TOOL_GATES, TURN_RUNNER } from './tokens';
import { TurnsProcessor } from './turns.processor';
import { publish, redisTarget, type RedisConnection } from '@switchboard/queue';

/**
 * This process in session leases (`sessions.lease_owner`) and the name of its control channel
 * (docs/adr/0014): host and pid for operators, and a random part so two harnesses in one process
 * (tests) are told apart.
 */
const WORKER_ID = `${hostname()}:${process.pid}:${randomUUID().slice(0, 8)}`;

/** The worker's control subscription: cancels and interjections for the turns it holds. */
@Injectable()
class ControlLifecycle implements OnApplicationBootstrap, OnApplicationShutdown {
  private subscriber?: ControlSubscriber;

  constructor(
    @Inject(CONFIG) private readonly config: Config,
    @Inject(LOGGER) private readonly logger: Logger,
    @Inject(TURN_RUNNER) private readonly runner: TurnRunner,
  ) {}

  /** Not awaited: a Redis that is away must not hold the start; heartbeats stop turns meanwhile. */
  onApplicationBootstrap(): void {
    this.subscriber = ControlSubscriber.connect(
      redisTarget(this.config),
      { prefix: this.config.QUEUE_PREFIX, workerId: WORKER_ID, logger: this.logger },
      (m) => this.runner.control(m),
    );
  }

  async onApplicationShutdown(): Promise<void> {
    await this.subscriber?.close();
    this.runner.close();
  }
}

/**
 * The process's heartbeat in Redis (turns in flight, permits) every HARNESS_HEARTBEAT_MS, which the
 * gateway lists for the operator (GET /v1/admin/processes); a killed process drops off after
 * HARNESS_HEARTBEAT_TTL_MS, one shut down cleanly at once.
 */
@Injectable()
class HeartbeatLifecycle implements OnApplicationBootstrap, OnApplicationShutdown {
  private heartbeat?: ProcessHeartbeat;

  constructor(
    @Inject(CONFIG) private readonly config: Config,
    @Inject(LOGGER) private readonly logger: Logger,
    @Inject(REDIS) private readonly redis: RedisConnection,
    @Inject(TURN_RUNNER) private readonly runner: TurnRunner,
  ) {}

  onApplicationBootstrap(): void {
    this.heartbeat = new ProcessHeartbeat({
      redis: this.redis,
      prefix: this.config.QUEUE_PREFIX,
      kind: HARNESS_PROCESS_KIND,
      processId: WORKER_ID,
      hostname: hostname(),
      pid: process.pid,
      intervalMs: this.config.HARNESS_HEARTBEAT_MS,
      ttlMs: this.config.HARNESS_HEARTBEAT_TTL_MS,
      load: () => this.runner.load(),
      logger: this.logger,
    });
    this.heartbeat.start();
  }

  async onApplicationShutdown(): Promise<void> {
    await this.heartbeat?.stop();
  }
}

/** MCP tools for turns (docs/adr/0023): one client per server per worker, closed at shutdown. */
@Injectable()
class McpTools implements OnApplicationShutdown {
  readonly source: McpToolSource;
  private readonly clients: McpClients;

  constructor(@Inject(CONFIG) config: Config, @Inject(DB) db: Db) {
    const secrets = new SecretBox(config.MCP_SECRET_KEY);
    this.clients = new McpClients({
      allowHosts: config.MCP_ALLOW_HOSTS,
      onToolsChanged: (serverId) => this.source.invalidate(serverId),
    });
    this.source = new McpToolSource({
      db,
      clients: this.clients,
      openSecret: (stored) => secrets.open(stored),
      ttlMs: config.MCP_TOOLS_TTL_MS,
    });
  }

  async onApplicationShutdown(): Promise<void> {
    await this.clients.close();
  }
}

@Module({})
export class HarnessModule {
  static forRoot(config: Config): DynamicModule {
    return {
      module: HarnessModule,
      imports: [InfraModule.forRoot(config, 'harness-worker')],
      providers: [
        {
          provide: TURN_RUNNER,
          inject: [
            CONFIG,
            DB,
            TOOLS,
            getQueueToken(QueueName.PostTurn),
            getQueueToken(QueueName.Turns),
            getQueueToken(QueueName.Work),
            getQueueToken(QueueName.OutboundWebhooks),
            LOGGER,
            METRICS,
            REDIS,
            TOOL_GATES,
            CONTEXT_SOURCES,
            TASKS,
            McpTools,
          ],
          useFactory: (
            cfg: Config,
            db: Db,
            tools: ToolRegistry,
            postTurn: Queue,
            turns: Queue,
            work: Queue,
            outbound: Queue,
            logger: Logger,
            metrics: Metrics,
            redis: RedisConnection,
            gates: ToolGates,
            context: ContextSources,
            tasks: TaskService,
            mcp: McpTools,
          ) => {
            const providers = providerRegistryFromConfig(cfg);
            return new TurnRunner({
              db,
              engine: new TurnEngine({
                providers,
                tools,
                gates,
                context,
                // Semantic tool selection (docs/adr/0049) embeds with the agent's embedder.
                embedders: embedderRegistryFromConfig(cfg),
                // TokenJuice (docs/adr/0033): originals of lossy compactions, kept per tenant.
                tokenjuice: {
                  originals: new OriginalsStore(
                    sqlDbFor(poolOf(db), 'tokenjuice', metrics),
                    cfg.TOKENJUICE_RETENTION_HOURS * 3_600_000,
                  ),
                  minBytes: cfg.TOKENJUICE_MIN_BYTES,
                  maxInputChars: cfg.TOKENJUICE_MAX_INPUT_CHARS,
                },
              }),
              tools,
              postTurnQueue: postTurn,
              postTurnBatchWindowMs: cfg.HOOKS_BATCH_WINDOW_MS,
              turnsQueue: turns,
              live: new RedisLivePublisher(redis, { prefix: cfg.QUEUE_PREFIX, logger }),
              liveDeltaFlushMs: cfg.LIVE_DELTA_FLUSH_MS,
              logger,
              metrics,
              workerId: WORKER_ID,
              leaseMs: cfg.SESSION_LEASE_MS,
              defaultMaxConcurrentTurns: cfg.TENANT_MAX_CONCURRENT_TURNS,
              maxRunningTurns: cfg.HARNESS_CONCURRENCY,
              loopDelayTargetMs: cfg.HARNESS_LOOP_DELAY_TARGET_MS,
              intakePollMs: cfg.HARNESS_INTAKE_POLL_MS,
              defaultModel: cfg.DEFAULT_MODEL,
              contextWindows: cfg.MODEL_CONTEXT_WINDOWS,
              checkpointRetryMs: cfg.CHECKPOINT_RETRY_MS,
              roundContexts: cfg.ROUND_CONTEXTS === 'on',
              prices: cfg.MODEL_PRICES,
              approvalTtlMs: cfg.APPROVAL_TTL_MS,
              tasks,
              turnTools: (q) => mcp.source.forTurn(q.tenantId, q.tools),
              // After every ended turn: an agent with open work gets an activation pass (docs/adr/0031).
              finalisationSteps: [workActivationStep(db, work)],
              // A2A push notifications of a task's WORKING and INPUT_REQUIRED states (docs/adr/0037);
              // its end is the completion-webhook hook's.
              onTaskState: a2aTaskUpdates({
                db,
                logger,
                notify: (job) =>
                  publish(outbound, Jobs.outboundWebhook, job, {
                    backoff: { type: 'exponential', delay: cfg.OUTBOUND_WEBHOOK_BACKOFF_MS },
                  }),
              }),
            });
          },
        },
        // Overridable seams: a module that brings memory or extra policy provides its own.
        {
          provide: TOOL_GATES,
          inject: [CONFIG, REDIS],
          // The approval policy (docs/adr/0013) and the hourly side-effect budget, counted in Redis
          // across every harness process (docs/adr/0058).
          useFactory: (cfg: Config, redis: RedisConnection): ToolGates => {
            const budget = new ActionBudget(redis, {
              prefix: cfg.QUEUE_PREFIX,
              windowMs: cfg.ACTION_BUDGET_WINDOW_MS,
            });
            return {
              approval: defaultApprovalPolicy,
              actionBudget: (ctx, limits) =>
                budget.reserve({
                  tenantId: ctx.tenantId,
                  ...(ctx.agentId ? { agentId: ctx.agentId } : {}),
                  callKey: `${ctx.turnId}:${ctx.call.id}`,
                  agentLimit: limits.agent,
                  tenantLimit: limits.tenant,
                }),
            };
          },
        },
        {
          provide: CONTEXT_SOURCES,
          inject: [CONFIG, DB, METRICS, EMBEDDERS],
          // Seed 001 stage 1 (docs/adr/0022, 0050, 0052): episodic recall and the context pack, loaded
          // concurrently. Both take their matches from one memory search per turn (full-text, vectors
          // or both per the agent's settings), one read outside any transaction, bounded by
          // RECALL_TIMEOUT_MS; the pack adds the agent's preferences (one indexed read) and the work
          // items (docs/adr/0031): the turn bound to its current item and the queue projected.
          useFactory: (
            cfg: Config,
            db: Db,
            metrics: Metrics,
            embedders: EmbedderRegistry,
          ): ContextSources => {
            const workItems = new WorkItemStore(
              sqlDbFor(poolOf(db), 'work-items', metrics),
              cfg.WORK_ITEM_RECHECK_MS,
            );
            const memory = memoryContext(
              new MemorySearch(sqlDbFor(poolOf(db), 'recall', metrics), embedders),
              {
                limit: cfg.RECALL_LIMIT,
                candidates: cfg.RECALL_CANDIDATES,
                timeoutMs: cfg.RECALL_TIMEOUT_MS,
                observe: (outcome, seconds) => metrics.memoryRecall.observe({ outcome }, seconds),
              },
            );
            return {
              memory: memory.episodic,
              contextPack: contextPack({ memory: memory.pack, workItems: workItemContext(workItems) }),
              workReminder: workItemReminder(workItems, {
                rounds: cfg.WORK_ITEM_STALE_REMINDER_ROUNDS,
                cooldownRounds: cfg.WORK_ITEM_STALE_REMINDER_COOLDOWN_ROUNDS,
                maxTokens: cfg.WORK_ITEM_STALE_REMINDER_MAX_TOKENS,
              }),
            };
          },
        },
        ControlLifecycle,
        HeartbeatLifecycle,
        McpTools,
        TurnsProcessor,
        MaintenanceProcessor,
        ReconcilerService,
      ],
    };
  }
}
