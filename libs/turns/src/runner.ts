import { isEnded, type TraceCarrier, type TurnJob } from '@switchboard/contracts';
import { LeaseLostError, poolOf } from '@switchboard/database';
import type { TurnOutcome } from '@switchboard/engine';
import type { ControlMessage } from '@switchboard/live';
import { withSpan } from '@switchboard/observability';
import { SqlDb, TurnStore, type CheckpointResult, type TurnLoad } from '@switchboard/store';
import { startHeartbeat, type RunningTurn } from './control';
import { failPermanently } from './failure';
import { enqueueHooks, finaliseTurn } from './finalise';
import { SessionLease } from './lease';
import { pauseTurn } from './pause';
import type { RunnerResources, TurnRunnerOptions } from './runner-options';
import { openTurn, type TurnContext } from './turn-context';
import { turnStopHooks } from './turn-plan';

/**
 * `done`: the job's turn is finished (or unknown). `busy`: another worker holds the session and will
 * run the job's turn (its holder drains the session and releases only when no turn is left), so the
 * job can complete. `later`: this worker stopped with turns left (its per-lease bound, a lost
 * lease): the job looks again shortly.
 */
export type HandleResult = 'done' | 'busy' | 'later';

/**
 * Runs turns from Postgres for a turn job: claims the session lease together with the session's
 * oldest unfinished turn, runs the session's turns in admission order, checkpoints its progress so a
 * killed worker's turn resumes without duplicates, and finalises (docs/adr/0010 lists the statements).
 */
export class TurnRunner {
  /** What every part of a turn's run shares (docs/adr/0010 lists the store's statements). */
  private readonly r: RunnerResources;
  /** This process's running turns by session: where control messages land (docs/adr/0014). */
  private readonly running = new Map<string, RunningTurn>();

  constructor(o: TurnRunnerOptions) {
    const store =
      o.store ??
      new TurnStore(
        new SqlDb(poolOf(o.db), {
          component: 'harness',
          transactions: o.metrics.dbTransactions,
          statements: o.metrics.dbStatements,
        }),
      );
    this.r = { ...o, store };
  }

  async handle(job: TurnJob): Promise<HandleResult> {
    const lease = new SessionLease(this.r.store, job.sessionId, this.r.leaseMs);
    const claim = (turnId: string) =>
      this.r.store.claimNext({
        sessionId: job.sessionId,
        turnId,
        tenantId: job.tenantId,
        owner: this.r.workerId,
        lease: lease,
      });
    const first = await claim(job.turnId);
    // Workers derive the tenant from the database; a job naming another tenant or session is ignored.
    if (first.ownStatus === undefined) {
      this.r.logger.warn({ turnId: job.turnId }, 'turn job for an unknown turn; dropping');
      return 'done';
    }
    // A redelivered job of a finished turn enqueues its hooks again (their ids make it a no-op if they are).
    if (isEnded(first.ownStatus)) {
      await this.enqueueHooks({ ...job, id: job.turnId, status: first.ownStatus });
      // A child whose worker died after its end committed: its parent hears of it now (idempotent).
      if (first.ownTaskId) await this.r.tasks?.childEnded(job.turnId);
    }
    if (!first.leased) return first.pending && !isEnded(first.ownStatus) ? 'busy' : 'done';

    let released = false;
    // The tenant was paused (docs/adr/0030): the claim left the session's turns queued and ran none.
    let paused = first.paused === true;
    try {
      const max = this.r.maxTurnsPerLease ?? 20;
      let next = first.next;
      for (let ran = 0; next && ran < max; ran++) {
        const turn = next.turn;
        const result = await this.runOne(
          next,
          lease,
          turn.id === job.turnId ? undefined : (turn.traceContext as TraceCarrier),
        );
        // Released with the final commit: no turn was admitted after this one, nothing is left.
        if (result.released) {
          released = true;
          return 'done';
        }
        if (ran + 1 >= max) break;
        const again = await claim(job.turnId);
        if (!again.leased) {
          // Nothing left (a turn behind it was cancelled, or delivered as an interjection): the lease
          // is still ours and is released below.
          if (!again.pending) break;
          throw new LeaseLostError(job.sessionId);
        }
        paused = again.paused === true;
        next = again.next;
      }
    } catch (err) {
      if (err instanceof LeaseLostError) {
        this.r.logger.warn({ sessionId: job.sessionId }, 'session lease lost; another worker continues');
        released = true;
        return 'later';
      }
      throw err;
    } finally {
      // A database blip must not keep the session locked until the lease expires.
      if (!released) {
        released = await lease.releaseOrRetry((err, final) =>
          final
            ? this.r.logger.error(
                { err, sessionId: job.sessionId },
                'lease release failed; it expires on its own',
              )
            : this.r.logger.warn({ err, sessionId: job.sessionId }, 'lease release failed; retrying'),
        );
      }
    }
    // A waiting session (an approval, a sub-agent task) runs nothing until the decision resumes it
    // with a job of its own (docs/adr/0013); looked for after the release, like the turns left behind.
    if (await this.r.store.sessionWaiting(job.sessionId)) return 'done';
    // A paused tenant's turns wait for the resume, which wakes each session with a job of its own;
    // read again after the release, so a resume that came meanwhile is not missed.
    if (paused && (await this.r.store.killSwitch(job.tenantId))) return 'done';
    // Released with turns perhaps left (the per-lease bound, or one another run finished first): looked
    // for after the release, so a turn whose job saw this worker's lease is never left behind.
    return (await this.r.store.nextUnfinished(job.sessionId)) ? 'later' : 'done';
  }

