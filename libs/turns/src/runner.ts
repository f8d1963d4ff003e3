import { randomUUID } from 'node:crypto';
import pg from 'pg';
import { isEnded, type TraceCarrier, type TurnJob } from '@switchboard/contracts';
import { LeaseLostError, poolOf } from '@switchboard/database';
import type { TurnOutcome } from '@switchboard/engine';
import type { ControlMessage } from '@switchboard/live';
import { withSpan } from '@switchboard/observability';
import {
  SqlDb,
  TurnStore,
  type CheckpointResult,
  type ClaimResult,
  type TurnLoad,
  type TurnRow,
} from '@switchboard/store';
import type { RunningTurn } from './control';
import { LeaseKeeper } from './lease-keeper';
import { failPermanently } from './failure';
import { enqueueHooks, finaliseTurn } from './finalise';
import { SessionLease } from './lease';
import { persistWaits } from './wait';
import type { RunnerResources, TurnRunnerOptions } from './runner-options';
import { openTurn, type ClaimedTurn } from './claimed-turn';
import { StoredParts } from './checkpoints/round-context';
import { TurnPermits } from './turn-permits';
import { turnStopHooks } from './turn-plan';
import { requeueTurn } from './requeue';

/**
 * `done`: nothing runnable was left when the job last chose (or its own turn had run). `again`: the
 * job ran its bound of turns with work perhaps left: it goes back to the queue at once. `later`: it
 * lost a lease: it looks again shortly.
 */
export type HandleResult = 'done' | 'again' | 'later';

/**
 * The share of the lease the renewals may run late before the process stops claiming (ADR 0069):
 * a sixth (5 s of the default 30 s), so a lease is renewed with a third of it still left.
 */
const RENEWAL_LAG_LIMIT = 1 / 6;

/** How many ended turns of other jobs a runner remembers (`TurnRunner.endedHere`). */
const ENDED_HERE_MAX = 10_000;

/**
 * Fair choices (`pickAndClaim`) one process makes at once, its jobs' and its intake's together
 * (ADR 0075): under half the pool of 10, so a burst's thousands of choices wait here instead of in
 * the pool's queue, ahead of the statements of the turns they already claimed.
 */
const CHOICES_AT_ONCE = 4;

/** Loops of the Postgres intake choosing at once while the last choice found work (ADR 0075). */
const INTAKE_CHOOSERS = 2;

/** What one choice of the intake came to: a claimed session draining, a lost race, nothing runnable. */
type Pulled = 'claimed' | 'missed' | 'none';

/**
 * What one session's drain ended with: the turns it ran; whether it gave the session back with work
 * left because another tenant waits (`yielded`); a lost lease.
 */
type Drained = { ran: number; yielded?: boolean; lostLease?: boolean };

/**
 * Runs turns from Postgres for a turn job. A job is a wake-up (docs/adr/0003): the worker chooses
 * the next session fairly across tenants, under their caps (docs/adr/0029), whatever turn the job
 * named; claims the session lease together with the session's next turn; runs the session's turns in
 * drain order, checkpointing so a killed worker's turn resumes without duplicates, and finalises
 * (docs/adr/0010 lists the statements); then chooses again, until nothing is runnable.
 */
