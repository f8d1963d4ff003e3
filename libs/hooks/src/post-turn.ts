import { UnrecoverableError, type Queue } from 'bullmq';
import { Jobs, newId, PostTurnHookName, type PostTurnJob } from '@switchboard/contracts';
import type { Db } from '@switchboard/database';
import type { Logger, Metrics } from '@switchboard/observability';
import { publish } from '@switchboard/queue';
import {
  recordCostLogBatch,
  recordHookFailure,
  recordLearningBatch,
  within,
  type HookBatchTurn,
  type SqlDb,
  type SqlRunner,
} from '@switchboard/store';
import { publishSessionDistillation } from './archivist-publish';
import { embedAfterTurns } from '@switchboard/memory';
import { ArchivistModelNotes } from './archivist-models';
import { reportCostLog } from './cost-log';
import { reportLearning } from './learning';
import { scoreOrSkipIn } from './scoring';
import { skipCompletionWebhooks } from './completion-webhook';
import { SnapshotCache } from './archivist-snapshot';
import {
  OutsideSharedTransaction,
  type EvaluationDeps,
  type HookContext,
  type HookModels,
  type HookOutcome,
} from './context';
import { postTurnHook, postTurnHooks } from './registry';

/** What the one job of a turn returns: each hook's outcome, or `retrying` when it failed and got a job of its own. */
export type PostTurnOutcomes = Partial<Record<PostTurnHookName, HookOutcome | 'retrying' | 'failed'>>;

/** A turn's shared hooks' outcomes, and the hooks that must run after the transaction (`later`). */
type SharedOutcomes = { outcomes: PostTurnOutcomes; later: PostTurnHookName[] };

/** What a group's job returns (docs/adr/0070): each turn's outcomes, by turn id. */
export type PostTurnBatchOutcomes = Record<string, PostTurnOutcomes>;

/** Which attempt of its job a run is (BullMQ's `attemptsMade + 1`) and how many the job has. */
export interface PostTurnAttempt {
  attempt: number;
  attempts: number;
}

/** What `PostTurnHooks` runs with: the hooks worker's connections, queues and settings. */
export interface PostTurnHooksDeps {
  db: Db;
  /** Hooks' statements on typed SQL over Prisma's pg pool (`sqlDbFor(poolOf(db), 'hooks', metrics)`). */
  sql: SqlDb;
  logger: Logger;
  metrics: Metrics;
  /** `post-turn`: a hook's own retry job and the archivist's debounced session job. */
  postTurnQueue: Queue;
  /** `outbound-webhooks`: the completion webhook's notification. */
  outboundQueue: Queue;
  /** The first retry delay of an outbound notification (OUTBOUND_WEBHOOK_BACKOFF_MS). */
  outboundBackoffMs: number;
  /** The archivist's model providers, built as the harness builds its own. */
  models?: HookModels;
  /**
   * Asks for the embedding of the records a group's hooks wrote, per agent with an embedder
   * (docs/adr/0050; the `memory-embed` job). Unset: no embedding is asked for.
   */
  embed?: (agents: { tenantId: string; agentId: string }[]) => Promise<unknown>;
  /** The scoring hook's settings (docs/adr/0062). */
  evaluation?: EvaluationDeps;
}

/**
 * The hooks of the turn's shared transaction, in order. Not in it: the hooks that update a row every
 * turn of the agent or tenant shares (learning: `agent_tool_stats`; the cost log:
 * `tenant_spend_daily`). Inside a transaction such a row stays locked until the commit, across every
 * later statement and every wait of this process's event loop, and the agent's or tenant's other
 * turns queue behind it (measured: 34 ms per learning statement, mostly waiting, at 20 sessions of
 * one agent); alone, each is one statement that holds its row for that statement only.
 */
export const SHARED_HOOKS: readonly PostTurnHookName[] = [
  'episodic-index',
  'archivist',
  'completion-webhook',
];

