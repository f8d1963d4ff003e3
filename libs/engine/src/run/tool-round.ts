import type { ToolCallRequest } from '@switchboard/providers';
import { reflect, reflectionDue } from '../side-calls/reflect';
import type { TurnOutcome, Wait } from '../types';
import { planWaves } from '../waves';
import { CLIENT_TOOL_TIMEOUT, clientToolExpired } from './client-tools';
import { runToolCall, type ToolRun } from './tool-call';
import type { TurnRun } from './turn-run';

/** What a round's tool calls leave besides their answers: whether one failed, and the calls that wait. */
interface RoundCalls {
  failed: boolean;
  /** Calls of this round that wait for a decision or a task (docs/adr/0013): each gets its own wait. */
  waits: Wait[];
}

/**
 * The tool calls of the last round, in waves (seed 001 4e). Undefined when the loop goes on;
 * otherwise the run's outcome: the no-progress breaker halted it, or calls wait. After the calls,
 * a reflection when one is due, and `iteration_completed`.
 */
export async function runToolRound(
  run: TurnRun,
  pending: ToolCallRequest[],
): Promise<TurnOutcome | undefined> {
  const round: RoundCalls = { failed: false, waits: [] };
  // A replay turn (docs/adr/0054): the round's side-effecting calls matched to the original's
  // recorded ones in the model's order, before any of them runs.
  run.recorded?.assign(pending, (call) => run.isSideEffecting(call));
  for (const wave of planWaves(pending, run.tools, run.input.tools)) {
    if (run.signal.aborted) break;
    const halt = await runWave(run, wave, round);
    if (halt) return noProgress(run, halt);
  }
  // A client call whose wait expired was answered `client_tool_timeout`: the turn ends (docs/adr/0047).
  if (
    clientToolExpired(
      run,
      pending.map((c) => c.id),
    ) &&
    !run.signal.aborted
  )
    return clientTimeout(run);
  // A wait is an outcome, not an await: the runner persists the waits and frees the worker.
  if (round.waits.length > 0 && !run.signal.aborted) return waiting(run, round.waits);
  // Reflection (seed 001 4h): off unless the budget grants reflections.
  if (reflectionDue(run, round.failed)) await reflect(run);
  await run.cp.emit('iteration_completed', { iteration: run.rounds, costUsd: run.spentUsd });
  return undefined;
}

/**
 * One wave. Every call of it settles and is answered before a failure of one propagates. After a
 * wait, later side-effecting calls are held (unanswered) so effects keep the model's order.
 * Returns the breaker's summary when it halts the turn.
 */
async function runWave(
  run: TurnRun,
  wave: ToolCallRequest[],
  round: RoundCalls,
): Promise<string | undefined> {
  const hold = round.waits.length > 0;
  const settled = await Promise.allSettled(wave.map((call) => runToolCall(run, call, hold)));
  settled.forEach((r, i) => {
    if (r.status === 'fulfilled') take(run, round, wave[i], r.value);
  });
  const failed = settled.find((r): r is PromiseRejectedResult => r.status === 'rejected');
  if (failed) throw failed.reason;
  for (const r of settled) {
    if (r.status === 'fulfilled' && 'halt' in r.value && r.value.halt) return r.value.halt;
  }
  return undefined;
}

/** A settled call's part in the round: its answer joins the turn, or its wait the round's. */
function take(run: TurnRun, round: RoundCalls, call: ToolCallRequest, answer: ToolRun): void {
  if ('wait' in answer) {
    round.waits.push(answer.wait);
    return;
  }
  if ('held' in answer) return;
  run.messages.push({ role: 'tool', toolCallId: call.id, name: call.name, content: answer.content });
  run.toolCalls++;
  if (!answer.ok) round.failed = true;
}

function noProgress(run: TurnRun, summary: string): TurnOutcome {
  return run.outcome({
    status: 'failed',
    stopReason: 'no_progress',
    finalText: run.lastText(),
    failure: { kind: 'no_progress', category: 'runtime', message: summary, brief: summary },
  });
}

function waiting(run: TurnRun, waits: Wait[]): TurnOutcome {
  return run.outcome({
    status: 'waiting',
    stopReason: waitingStatus(waits),
    finalText: run.lastText(),
    waits,
  });
}

/**
 * The status a round's waits put the turn in: a person's decision first (its decision path resumes
 * only `awaiting_approval`; a client's answer resumes either), then the client's tools, then a child.
 */
export function waitingStatus(
  waits: readonly Wait[],
): 'awaiting_approval' | 'awaiting_client_tool' | 'awaiting_subagent' {
  if (waits.some((w) => w.kind === 'approval')) return 'awaiting_approval';
  if (waits.some((w) => w.kind === 'client_tool')) return 'awaiting_client_tool';
  return 'awaiting_subagent';
}

function clientTimeout(run: TurnRun): TurnOutcome {
  const message = 'the client did not send the results of its tool calls in time';
  return run.outcome({
    status: 'failed',
    stopReason: CLIENT_TOOL_TIMEOUT,
    finalText: run.lastText(),
    failure: {
      kind: CLIENT_TOOL_TIMEOUT,
      category: 'runtime',
      message,
      brief: `${message}; raise the agent's budgets.clientToolTimeoutMs or answer sooner`,
    },
  });
}
