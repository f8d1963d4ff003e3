import type { ToolCallRequest } from '@switchboard/providers';
import { canonicalJson } from '../no-progress';
import type { RecordedCall, ReplayInput } from '../types';
import { parseArguments } from './arguments';

/**
 * A replay turn's recorded side effects (docs/adr/0054): the original turn's completed
 * side-effecting calls, each able to answer one call of the replay — the first call, in the model's
 * order, with the same tool name and canonically equal arguments (object keys sorted, so `{"a":1,"b":2}`
 * equals `{"b":2,"a":1}`). A matched call is answered from the recorded result and never executed;
 * an unmatched side-effecting call waits for a person (`replay_unrecorded_side_effect`).
 *
 * The match is decided again by every run from what is committed: the recorded calls an earlier run
 * already answered from (`used`, read from this turn's tool_calls rows) are out, and the round's
 * unanswered calls are matched in order before any of them runs. A call's match and its answer are
 * one row written by one checkpoint, with nothing executed in between; so whatever a crash cut short,
 * a resumed run either finds the answer committed or matches the call again from the same state.
 */
export class RecordedEffects {
  /** Recorded calls no call of this turn was answered from yet, in the original's order. */
  private readonly unused: RecordedCall[];
  /** The recorded call each matched call of this run is answered from, by call id. */
  private readonly matched = new Map<string, RecordedCall>();
  /** Calls already matched (or found to match nothing) by this run. */
  private readonly decided = new Set<string>();

  constructor(replay: ReplayInput) {
    const used = new Set(replay.used);
    this.unused = replay.recorded.filter((r) => !used.has(r.id));
  }

  /**
   * Matches a round's calls, in the model's order, before any of them runs: each side-effecting call
   * (`sideEffecting`) takes the first unused recorded call with its name and arguments. A call is
   * matched once per run; read-only calls and calls whose arguments are not JSON match nothing.
   */
  assign(calls: readonly ToolCallRequest[], sideEffecting: (call: ToolCallRequest) => boolean): void {
    for (const call of calls) {
      if (this.decided.has(call.id)) continue;
      this.decided.add(call.id);
      if (!sideEffecting(call)) continue;
      const args = parseArguments(call.arguments);
      if (!args.ok) continue;
      const key = canonicalJson(args.value);
      const i = this.unused.findIndex((r) => r.name === call.name && canonicalJson(r.arguments) === key);
      if (i >= 0) this.matched.set(call.id, this.unused.splice(i, 1)[0]);
    }
  }

  /** The recorded call that answers this call, when it matched one. */
  answerFor(callId: string): RecordedCall | undefined {
    return this.matched.get(callId);
  }
}
