import { TurnTimelineResponse, type TurnResponse } from '@switchboard/contracts';
import type { StoredRoundContext, TimelineRead } from '@switchboard/store';
import { assembleRoundContext, assembleTimeline, callRoundsOf } from './turn-timeline';

const TURN = '01900000-0000-7000-8000-000000000001';
const at = (s: number) => new Date(Date.UTC(2026, 11, 5, 12, 0, s)).toISOString();

const turn = (over: Partial<TurnResponse> = {}): TurnResponse => ({
  id: TURN,
  sessionId: '01900000-0000-7000-8000-000000000002',
  agentId: '01900000-0000-7000-8000-000000000003',
  inputMessageId: '01900000-0000-7000-8000-000000000004',
  seq: 1,
  status: 'completed',
  priority: 'normal',
  model: 'openai-chat/m',
  stopReason: 'final_answer',
  finalText: 'done',
  iterations: 2,
  usage: { inputTokens: 30, outputTokens: 6, cachedTokens: 0, cacheWriteTokens: 0 },
  costUsd: '0.00100000',
  cacheSavedUsd: '0.00000000',
  costStatus: 'priced',
  attempts: [
    attempt(0, 1, 'retrying', 1, 2, { failureKind: 'rate_limited', status: 429 }),
    attempt(0, 2, 'succeeded', 3, 4, { usage: { inputTokens: 10, outputTokens: 2, cachedTokens: 4 } }),
    attempt(1, 1, 'succeeded', 8, 9, { usage: { inputTokens: 20, outputTokens: 4 } }),
  ],
  failure: null,
  decision: null,
  finalisationErrors: [],
  toolCalls: [],
  createdAt: at(0),
  startedAt: at(1),
  completedAt: at(10),
  cancelRequestedAt: null,
  cancelReason: null,
  cancelNote: null,
  workItemId: null,
  closure: null,
  continuation: null,
  rewoundAt: null,
  copiedFromTurnId: null,
  replayOfTurnId: null,
  agentVersion: null,
  childrenCostUsd: '0.00200000',
  totalCostUsd: '0.00300000',
  ...over,
});

function attempt(round: number, n: number, outcome: string, from: number, to: number, extra = {}) {
  return {
    round,
    model: 'openai-chat/m',
    attempt: n,
    maxAttempts: 3,
    startedAt: at(from),
    completedAt: at(to),
    durationMs: (to - from) * 1000,
    outcome: outcome as 'succeeded',
    ...extra,
  };
}

const ev = (seq: number, type: string, data: Record<string, unknown>) => ({ seq, type, at: at(seq), data });

const read = (over: Partial<TimelineRead> = {}): TimelineRead => ({
  parentTurnId: null,
  runCount: 2,
  traceContext: { traceparent: '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01' },
  events: [
    ev(1, 'turn_started', { seq: 1 }),
    ev(2, 'provider_round_started', { round: 0, model: 'openai-chat/m' }),
    ev(3, 'provider_round_completed', {
      round: 0,
      model: 'openai-chat/m',
      usage: { inputTokens: 10, outputTokens: 2, cachedTokens: 4, cacheWriteTokens: 1 },
      costUsd: 0.0004,
      cacheSavedUsd: 0.0001,
    }),
    ev(4, 'approval_requested', { approvalId: 'a1', callId: 'call_w', name: 'write' }),
    ev(5, 'tool_call_started', { callId: 'call_r', name: 'read' }),
    ev(6, 'tool_result_compacted', {
      callId: 'call_r',
      lossy: true,
      marker: 'tj:0123456789abcdef01234567',
      originalBytes: 5000,
      contentBytes: 300,
    }),
    ev(7, 'provider_round_started', { round: 1, model: 'openai-chat/m' }),
    ev(8, 'provider_round_completed', { round: 1, model: 'openai-chat/m', usage: {}, costUsd: 0.0006 }),
  ],
  toolCalls: [
    {
      id: '01900000-0000-7000-8000-0000000000c1',
      callId: 'call_r',
      name: 'read',
      arguments: { path: 'x' },
      sideEffect: 'read_only',
      status: 'completed',
      result: { ok: true },
      error: null,
      startedAt: at(5),
      completedAt: at(6),
      durationMs: 1000,
    },
    {
      id: '01900000-0000-7000-8000-0000000000c2',
      callId: 'call_u',
      name: 'charge',
      arguments: {},
      sideEffect: 'network',
      status: 'failed',
      result: null,
      error: { kind: 'outcome_unknown', message: 'may have run' },
      startedAt: at(5),
      completedAt: at(6),
      durationMs: 0,
    },
  ],
  approvals: [
    {
      id: '01900000-0000-7000-8000-0000000000a1',
      kind: 'approval',
      callId: 'call_w',
      toolName: 'write',
      arguments: { to: 'y' },
      sideEffect: 'local_write',
      policy: 'tool',
      status: 'rejected',
      reason: 'no',
      decidedBy: 'key-1',
      decidedAt: at(4),
      createdAt: at(4),
    },
  ],
  children: [],
  hooks: [{ hook: 'cost-log', status: 'completed', attempts: 1, createdAt: at(11), completedAt: at(11) }],
  contextRounds: [0, 1],
  ...over,
});

