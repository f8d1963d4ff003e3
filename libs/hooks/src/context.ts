import type { OutboundWebhookJob, PostTurnJob } from '@switchboard/contracts';
import type { Db } from '@switchboard/database';
import type { Logger, Metrics } from '@switchboard/observability';
import type { PriceOverrides, ProviderRegistry } from '@switchboard/providers';
import type { SqlTransactor } from '@switchboard/store';
import type { ArchivistModelNotes } from './archivist-models';
import type { SnapshotCache } from './archivist-snapshot';

/** What every post-turn hook receives: the hooks worker's connections and services. */
export interface HookContext {
  db: Db;
  /**
   * The store over the same pg pool (`sqlDbFor(poolOf(db), 'hooks', metrics)`), or, when the turn's
   * hooks run together (`shared`), their one open transaction (docs/adr/0039).
   */
  sql: SqlTransactor;
  /**
   * Set when `sql` is a transaction the job's other hooks share: a hook must not wait on anything
   * slow inside it (a model call). It throws `OutsideSharedTransaction` before writing instead, and
   * runs again on its own after that transaction commits.
   */
  shared?: boolean;
  logger: Logger;
  metrics: Metrics;
  /** Publishes a signed notification on `outbound-webhooks` (the completion-webhook hook's only output). */
  notify?: (job: Omit<OutboundWebhookJob, 'trace'>) => Promise<unknown>;
  /** The model providers (the archivist's summarization call). */
  models?: HookModels;
  /**
   * Publishes the archivist's session distillation (docs/adr/0032) on `post-turn`, `delayMs` from now,
   * deduplicated per session (`replace` + `keepLastIfActive`).
   */
  deferArchivist?: (job: Omit<PostTurnJob, 'trace'>, delayMs: number) => Promise<unknown>;
  /** One post-turn job's turn snapshot, shared by its hooks (read once, not once per hook). */
  snapshots?: SnapshotCache;
  /** The scoring hook's deployment settings (docs/adr/0062); without them, the defaults. */
  evaluation?: EvaluationDeps;
}

/** What the scoring hook takes from the deployment (docs/adr/0062). */
export interface EvaluationDeps {
  /** EVAL_DAILY_BUDGET_USD: a tenant's judges' daily budget when its settings name none. */
  dailyBudgetUsd: number;
  /** OUTBOUND_WEBHOOK_ALLOW_HOSTS: hosts a webhook scorer may reach although they resolve to private addresses. */
  allowHosts: ReadonlySet<string>;
}

/** What a hook run did; `deferred`: the archivist left the turn to its session's distillation. */
export type HookOutcome = 'written' | 'already_done' | 'skipped' | 'deferred';

/** What a hook that calls a model needs: the process's providers, built from its configuration. */
export interface HookModels {
  providers: ProviderRegistry;
  /**
   * What `hint:summarization` resolves to when the tenant has no route for it (DEFAULT_MODEL); the
   * archivist falls back to the agent's own model when it cannot distil (`archivistModels`).
   */
  defaultModel: string;
  /** The deployment's prices (MODEL_PRICES); a tenant's own `modelPrices` win by key. */
  prices?: PriceOverrides;
  /**
   * What this process learnt about the archivist's models (which cannot distil; which tenants were
   * warned): `PostTurnHooks` keeps one per process. Without it each run asks and warns afresh.
   */
  notes?: ArchivistModelNotes;
}

/**
 * Thrown by a hook in a shared transaction (`ctx.shared`) before it writes anything, when its work
 * would hold the transaction open on something slow: the job runs it again on its own afterwards.
 */
export class OutsideSharedTransaction extends Error {
  constructor(readonly hook: string) {
    super(`${hook} runs outside the shared transaction`);
  }
}