/**
 * The shared hooks a group runs turn by turn; the completion webhook follows for the whole group in
 * one statement (`skipCompletionWebhooks`), after every turn's others, so a group takes its rows in
 * the order a lone turn's transaction does (episodic, archivist, then the webhook) and the two never
 * wait on each other in a cycle.
 */
const GROUP_EACH_HOOKS: readonly PostTurnHookName[] = SHARED_HOOKS.filter((h) => h !== 'completion-webhook');

/** The hooks that run on their own (one statement each), after the shared transaction. */
export const ALONE_HOOKS: readonly PostTurnHookName[] = PostTurnHookName.options.filter(
  (h) => !SHARED_HOOKS.includes(h),
);

/**
 * The post-turn policy (docs/adr/0027, 0039): which hooks a `post-turn` job runs, which of them share
 * one transaction, and what happens to one that fails. An ended turn's one job runs every hook
 * (`runAll`); a hook that fails in it is published again as a job of its own (`<turn>.<hook>`, its own
 * attempts and backoff), which is also what the hooks reconcile publishes. A job naming one hook runs
 * that hook (`runOne`); a hook that fails for good is recorded `failed`. The hooks worker's
 * `PostTurnProcessor` only hands BullMQ's jobs to `run`.
 */
export class PostTurnHooks {
  private readonly ctx: HookContext;

  constructor(private readonly deps: PostTurnHooksDeps) {
    this.ctx = {
      db: deps.db,
      sql: deps.sql,
      logger: deps.logger,
      metrics: deps.metrics,
      // One process's notes on the archivist's models, kept across its jobs.
      models: deps.models && { notes: new ArchivistModelNotes(), ...deps.models },
      evaluation: deps.evaluation,
      deferArchivist: (j, delayMs) => publishSessionDistillation(deps.postTurnQueue, j, delayMs),
      notify: (n) =>
        publish(deps.outboundQueue, Jobs.outboundWebhook, n, {
          backoff: { type: 'exponential', delay: deps.outboundBackoffMs },
        }),
    };
  }

  /** One `post-turn` job: every hook of the turn (of each turn of a group), or the one hook it names. */
  run(
    data: PostTurnJob,
    attempt: PostTurnAttempt,
  ): Promise<string | PostTurnOutcomes | PostTurnBatchOutcomes> {
    if (data.hook !== undefined) return this.runOne(data, data.hook, attempt);
    // A lone turn is a group of one: its outcomes as before, not keyed by turn.
    return this.runBatch(data).then((out) => (data.more?.length ? out : out[data.turnId]));
  }

  /** The ended turns a job carries: its own and `more`, each once. */
  static turnsOf(data: PostTurnJob): PostTurnJob[] {
    const seen = new Set<string>();
    const all: PostTurnJob[] = [
      { turnId: data.turnId, tenantId: data.tenantId, trace: data.trace },
      ...(data.more ?? []).map((t) => ({ turnId: t.turnId, tenantId: t.tenantId, trace: t.trace ?? {} })),
    ];
    // In id order: two jobs that share a turn (a redelivery beside a reconcile's job) write their
    // rows in the same order, so one waits for the other instead of deadlocking.
    return all
      .filter((t) => !seen.has(t.turnId) && !!seen.add(t.turnId))
      .sort((a, b) => (a.turnId < b.turnId ? -1 : a.turnId > b.turnId ? 1 : 0));
  }

