import { decideClosure } from './closure';

/** The closure decision (seed 002 "Closure Decision"): one outcome per ended turn, from its facts. */
describe('decideClosure', () => {
  const facts = {
    status: 'completed',
    work_item_id: null,
    lifecycle: 'active' as const,
    asleep: false,
    sleeping_until: null,
    current_id: null,
    current_runnable: false,
    queued_id: null,
    subject_state: null,
    subject_blocked: false,
    subject_needs_input: false,
  };
  const item = '01a21cd2-a0e8-726e-b115-bd762303dd81';

  it('failed and cancelled turns are failed, whatever the work', () => {
    for (const status of ['failed', 'cancelled']) {
      expect(decideClosure({ ...facts, status, current_id: item, current_runnable: true })).toEqual({
        outcome: 'failed',
        workItemId: null,
        runtimePosture: 'awake',
      });
    }
  });

  it('a runnable current item is continuable, continue_active', () => {
    expect(
      decideClosure({ ...facts, current_id: item, current_runnable: true, queued_id: 'q' }),
    ).toMatchObject({
      outcome: 'continuable',
      workSignal: { workItemId: item, status: 'active', reactivationMode: 'continue_active' },
    });
  });

  it('runnable queued work is continuable, activate_queued (focus is not moved)', () => {
    expect(decideClosure({ ...facts, queued_id: item })).toMatchObject({
      outcome: 'continuable',
      workSignal: { workItemId: item, status: 'queued', reactivationMode: 'activate_queued' },
    });
  });

  it('waits for operator input, an external change or a timer', () => {
    const open = { ...facts, work_item_id: item, subject_state: 'open' };
    expect(decideClosure({ ...open, subject_needs_input: true })).toMatchObject({
      outcome: 'waiting',
      waitingReason: 'awaiting_operator_input',
      workItemId: item,
    });
    expect(decideClosure({ ...open, subject_blocked: true })).toMatchObject({
      outcome: 'waiting',
      waitingReason: 'awaiting_external_change',
    });
    expect(
      decideClosure({ ...facts, asleep: true, sleeping_until: new Date(), queued_id: item }),
    ).toMatchObject({ outcome: 'waiting', waitingReason: 'awaiting_timer', runtimePosture: 'asleep' });
  });

  it('otherwise completed, with the posture', () => {
    expect(decideClosure(facts)).toEqual({ outcome: 'completed', workItemId: null, runtimePosture: 'awake' });
    expect(decideClosure({ ...facts, lifecycle: 'paused' })).toMatchObject({ runtimePosture: 'paused' });
    expect(decideClosure({ ...facts, asleep: true })).toMatchObject({
      outcome: 'completed',
      runtimePosture: 'asleep',
    });
  });
});
