import { Inject } from '@nestjs/common';
import { getQueueToken } from '@nestjs/bullmq';
import { UnrecoverableError, type Job, type Queue } from 'bullmq';
import { Jobs, newId, PostTurnHookName, QueueName, type PostTurnJob } from '@switchboard/contracts';
import { poolOf, type Db } from '@switchboard/database';
import {
  archivistSessionDedup,
  OutsideSharedTransaction,
  SnapshotCache,
  postTurnHook,
  postTurnHooks,
  type HookContext,
  type HookModels,
  type HookOutcome,
} from '@switchboard/hooks';
import type { Metrics } from '@switchboard/observability';
import { DB, METRICS, providerRegistryFromConfig, QueueProcessor, QueueWorker } from '@switchboard/platform';
import { consume, publish } from '@switchboard/queue';
import { recordHookFailure, sqlDbFor, within, type SqlDb } from '@switchboard/store';

/** What the one job of a turn returns: each hook's outcome, or `retrying` when it failed and got a job of its own. */
export type PostTurnOutcomes = Partial<Record<PostTurnHookName, HookOutcome | 'retrying' | 'failed'>>;

/**
 * The hooks of the turn's shared transaction, in order. Not in it: the hooks that update a row every
 * turn of the agent or tenant shares (learning: `agent_tool_stats`; the cost log:
 * `tenant_spend_daily`). Inside a transaction such a row stays locked until the commit, across every
 * later statement and every wait of this process's event loop, and the agent's or tenant's other
 * turns queue behind it (measured: 34 ms per learning statement, mostly waiting, at 20 sessions of
 * one agent); alone, each is one statement that holds its row for that statement only.
 */
const SHARED: readonly PostTurnHookName[] = ['episodic-index', 'archivist', 'completion-webhook'];

/** The hooks that run on their own (one statement each), after the shared transaction. */
const ALONE: readonly PostTurnHookName[] = PostTurnHookName.options.filter((h) => !SHARED.includes(h));

/**
 * Runs post-turn hooks (docs/adr/0027, 0039). An ended turn's one job runs every hook (`runAll`); a
 * hook that fails in it is published again as a job of its own (`<turn>.<hook>`, its own attempts
 * and backoff), which is also what the hooks reconcile publishes. A job naming one hook runs that
 * hook: a job survives HOOKS_MAX_STALLED_COUNT deaths of its worker; a hook that fails for good is
 * recorded `failed`; a job lost or failed on stalls is re-published by the hooks reconcile.
 */
@QueueProcessor(QueueName.PostTurn, 'HOOKS_CONCURRENCY', { maxStalledCount: 'HOOKS_MAX_STALLED_COUNT' })
export class PostTurnProcessor extends QueueWorker {
  /** Hooks' statements on typed SQL over Prisma's pg pool, counted as `hooks`. */
  private readonly sql: SqlDb;
  /** The archivist's model providers, built as the harness builds its own; on first use (config is injected). */
  private modelsCache?: HookModels;
  private ctxCache?: HookContext;

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

  private context(): HookContext {
    this.ctxCache ??= {
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
    };
    return this.ctxCache;
  }

  async process(job: Job): Promise<string | PostTurnOutcomes> {
    return consume(
      Jobs.postTurn,
      job,
      async (data) => (data.hook === undefined ? this.runAll(data) : this.runOne(job, data, data.hook)),
      this.metrics,
    );
  }

  /**
   * Every hook of the turn: the `SHARED` ones together, in one transaction (`runShared`), then the
   * `ALONE` ones and any that would have held that transaction open, each on its own (`runEach`).
   * When the shared transaction does not commit, every hook runs on its own, as before ADR 0039's
   * second amendment.
   */
  private async runAll(data: PostTurnJob): Promise<PostTurnOutcomes> {
    const shared = await this.runShared(data);
    if (!shared) return this.runEach(data, PostTurnHookName.options);
    // Hooks that would have held the transaction open on something slow run on their own after it.
    return { ...shared.outcomes, ...(await this.runEach(data, [...ALONE, ...shared.later])) };
  }