  /**
   * The post-turn work of a group of ended turns (docs/adr/0070, 0077, group commit). ONE transaction
   * holds all of it: every turn's snapshot read at once (`SnapshotCache.prime`), each turn's episode
   * and archivist deferral, the completion webhook of every turn without an endpoint in one statement
   * (`skipCompletionWebhooks`), the embedding read, scoring's read and `skipped` rows for the whole
   * group (`scoreOrSkipIn`), then the cost log and learning of all of them as one statement each
   * (`recordCostLogBatch`, `recordLearningBatch`): the rows every turn of a tenant or agent shares are
   * taken last, once per batch, in key order, so they stay locked for the commit only and concurrent
   * batches cannot deadlock on them. Then, outside it, each turn's remaining hooks on their own
   * (`runEach`: a scoring that does work, a hook that would have held the transaction open, learning's
   * feedback half), a failing one in a job of its own. When the group's transaction does not commit,
   * each turn runs as a lone turn's job would (`runAll`), one after another: nothing was written,
   * every hook runs again and writes once.
   */
  async runBatch(data: PostTurnJob): Promise<PostTurnBatchOutcomes> {
    const turns = PostTurnHooks.turnsOf(data);
    const base = this.ctx;
    const publishes: (() => Promise<unknown>)[] = [];
    const runs: HookBatchTurn[] = turns.map((t) => ({ id: newId(), turnId: t.turnId, tenantId: t.tenantId }));
    const costRuns: HookBatchTurn[] = turns.map((t) => ({
      id: newId(),
      turnId: t.turnId,
      tenantId: t.tenantId,
    }));
    let group: {
      shared: Map<string, SharedOutcomes>;
      cost: Awaited<ReturnType<typeof recordCostLogBatch>>;
      learning: Awaited<ReturnType<typeof recordLearningBatch>>;
      embed: { tenantId: string; agentId: string }[];
      scoring: Map<string, HookOutcome | 'score'>;
    };
    try {
      group = await this.deps.sql.transaction(async (tx) => {
        // Every turn's snapshot (the archivist's and the episodic index's read) in one statement per tenant.
        const snapshots = new SnapshotCache();
        await snapshots.prime(tx, turns);
        const shared = new Map<string, SharedOutcomes>();
        for (const job of turns) {
          shared.set(job.turnId, await this.sharedHooksIn(tx, job, publishes, snapshots, GROUP_EACH_HOOKS));
        }
        // The completion webhook of every turn without an endpoint, in one statement; the others alone.
        const skipped = await skipCompletionWebhooks(tx, turns);
        for (const job of turns) {
          const { outcomes, later } = shared.get(job.turnId)!;
          const settled = skipped.get(job.turnId);
          if (settled) outcomes['completion-webhook'] = settled;
          else {
            const one = await this.sharedHooksIn(tx, job, publishes, snapshots, ['completion-webhook']);
            Object.assign(outcomes, one.outcomes);
            later.push(...one.later);
          }
        }
        // The agents whose records the group may have written, for their embedding job (a read).
        const embed = this.deps.embed ? await embedAfterTurns(tx, turns) : [];
        // Scoring's read and its `skipped` rows (docs/adr/0077): per-turn rows, no row turns share.
        const scoring = await scoreOrSkipIn(tx, turns);
        // The shared roll-up rows last: locked from here to the commit only.
        const cost = await recordCostLogBatch(tx, costRuns);
        const learning = await recordLearningBatch(tx, runs);
        return { shared, cost, learning, embed, scoring };
      });
    } catch (err) {
      this.deps.logger.warn(
        { err, turnIds: turns.map((t) => t.turnId) },
        'post-turn group did not commit together; each turn runs on its own',
      );
      const out: PostTurnBatchOutcomes = {};
      for (const job of turns) out[job.turnId] = await this.runAll(job);
      await this.askEmbedding(() => embedAfterTurns(this.deps.sql, turns));
      return out;
    }
    for (const publish of publishes) await publish();
    await this.askEmbedding(() => Promise.resolve(group.embed));
    const { metrics } = this.deps;
    const byTurn = new Map<string, { outcomes: PostTurnOutcomes; rest: PostTurnHookName[] }>();
    for (const job of turns) {
      const { outcomes, later } = group.shared.get(job.turnId)!;
      for (const [hook, outcome] of Object.entries(outcomes)) metrics.hooks.inc({ hook, outcome });
      const cost = group.cost.get(job.turnId) ?? { kind: 'skipped' as const };
      reportCostLog(base, cost);
      metrics.hooks.inc({ hook: 'cost-log', outcome: cost.kind });
      const learning = group.learning.get(job.turnId) ?? { kind: 'skipped' as const };
      reportLearning(base, job, learning);
      const rest = [...later];
      // The feedback half of learning (agents with `memory.learning` on) runs on its own, as a retry would.
      if (learning.kind !== 'skipped' && learning.learning) rest.push('learning');
      else metrics.hooks.inc({ hook: 'learning', outcome: learning.kind });
      byTurn.set(job.turnId, {
        outcomes: {
          ...outcomes,
          'cost-log': cost.kind,
          ...(rest.includes('learning') ? {} : { learning: learning.kind }),
        },
        rest,
      });
    }
    const scoring = group.scoring;
    const out: PostTurnBatchOutcomes = {};
    await Promise.all(
      turns.map(async (job) => {
        const { outcomes, rest } = byTurn.get(job.turnId)!;
        const scored = scoring.get(job.turnId);
        if (scored === undefined || scored === 'score') rest.push('scoring');
        else {
          outcomes.scoring = scored;
          metrics.hooks.inc({ hook: 'scoring', outcome: scored });
        }
        const own = rest.length ? await this.runEach(job, rest) : {};
        // Learning's row was written in the group; its feedback half ran on its own.
        const learned = group.learning.get(job.turnId)?.kind;
        if (learned === 'written' && own.learning === 'already_done') own.learning = 'written';
        out[job.turnId] = { ...outcomes, ...own };
      }),
    );
    return out;
  }

