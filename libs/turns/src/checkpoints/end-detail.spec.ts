import type { CheckpointResult, TurnDetailJson } from '@switchboard/store';
import { endDetail, LIVE_TURN_MAX_BYTES } from './postgres-checkpoints';

/** A finalisation's answer with the turn it read back (the fields `endDetail` looks at). */
function answer(row: Partial<TurnDetailJson> | null, o: Partial<CheckpointResult> = {}): CheckpointResult {
  return {
    applied: true,
    released: true,
    killSwitch: false,
    cancelRequested: false,
    closure: { workItemId: null, runtimePosture: 'awake', outcome: 'completed' },
    events: [],
    turn:
      row === null
        ? null
        : ({ id: 't1', status: 'completed', spawned: false, recalledRuns: null, ...row } as TurnDetailJson),
    ...o,
  };
}

describe('endDetail: what the end event says of the turn (docs/adr/0071)', () => {
  it('carries the row of a plain ended turn', () => {
    expect(endDetail(answer({ finalText: 'hi' }), false)).toEqual({
      row: expect.objectContaining({ id: 't1', finalText: 'hi', recalledRuns: null }),
    });
  });

  it('adds the recalled records the statement itself journaled, after the earlier runs', () => {
    const d = endDetail(
      answer(
        { recalledRuns: [[{ ref: 'a' }]] },
        {
          events: [
            {
              seq: 7,
              type: 'memory_recalled',
              turnId: 't1',
              data: { records: [{ ref: 'b' }] },
              createdAt: '',
            },
            { seq: 8, type: 'turn_completed', turnId: 't1', data: {}, createdAt: '' },
          ],
        },
      ),
      false,
    );
    expect(d).toEqual({ row: expect.objectContaining({ recalledRuns: [[{ ref: 'a' }], [{ ref: 'b' }]] }) });
  });

  it('says to read when the row is missing, the turn spawned tasks, or may have changed after the statement', () => {
    expect(endDetail(answer(null), false)).toEqual({ read: 'unavailable' });
    expect(endDetail(answer({ spawned: true }), false)).toEqual({ read: 'spawned' });
    // Tool calls written by the same statement: its read of them predates them.
    expect(endDetail(answer({}), true)).toEqual({ read: 'changed' });
    // The closure is left to the work-activation step, after the commit.
    expect(endDetail(answer({}, { closure: null }), false)).toEqual({ read: 'changed' });
  });

  it('says to read a row larger than a PUBLISH should carry', () => {
    expect(endDetail(answer({ finalText: 'x'.repeat(LIVE_TURN_MAX_BYTES) }), false)).toEqual({
      read: 'too_large',
    });
  });
});
