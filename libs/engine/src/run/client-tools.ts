import { newId } from '@switchboard/contracts';
import type { Wait } from '../types';
import type { ToolOutcome } from '../types';
import type { PreparedCall } from './prepared-call';
import { stoppedOutcome, type Failure } from './tool-outcomes';
import type { TurnRun } from './turn-run';

/**
 * Client-side tools (docs/adr/0047): tools a request declared and the client runs. The engine offers
 * them to the model beside the agent's own; a call to one never executes here. Without the client's
 * result the call yields a `client_tool` wait (as an approval does, docs/adr/0013); a resumed run
 * answers it with the client's output, recorded like any tool result; an expired wait answers
 * `client_tool_timeout` and the round then ends the turn.
 */

/** The `client_tool_timeout` result of a call whose wait expired: the turn ends after this round. */
export const CLIENT_TOOL_TIMEOUT = 'client_tool_timeout';

/**
 * The client-tool gate: the client's stored answer, its expiry, or a wait. Replaces every later gate
 * (the client's tools are the client's to allow: no blocked list, no approval).
 */
export function clientToolGate(run: TurnRun, c: PreparedCall): ToolOutcome | { wait: Wait } {
  const { call } = c;
  const result = run.input.clientResults?.find((r) => r.callId === call.id);
  if (!result) {
    return {
      wait: {
        kind: 'client_tool',
        waitId: newId(),
        callId: call.id,
        tool: call.name,
        arguments: call.arguments,
      },
    };
  }
  if (result.status === 'answered') return { ok: true, result: result.output ?? '' };
  if (result.status === 'cancelled')
    return stoppedOutcome('the turn was cancelled while the client ran this call');
  const timeout: Failure = {
    ok: false,
    kind: CLIENT_TOOL_TIMEOUT,
    message: `the client did not answer the call to "${call.name}" in time`,
    retryable: false,
  };
  return timeout;
}

/** Whether a call of the round was answered by its wait's expiry: the turn then ends `client_tool_timeout`. */
export function clientToolExpired(run: TurnRun, callIds: readonly string[]): boolean {
  return (run.input.clientResults ?? []).some((r) => r.status === 'expired' && callIds.includes(r.callId));
}
