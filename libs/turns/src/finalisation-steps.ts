import type { TurnRow } from '@switchboard/store';
import type { RunnerResources } from './runner-options';

/**
 * Runs one finalisation step isolated: a failure is logged, recorded on the turn
 * (`turns.finalisation_errors`), and returned; the turn's result stands.
 */
export async function isolated(
  r: Pick<RunnerResources, 'store' | 'logger'>,
  turn: Pick<TurnRow, 'id'>,
  step: string,
  fn: () => Promise<void>,
): Promise<Error | undefined> {
  try {
    await fn();
    return undefined;
  } catch (err) {
    const error = err instanceof Error ? err : new Error(String(err));
    r.logger.error({ err: error, turnId: turn.id, step }, 'finalisation step failed');
    const entry = { step, message: error.message.slice(0, 1000), at: new Date().toISOString() };
    await r.store
      .recordFinalisationError(turn.id, entry)
      .catch((e: unknown) =>
        r.logger.error({ err: e, turnId: turn.id, step }, 'could not record a finalisation failure'),
      );
    return error;
  }
}
