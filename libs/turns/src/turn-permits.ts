import { monitorEventLoopDelay } from 'node:perf_hooks';

/** The loop-delay sampler's timer interval (ms). */
const RESOLUTION_MS = 10;

/**
 * How many turns one harness process runs at once, adapted to its event loop (docs/adr/0029). A
 * job's loop takes a permit before it chooses what to run and gives it back after, so when the
 * process is saturated the next free permit goes to a fresh, fair choice (a tenant arriving behind
 * another's backlog runs next) instead of the process interleaving ever more turns: each turn's
 * wall time grows with every turn sharing the loop, and a small tenant's turn would share it with all
 * of a large tenant's. Model calls that wait on the network keep the loop idle, so the limit grows
 * back to HARNESS_CONCURRENCY for real providers; CPU-bound turns (an instant model, heavy tools)
 * hold it near what the loop can serve.
 *
 * While every permit is used and the loop's mean delay stays under `targetDelayMs`, the limit grows
 * by a step that starts at one and doubles with each window in a row whose delay was under a quarter
 * of the target (+1, +2, +4, …: at most doubling the limit per window, so a backed-off process is
 * back at a ceiling of 500 in about nine quiet windows, ~2 s); a window between a quarter of the
 * target and the target grows it by an eighth (at least one: closer to the target, probe gently; a
 * CPU-bound backlog's small limit still grows one at a time). A window over the target cuts it to
 * ×0.75 of the permits in use and the step starts again at one — once per drain: while more permits
 * are in use than the limit (the last cut has not taken effect, slow turns still hold theirs), a
 * window over the target cuts nothing more; nor while fewer than half the permits are in use (the
 * delay is not the turns', and an idle process stays ready for a burst; docs/adr/0069). `overloaded` (the runner's lease renewals
 * running late) counts as a window over the target. Plain TypeScript: `TurnRunner` owns one.
 */
export class TurnPermits {
  private inUse = 0;
  private readonly waiting: (() => void)[] = [];
  private readonly sampleDelay: () => number;
  private readonly stopSampling: () => void;
  private readonly timer: NodeJS.Timeout;
  /** The next increase while the loop stays quiet (doubles per quiet window, back to 1 otherwise). */
  private step = 1;
  limit: number;

  constructor(
    private readonly o: {
      /** The most turns at once (HARNESS_CONCURRENCY): the job slots. */
      max: number;
      /** The fewest (default 2). */
      min?: number;
      /** The loop delay the limit aims under, mean over each window (default 10 ms). */
      targetDelayMs?: number;
      /** How often the limit is adjusted (default 250 ms). */
      windowMs?: number;
      /**
       * The loop's mean delay (ms) since the last call, which starts a new window (default: a
       * `monitorEventLoopDelay` histogram). Tests inject their own.
       */
      loopDelay?: () => number;
      /**
       * Another sign the process is past its capacity (the runner's: its lease renewals run late,
       * docs/adr/0069): while true, each window cuts the limit as a window over the target does.
       */
      overloaded?: () => boolean;
    },
  ) {
    this.limit = o.max;
    if (o.loopDelay) {
      this.sampleDelay = o.loopDelay;
      this.stopSampling = () => undefined;
    } else {
      const histogram = monitorEventLoopDelay({ resolution: RESOLUTION_MS });
      histogram.enable();
      this.sampleDelay = () => {
        // The histogram's samples are the timer's whole interval: its resolution is no delay.
        const meanMs = histogram.mean / 1e6 - RESOLUTION_MS;
        histogram.reset();
        return meanMs;
      };
      this.stopSampling = () => histogram.disable();
    }
    this.timer = setInterval(() => this.adjust(), o.windowMs ?? 250);
    this.timer.unref();
  }

  /** Permits taken now (the operator's process list shows them against `limit`). */
  get used(): number {
    return this.inUse;
  }

  /** Waits for a permit; call `release` once the turn (or the choice that found nothing) is over. */
  async acquire(): Promise<void> {
    if (this.inUse < this.limit && !this.o.overloaded?.()) {
      this.inUse++;
      return;
    }
    await new Promise<void>((resolve) => this.waiting.push(resolve));
  }

  /**
   * A permit now if one is free and nobody waits for one, else none (the Postgres intake, ADR 0075:
   * it takes only spare permits, never queues ahead of a job's loop).
   */
  tryAcquire(): boolean {
    if (this.waiting.length > 0 || this.inUse >= this.limit || this.o.overloaded?.()) return false;
    this.inUse++;
    return true;
  }

  release(): void {
    const next = this.inUse <= this.limit && !this.o.overloaded?.() ? this.waiting.shift() : undefined;
    // The permit passes straight to the next waiter (inUse unchanged), unless the limit shrank or
    // the process is overloaded.
    if (next) next();
    else this.inUse--;
  }

  /** One window's adjustment from the loop's mean delay (ms). Exposed for tests. */
  adjustFor(meanDelayMs: number): void {
    const min = Math.min(this.o.min ?? 2, this.o.max);
    const target = this.o.targetDelayMs ?? 10;
    if (meanDelayMs > target) {
      this.step = 1;
      // The last cut has not taken effect yet (more permits in use than the limit): the turns above
      // it have not ended, so this window's delay says nothing of the limit. One cut per drain, as
      // TCP cuts once per round trip; else a few busy windows while slow turns hold their permits
      // compound into a limit at the floor (docs/adr/0069).
      if (this.inUse > this.limit) return;
      // Fewer than half the permits in use: the delay is not the turns' (other processes on the
      // machine, a GC, a burst's admission); backing off would only slow the next burst's ramp.
      if (this.inUse * 2 < this.limit) return;
      // Cut from what runs: a limit above the permits in use would stop nothing.
      this.limit = Math.max(min, Math.floor(this.inUse * 0.75));
      return;
    }
    // Close to the target: probe gently, an eighth of the limit per window (the step starts again).
    const quiet = meanDelayMs <= target / 4;
    if (!quiet) this.step = 1;
    // Permits lie unused: the limit is not what holds turns back; it stays (and a quiet window's step).
    if (this.inUse < this.limit || this.limit >= this.o.max) return;
    const increase = quiet ? Math.min(this.step, this.limit) : Math.max(1, Math.floor(this.limit / 8));
    this.limit = Math.min(this.o.max, this.limit + increase);
    if (quiet) this.step *= 2;
    this.grant();
  }

  /** Permits under the limit go to waiters (freed by an increase, or held back while overloaded). */
  private grant(): void {
    while (this.inUse < this.limit) {
      const next = this.waiting.shift();
      if (!next) break;
      this.inUse++;
      next();
    }
  }

  close(): void {
    clearInterval(this.timer);
    this.stopSampling();
    for (const w of this.waiting.splice(0)) w();
  }

  private adjust(): void {
    const meanMs = this.sampleDelay();
    if (this.o.overloaded?.()) {
      this.adjustFor(Infinity);
      return;
    }
    if (Number.isFinite(meanMs)) this.adjustFor(meanMs);
    this.grant();
  }
}
