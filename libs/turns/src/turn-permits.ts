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
 * target and the target grows it by one (closer to the target, probe gently: a CPU-bound backlog's
 * windows seldom come in quiet runs). A window over the target cuts it ×0.75 and the step starts
 * again at one. Plain TypeScript: `TurnRunner` owns one.
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
    if (this.inUse < this.limit) {
      this.inUse++;
      return;
    }
    await new Promise<void>((resolve) => this.waiting.push(resolve));
  }

  release(): void {
    const next = this.inUse <= this.limit ? this.waiting.shift() : undefined;
    // The permit passes straight to the next waiter (inUse unchanged), unless the limit shrank.
    if (next) next();
    else this.inUse--;
  }

  /** One window's adjustment from the loop's mean delay (ms). Exposed for tests. */
  adjustFor(meanDelayMs: number): void {
    const min = Math.min(this.o.min ?? 2, this.o.max);
    const target = this.o.targetDelayMs ?? 10;
    if (meanDelayMs > target) {
      this.limit = Math.max(min, Math.floor(this.limit * 0.75));
      this.step = 1;
      return;
    }
    // Close to the target: probe gently, one permit per window (the step starts again).
    const quiet = meanDelayMs <= target / 4;
    if (!quiet) this.step = 1;
    // Permits lie unused: the limit is not what holds turns back; it stays (and a quiet window's step).
    if (this.inUse < this.limit || this.limit >= this.o.max) return;
    this.limit = Math.min(this.o.max, this.limit + Math.min(this.step, this.limit));
    if (quiet) this.step *= 2;
    // Permits freed by the increase go to waiters.
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
    if (Number.isFinite(meanMs)) this.adjustFor(meanMs);
  }
}
