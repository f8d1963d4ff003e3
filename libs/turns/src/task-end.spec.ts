import { HANDBACK_MAX_CHARS, taskEnd } from './handback';

/** A child turn's outcome as its task's end and the parent's handback (docs/adr/0024). */
describe('taskEnd', () => {
  it('a final answer is completed with the result', () => {
    expect(taskEnd({ status: 'completed', stopReason: 'final_answer', finalText: '42' })).toEqual({
      status: 'completed',
      handback: { status: 'completed', result: '42' },
      output: '42',
    });
  });

  it.each([
    ['failed', 'max_iterations'],
    ['failed', 'budget_exceeded'],
    ['failed', 'deadline'],
    ['failed', 'no_progress'],
    ['cancelled', 'cancelled'],
    ['completed', 'max_tool_calls'],
  ] as const)('%s / %s is incomplete with the reason, and the partial text', (status, stopReason) => {
    const end = taskEnd({ status, stopReason, finalText: 'half done' });
    expect(end.status).toBe(status);
    expect(end.handback).toEqual({ status: 'incomplete', reason: stopReason, partial: 'half done' });
  });

  it('bounds what the parent sees', () => {
    const end = taskEnd({ status: 'completed', stopReason: 'final_answer', finalText: 'x'.repeat(10_000) });
    expect(end.output).toHaveLength(HANDBACK_MAX_CHARS);
    expect((end.handback.result as string).length).toBe(HANDBACK_MAX_CHARS);
  });

  it('an incomplete end with no text carries no partial', () => {
    expect(taskEnd({ status: 'failed', stopReason: 'deadline', finalText: '' }).handback).toEqual({
      status: 'incomplete',
      reason: 'deadline',
    });
  });
});