  /**
   * Every hook of the turn: the `SHARED_HOOKS` together, in one transaction (`runShared`), then the
   * `ALONE_HOOKS` and any that would have held that transaction open, each on its own (`runEach`).
   * When the shared transaction does not commit, every hook runs on its own, as before ADR 0039's
   * second amendment.
   */
  async runAll(data: PostTurnJob): Promise<PostTurnOutcomes> {
    const shared = await this.runShared(data);
    if (!shared) return this.runEach(data, PostTurnHookName.options);
    // Hooks that would have held the transaction open on something slow run on their own after it.
    return { ...shared.outcomes, ...(await this.runEach(data, [...ALONE_HOOKS, ...shared.later])) };
  }

  /**
   * One turn's `SHARED_HOOKS`, one after another, in the transaction `tx` (a lone turn's, or its
   * group's): each hook's statements are what they are alone. A hook whose work would wait on something
   * slow throws `OutsideSharedTransaction` before writing and is returned in `later`; any other error
   * is thrown (it rolls the transaction back). The archivist's debounced session job is not published
   * here but added to `publishes`, for after the commit.
   */
  private async sharedHooksIn(
    tx: SqlRunner,
    job: PostTurnJob,
    publishes: (() => Promise<unknown>)[],
    snapshots = new SnapshotCache(),
    hooks: readonly PostTurnHookName[] = SHARED_HOOKS,
  ): Promise<SharedOutcomes> {
    const base = this.ctx;
    const ctx: HookContext = {
      ...base,
      sql: within(tx),
      shared: true,
      snapshots,
      deferArchivist: (j, delayMs) => {
        publishes.push(() => base.deferArchivist!(j, delayMs));
        return Promise.resolve();
      },
    };
    const outcomes: PostTurnOutcomes = {};
    const later: PostTurnHookName[] = [];
    for (const hook of hooks) {
      try {
        outcomes[hook] = await postTurnHooks[hook](ctx, { ...job, hook });
      } catch (err) {
        if (!(err instanceof OutsideSharedTransaction)) throw err;
        later.push(hook);
      }
    }
    return { outcomes, later };
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
  private async runShared(data: PostTurnJob): Promise<SharedOutcomes | undefined> {
    const publishes: (() => Promise<unknown>)[] = [];
    let result: SharedOutcomes;
    try {
      result = await this.deps.sql.transaction((tx) => this.sharedHooksIn(tx, data, publishes));
    } catch (err) {
      this.deps.logger.warn(
        { err, turnId: data.turnId, tenantId: data.tenantId },
        'post-turn hooks did not commit together; each runs on its own',
      );
      return undefined;
    }
    for (const [hook, outcome] of Object.entries(result.outcomes)) {
      this.deps.metrics.hooks.inc({ hook, outcome });
    }
    for (const publish of publishes) await publish();
    return result;
  }

  /** Publishes the embedding jobs; a publish that fails fails nothing (the agent's next job embeds them too). */
  private async askEmbedding(agents: () => Promise<{ tenantId: string; agentId: string }[]>): Promise<void> {
    const embed = this.deps.embed;
    if (!embed) return;
    await agents()
      .then((a) => (a.length ? embed(a) : undefined))
      .catch((err: unknown) => this.deps.logger.warn({ err }, 'memory embedding not asked for'));
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
    const ctx: HookContext = { ...this.ctx, snapshots: new SnapshotCache() };
    const { logger, metrics } = this.deps;
    const entries = await Promise.all(
      hooks.map(async (hook): Promise<[PostTurnHookName, PostTurnOutcomes[PostTurnHookName]]> => {
        const run = { ...data, hook };
        try {
          const outcome = await postTurnHooks[hook](ctx, run);
          metrics.hooks.inc({ hook, outcome });
          return [hook, outcome];
        } catch (err) {
          metrics.hooks.inc({ hook, outcome: 'error' });
          const unrecoverable = err instanceof UnrecoverableError;
          logger[unrecoverable ? 'error' : 'warn'](
            { err, turnId: data.turnId, tenantId: data.tenantId, hook, attempt: 1 },
            unrecoverable
              ? 'post-turn hook failed; no attempts left'
              : 'post-turn hook failed; will retry on its own',
          );
          if (unrecoverable) {
            await this.recordFailure(run, hook, 1, err);
            return [hook, 'failed'];
          }
          await publish(this.deps.postTurnQueue, Jobs.postTurn, run, { delay: Jobs.postTurn.backoff.delay });
          return [hook, 'retrying'];
        }
      }),
    );
    return Object.fromEntries(entries);
  }

  /**
   * The hook a job names. A failure is thrown for BullMQ to retry; on the job's last attempt, or when
   * no retry mends it (`UnrecoverableError`, a name this build has no handler for), it is recorded
   * `failed` so the hooks reconcile leaves it be.
   */
  async runOne(data: PostTurnJob, name: string, { attempt, attempts }: PostTurnAttempt): Promise<string> {
    const hook = postTurnHook(name);
    // A hook this build has no handler for will not get one by retrying.
    if (!hook) throw new UnrecoverableError(`no handler for post-turn hook ${name}`);
    const { logger, metrics } = this.deps;
    try {
      const outcome = await hook(this.ctx, data);
      metrics.hooks.inc({ hook: name, outcome });
      return outcome;
    } catch (err) {
      metrics.hooks.inc({ hook: name, outcome: 'error' });
      const final = err instanceof UnrecoverableError || attempt >= attempts;
      // Logged as well as counted: which turn, which hook, why, and whether it is retried.
      logger[final ? 'error' : 'warn'](
        { err, turnId: data.turnId, tenantId: data.tenantId, hook: name, attempt, attempts },
        final ? 'post-turn hook failed; no attempts left' : 'post-turn hook failed; will retry',
      );
      // Its last attempt, or nothing a retry mends: recorded, so the hooks reconcile leaves it be.
      if (final) await this.recordFailure(data, name, attempt, err);
      throw err;
    }
  }

  private async recordFailure(
    data: PostTurnJob,
    hook: string,
    attempts: number,
    err: unknown,
  ): Promise<void> {
    await recordHookFailure(this.deps.sql, {
      id: newId(),
      turnId: data.turnId,
      tenantId: data.tenantId,
      hook,
      attempts,
      error: err instanceof Error ? err.message : String(err),
    }).catch((e: unknown) =>
      this.deps.logger.warn({ err: e, turnId: data.turnId, hook }, 'hook failure not recorded'),
    );
  }
}
