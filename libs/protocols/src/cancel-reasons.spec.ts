import { TaskState } from '@a2a-js/sdk';
import {
  CANCEL_REASONS,
  CancelReason,
  cancelCause,
  cancelledText,
  cascadeReasonOf,
  stoppedParentCause,
  type TurnResponse,
} from '@switchboard/contracts';
import { taskOf, textPart } from './a2a/a2a';
import { runOf, runStatusOf, type TurnRow } from './langgraph/mapping';
import { toolResultOf } from './mcp/mcp';
import { endedTurnError, finishReason } from './openai-chat/chat-completions';
import { errorOf, statusOf } from './responses/responses';

/** Typed cancel reasons (docs/adr/0055) and how each protocol says them. */

const cancelled = (reason: CancelReason | null, note: string | null = null): TurnResponse =>
  ({
    id: 't1',
    sessionId: 's1',
    agentId: 'a1',
    status: 'cancelled',
    finalText: '',
    stopReason: 'cancelled',
    failure: null,
    cancelReason: reason,
    cancelNote: note,
    createdAt: '2026-01-01T00:00:00.000Z',
    startedAt: '2026-01-01T00:00:01.000Z',
    completedAt: '2026-01-01T00:00:02.000Z',
  }) as TurnResponse;

const row = (status: string, cancelReason: string | null): TurnRow => ({
  id: 't1',
  sessionId: 's1',
  agentId: 'a1',
  status,
  stopReason: status === 'cancelled' ? 'cancelled' : 'final_answer',
  failure: null,
  createdAt: new Date(0),
  startedAt: new Date(0),
  completedAt: new Date(1),
  cancelReason,
});

describe('CancelReason', () => {
  it('is the eight reasons of the contract, and nothing else parses', () => {
    expect(CANCEL_REASONS).toEqual([
      'api_cancel',
      'client_disconnected',
      'superseded',
      'tenant_paused',
      'agent_stopped',
      'deadline',
      'budget',
      'operator',
    ]);
    expect(CancelReason.safeParse('interrupted by a newer message').success).toBe(false);
  });

  it('a cause keeps its note trimmed, at most 500 characters, and none for blank', () => {
    expect(cancelCause('api_cancel', '  changed my mind ')).toEqual({
      reason: 'api_cancel',
      note: 'changed my mind',
    });
    expect(cancelCause('operator', '   ')).toEqual({ reason: 'operator', note: null });
    expect(cancelCause('superseded')).toEqual({ reason: 'superseded', note: null });
    expect(cancelCause('api_cancel', 'x'.repeat(600)).note).toHaveLength(500);
  });

  it('a turn’s own deadline or budget is a stop reason; its children get the matching cancel reason', () => {
    expect(cascadeReasonOf('deadline')).toBe('deadline');
    expect(cascadeReasonOf('max_usd')).toBe('budget');
    expect(cascadeReasonOf('tenant_budget_exhausted')).toBe('budget');
    for (const other of ['final_answer', 'max_iterations', 'cancelled', 'kill_switch', null]) {
      expect(cascadeReasonOf(other)).toBeUndefined();
    }
    expect(stoppedParentCause('p1', 'max_usd')).toEqual({
      reason: 'budget',
      note: 'parent turn p1 stopped at its budget (max_usd)',
    });
    expect(stoppedParentCause('p1', 'deadline')).toEqual({
      reason: 'deadline',
      note: 'parent turn p1 stopped at its deadline',
    });
    expect(stoppedParentCause('p1', 'final_answer')).toBeUndefined();
  });

  it('the text form names the reason and the note', () => {
    expect(cancelledText(cancelled('superseded'))).toBe(
      'turn t1 was cancelled before it answered (superseded)',
    );
    expect(cancelledText(cancelled('api_cancel', 'changed my mind'))).toBe(
      'turn t1 was cancelled before it answered (api_cancel: changed my mind)',
    );
    // A journal row written before typed reasons: no reason to name.
    expect(cancelledText(cancelled(null))).toBe('turn t1 was cancelled before it answered');
  });
});

describe('each protocol maps the reason where it has a field for it', () => {
  it('LangGraph: a cancelled run is interrupted, with the SDK’s cancel_reason; other runs have none', () => {
    expect(runStatusOf('cancelled')).toBe('interrupted');
    expect(runOf(row('cancelled', 'client_disconnected'))).toMatchObject({
      status: 'interrupted',
      cancel_reason: 'client_disconnected',
    });
    // A cancel requested of a turn that completed first: the run was not cancelled.
    expect(runOf(row('completed', 'api_cancel'))).toMatchObject({ status: 'success', cancel_reason: null });
    // An approval pause is interrupted too, but not cancelled.
    expect(runOf(row('awaiting_approval', null)).cancel_reason).toBeNull();
  });

  it('A2A: canceled, the status message names the reason, its metadata carries it', () => {
    const task = taskOf(cancelled('tenant_paused', 'incident 7'));
    expect(task.status?.state).toBe(TaskState.TASK_STATE_CANCELED);
    expect(task.status?.message?.parts).toEqual([
      textPart('turn t1 was cancelled (tenant_paused: incident 7)'),
    ]);
    expect(task.status?.message?.metadata).toEqual({
      cancelReason: 'tenant_paused',
      cancelNote: 'incident 7',
    });
    expect(task.artifacts).toEqual([]);
  });

  it('Responses: status cancelled, the error message names the reason', () => {
    const turn = cancelled('agent_stopped');
    expect(statusOf(turn)).toBe('cancelled');
    expect(errorOf(turn)).toEqual({
      code: 'turn_cancelled',
      message: 'turn t1 was cancelled before it answered (agent_stopped)',
    });
  });

  it('Chat Completions: no finish_reason for a cancel; the 409’s message names the reason', () => {
    const err = endedTurnError(cancelled('operator', 'runaway loop'));
    expect(err).toMatchObject({ status: 409, code: 'turn_cancelled' });
    expect(err?.message).toBe('turn t1 was cancelled before it answered (operator: runaway loop)');
    // A turn stopped by its own deadline or budget completed: `length`, not a cancel.
    expect(finishReason('deadline')).toBe('length');
    expect(finishReason('max_usd')).toBe('length');
  });

  it('MCP: a tool error naming the reason, cancel_reason in the structured content', () => {
    const result = toolResultOf(cancelled('superseded'));
    expect(result).toMatchObject({
      isError: true,
      structuredContent: { turn_id: 't1', status: 'cancelled', cancel_reason: 'superseded' },
    });
    expect(result.content).toEqual([
      { type: 'text', text: 'turn t1 was cancelled before it answered (superseded)' },
    ]);
  });
});
