/** Why a turn's run was aborted: a cancel request, or its lease lost (the engine adds `deadline`). */
export const CANCELLED = 'cancelled';
export const LEASE_LOST = 'lease_lost';

/** A turn this process runs, as control messages reach it (docs/adr/0014). */
export interface RunningTurn {
  turnId: string;
  cancel(): void;
  interject(): void;
  /** Takes over a claim's token for the same turn, made by this process (docs/adr/0069). */
  adopt(token: string): void;
}

/**
 * A running turn's abort signal and why it fired (not the gateway's `TurnSteering`, which asks for
 * the cancel): a control message, a checkpoint or the heartbeat that finds a cancel
 * request stops the turn at its next safe point (docs/adr/0014); a heartbeat that finds the lease
 * lost stops it too.
 */
export class TurnAbort {
  private readonly controller = new AbortController();

  get signal(): AbortSignal {
    return this.controller.signal;
  }

  /** Stops the run at its next safe point (once; a lost lease is not overwritten). */
  readonly cancel = (): void => {
    if (!this.controller.signal.aborted) this.controller.abort(CANCELLED);
  };

  leaseLost(): void {
    this.controller.abort(LEASE_LOST);
  }

  /** The run was stopped because another worker holds the session now. */
  get lostLease(): boolean {
    return this.controller.signal.aborted && this.controller.signal.reason === LEASE_LOST;
  }

  /** The run was stopped by a cancel request (its reason goes into turn_cancelled). */
  get cancelled(): boolean {
    return this.controller.signal.reason === CANCELLED;
  }
}
