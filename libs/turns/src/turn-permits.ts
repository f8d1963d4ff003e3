import { monitorEventLoopDelay, type IntervalHistogram } from 'node:perf_hooks';

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
 * Additive increase while the loop's mean delay stays under `targetDelayMs` and every permit is
 * used; multiplicative decrease when it goes over. Plain TypeScript: `TurnRunner` owns one.
 */
export class TurnPermits {
  private inUse = 0;
  private readonly waiting: (() => void)[] = [];
  private readonly histogram: IntervalHistogram;
  private readonly timer: NodeJS.Timeout;
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
    },
  ) {
    this.limit = o.max;
    this.histogram = monitorEventLoopDelay({ resolution: RESOLUTION_MS });
    this.histogram.enable();
    this.timer = setInterval(() => this.adjust(), o.windowMs ?? 250);
    this.timer.unref();
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
    if (meanDelayMs > (this.o.targetDelayMs ?? 10)) {
      this.limit = Math.max(min, Math.floor(this.limit * 0.75));
    } else if (this.inUse >= this.limit && this.limit < this.o.max) {
      this.limit++;
      // A permit freed by the increase goes to a waiter.
      const next = this.waiting.shift();
      if (next) {
        this.inUse++;
        next();
      }
    }
  }

  close(): void {
    clearInterval(this.timer);
    this.histogram.disable();
    for (const w of this.waiting.splice(0)) w();
  }

  private adjust(): void {
    // The histogram's samples are the timer's whole interval: its resolution is no delay.
    const meanMs = this.histogram.mean / 1e6 - RESOLUTION_MS;
    this.histogram.reset();
    if (Number.isFinite(meanMs)) this.adjustFor(meanMs);
  }
}
