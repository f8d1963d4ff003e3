import type { CheckpointResult, TurnStore } from '@switchboard/store';

/** How old the kill switch a checkpoint returned may be before a stop-hook check reads it again. */
const KILL_SWITCH_MAX_AGE_MS = 1_000;

/** What the turn's signals start from: the claim's reading. */
export interface SignalsStart {
  killSwitch: boolean;
  tenantCapUsd?: number;
}

/**
 * The signals every checkpoint brings back to the running turn: the tenant's kill switch and
 * daily spend cap (docs/adr/0026) as the statement read them, and a cancel request (docs/adr/0014);
 * and whether an interjection waits (a control message or the heartbeat says so).
 */
export class TurnSignals {
  private kill: { value: boolean; at: number };
  private capUsd?: number;
  private interjection = false;

  constructor(
    private readonly store: TurnStore,
    private readonly tenantId: string,
    start: SignalsStart,
    /** Called when a checkpoint finds the turn's cancel requested. */
    private readonly onCancelRequested: () => void,
  ) {
    this.kill = { value: start.killSwitch, at: Date.now() };
    this.capUsd = start.tenantCapUsd;
  }

  /** The tenant's kill switch as the latest checkpoint saw it, read again when that is over a second old. */
  async killSwitch(): Promise<boolean> {
    if (Date.now() - this.kill.at > KILL_SWITCH_MAX_AGE_MS) {
      this.kill = { value: await this.store.killSwitch(this.tenantId), at: Date.now() };
    }
    return this.kill.value;
  }

  /** The kill switch as last read, without reading it again. */
  get lastKillSwitch(): boolean {
    return this.kill.value;
  }

  /**
   * What the turn may still spend under the tenant's daily cap as the latest checkpoint read it (the
   * cap less the tenant's other spend today); undefined: the tenant has no cap.
   */
  get tenantCapUsd(): number | undefined {
    return this.capUsd;
  }

  /** A committed checkpoint's answer. */
  observe(result: CheckpointResult): void {
    this.kill = { value: result.killSwitch, at: Date.now() };
    // A retried checkpoint that found its commit answers without the cap: the last value stands.
    if (result.applied && 'tenantCapUsd' in result) this.capUsd = result.tenantCapUsd;
    if (result.cancelRequested) this.onCancelRequested();
  }

  interjectionWaiting(): void {
    this.interjection = true;
  }

  /** Whether an interjection waits; asking clears it. */
  takeInterjection(): boolean {
    const waiting = this.interjection;
    this.interjection = false;
    return waiting;
  }
}
