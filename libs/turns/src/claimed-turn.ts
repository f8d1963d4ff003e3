import type { Span } from '@opentelemetry/api';
import { EventType } from '@switchboard/contracts';
import type { TurnLoad, TurnRow } from '@switchboard/store';
import { PostgresCheckpoints } from './checkpoints';
import { TurnAbort } from './control';
import type { SessionLease } from './lease';
import { LiveProgress } from './live-progress';
import type { RunnerResources } from './runner-options';
import { effectiveAgent, planTurn, type TurnPlan } from './turn-plan';

/** One claimed turn as every part of its run sees it: built once, passed whole. */
export interface ClaimedTurn {
  /** The runner's shared resources (store, engine, queues, options). */
  readonly r: RunnerResources;
  readonly load: TurnLoad;
  readonly turn: TurnRow;
  readonly lease: SessionLease;
  readonly plan: TurnPlan;
  readonly abort: TurnAbort;
  readonly checkpoints: PostgresCheckpoints;
  /** The live channel's progress for this turn (docs/adr/0015), closed when the run ends. */
  readonly live?: LiveProgress;
  readonly span: Span;
  /** When this run started (epoch ms), for the turn duration metric. */
  readonly startedAt: number;
}

/**
 * Opens a claimed turn: its plan, its abort and its checkpoints, and buffers `turn_started` (it
 * commits with the first checkpoint; the turn row is `running` already). A turn cancelled before
 * this claim (its worker died, or it was claimed as the cancel committed) is not started: the
 * engine only answers calls an earlier run left open and ends it cancelled.
 */
export async function openTurn(
  r: RunnerResources,
  load: TurnLoad,
  lease: SessionLease,
  span: Span,
): Promise<ClaimedTurn> {
  const startedAt = Date.now();
  const { turn } = load;
  // The session's overrides over the agent's model (docs/adr/0053): the route it names is that one.
  const agent = effectiveAgent(load);
  const plan = planTurn(load, {
    defaultModel: r.defaultModel,
    contextWindows: r.contextWindows,
    prices: r.prices,
    approvalTtlMs: r.approvalTtlMs,
    offered: r.tasks?.offered(agent, !!turn.taskId) ?? agent.tools,
    registered: r.tools.names(),
    now: startedAt,
  });
  const abort = new TurnAbort();
  // Every checkpoint's events go out live after it, and before it what a client should not wait
  // for: starts, and text as it streams (docs/adr/0015).
  const live = r.live ? new LiveProgress(r.live, turn.sessionId, turn.id, r.liveDeltaFlushMs) : undefined;
  const checkpoints = new PostgresCheckpoints({
    store: r.store,
    turn,
    lease,
    nextPosition: plan.nextPosition,
    historySeqs: plan.historySeqs,
    metrics: r.metrics,
    logger: r.logger,
    retryMs: r.checkpointRetryMs ?? 30_000,
    roundContexts: r.roundContexts ?? true,
    storedParts: r.storedParts,
    killSwitch: load.tenant.killSwitch,
    tenantCapUsd: load.tenant.capUsd,
    onCancelRequested: abort.cancel,
    live,
  });
  const { model } = plan.input;
  if (turn.cancelRequested) abort.cancel();
  else {
    await checkpoints.emit(EventType.TurnStarted, {
      seq: turn.seq,
      resumed: load.resumed,
      model,
      ...(model === agent.model ? {} : { route: agent.model }),
      // Its first run: which waiting reason of the turn before it the input matched (docs/adr/0057).
      ...(turn.continuation && turn.runCount === 1 ? { continuation: { ...turn.continuation } } : {}),
    });
    // The claim made it `running` (from queued: a new turn, or one resumed after its wait).
    if (turn.hasPushConfigs) r.onTaskState?.(turn, { status: 'running', key: `run${turn.runCount}` });
  }
  checkpoints.started(model, plan.newSystemPrompt);
  return { r, load, turn, lease, plan, abort, checkpoints, live, span, startedAt };
}
