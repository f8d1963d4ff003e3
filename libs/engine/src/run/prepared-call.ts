import type { ToolCallRequest } from '@switchboard/providers';
import type { ToolDefinition } from '@switchboard/tools';
import type { ToolCallMeta } from '../types';
import type { TurnRun } from './turn-run';

/**
 * A tool call as the steps of `tool-call.ts` share it: parsed once (`prepareCall`), then through the
 * tool gates (`gate.ts`) and executed (`execute.ts`). A leaf: it imports none of those steps.
 */

/** A call's arguments, parsed once: the value, or why they are not JSON. */
export type ParsedArguments = { ok: true; value: unknown } | { ok: false; error: string };

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
  let announced = false;
  return {
    call,
    tool,
    args,
    // What the checkpoints record of a call: arguments as parsed (or raw when they are not JSON).
    meta: {
      call,
      sideEffect: tool?.sideEffect ?? 'read_only',
      arguments: args.ok ? args.value : { _raw: call.arguments },
      idempotencyKey: `${run.input.turnId}:${call.id}`,
    },
    announce: async () => {
      if (announced) return;
      announced = true;
      await run.cp.emit('tool_call_started', { callId: call.id, name: call.name });
    },
  };
}

function parseArguments(raw: string): ParsedArguments {
  try {
    return { ok: true, value: raw.trim() === '' ? {} : (JSON.parse(raw) as unknown) };
  } catch (err) {
    return { ok: false, error: (err as Error).message };
  }
}
