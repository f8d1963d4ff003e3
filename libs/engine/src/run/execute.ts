import { ToolError, ToolWait, type ToolContext } from '@switchboard/tools';
import type { EmbeddingSpend } from '../context';
import type { ToolOutcome, Wait } from '../types';
import { bookEmbedding } from './embedding-spend';
import { boundDetails } from './result-bounds';
import type { Cleared, PreparedCall } from './prepared-call';
import { stoppedOutcome } from './tool-outcomes';
import type { TurnRun } from './turn-run';

/**
 * Runs a cleared call under its own signal: the turn's, or the call's timeout, whichever aborts
 * first. The write gate closes when the call is answered: whatever the tool still does after that
 * has no effect on the turn. A call that waits for a sub-agent task (`ToolWait`, docs/adr/0024)
 * yields a `task` wait: the turn waits as for an approval.
 */
export async function executeCall(
  run: TurnRun,
  c: PreparedCall,
  { tool, args }: Cleared,
  resumed: boolean,
): Promise<ToolOutcome | { wait: Wait }> {
  const timeout = new AbortController();
  const timer = setTimeout(
    () => timeout.abort(new DOMException(`tool timed out after ${tool.timeoutMs} ms`, 'TimeoutError')),
    tool.timeoutMs,
  );
  const callSignal = AbortSignal.any([run.signal, timeout.signal]);
  let open = true;
  const writeGate = { isOpen: () => open && !callSignal.aborted };
  const spent: EmbeddingSpend[] = [];
  const spend = (s: EmbeddingSpend) => void spent.push(s);
  try {
    return await executeBounded(
      () => tool.execute(args, toolContext(run, c, { signal: callSignal, resumed, writeGate, spend })),
      tool.timeoutMs,
      callSignal,
      timeout.signal,
    );
  } catch (err) {
    if (err instanceof ToolWait) return { wait: { kind: 'task', taskId: err.taskId, callId: c.call.id } };
    throw err;
  } finally {
    clearTimeout(timer);
    open = false;
    // What the call spent is spent whatever it answered; booked with the next checkpoint.
    for (const e of spent) await bookEmbedding(run, 'memory_search', e, c.call.id);
  }
}

/** What the tool sees of the turn and of this call. */
function toolContext(
  run: TurnRun,
  c: PreparedCall,
  call: Pick<ToolContext, 'signal' | 'resumed' | 'writeGate' | 'spend'>,
): ToolContext {
  const { tenantId, agentId, sessionId, turnId } = run.input;
  // The assistant message that asked for this call: its text is the round's text.
  const round = run.messages.find(
    (m) => m.role === 'assistant' && m.toolCalls.some((t) => t.id === c.call.id),
  );
  return {
    tenantId,
    agentId,
    sessionId,
    turnId,
    callId: c.call.id,
    idempotencyKey: c.meta.idempotencyKey,
    roundText: round?.role === 'assistant' ? round.content : '',
    ...call,
  };
}

/**
 * Runs a tool under its call signal: when that aborts (the call's timeout, or the turn stopping) the
 * call is answered at once, and the tool, which sees the same signal, is expected to stop.
 */
async function executeBounded(
  fn: () => Promise<unknown>,
  timeoutMs: number,
  callSignal: AbortSignal,
  timeoutSignal: AbortSignal,
): Promise<ToolOutcome> {
  let onAbort: (() => void) | undefined;
  // Whatever the tool answers once its signal has aborted (often the abort itself), the abort's cause wins.
  const aborted = () => (timeoutSignal.aborted ? new ToolTimeout(timeoutMs) : new TurnStopped());
  try {
    const result = await Promise.race([
      fn(),
      new Promise<never>((_, reject) => {
        onAbort = () => reject(aborted());
        if (callSignal.aborted) onAbort();
        else callSignal.addEventListener('abort', onAbort, { once: true });
      }),
    ]).catch((err: unknown) => {
      throw callSignal.aborted ? aborted() : err;
    });
    if (callSignal.aborted) throw aborted();
    return serialisable(result);
  } catch (err) {
    return failureOf(err);
  } finally {
    if (onAbort) callSignal.removeEventListener('abort', onAbort);
  }
}

/** The result becomes a transcript entry and a JSON column: it must survive JSON. */
function serialisable(result: unknown): ToolOutcome {
  try {
    JSON.stringify(result);
  } catch (err) {
    return {
      ok: false,
      kind: 'invalid_result',
      message: `tool returned a value that cannot be serialised: ${errorMessage(err)}`,
      retryable: false,
    };
  }
  return { ok: true, result: result ?? null };
}

/** What a thrown error answers the call with; a sub-agent wait is no outcome and is thrown on. */
function failureOf(err: unknown): ToolOutcome {
  // The caller turns a wait into the round's `task` wait.
  if (err instanceof ToolWait) throw err;
  if (err instanceof ToolError) {
    const field = (err.details as { field?: unknown } | undefined)?.field;
    return {
      ok: false,
      kind: err.kind,
      message: err.message,
      ...(err.recoveryHint ? { hint: err.recoveryHint } : {}),
      ...(typeof field === 'string' ? { field } : {}),
      retryable: err.retryable,
      ...(err.details === undefined ? {} : { details: boundDetails(err.details) }),
    };
  }
  if (err instanceof ToolTimeout) {
    return {
      ok: false,
      kind: 'timeout',
      message: err.message,
      hint: 'try a smaller request',
      retryable: true,
    };
  }
  if (err instanceof TurnStopped) return stoppedOutcome('the turn was stopped while this call ran');
  return { ok: false, kind: 'execution_failed', message: errorMessage(err), retryable: false };
}

function errorMessage(err: unknown): string {
  if (err instanceof Error) return err.message;
  if (typeof err === 'string') return err;
  return `non-error value thrown: ${String(err)}`;
}

class TurnStopped extends Error {
  constructor() {
    super('turn stopped');
  }
}

class ToolTimeout extends Error {
  constructor(ms: number) {
    super(`tool timed out after ${ms} ms`);
  }
}