describe('assembleTimeline', () => {
  const t = assembleTimeline({ turn: turn(), read: read(), jaegerUiUrl: 'http://jaeger:16686' });

  it('phases: admission, claim, queue wait, end', () => {
    expect(t.phases).toEqual({
      admittedAt: at(0),
      claimedAt: at(1),
      queueWaitMs: 1000,
      endedAt: at(10),
      runMs: 9000,
    });
    expect(t.turn).toMatchObject({ runCount: 2, childrenCostUsd: '0.00200000', totalCostUsd: '0.00300000' });
  });

  it('rounds with their attempts (the retry), usage and cost from the journal', () => {
    expect(t.rounds.map((r) => r.index)).toEqual([0, 1]);
    const [r0, r1] = t.rounds;
    expect(r0.attempts.map((a) => a.outcome)).toEqual(['retrying', 'succeeded']);
    expect(r0).toMatchObject({
      model: 'openai-chat/m',
      startedAt: at(1),
      endedAt: at(4),
      latencyMs: 3000,
      usage: { inputTokens: 10, outputTokens: 2, cachedTokens: 4, cacheWriteTokens: 1 },
      costUsd: 0.0004,
      cacheSavedUsd: 0.0001,
      contextRecorded: true,
    });
    expect(r1.attempts).toHaveLength(1);
    expect(r1.toolCalls).toEqual([expect.objectContaining({ callId: 'call_u' })]);
  });

  it('tool calls: compaction with the original, outcome_unknown, a refused approval without a row', () => {
    const calls = Object.fromEntries(t.rounds.flatMap((r) => r.toolCalls).map((c) => [c.callId, c]));
    expect(calls.call_r).toMatchObject({
      outcome: 'succeeded',
      effectClass: 'read_only',
      resultBytes: 5000,
      compactedBytes: 300,
      originalId: '0123456789abcdef01234567',
      gates: [],
    });
    expect(calls.call_u).toMatchObject({ outcome: 'outcome_unknown', resultBytes: expect.any(Number) });
    expect(calls.call_w).toMatchObject({
      id: null,
      outcome: 'refused',
      gates: [{ gate: 'approval', outcome: 'rejected' }],
      approval: { status: 'rejected', decidedBy: 'key-1', reason: 'no', decidedAt: at(4) },
    });
    // Placed in the round after which the journal first named them.
    expect(t.rounds[0].toolCalls.map((c) => c.callId).sort()).toEqual(['call_r', 'call_w']);
  });

  it('client tool waits (docs/adr/0047) are their own gate: pending awaits the client, answered, expired', () => {
    const base = read();
    const wait = (callId: string, status: string, decidedAt: string | null) => ({
      ...base.approvals[0],
      id: `01900000-0000-7000-8000-0000000000${{ call_p1: 'd1', call_a1: 'd2' }[callId] ?? 'd3'}`,
      kind: 'client_tool',
      callId,
      toolName: 'get_weather',
      sideEffect: 'network',
      policy: 'client',
      status,
      reason: null,
      decidedBy: decidedAt ? 'chat.completions' : null,
      decidedAt,
    });
    const c = assembleTimeline({
      turn: turn({ status: 'awaiting_client_tool' }),
      read: read({
        events: [
          ...base.events,
          ev(9, 'client_tool_requested', {
            callId: 'call_0123abcd',
            modelCallId: 'call_p1',
            name: 'get_weather',
          }),
        ],
        toolCalls: [
          {
            ...base.toolCalls[0],
            id: '01900000-0000-7000-8000-0000000000c4',
            callId: 'call_a1',
            name: 'get_weather',
            sideEffect: 'network',
          },
        ],
        approvals: [
          wait('call_p1', 'pending', null),
          wait('call_a1', 'answered', at(5)),
          wait('call_e1', 'expired', at(6)),
        ],
      }),
    });
    const calls = Object.fromEntries(c.rounds.flatMap((r) => r.toolCalls).map((x) => [x.callId, x]));
    expect(calls.call_p1).toMatchObject({
      id: null,
      name: 'get_weather',
      outcome: 'awaiting_client_tool',
      gates: [{ gate: 'client_tool', outcome: 'pending' }],
      approval: { kind: 'client_tool', status: 'pending', decidedAt: null },
    });
    // Placed by the journal's model call id (the event names the client's id as callId).
    expect(c.rounds[1].toolCalls.map((x) => x.callId)).toContain('call_p1');
    expect(calls.call_a1).toMatchObject({
      outcome: 'succeeded',
      gates: [{ gate: 'client_tool', outcome: 'answered' }],
      approval: { kind: 'client_tool', status: 'answered', decidedBy: 'chat.completions' },
    });
    expect(calls.call_e1).toMatchObject({
      outcome: 'failed',
      gates: [{ gate: 'client_tool', outcome: 'expired' }],
    });
    expect(() => TurnTimelineResponse.parse(c)).not.toThrow();
  });

  it('the trace id and its Jaeger link; none without JAEGER_UI_URL or a traceparent', () => {
    expect(t.traceId).toBe('0af7651916cd43dd8448eb211c80319c');
    expect(t.traceUrl).toBe('http://jaeger:16686/trace/0af7651916cd43dd8448eb211c80319c');
    expect(assembleTimeline({ turn: turn(), read: read() }).traceUrl).toBeNull();
    const none = assembleTimeline({
      turn: turn(),
      read: read({ traceContext: {} }),
      jaegerUiUrl: 'http://j',
    });
    expect([none.traceId, none.traceUrl]).toEqual([null, null]);
  });

  it('a queued turn has no claim, no rounds', () => {
    const q = assembleTimeline({
      turn: turn({ status: 'queued', startedAt: null, completedAt: null, attempts: [] }),
      read: read({ events: [], toolCalls: [], approvals: [], hooks: [], contextRounds: [] }),
    });
    expect(q.phases).toMatchObject({ claimedAt: null, queueWaitMs: null, endedAt: null, runMs: null });
    expect(q.rounds).toEqual([]);
  });

  it('a call that waited durably (a blocking spawn) starts when the journal saw it start, not when its row was committed', () => {
    const base = read();
    const t = assembleTimeline({
      turn: turn(),
      read: read({
        events: [...base.events, ev(9, 'tool_call_started', { callId: 'call_s', name: 'spawn_agent' })],
        toolCalls: [
          {
            ...base.toolCalls[0],
            id: '01900000-0000-7000-8000-0000000000c3',
            callId: 'call_s',
            name: 'spawn_agent',
            // Committed when the parent resumed, 30 s after the spawn began.
            startedAt: at(39),
            completedAt: at(40),
            durationMs: 1000,
          },
        ],
      }),
    });
    const spawn = t.rounds.flatMap((r) => r.toolCalls).find((c) => c.callId === 'call_s')!;
    expect({ startedAt: spawn.startedAt, durationMs: spawn.durationMs }).toEqual({
      startedAt: at(9),
      durationMs: 31_000,
    });
  });

  it('callRoundsOf: a call belongs to the round before its first mention', () => {
    expect(callRoundsOf(read().events)).toEqual(
      new Map([
        ['call_w', 0],
        ['call_r', 0],
      ]),
    );
  });
});

