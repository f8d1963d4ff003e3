import { Inject } from '@nestjs/common';
import { getQueueToken } from '@nestjs/bullmq';
import { UnrecoverableError, type Job, type Queue } from 'bullmq';
import { Jobs, newId, QueueName } from '@switchboard/contracts';
import { poolOf, type Db } from '@switchboard/database';
import { archivistSessionDedup, postTurnHook, type HookModels } from '@switchboard/hooks';
import type { Metrics } from '@switchboard/observability';
import { DB, METRICS, providerRegistryFromConfig, QueueProcessor, QueueWorker } from '@switchboard/platform';
import { consume, publish } from '@switchboard/queue';
import { recordHookFailure, sqlDbFor, type SqlDb } from '@switchboard/store';

/**
 * Runs post-turn hooks, one job per (turn, hook), each retried on its own (docs/adr/0027): a job
 * survives HOOKS_MAX_STALLED_COUNT deaths of its worker; a hook that fails for good is recorded
 * `failed`; a job lost or failed on stalls is re-published by the hooks reconcile.
 */
@QueueProcessor(QueueName.PostTurn, 'HOOKS_CONCURRENCY', { maxStalledCount: 'HOOKS_MAX_STALLED_COUNT' })
export class PostTurnProcessor extends QueueWorker {
  /** Hooks' statements on typed SQL over Prisma's pg pool, counted as `hooks`. */
  private readonly sql: SqlDb;
  /** The archivist's model providers, built as the harness builds its own; on first use (config is injected). */
  private modelsCache?: HookModels;

  constructor(
    @Inject(DB) private readonly db: Db,
    @Inject(METRICS) private readonly metrics: Metrics,
    @Inject(getQueueToken(QueueName.OutboundWebhooks)) private readonly outbound: Queue,
    @Inject(getQueueToken(QueueName.PostTurn)) private readonly postTurn: Queue,
  ) {
    super();
    this.sql = sqlDbFor(poolOf(db), 'hooks', metrics);
  }

  private models(): HookModels {
    this.modelsCache ??= {
      providers: providerRegistryFromConfig(this.config),
      defaultModel: this.config.DEFAULT_MODEL,
      prices: this.config.MODEL_PRICES,
    };
    return this.modelsCache;
  }

  async process(job: Job): Promise<string> {
    return consume(
      Jobs.postTurn,
      job,
      async (data) => {
        const hook = postTurnHook(data.hook);
        // A hook this build has no handler for will not get one by retrying.
        if (!hook) throw new UnrecoverableError(`no handler for post-turn hook ${data.hook}`);
        try {
          const outcome = await hook(
            {
              db: this.db,
              sql: this.sql,
              logger: this.logger,
              metrics: this.metrics,
              models: this.models(),
              deferArchivist: (j, delayMs) =>
                publish(this.postTurn, Jobs.postTurn, j, {
                  delay: delayMs,
                  deduplication: archivistSessionDedup(j.sessionId ?? j.turnId),
                }),
              notify: (n) =>
                publish(this.outbound, Jobs.outboundWebhook, n, {
                  backoff: { type: 'exponential', delay: this.config.OUTBOUND_WEBHOOK_BACKOFF_MS },
                }),
            },
            data,
          );
          this.metrics.hooks.inc({ hook: data.hook, outcome });
          return outcome;
        } catch (err) {
          this.metrics.hooks.inc({ hook: data.hook, outcome: 'error' });
          const final = err instanceof UnrecoverableError || job.attemptsMade + 1 >= (job.opts.attempts ?? 1);
          // Logged as well as counted: which turn, which hook, why, and whether it is retried.
          this.logger[final ? 'error' : 'warn'](
            {
              err,
              turnId: data.turnId,
              tenantId: data.tenantId,
              hook: data.hook,
              attempt: job.attemptsMade + 1,
              attempts: job.opts.attempts ?? 1,
            },
            final ? 'post-turn hook failed; no attempts left' : 'post-turn hook failed; will retry',
          );
          // Its last attempt, or nothing a retry mends: recorded, so the hooks reconcile leaves it be.
          if (final) {
            await recordHookFailure(this.sql, {
              id: newId(),
              turnId: data.turnId,
              tenantId: data.tenantId,
              hook: data.hook,
              attempts: job.attemptsMade + 1,
              error: err instanceof Error ? err.message : String(err),
            }).catch((e: unknown) =>
              this.logger.warn({ err: e, turnId: data.turnId, hook: data.hook }, 'hook failure not recorded'),
            );
          }
          throw err;
        }
      },
      this.metrics,
    );
  }
}
