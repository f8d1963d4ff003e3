import type { TurnOutcome } from '@switchboard/engine';
import type { TurnRow } from '@switchboard/store';
import { finaliseRows } from './rows';

const turn: TurnRow = {
  id: 'turn-1',
  tenantId: 'tenant-1',
  sessionId: 'session-1',
  agentId: 'agent-1',
  seq: 1,
  inputMessageId: 'message-1',
  status: 'running',
  priority: 'normal',
  model: null,
  iterations: 0,
  toolCallCount: 0,
  costUsd: '0.00000000',
  traceContext: null,
  runCount: 1,
  createdAt: new Date(0),
  startedAt: new Date(0),
  cancelRequested: false,
  cancelReason: null,
  taskId: null,
  childrenCostUsd: '0',
};

const outcome = (o: Partial<TurnOutcome>): TurnOutcome => ({
  status: 'completed',
  stopReason: 'final_answer',
  finalText: 'hi',
  iterations: 1,
  toolCalls: 0,
  ...o,
});

describe('finaliseRows: a cancelled turn’s reason (docs/adr/0055)', () => {
  it('goes on the turn row and into turn_cancelled, with its note', () => {
    const { writes, event } = finaliseRows(turn, outcome({ status: 'cancelled', stopReason: 'cancelled' }), {
      model: 'm',
      cancel: { reason: 'tenant_paused', note: null },
    });
    expect(writes.turn.end?.cancel).toEqual({ reason: 'tenant_paused', note: null });
    expect(event).toMatchObject({
      type: 'turn_cancelled',
      data: { stopReason: 'cancelled', reason: 'tenant_paused' },
    });
    expect(event.data).not.toHaveProperty('note');

    const noted = finaliseRows(turn, outcome({ status: 'cancelled', stopReason: 'cancelled' }), {
      model: 'm',
      cancel: { reason: 'api_cancel', note: 'changed my mind' },
    });
    expect(noted.event.data).toMatchObject({ reason: 'api_cancel', note: 'changed my mind' });
  });

  it('a turn that ended otherwise carries none, even with a cancel requested', () => {
    const { writes, event } = finaliseRows(turn, outcome({ stopReason: 'deadline' }), {
      model: 'm',
      cancel: { reason: 'api_cancel', note: null },
    });
    expect(writes.turn.end?.cancel).toBeUndefined();
    expect(event.type).toBe('turn_completed');
    expect(event.data).not.toHaveProperty('reason');
  });
});