  /**
   * The turn's hooks one after another on one connection, in ONE transaction (docs/adr/0039,
   * amendment 2): each hook's statements are what they are alone, each still keyed per (turn, hook),
   * so the transaction commits every hook's row and effects at once, or none. A hook that fails rolls
   * it back whole, and `undefined` sends every hook to `runEach` (a re-run of one that had written
   * finds nothing: its writes went with the rollback). A hook whose work would wait on something slow
   * (a model call, a publish) throws `OutsideSharedTransaction` before writing and is returned in
   * `later`. The archivist's debounced session job is published after the commit: a publish that
   * fails fails the job, whose retry finds the turn deferred and publishes again.
   */
  private async runShared(
    data: PostTurnJob,
  ): Promise<{ outcomes: PostTurnOutcomes; later: PostTurnHookName[] } | undefined> {
    const base = this.context();
    const publishes: (() => Promise<unknown>)[] = [];
    let result: { outcomes: PostTurnOutcomes; later: PostTurnHookName[] };
    try {
      result = await this.sql.transaction(async (tx) => {
        const ctx: HookContext = {
          ...base,
          sql: within(tx),
          shared: true,
          snapshots: new SnapshotCache(),
          deferArchivist: (j, delayMs) => {
            publishes.push(() => base.deferArchivist!(j, delayMs));
            return Promise.resolve();
          },
        };
        const outcomes: PostTurnOutcomes = {};
        const later: PostTurnHookName[] = [];
        for (const hook of SHARED) {
          try {
            outcomes[hook] = await postTurnHooks[hook](ctx, { ...data, hook });
          } catch (err) {
            if (!(err instanceof OutsideSharedTransaction)) throw err;
            later.push(hook);
          }
        }
        return { outcomes, later };
      });
    } catch (err) {
      this.logger.warn(
        { err, turnId: data.turnId, tenantId: data.tenantId },
        'post-turn hooks did not commit together; each runs on its own',
      );
      return undefined;
    }
    for (const [hook, outcome] of Object.entries(result.outcomes)) {
      this.metrics.hooks.inc({ hook, outcome });
    }
    for (const publish of publishes) await publish();
    return result;
  }

  /**
   * `hooks` at once, each on its own connection. A hook that throws is handed to a job of its own,
   * published after the first retry delay of `post-turn` jobs, so it is retried on its own while the
   * others stand; one that can never succeed (`UnrecoverableError`) is recorded `failed`. Only when
   * that publish fails does this job fail, and its retry runs every hook again (each finds its row
   * and does nothing).
   */
  private async runEach(data: PostTurnJob, hooks: readonly PostTurnHookName[]): Promise<PostTurnOutcomes> {
    // The hooks that read the turn's snapshot (archivist, episodic index) share one read of it.
    const ctx: HookContext = { ...this.context(), snapshots: new SnapshotCache() };
    const entries = await Promise.all(
      hooks.map(async (hook): Promise<[PostTurnHookName, PostTurnOutcomes[PostTurnHookName]]> => {
        const run = { ...data, hook };
        try {
          const outcome = await postTurnHooks[hook](ctx, run);
          this.metrics.hooks.inc({ hook, outcome });
          return [hook, outcome];
        } catch (err) {
          this.metrics.hooks.inc({ hook, outcome: 'error' });
          const unrecoverable = err instanceof UnrecoverableError;
          this.logger[unrecoverable ? 'error' : 'warn'](
            { err, turnId: data.turnId, tenantId: data.tenantId, hook, attempt: 1 },
            unrecoverable
              ? 'post-turn hook failed; no attempts left'
              : 'post-turn hook failed; will retry on its own',
          );
          if (unrecoverable) {
            await this.recordFailure(run, hook, 1, err);
            return [hook, 'failed'];
          }
          await publish(this.postTurn, Jobs.postTurn, run, { delay: Jobs.postTurn.backoff.delay });
          return [hook, 'retrying'];
        }
      }),
    );
    return Object.fromEntries(entries);
  }

  private async runOne(job: Job, data: PostTurnJob, name: string): Promise<string> {
    const hook = postTurnHook(name);
    // A hook this build has no handler for will not get one by retrying.
    if (!hook) throw new UnrecoverableError(`no handler for post-turn hook ${name}`);
    try {
      const outcome = await hook(this.context(), data);
      this.metrics.hooks.inc({ hook: name, outcome });
      return outcome;
    } catch (err) {
      this.metrics.hooks.inc({ hook: name, outcome: 'error' });
      const final = err instanceof UnrecoverableError || job.attemptsMade + 1 >= (job.opts.attempts ?? 1);
      // Logged as well as counted: which turn, which hook, why, and whether it is retried.
      this.logger[final ? 'error' : 'warn'](
        {
          err,
          turnId: data.turnId,
          tenantId: data.tenantId,
          hook: name,
          attempt: job.attemptsMade + 1,
          attempts: job.opts.attempts ?? 1,
        },
        final ? 'post-turn hook failed; no attempts left' : 'post-turn hook failed; will retry',
      );
      // Its last attempt, or nothing a retry mends: recorded, so the hooks reconcile leaves it be.
      if (final) await this.recordFailure(data, name, job.attemptsMade + 1, err);
      throw err;
    }
  }

  private async recordFailure(
    data: PostTurnJob,
    hook: string,
    attempts: number,
    err: unknown,
  ): Promise<void> {
    await recordHookFailure(this.sql, {
      id: newId(),
      turnId: data.turnId,
      tenantId: data.tenantId,
      hook,
      attempts,
      error: err instanceof Error ? err.message : String(err),
    }).catch((e: unknown) =>
      this.logger.warn({ err: e, turnId: data.turnId, hook }, 'hook failure not recorded'),
    );
  }
}
