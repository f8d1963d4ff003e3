import type { StoredParts } from './checkpoints/round-context';
import type { Queue } from 'bullmq';
import type { Db } from '@switchboard/database';
import type { CancelCause } from '@switchboard/contracts';
import type { StopHook, TurnEngine, TurnOutcome } from '@switchboard/engine';
import type { LivePublisher } from '@switchboard/live';
import type { Logger, Metrics } from '@switchboard/observability';
import type { PriceOverrides } from '@switchboard/providers';
import type { CheckpointResult, TurnRow, TurnStore } from '@switchboard/store';
import type { ToolDefinition, ToolRegistry } from '@switchboard/tools';

export interface TurnRunnerOptions {
  db: Db;
  /** The turn's statements (docs/adr/0010); by default over `db`'s pg pool, counted as `harness`. */
  store?: TurnStore;
  /**
   * Where the running turns' leases are renewed, one statement per interval (docs/adr/0069); by
   * default a pool of one connection of its own (`store` when one is given).
   */
  leaseStore?: TurnStore;
  engine: TurnEngine;
  tools: ToolRegistry;
  postTurnQueue: Queue;
  /**
   * How long an ended turn's post-turn job waits for other turns that end in this process to share it
   * (HOOKS_BATCH_WINDOW_MS, docs/adr/0070); 0 or unset: each turn's job alone, at once.
   */
  postTurnBatchWindowMs?: number;
  /** Where a wake-up job goes when a turn failed for good and its session has more turns waiting. */
  turnsQueue?: Queue;
  logger: Logger;
  metrics: Metrics;
  /** Identifies this process in session leases. */
  workerId: string;
  leaseMs: number;
  /** Custom stop hooks every turn checks between rounds, after the built-in ones. */
  stopHooks?: StopHook[];
  /**
   * The most turns this process runs at once (HARNESS_CONCURRENCY): the ceiling of its adaptive
   * limit (`TurnPermits`, docs/adr/0029). Absent: no limit beyond the queue's job slots.
   */
  maxRunningTurns?: number;
  /**
   * How often a process with turns running and permits spare chooses in Postgres without a job
   * (HARNESS_INTAKE_POLL_MS, docs/adr/0075); needs `maxRunningTurns`. 0 or absent: only jobs bring turns.
   */
  intakePollMs?: number;
  /** The event-loop delay the adaptive limit aims under, mean per window (default 10 ms). */
  loopDelayTargetMs?: number;
  /** Turns one job runs (across the sessions it chooses) before it lets other jobs in (default 20). */
  maxTurnsPerJob?: number;
  /**
   * The most turns a tenant may run at once across every harness worker when it sets no
   * `maxConcurrentTurns` of its own (TENANT_MAX_CONCURRENT_TURNS; 0 or absent: no cap). docs/adr/0029.
   */
  defaultMaxConcurrentTurns?: number;
  /** What a `hint:<route>` resolves to when the tenant has no route for it (the deployment's DEFAULT_MODEL). */
  defaultModel: string;
  /** Context windows (tokens) by model ref, over the built-in table: for models it does not know. */
  contextWindows?: Record<string, number>;
  /** The deployment's prices (MODEL_PRICES) over the maintained table; a tenant's own prices win by key. */
  prices?: PriceOverrides;
  /** Extra finalisation steps (seed 001 stage 6 "turn end" callbacks), each isolated, run after the built-in ones. */
  finalisationSteps?: FinalisationStep[];
  /**
   * Told when a claimed turn starts running (its run `run<runCount>`) and when that run's wait has
   * committed (`wait<runCount>`: awaiting approval or the client's tools); each key names one state
   * transition of the turn. For A2A push notifications of a task's intermediate states (docs/adr/0037);
   * the end is the post-turn hooks'. Not awaited: a failure is the observer's to log.
   */
  onTaskState?: (turn: TurnRow, state: TaskStateChange) => void;
  /** How long a checkpoint write retries transient database errors before the job fails (default 30 s). */
  checkpointRetryMs?: number;
  /**
   * Record each model round's exact context with it (ROUND_CONTEXTS, docs/adr/0045; default true).
   * False: no hashing and no rows, the timeline's rounds say `contextRecorded: false`.
   */
  roundContexts?: boolean;
  /** How long an approval waits for a decision (APPROVAL_TTL_MS); a tenant's approvalTtlMs wins. */
  approvalTtlMs?: number;
  /**
   * The live channel (libs/live): every checkpoint's events go out on it after the commit, a round's
   * start and its streamed text before (docs/adr/0015). Never fails a turn.
   */
  live?: LivePublisher;
  /** How often a streaming round's text is published at most (LIVE_DELTA_FLUSH_MS, default 30 ms). */
  liveDeltaFlushMs?: number;
  /**
   * Sub-agent tasks (docs/adr/0024, libs/subagents): told after a child turn ended (its task row ended
   * in the same statement) and after a turn began waiting on a child (a task wait), so the parent resumes once its
   * children have ended. Never called for turns that neither run a task nor wait for one.
   */
  tasks?: TaskWaits;
  /**
   * Tools resolved for one turn (an agent's MCP tools, docs/adr/0023); called only when the agent
   * names a `server__tool`, so a turn with built-in tools only makes no extra query.
   */
  turnTools?: (q: { tenantId: string; agentId: string; tools: string[] }) => Promise<ToolDefinition[]>;
}

/** What the runner tells the sub-agent side; each call is idempotent and safe to repeat. */
export interface TaskWaits {
  /** A child turn ended: journal `subagent_completed` on the parent and resume a parent waiting for it. */
  childEnded(childTurnId: string): Promise<void>;
  /** A turn began waiting on its children (task waits): resume it now if they all ended meanwhile. */
  parentWaiting(turnId: string, taskIds: string[]): Promise<void>;
  /**
   * A turn of this session ended with task results still to rejoin it (its end did not record the
   * plain closure): the ended async tasks rejoin as `task_result` messages now (docs/adr/0057).
   */
  rejoinSession?(sessionId: string): Promise<unknown>;
  /**
   * The tools an agent is offered: its own, without the delegation tools for a worker-tier agent, and
   * `ask_user` for a child turn (`child`).
   */
  offered(agent: { tier?: string; tools: string[] }, child?: boolean): string[];
  /**
   * A turn ended at its deadline or budget (docs/adr/0055): its sub-agents' child turns still open
   * are cancelled with that reason. Returns how many.
   */
  stopChildren?(tenantId: string, turnId: string, cause: CancelCause): Promise<number>;
}

/** One finalisation step: its failure is logged and recorded on the turn, never lost with the turn. */
export interface FinalisationStep {
  name: string;
  /** `committed`: the essential finalisation's answer (its `closure` says what the turn's end recorded). */
  run(turn: TurnRow, outcome: TurnOutcome, committed: CheckpointResult): Promise<void>;
}

/** A turn's move into a state a client may be told of: running, or waiting on someone outside. */
export interface TaskStateChange {
  status: 'running' | 'awaiting_approval' | 'awaiting_client_tool';
  /** Unique per transition of the turn: `run<runCount>` or `wait<runCount>` (a run waits at most once). */
  key: string;
}

/**
 * What every part of the runner shares (one object, built once per runner): the options with the
 * turn store resolved.
 */
export interface RunnerResources extends Omit<TurnRunnerOptions, 'store'> {
  store: TurnStore;
  /** The context parts this process has seen committed (docs/adr/0045), shared by its turns. */
  storedParts?: StoredParts;
}
