import type { TurnOutcome } from '@switchboard/engine';
import type { TurnRow } from '@switchboard/store';
import { isolated } from './finalisation-steps';
import type { RunnerResources } from './runner-options';

/** The longest result a child hands back to its parent (the parent never sees the child's transcript). */
export const HANDBACK_MAX_CHARS = 4000;

/**
 * A child turn's outcome as its task's end (seed 000 handback): `completed {result}` for a final
 * answer, `incomplete {reason}` for anything that stopped it short (a cap, the deadline, a breaker).
 */
export function taskEnd(outcome: Pick<TurnOutcome, 'status' | 'stopReason' | 'finalText'>): {
  status: 'completed' | 'failed' | 'cancelled';
  handback: Record<string, unknown>;
  output: string;
} {
  const output = outcome.finalText.slice(0, HANDBACK_MAX_CHARS);
  const status = outcome.status === 'waiting' ? 'failed' : outcome.status;
  const handback =
    outcome.status === 'completed' && outcome.stopReason === 'final_answer'
      ? { status: 'completed', result: output }
      : { status: 'incomplete', reason: outcome.stopReason, ...(output ? { partial: output } : {}) };
  return { status, handback, output };
}

/**
 * After a child turn's end committed (its task ended in that statement): its parent hears of it and
 * resumes if it waits for it (docs/adr/0024). A finalisation step; a failure is left to the tasks
 * sweep, which retries it.
 */
export async function handBack(
  r: Pick<RunnerResources, 'store' | 'logger' | 'tasks'>,
  turn: TurnRow,
): Promise<void> {
  const taskId = turn.taskId;
  if (!taskId) return;
  const err = await isolated(
    r,
    turn,
    'task_handback',
    () => r.tasks?.childEnded(turn.id) ?? Promise.resolve(),
  );
  if (err) r.logger.warn({ taskId }, 'parent not told yet; the tasks sweep retries');
}
