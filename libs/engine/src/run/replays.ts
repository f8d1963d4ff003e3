import type { ToolCallRequest } from '@switchboard/providers';
import type { ToolDefinition } from '@switchboard/tools';
import { fingerprint } from '../no-progress';
import type { ToolOutcome } from '../types';

/**
 * The duplicate/replay gate's memory (seed 001 4g): an identical read-only call is answered from
 * its result within one round; an identical side-effecting call is never executed twice in a turn.
 */
export class Replays {
  private readonly round = new Map<string, ToolOutcome>();
  private readonly turn = new Map<string, ToolOutcome>();

  /** The result an identical earlier call got, when it may stand in for running this one. */
  find(tool: ToolDefinition, call: ToolCallRequest): ToolOutcome | undefined {
    return this.scope(tool).get(fingerprint(call));
  }

  /** A successful call: an identical one later is answered from this result. */
  remember(tool: ToolDefinition, call: ToolCallRequest, outcome: ToolOutcome): void {
    this.scope(tool).set(fingerprint(call), outcome);
  }

  /** A new model round: read-only results are read again. */
  newRound(): void {
    this.round.clear();
  }

  private scope(tool: ToolDefinition): Map<string, ToolOutcome> {
    return tool.sideEffect === 'read_only' ? this.round : this.turn;
  }
}