describe('assembleRoundContext', () => {
  it('rebuilds the round in order with sources and tokens per part', () => {
    const stored: StoredRoundContext = {
      round: 1,
      createdAt: new Date(at(3)),
      parts: [
        { h: 's', s: 'system' },
        { h: 't', s: 'tools' },
        { h: 'u', s: 'recall' },
        { h: 'a', s: 'transcript' },
        { h: 'r', s: 'transcript' },
        { h: 'w', s: 'work_items' },
      ],
      contents: {
        s: { content: { kind: 'system', text: 'SYS' }, tokens: 3 },
        t: {
          content: {
            kind: 'tools',
            tools: [{ name: 'read', description: 'd', parameters: { type: 'object' } }],
          },
          tokens: 10,
        },
        u: {
          content: { kind: 'message', message: { role: 'user', content: '<evidence>m</evidence> hi' } },
          tokens: 6,
        },
        a: {
          content: {
            kind: 'message',
            message: {
              role: 'assistant',
              content: '',
              toolCalls: [{ id: 'c1', name: 'read', arguments: '{}' }],
            },
          },
          tokens: 7,
        },
        r: {
          content: {
            kind: 'message',
            message: { role: 'tool', toolCallId: 'c1', name: 'read', content: 'ok' },
          },
          tokens: 3,
        },
        w: { content: { kind: 'message', message: { role: 'user', content: 'reminder' } }, tokens: 4 },
      },
    };
    const c = assembleRoundContext(stored);
    expect(c.system).toBe('SYS');
    expect(c.tools).toEqual([{ name: 'read', description: 'd', parameters: { type: 'object' } }]);
    expect(c.messages.map((m) => [m.role, m.source, m.tokens])).toEqual([
      ['user', 'recall', 6],
      ['assistant', 'transcript', 7],
      ['tool', 'transcript', 3],
      ['user', 'work_items', 4],
    ]);
    expect(c.messages[1].toolCalls).toEqual([{ id: 'c1', name: 'read', arguments: '{}' }]);
    expect(c.messages[2]).toMatchObject({ toolCallId: 'c1', name: 'read' });
    expect(c.tokens).toEqual({ system: 3, tools: 10, messages: 20, total: 33 });
    expect(c.recordedAt).toBe(at(3));
  });
});