export class TurnRunner {
  /** What every part of a turn's run shares (docs/adr/0010 lists the store's statements). */
  private readonly r: RunnerResources;
  /** This process's running turns by session: where control messages land (docs/adr/0014). */
  private readonly running = new Map<string, RunningTurn>();
  /** How many turns this process runs at once, adapted to its event loop (ADR 0029). */
  private readonly permits?: TurnPermits;
  /**
   * Turns of other jobs this process ran to their end, hooks enqueued (oldest first, at most
   * ENDED_HERE_MAX): their own job, when it reaches this process, has nothing left to wake (`handle`).
   */
  private readonly endedHere = new Set<string>();
  /** Every running turn's lease, renewed in one statement per interval on a connection of its own (ADR 0069). */
  private readonly keeper: LeaseKeeper;
  /** The keeper's own pool (one connection), when the runner made it. */
  private readonly leasePool?: pg.Pool;
  /** Fair choices running now, and those waiting for one of the CHOICES_AT_ONCE (`choose`). */
  private choosing = 0;
  /** CHOICES_AT_ONCE with the intake on; unbounded without it (as before ADR 0075, see there). */
  private readonly choiceLimit: number;
  private readonly choiceWaiters: (() => void)[] = [];
  /** The Postgres intake's poll (ADR 0075); undefined when it is off. */
  private intakeTimer?: NodeJS.Timeout;
  /** False once the process drains or closes: the intake claims nothing more. */
  private intakeOpen = true;
  /** The intake's choosing loops now (at most INTAKE_CHOOSERS). */
  private intakeLoops = 0;
  /** The sessions the intake claimed, draining now: shutdown waits for them as for active jobs. */
  private readonly pulled = new Set<Promise<void>>();
  /** The intake's last choice claimed something: more may be runnable when a pulled drain ends. */
  private backlog = false;

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
    this.r = { ...o, store, storedParts: new StoredParts() };
    let leaseStore = o.leaseStore ?? (o.store ? store : undefined);
    if (!leaseStore) {
      // Renewals never wait behind the turns' statements for one of the pool's connections.
      const { connectionString, idleTimeoutMillis } = poolOf(o.db).options;
      this.leasePool = new pg.Pool({ connectionString, idleTimeoutMillis, max: 1 });
      this.leasePool.on('error', () => undefined);
      leaseStore = new TurnStore(
        new SqlDb(this.leasePool, {
          component: 'harness-lease',
          transactions: o.metrics.dbTransactions,
          statements: o.metrics.dbStatements,
        }),
      );
    }
    this.keeper = new LeaseKeeper({
      store: leaseStore,
      owner: o.workerId,
      leaseMs: o.leaseMs,
      logger: o.logger,
    });
    // Claiming stops while the renewals run late: well before a lease is lost (ADR 0069).
    const renewalLagLimitMs = o.leaseMs * RENEWAL_LAG_LIMIT;
    this.permits = o.maxRunningTurns
      ? new TurnPermits({
          max: o.maxRunningTurns,
          targetDelayMs: o.loopDelayTargetMs,
          overloaded: () => this.keeper.renewalLagMs() > renewalLagLimitMs,
        })
      : undefined;
    // Without a ceiling (no permits) the process has no notion of spare capacity: jobs only.
    this.choiceLimit = this.permits && o.intakePollMs ? CHOICES_AT_ONCE : Infinity;
    if (this.permits && o.intakePollMs) {
      this.intakeTimer = setInterval(() => this.poll(), o.intakePollMs);
      this.intakeTimer.unref();
    }
  }

  /**
   * This process's load, for its heartbeat (GET /v1/admin/processes): turns running, permits in use
   * and the adaptive limit (docs/adr/0029), and the most it runs at once (HARNESS_CONCURRENCY).
   */
  load(): { turnsInFlight: number; permitsInUse: number; permitLimit: number; maxConcurrency: number } {
    const max = this.r.maxRunningTurns ?? 0;
    return {
      turnsInFlight: this.running.size,
      permitsInUse: this.permits?.used ?? 0,
      permitLimit: this.permits?.limit ?? max,
      maxConcurrency: max,
    };
  }

  /** Stops the adaptive limit's sampler and lets waiting loops go (the process is shutting down). */
  close(): void {
    void this.stopIntake();
    this.permits?.close();
    this.keeper.close();
    void this.leasePool?.end().catch(() => undefined);
  }

  async handle(job: TurnJob): Promise<HandleResult> {
    // Its turn was run to its end here by another job's loop, which enqueued its hooks, or another
    // job's loop runs it here now: every other unfinished turn has a job of its own, so this wake-up
    // has nothing to choose for (docs/adr/0029, 0076).
    if (this.ranHere(job)) return 'done';
    const max = this.r.maxTurnsPerJob ?? 20;
    let ran = 0;
    let missed = 0;
    // The job's own turn has ended, or its session was drained: the job may complete once nothing
    // else obliges it to choose again.
    let ownDone = false;
    for (let first = true; ; first = false) {
      // A permit first: when the process is saturated, the next one to free goes to a fresh choice.
      await this.permits?.acquire();
      try {
        const step = await this.step(job, first, ownDone, ran, max);
        // A job that claimed beyond its own turn found a backlog: spare permits choose too.
        if (step.claimedOther) this.wake(INTAKE_CHOOSERS);
        if (step.ownDone) ownDone = true;
        ran = step.ran;
        if (step.missed) missed++;
        if (step.result) return step.result;
        if (missed >= 5) return 'done';
      } finally {
        this.permits?.release();
      }
    }
  }

  /**
   * One choice of `handle`'s loop (or of the intake's, without a job) and the drain of what it
   * claimed; `result` ends the job. `onClaimed` is told once the claim holds its lease, before the
   * drain (the intake chooses again meanwhile).
   */
  private async step(
    job: TurnJob | undefined,
    first: boolean,
    ownDoneBefore: boolean,
    ranBefore: number,
    max: number,
    onClaimed?: (turn: TurnRow) => void,
  ): Promise<{
    result?: HandleResult;
    ownDone: boolean;
    ran: number;
    missed?: boolean;
    claimedOther?: boolean;
  }> {
    let ownDone = ownDoneBefore;
    let ran = ranBefore;
    const token = randomUUID();
    const picked = await this.choose(() =>
      this.r.store.pickAndClaim({
        // Until the job's own turn is run, its session is its tenant's first choice.
        own: ownDone ? undefined : job,
        owner: this.r.workerId,
        lease: { token, ms: this.r.leaseMs },
        defaultCap: this.r.defaultMaxConcurrentTurns ?? 0,
      }),
    );
    if (first && job) {
      // Workers derive the tenant from the database; a job naming another tenant or session is
      // ignored (it still wakes this worker: whatever it chose is runnable work).
      if (picked.ownStatus === undefined) {
        this.r.logger.warn({ turnId: job.turnId }, 'turn job for an unknown turn');
      } else if (isEnded(picked.ownStatus)) {
        // A redelivered job of a finished turn enqueues its hooks again (their ids make it a no-op if they are).
        await this.enqueueHooks({ ...job, id: job.turnId, status: picked.ownStatus });
        // A child whose worker died after its end committed: its parent hears of it now (idempotent).
        if (picked.ownTaskId) await this.r.tasks?.childEnded(job.turnId);
      }
      ownDone = picked.ownStatus === undefined || isEnded(picked.ownStatus);
    }
    // Nothing runnable: every unfinished turn is held by a lease, waiting, its tenant or agent
    // paused, or over its tenant's cap, and whoever frees it chooses again (the holder, a decision's
    // job, a resume).
    if (!picked.claimed) return { result: 'done', ownDone, ran };
    const { claim, sessionId } = picked.claimed;
    const lease = new SessionLease(this.r.store, sessionId, this.r.leaseMs, token);
    // The turn claimed is one this process still runs (its lease expired, was freed and this claim
    // took it): the running turn takes the new token and goes on, rather than a second run calling
    // the model again (docs/adr/0069).
    const here = this.running.get(sessionId);
    if (claim.leased && here && claim.next?.turn.id === here.turnId) {
      here.adopt(token);
      this.r.logger.warn(
        { sessionId, turnId: here.turnId },
        'session lease renewed late; the running turn keeps it',
      );
      if (sessionId === job?.sessionId) ownDone = true;
      return { ownDone, ran, missed: true };
    }
    // Another worker took the session (it runs its turns) or the tenant's last slot (its holder
    // chooses again when it lets go) between the choice and the claim: choose again, a few times.
    if (!claim.leased) return { ownDone, ran, missed: true };
    // Renewed from the claim on, not only while a turn runs: under load the statements between a
    // claim and its turn's run may queue for longer than the lease (docs/adr/0069).
    const unhold = claim.next ? this.keeper.hold(lease, claim.next.turn.id) : () => undefined;
    if (claim.next) onClaimed?.(claim.next.turn);
    const claimedOther = !!job && sessionId !== job.sessionId;
    let drained: Drained;
    try {
      drained = await this.drain(job, lease, claim, max - ran);
    } finally {
      unhold();
    }
    ran += drained.ran;
    if (drained.lostLease) return { result: 'later', ownDone, ran, claimedOther };
    if (ran >= max) return { result: 'again', ownDone, ran, claimedOther };
    if (sessionId === job?.sessionId && !drained.yielded) ownDone = true;
    // While this job drained another session, another job's loop here ran (or runs) its own turn: no
    // new choice is owed for it (docs/adr/0076). Before, the job chose again and mostly found nothing.
    if (!ownDone && job && this.ranHere(job)) ownDone = true;
    // The job's own session is drained, no other tenant waits and this one has no cap: every other
    // unfinished turn has a job of its own that will choose. Otherwise the worker that gave back a
    // session, or freed a capped slot, or has not run its own turn yet, chooses again.
    if (ownDone && !drained.yielded && !picked.claimed.capped)
      return { result: 'done', ownDone, ran, claimedOther };
    return { ownDone, ran, claimedOther };
  }

  /** Runs a fair choice once fewer than CHOICES_AT_ONCE run (see there). */
  private async choose<T>(f: () => Promise<T>): Promise<T> {
    if (this.choosing < this.choiceLimit) this.choosing++;
    else await new Promise<void>((resolve) => this.choiceWaiters.push(resolve));
    try {
      return await f();
    } finally {
      // The slot passes straight to the next waiter.
      const next = this.choiceWaiters.shift();
      if (next) next();
      else this.choosing--;
    }
  }

  /**
   * The Postgres intake (ADR 0075). BullMQ's worker, after one empty fetch while jobs are active,
   * fetches again only when an active job ends (taskforcesh/bullmq#2290), and a harness job lasts its
   * turn's whole stream: a burst admitted while turns stream would wait for them. Jobs are only
   * wake-ups (ADR 0029), so while turns run here and permits are spare, the process also chooses in
   * Postgres without a job: the same fair choice and claim, the drain in the background holding the
   * permit. The turn's job, when it comes, finds its turn running (it chooses on, or completes) or
   * ended here (`endedHere`). A killed process's pulled turns are found by the reconciler's lease
   * sweep, as a killed job's are.
   */
  private poll(): void {
    // An idle process needs no poll: its BullMQ worker blocks on the queue and fetches at once.
    if (this.permits && this.permits.used > 0) this.wake(1);
  }

  /** Starts intake loops, up to `loops` in all, each holding a spare permit. */
  private wake(loops: number): void {
    if (!this.intakeTimer || !this.intakeOpen || !this.permits) return;
    while (this.intakeLoops < Math.min(loops, INTAKE_CHOOSERS) && this.permits.tryAcquire()) {
      this.intakeLoops++;
      void this.intake();
    }
  }

  /** One intake loop, holding a permit: chooses until nothing is runnable or no permit is spare. */
  private async intake(): Promise<void> {
    let missed = 0;
    try {
      for (;;) {
        const pulled = await this.pull();
        if (pulled === 'none') {
          this.backlog = false;
          return;
        }
        if (pulled === 'missed' && ++missed >= 5) return;
        if (pulled === 'claimed') {
          this.backlog = true;
          this.wake(INTAKE_CHOOSERS);
        }
        if (!this.intakeOpen || !this.permits?.tryAcquire()) return;
      }
    } finally {
      this.intakeLoops--;
    }
  }

  /**
   * One choice without a job, on a permit taken for it: answers once the claim holds its lease (the
   * drain goes on, and gives the permit back when it ends) or once nothing was claimed.
   */
  private pull(): Promise<Pulled> {
    return new Promise<Pulled>((answer) => {
      let claimedTurn: TurnRow | undefined;
      const drain = this.step(undefined, false, true, 0, this.r.maxTurnsPerJob ?? 20, (turn) => {
        claimedTurn = turn;
        answer('claimed');
      })
        .then(
          (step) => {
            if (!claimedTurn) return answer(step.missed ? 'missed' : 'none');
            // The session was given back with work left, or the tenant's capped slot freed, or the
            // bound of turns was reached: as a job's loop would, choose again.
            return step.result === 'done' && !this.backlog ? undefined : 'again';
          },
          async (err: unknown) => {
            // A turn that fails to run is the job's to retry and, at its last attempt, to fail
            // (`failPermanently`): the intake leaves it alone for a lease's time (its lease is
            // released, so the next choice here would pick it again at once) and wakes its job (the
            // reconciler would, later).
            const turn = claimedTurn;
            this.r.logger.error(
              { err, turnId: turn?.id },
              'turn claimed by the intake failed; its job retries it',
            );
            this.pauseIntake();
            answer('none');
            if (turn && this.r.turnsQueue)
              await requeueTurn(this.r.turnsQueue, turn, 'requeue turn').catch(() => undefined);
            return undefined;
          },
        )
        .then((again) => {
          this.permits?.release();
          if (again) this.wake(1);
        })
        .finally(() => this.pulled.delete(drain));
      this.pulled.add(drain);
    });
  }

  /** The intake claims nothing for a lease's time (a pulled turn failed: its job takes over). */
  private pauseIntake(): void {
    if (!this.intakeOpen) return;
    this.intakeOpen = false;
    setTimeout(() => {
      if (this.intakeTimer) this.intakeOpen = true;
    }, this.r.leaseMs).unref();
  }

  /** Stops the intake; a graceful shutdown waits for the sessions it claimed, as for active jobs. */
  stopIntake(): Promise<void> {
    this.intakeOpen = false;
    clearInterval(this.intakeTimer);
    this.intakeTimer = undefined;
    return this.drainPulled();
  }

  private async drainPulled(): Promise<void> {
    while (this.pulled.size > 0) await Promise.allSettled([...this.pulled]);
  }

  /**
   * Runs a claimed session's turns in drain order until none is left, its bound is reached, or
   * another tenant has work waiting (the session is given back and the job chooses again), then
   * releases the lease unless the last commit did.
   */
  private async drain(
    job: TurnJob | undefined,
    lease: SessionLease,
    claimed: ClaimResult,
    bound: number,
  ): Promise<Drained> {
    let released = false;
    let releasedByCommit = false;
    let ran = 0;
    let yielded = false;
    try {
      let claim = claimed;
      while (claim.next && ran < bound) {
        const turn = claim.next.turn;
        const own = turn.id === job?.turnId;
        const result = await this.runOne(
          claim.next,
          lease,
          own ? undefined : (turn.traceContext as TraceCarrier),
        );
        ran++;
        if (!own && result.ended) this.rememberEnded(turn.id);
        // Released with the final commit: no turn was admitted after this one, nothing is left.
        if (result.released) {
          released = releasedByCommit = true;
          break;
        }
        // Others wait (seen at the claim, or by the turn's last checkpoint): the session goes back, to
        // be chosen again fairly (docs/adr/0029).
        if (claim.contended || result.contended) {
          yielded = true;
          break;
        }
        if (ran >= bound) break;
        const again = await this.r.store.claimNext({
          sessionId: lease.sessionId,
          turnId: turn.id,
          tenantId: turn.tenantId,
          owner: this.r.workerId,
          lease,
        });
        if (!again.leased) {
          // Nothing left (a turn behind it was cancelled, or delivered as an interjection): the lease
          // is still ours and is released below.
          if (!again.pending) break;
          throw new LeaseLostError(lease.sessionId);
        }
        claim = again;
      }
    } catch (err) {
      if (err instanceof LeaseLostError) {
        this.r.logger.warn({ sessionId: lease.sessionId }, 'session lease lost; another worker continues');
        return { ran, lostLease: true };
      }
      throw err;
    } finally {
      // A database blip must not keep the session locked until the lease expires.
      if (!released) released = await this.release(lease);
    }
    // Released here rather than with the last commit: a turn admitted meanwhile saw the lease and
    // left it to this holder, so the session is chosen again if anything is left in it.
    if (!yielded && !releasedByCommit && (await this.r.store.nextUnfinished(lease.sessionId))) yielded = true;
    return { ran, yielded };
  }

  /** Releases a lease; a failure is logged and the lease expires on its own. */
  private release(lease: SessionLease): Promise<boolean> {
    return lease.releaseOrRetry((err, final) =>
      final
        ? this.r.logger.error(
            { err, sessionId: lease.sessionId },
            'lease release failed; it expires on its own',
          )
        : this.r.logger.warn({ err, sessionId: lease.sessionId }, 'lease release failed; retrying'),
    );
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

  /**
   * Whether the job's turn ended here in another job's loop (forgotten once asked: a redelivery of the
   * job chooses as any job does), or another job's loop runs it here now (its end enqueues its hooks).
   */
  private ranHere(job: TurnJob): boolean {
    return this.endedHere.delete(job.turnId) || this.running.get(job.sessionId)?.turnId === job.turnId;
  }

  /** Remembers a turn of another job that ended here (see `endedHere`), forgetting the oldest past the bound. */
  private rememberEnded(turnId: string): void {
    this.endedHere.add(turnId);
    if (this.endedHere.size > ENDED_HERE_MAX) this.endedHere.delete(this.endedHere.values().next().value!);
  }

  /**
   * One claimed turn: opened, run by the engine, then its waits persisted or finalised; its last
   * checkpoint, and `ended` once it ended and its hooks were enqueued.
   */
  private async runOne(
    load: TurnLoad,
    lease: SessionLease,
    parent?: TraceCarrier,
  ): Promise<CheckpointResult & { ended?: boolean }> {
    const turn = load.turn;
    // The GenAI semantic conventions' agent span: the session is the conversation.
    const attributes = {
      'gen_ai.operation.name': 'invoke_agent',
      'gen_ai.agent.id': load.agent.id,
      'gen_ai.agent.name': load.agent.name,
      'gen_ai.conversation.id': turn.sessionId,
      'switchboard.turn.id': turn.id,
      'switchboard.session.id': turn.sessionId,
      'switchboard.tenant.id': turn.tenantId,
    };
    return withSpan(`invoke_agent ${load.agent.name}`, { parent, attributes }, async (span) => {
      const ctx = await openTurn(this.r, load, lease, span);
      const outcome = await this.run(ctx);
      if (ctx.abort.lostLease) throw new LeaseLostError(turn.sessionId);
      if (outcome.status === 'waiting') return persistWaits(ctx, outcome);
      // Returned only once the end committed, the parent heard of it and the hooks were enqueued.
      return { ...(await finaliseTurn(ctx, outcome)), ended: true };
    });
  }

  /**
   * The engine's run under control (docs/adr/0014): reachable by control messages, its lease kept by
   * the heartbeat, which also finds cancel requests and interjections.
   */
  private async run(ctx: ClaimedTurn): Promise<TurnOutcome> {
    const { r, turn, checkpoints, abort } = ctx;
    const agent = ctx.load.agent;
    const interject = () => checkpoints.interjectionWaiting();
    this.running.set(turn.sessionId, {
      turnId: turn.id,
      cancel: abort.cancel,
      interject,
      adopt: (token) => ctx.lease.adopt(token),
    });
    const stopHeartbeat = this.keeper.keep({ lease: ctx.lease, turnId: turn.id, abort, interject });
    try {
      // The agent's MCP tools (docs/adr/0023), resolved once the heartbeat keeps the lease: a
      // server's listing may take up to its timeout.
      const extraTools =
        r.turnTools && agent.tools.some((n) => n.includes('__'))
          ? await r.turnTools({ tenantId: turn.tenantId, agentId: agent.id, tools: agent.tools })
          : undefined;
      const stopHooks = turnStopHooks(checkpoints.signals, Number(turn.childrenCostUsd ?? 0), r.stopHooks);
      return await r.engine.run({ ...ctx.plan.input, stopHooks, extraTools }, checkpoints, abort.signal);
    } finally {
      stopHeartbeat();
      ctx.live?.close();
      if (this.running.get(turn.sessionId)?.turnId === turn.id) this.running.delete(turn.sessionId);
    }
  }
}
