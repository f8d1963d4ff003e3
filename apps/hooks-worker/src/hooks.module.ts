import { Module, type DynamicModule } from '@nestjs/common';
import { getQueueToken } from '@nestjs/bullmq';
import type { Queue } from 'bullmq';
import type { Config } from '@switchboard/config';
import { QueueName } from '@switchboard/contracts';
import { poolOf, type Db } from '@switchboard/database';
import { PostTurnHooks } from '@switchboard/hooks';
import { enqueueMemoryEmbed } from '@switchboard/memory';
import type { Logger, Metrics } from '@switchboard/observability';
import { CONFIG, DB, InfraModule, LOGGER, METRICS, providerRegistryFromConfig } from '@switchboard/platform';
import { sqlDbFor } from '@switchboard/store';
import { PostTurnProcessor } from './post-turn.processor';
import { MemoryEmbedProcessor } from './memory-embed.processor';
import { CanarySweepService } from './canary-sweep.service';
import { deletionQueuesProvider, TenantDeletionProcessor } from './tenant-deletion.processor';
import { HOOKS_SQL, POST_TURN_HOOKS } from './tokens';

@Module({})
export class HooksModule {
  static forRoot(config: Config): DynamicModule {
    return {
      module: HooksModule,
      imports: [InfraModule.forRoot(config, 'hooks-worker')],
      providers: [
        {
          provide: POST_TURN_HOOKS,
          inject: [
            CONFIG,
            DB,
            LOGGER,
            METRICS,
            getQueueToken(QueueName.PostTurn),
            getQueueToken(QueueName.OutboundWebhooks),
            getQueueToken(QueueName.MemoryEmbed),
          ],
          useFactory: (
            cfg: Config,
            db: Db,
            logger: Logger,
            metrics: Metrics,
            postTurn: Queue,
            outbound: Queue,
            embedQueue: Queue,
          ) =>
            new PostTurnHooks({
              db,
              // Hooks' statements on typed SQL over Prisma's pg pool, counted as `hooks`.
              sql: sqlDbFor(poolOf(db), 'hooks', metrics),
              logger,
              metrics,
              postTurnQueue: postTurn,
              outboundQueue: outbound,
              outboundBackoffMs: cfg.OUTBOUND_WEBHOOK_BACKOFF_MS,
              // The records a turn's hooks wrote get their vectors (docs/adr/0050).
              embed: (agents) => Promise.all(agents.map((a) => enqueueMemoryEmbed(embedQueue, a))),
              // The archivist's model providers, built as the harness builds its own.
              models: {
                providers: providerRegistryFromConfig(cfg),
                defaultModel: cfg.DEFAULT_MODEL,
                prices: cfg.MODEL_PRICES,
              },
              // The scoring hook (docs/adr/0062): the judges' default daily budget, the webhook scorers' guard.
              evaluation: {
                dailyBudgetUsd: cfg.EVAL_DAILY_BUDGET_USD,
                allowHosts: new Set(cfg.OUTBOUND_WEBHOOK_ALLOW_HOSTS ?? []),
              },
            }),
        },
        {
          provide: HOOKS_SQL,
          inject: [DB, METRICS],
          useFactory: (db: Db, metrics: Metrics) => sqlDbFor(poolOf(db), 'hooks', metrics),
        },
        PostTurnProcessor,
        MemoryEmbedProcessor,
        deletionQueuesProvider,
        TenantDeletionProcessor,
        CanarySweepService,
      ],
    };
  }
}