  /**
   * A control message for this worker (docs/adr/0014): a cancel aborts the turn (it stops at its next
   * safe point); an interjection is delivered at the next safe point before a provider call. A
   * message for a turn this process no longer runs is dropped: the request is in Postgres.
   */
  control(m: ControlMessage): void {
    const r = this.running.get(m.sessionId);
    if (!r) return;
    if (m.type === 'cancel' && m.turnId === r.turnId) r.cancel();
    if (m.type === 'interject') r.interject();
  }

  /** Marks a turn failed when its job has used every attempt (a bug or a dead dependency). */
  failPermanently(turnId: string, error: Error): Promise<void> {
    return failPermanently(this.r, turnId, error);
  }

  /** Enqueues the post-turn hooks of an ended turn (a no-op for a turn that has not ended). */
  enqueueHooks(turn: { id: string; tenantId: string; status: string }): Promise<void> {
    return enqueueHooks(this.r, turn);
  }

  /** One claimed turn: opened, run by the engine, then paused on its waits or finalised. */
  private async runOne(
    load: TurnLoad,
    lease: SessionLease,
    parent?: TraceCarrier,
  ): Promise<CheckpointResult> {
    const turn = load.turn;
    const attributes = {
      'switchboard.turn.id': turn.id,
      'switchboard.session.id': turn.sessionId,
      'switchboard.tenant.id': turn.tenantId,
    };
    return withSpan('turn', { parent, attributes }, async (span) => {
      const ctx = await openTurn(this.r, load, lease, span);
      const outcome = await this.run(ctx);
      if (ctx.control.lostLease) throw new LeaseLostError(turn.sessionId);
      if (outcome.status === 'waiting') return pauseTurn(ctx, outcome);
      return finaliseTurn(ctx, outcome);
    });
  }

  /**
   * The engine's run under control (docs/adr/0014): reachable by control messages, its lease kept by
   * the heartbeat, which also finds cancel requests and interjections.
   */
  private async run(ctx: TurnContext): Promise<TurnOutcome> {
    const { r, turn, checkpoints, control } = ctx;
    const agent = ctx.load.agent;
    const interject = () => checkpoints.interjectionWaiting();
    this.running.set(turn.sessionId, { turnId: turn.id, cancel: control.cancel, interject });
    const stopHeartbeat = startHeartbeat({
      store: r.store,
      lease: ctx.lease,
      turnId: turn.id,
      control,
      interject,
      logger: r.logger,
    });
    try {
      // The agent's MCP tools (docs/adr/0023), resolved once the heartbeat keeps the lease: a
      // server's listing may take up to its timeout.
      const extraTools =
        r.turnTools && agent.tools.some((n) => n.includes('__'))
          ? await r.turnTools({ tenantId: turn.tenantId, agentId: agent.id, tools: agent.tools })
          : undefined;
      const stopHooks = turnStopHooks(checkpoints.signals, Number(turn.childrenCostUsd ?? 0), r.stopHooks);
      return await r.engine.run({ ...ctx.plan.input, stopHooks, extraTools }, checkpoints, control.signal);
    } finally {
      stopHeartbeat();
      ctx.live?.close();
      if (this.running.get(turn.sessionId)?.turnId === turn.id) this.running.delete(turn.sessionId);
    }
  }
}
