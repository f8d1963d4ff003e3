import type { ToolCallRequest } from '@switchboard/providers';
import type { ToolDefinition } from '@switchboard/tools';
import type { ToolCallMeta } from '../types';
import { parseArguments, type ParsedArguments } from './arguments';
import type { TurnRun } from './turn-run';

/**
 * A tool call as the steps of `tool-call.ts` share it: parsed once (`prepareCall`), then through the
 * tool gates (`gate.ts`) and executed (`execute.ts`). A leaf: it imports none of those steps.
 */

export type { ParsedArguments } from './arguments';

/** One call of the round, parsed once, with what the checkpoints record of it. */
export interface PreparedCall {
  call: ToolCallRequest;
  /** Its tool, when the turn may call it. */
  tool: ToolDefinition | undefined;
  args: ParsedArguments;
  meta: ToolCallMeta;
  /** Journals `tool_call_started`, once: when the call runs or is answered. */
  announce(): Promise<void>;
}

/** A call the tool gates let through: its tool and its arguments as the tool's schema parsed them. */
export interface Cleared {
  tool: ToolDefinition;
  args: unknown;
}

/** A call of the round parsed once; `announce` journals its start the first time it is called. */
export function prepareCall(run: TurnRun, call: ToolCallRequest): PreparedCall {
  const tool = run.toolFor(call);
  const args = parseArguments(call.arguments);
  // What the checkpoints record of a call: arguments as parsed (or raw when they are not JSON).
  const meta: ToolCallMeta = {
    call,
    sideEffect: tool?.sideEffect ?? 'read_only',
    arguments: args.ok ? args.value : { _raw: call.arguments },
    idempotencyKey: `${run.input.turnId}:${call.id}`,
  };
  let announced = false;
  return {
    call,
    tool,
    args,
    meta,
    announce: async () => {
      if (announced) return;
      announced = true;
      // A replay's call answered from the original's recorded result says so (docs/adr/0054).
      const replayed = meta.replayedFromToolCallId;
      await run.cp.emit('tool_call_started', {
        callId: call.id,
        name: call.name,
        ...(replayed ? { replayed: true, replayedFromToolCallId: replayed } : {}),
      });
    },
  };
}
