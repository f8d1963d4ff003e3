import type { Logger } from '@switchboard/observability';
import type { HeldLeaseBeat, TurnStore } from '@switchboard/store';
import { TurnAbort } from './control';
import type { SessionLease } from './lease';

/** Leases renewed per statement at most (a process holding more sends several, one after another). */
const BATCH = 5_000;

/** One running turn whose lease the keeper renews. */
export interface KeptLease {
  lease: SessionLease;
  turnId: string;
  abort: TurnAbort;
  /** An interjection waits for the turn. */
  interject: () => void;
}

interface Entry extends KeptLease {
  /** Renewals in a row that found the session under another lease of this process (not adopted yet). */
  ownedElsewhere: number;
}

/**
 * The leases of every turn one harness process runs, renewed together (docs/adr/0069): one
 * statement per interval (a third of the lease) on a connection of its own, whatever the number of
 * turns, instead of one statement per turn per interval on the pool every other statement of the
 * process waits for. Each renewal also reports a cancel request or a waiting interjection per turn
 * (docs/adr/0014), as the per-turn heartbeat did.
 *
 * A lease is lost when the session's lease is another owner's: that turn's run is aborted (its next
 * fenced write would fail anyway). A lease this process's own claim took over (the sweep freed it,
 * a job of this process claimed the session while the turn still ran here) is not lost: the runner
 * hands the new token to the running turn (`SessionLease.adopt`), so the turn is not run twice.
 *
 * `renewalLagMs` says how far the renewals are behind their schedule (a blocked loop, a slow
 * database): the runner stops claiming new turns well before it reaches the lease (`TurnPermits`).
 */
export class LeaseKeeper {
  private readonly held = new Map<SessionLease, Entry>();
  private timer?: NodeJS.Timeout;
  /** When the last renewal that succeeded was sent (ms, performance clock); undefined: none due. */
  private renewedAt?: number;
  private closed = false;
  private renewing = false;
  readonly intervalMs: number;

  constructor(
    private readonly o: {
      /** The store on the keeper's own connection (a pool of one), so renewals never queue behind turns. */
      store: TurnStore;
      owner: string;
      leaseMs: number;
      logger: Logger;
      /** Renewal interval (default a third of the lease, at least 100 ms). */
      intervalMs?: number;
      /** Told each renewal's duration and how many leases it carried. */
      observe?: (seconds: number, leases: number) => void;
    },
  ) {
    this.intervalMs = o.intervalMs ?? Math.max(100, Math.floor(o.leaseMs / 3));
  }

  /** Leases kept now. */
  get size(): number {
    return this.held.size;
  }

  /**
   * How late the renewals are (ms): the time since the last successful renewal was sent, beyond
   * the interval; 0 while nothing is held or they run on time.
   */
  renewalLagMs(now = performance.now()): number {
    if (this.held.size === 0 || this.renewedAt === undefined) return 0;
    return Math.max(0, now - this.renewedAt - this.intervalMs);
  }

  /**
   * Keeps a claimed session's lease from the claim until the returned stop is called (the drain
   * released it or lost it), whatever runs under it meanwhile: a process whose statements queue
   * for seconds between a claim and its turn's run still renews it. `turnId` is the claimed turn.
   */
  hold(lease: SessionLease, turnId: string): () => void {
    this.set({ lease, turnId, abort: new TurnAbort(), interject: () => undefined });
    return () => {
      this.held.delete(lease);
    };
  }

  /**
   * A running turn under a held lease (or one held by nothing else): its cancel, interjection and
   * lost lease reach it. The returned stop goes back to holding the lease alone until `hold`'s stop.
   */
  keep(k: KeptLease): () => void {
    const held = this.held.has(k.lease);
    this.set(k);
    return () => {
      if (this.held.get(k.lease)?.abort !== k.abort) return;
      if (held)
        this.set({ lease: k.lease, turnId: k.turnId, abort: new TurnAbort(), interject: () => undefined });
      else this.held.delete(k.lease);
    };
  }

  private set(k: KeptLease): void {
    // The lease was just taken (claimed with its full length): it is renewed with the next batch.
    if (this.held.size === 0) this.renewedAt = performance.now();
    this.held.set(k.lease, { ...k, ownedElsewhere: 0 });
    this.schedule(this.intervalMs);
  }

  close(): void {
    this.closed = true;
    if (this.timer) clearTimeout(this.timer);
  }

  /** One round of renewals now (exposed for tests); resolves when it is done. */
  async renewNow(): Promise<void> {
    const entries = [...this.held.values()];
    if (entries.length === 0) return;
    const sentAt = performance.now();
    let failed = false;
    for (let i = 0; i < entries.length; i += BATCH) {
      const part = entries.slice(i, i + BATCH);
      // The tokens as sent: a lease adopted meanwhile is judged at the next renewal.
      const tokens = part.map((e) => e.lease.token);
      try {
        const beats = await this.o.store.heartbeatMany(
          this.o.owner,
          this.o.leaseMs,
          part.map((e, j) => ({ sessionId: e.lease.sessionId, token: tokens[j], turnId: e.turnId })),
        );
        const bySession = new Map(beats.map((b) => [b.sessionId, b]));
        part.forEach((e, j) => {
          const beat = bySession.get(e.lease.sessionId);
          if (beat && e.lease.token === tokens[j]) this.apply(e, beat);
        });
      } catch (err) {
        failed = true;
        this.o.logger.warn({ err, leases: part.length }, 'lease renewal failed');
      }
    }
    this.o.observe?.((performance.now() - sentAt) / 1000, entries.length);
    if (!failed) this.renewedAt = sentAt;
  }

  private apply(e: Entry, beat: HeldLeaseBeat): void {
    if (!this.held.has(e.lease)) return;
    if (beat.held) {
      e.ownedElsewhere = 0;
      if (beat.cancelRequested) e.abort.cancel();
      else if (beat.interjection) e.interject();
      return;
    }
    // A claim of this process took the session while the turn still ran here: the runner adopts it.
    // Twice in a row without the adoption, the turn is another run's.
    if (beat.owner === this.o.owner && ++e.ownedElsewhere < 2) return;
    e.abort.leaseLost();
  }

  private schedule(ms: number): void {
    if (this.timer || this.renewing || this.closed) return;
    this.timer = setTimeout(() => {
      this.timer = undefined;
      this.renewing = true;
      void this.renewNow().finally(() => {
        this.renewing = false;
        if (this.held.size === 0) return;
        // After a failure, try again soon: a database back within the lease keeps every turn.
        this.schedule(this.renewalLagMs() > 0 ? Math.min(1_000, this.intervalMs) : this.intervalMs);
      });
    }, ms);
    this.timer.unref();
  }
}
