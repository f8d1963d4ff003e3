import {
  approvalWaitMs,
  asJson,
  attemptKind,
  childrenByCall,
  compactionText,
  formatBytes,
  formatMs,
  MIN_WIDTH,
  tokenShares,
  waterfall,
  type ProviderAttempt,
  type TimelineChild,
  type TimelineRound,
  type TimelineToolCall,
  type TurnTimeline,
} from './timeline';

const T0 = Date.parse('2026-12-05T10:00:00.000Z');
const iso = (ms: number) => new Date(T0 + ms).toISOString();

const attempt = (o: Partial<ProviderAttempt>): ProviderAttempt => ({
  round: 0,
  model: 'openai-chat/gpt-4o-mini',
  attempt: 1,
  maxAttempts: 3,
  startedAt: iso(100),
  completedAt: iso(200),
  durationMs: 100,
  outcome: 'succeeded',
  ...o,
});

const call = (o: Partial<TimelineToolCall>): TimelineToolCall => ({
  id: null,
  callId: 'call_1',
  name: 'word_count',
  arguments: {},
  effectClass: 'read_only',
  gates: [],
  approval: null,
  outcome: 'succeeded',
  error: null,
  startedAt: iso(400),
  completedAt: iso(500),
  durationMs: 100,
  resultBytes: 10,
  compactedBytes: null,
  originalId: null,
  ...o,
});

const round = (o: Partial<TimelineRound>): TimelineRound => ({
  index: 0,
  model: 'openai-chat/gpt-4o-mini',
  startedAt: iso(100),
  endedAt: iso(300),
  latencyMs: 200,
  attempts: [],
  usage: null,
  costUsd: null,
  cacheSavedUsd: null,
  toolCalls: [],
  contextRecorded: true,
  ...o,
});

const child = (o: Partial<TimelineChild>): TimelineChild => ({
  taskId: '00000000-0000-4000-8000-000000000001',
  callId: 'call_spawn',
  agent: 'helper',
  taskStatus: 'completed',
  childSessionId: null,
  childTurnId: null,
  childTurnStatus: 'completed',
  blocking: true,
  costUsd: '0.001',
  totalCostUsd: '0.002',
  createdAt: iso(450),
  completedAt: iso(700),
  ...o,
});

function timeline(o: Partial<TurnTimeline> = {}, status = 'completed'): TurnTimeline {
  return {
    turn: {
      id: '00000000-0000-4000-8000-00000000000a',
      sessionId: '00000000-0000-4000-8000-00000000000b',
      agentId: '00000000-0000-4000-8000-00000000000c',
      parentTurnId: null,
      status: status as TurnTimeline['turn']['status'],
      stopReason: null,
      model: null,
      iterations: 1,
      runCount: 1,
      cancelRequestedAt: null,
      cancelReason: null,
      cancelNote: null,
      usage: { inputTokens: 0, outputTokens: 0, cachedTokens: 0, cacheWriteTokens: 0 },
      costUsd: '0',
      childrenCostUsd: '0',
      totalCostUsd: '0',
      costStatus: null,
      failure: null,
    },
    phases: {
      admittedAt: iso(0),
      claimedAt: iso(50),
      queueWaitMs: 50,
      endedAt: iso(1000),
      runMs: 950,
    },
    rounds: [],
    children: [],
    hooks: [],
    events: [],
    traceId: null,
    traceUrl: null,
    ...o,
  };
}

describe('formatMs / formatBytes', () => {
  it.each([
    [null, '—'],
    [0, '0 ms'],
    [849.6, '850 ms'],
    [1234, '1.2 s'],
    [12_345, '12 s'],
    [125_000, '2 min 05 s'],
    [3_720_000, '1 h 02 min'],
  ])('formatMs(%p) = %p', (ms, text) => expect(formatMs(ms)).toBe(text));

  it.each([
    [null, '—'],
    [512, '512 B'],
    [1500, '1.5 kB'],
    [2_000_000, '2.0 MB'],
  ])('formatBytes(%p) = %p', (n, text) => expect(formatBytes(n)).toBe(text));
});

describe('attemptKind', () => {
  it('tells the first attempt, a retry on the same model and a fallback to another', () => {
    const attempts = [
      attempt({ attempt: 1, outcome: 'retrying' }),
      attempt({ attempt: 2, outcome: 'retries_exhausted' }),
      attempt({ attempt: 1, model: 'anthropic/claude', outcome: 'succeeded' }),
    ];
    expect(attempts.map((_, i) => attemptKind(attempts, i))).toEqual(['first', 'retry', 'fallback']);
  });
});

describe('compactionText', () => {
  it('says the size before and after, or that nothing was compacted', () => {
    expect(compactionText({ resultBytes: null, compactedBytes: null })).toBe('no result');
    expect(compactionText({ resultBytes: 800, compactedBytes: null })).toBe('800 B, not compacted');
    expect(compactionText({ resultBytes: 20_000, compactedBytes: 5_000 })).toBe(
      '20.0 kB → 5.0 kB after compaction (75% smaller)',
    );
  });
});

describe('childrenByCall', () => {
  it('places a child under the call that spawned it, the others apart', () => {
    const t = timeline({
      rounds: [round({ toolCalls: [call({ callId: 'call_spawn', name: 'spawn_subagent' })] })],
      children: [child({}), child({ taskId: 'x', callId: null }), child({ taskId: 'y', callId: 'gone' })],
    });
    const { byCall, unplaced } = childrenByCall(t);
    expect(byCall.get('call_spawn')?.map((c) => c.taskId)).toEqual([t.children[0].taskId]);
    expect(unplaced.map((c) => c.taskId)).toEqual(['x', 'y']);
  });
});

describe('approvalWaitMs', () => {
  it('is requested to decided, or to now while pending', () => {
    const a = {
      id: 'a',
      kind: 'approval' as const,
      status: 'approved' as const,
      policy: 'tool',
      requestedAt: iso(100),
      decidedAt: iso(1600),
      decidedBy: 'key',
      reason: null,
    };
    expect(approvalWaitMs(a)).toBe(1500);
    expect(approvalWaitMs({ ...a, status: 'pending', decidedAt: null }, T0 + 600)).toBe(500);
  });
});

describe('waterfall', () => {
  it('lays out the story in order with offsets and widths proportional to the turn’s span', () => {
    const t = timeline({
      rounds: [
        round({
          attempts: [
            attempt({ attempt: 1, outcome: 'retrying', startedAt: iso(100), completedAt: iso(150) }),
            attempt({ attempt: 2, startedAt: iso(200), completedAt: iso(300) }),
          ],
          toolCalls: [
            call({
              callId: 'call_spawn',
              name: 'spawn_subagent',
              approval: {
                id: 'a',
                kind: 'approval',
                status: 'approved',
                policy: 'tool',
                requestedAt: iso(300),
                decidedAt: iso(400),
                decidedBy: 'k',
                reason: null,
              },
            }),
            call({
              callId: 'call_weather',
              name: 'get_weather',
              outcome: 'awaiting_client_tool',
              startedAt: null,
              completedAt: null,
              approval: {
                id: 'b',
                kind: 'client_tool',
                status: 'pending',
                policy: 'client',
                requestedAt: iso(400),
                decidedAt: null,
                decidedBy: null,
                reason: null,
              },
            }),
          ],
        }),
      ],
      children: [child({})],
      hooks: [
        { hook: 'learning', status: 'completed', attempts: 1, createdAt: iso(1000), completedAt: null },
      ],
    });
    const w = waterfall(t, T0 + 5000);
    expect(w.spanMs).toBe(1000);
    expect(w.rows.map((r) => [r.kind, r.depth, r.label])).toEqual([
      ['queue', 0, 'Queue wait'],
      ['run', 0, 'Run'],
      ['round', 1, 'Round 1: openai-chat/gpt-4o-mini'],
      ['attempt', 2, 'Attempt 1: openai-chat/gpt-4o-mini'],
      ['attempt', 2, 'Attempt 2 (retry): openai-chat/gpt-4o-mini'],
      ['tool', 2, 'Tool call: spawn_subagent'],
      ['approval', 3, 'Approval wait: spawn_subagent'],
      ['child', 3, 'Child turn: helper'],
      ['tool', 2, 'Tool call: get_weather'],
      ['approval', 3, 'Client tool wait: get_weather'],
      ['hook', 1, 'Post-turn hook: learning'],
    ]);
    const byKey = Object.fromEntries(w.rows.map((r) => [r.key, r]));
    expect(byKey.queue).toMatchObject({ startMs: 0, durationMs: 50, offsetPct: 0, widthPct: 5 });
    expect(byKey.run).toMatchObject({ startMs: 50, durationMs: 950, offsetPct: 5, widthPct: 95 });
    expect(byKey['round-0-attempt-0']).toMatchObject({ offsetPct: 10, widthPct: 5, status: 'retrying' });
    expect(byKey['round-0-attempt-0'].description).toBe(
      'Attempt 1: openai-chat/gpt-4o-mini, retrying: started 100 ms after admission, lasted 50 ms',
    );
    // An ended turn's hook still running is drawn at the end, as thin as an instant.
    expect(byKey['hook-0']).toMatchObject({ open: true, offsetPct: 100 - MIN_WIDTH, widthPct: MIN_WIDTH });
  });

  it('runs open parts to now while the turn runs, and says when a part has no start', () => {
    const t = timeline(
      {
        phases: { admittedAt: iso(0), claimedAt: iso(100), queueWaitMs: 100, endedAt: null, runMs: null },
        rounds: [
          round({
            startedAt: null,
            endedAt: null,
            toolCalls: [call({ startedAt: iso(300), completedAt: null, outcome: 'running' })],
          }),
        ],
      },
      'running',
    );
    const w = waterfall(t, T0 + 400);
    expect(w.spanMs).toBe(400);
    const byKey = Object.fromEntries(w.rows.map((r) => [r.key, r]));
    expect(byKey.run).toMatchObject({ open: true, durationMs: 300, offsetPct: 25, widthPct: 75 });
    expect(byKey['call-call_1'].description).toBe(
      'Tool call: word_count, running: started 300 ms after admission, running for 100 ms so far',
    );
    expect(byKey['round-0']).toMatchObject({ startMs: null, widthPct: 0 });
    expect(byKey['round-0'].description).toBe('Round 1: openai-chat/gpt-4o-mini: no start recorded');
  });

  it('keeps an instant visible and every bar inside the span', () => {
    const t = timeline({
      phases: { admittedAt: iso(0), claimedAt: iso(0), queueWaitMs: 0, endedAt: iso(0), runMs: 0 },
    });
    for (const r of waterfall(t).rows) {
      expect(r.widthPct).toBeGreaterThanOrEqual(MIN_WIDTH);
      expect(r.offsetPct + r.widthPct).toBeLessThanOrEqual(100);
    }
  });
});

describe('tokenShares / asJson', () => {
  it('gives each part of a context its share of the total', () => {
    expect(tokenShares({ system: 50, tools: 25, messages: 25, total: 100 })).toEqual([
      { part: 'system', tokens: 50, pct: 50 },
      { part: 'tools', tokens: 25, pct: 25 },
      { part: 'messages', tokens: 25, pct: 25 },
    ]);
    expect(tokenShares({ system: 0, tools: 0, messages: 0, total: 0 })[0].pct).toBe(0);
  });

  it('reads JSON objects and arrays only', () => {
    expect(asJson('{"a":1}')).toEqual({ a: 1 });
    expect(asJson(' [1] ')).toEqual([1]);
    expect(asJson('42')).toBeNull();
    expect(asJson('{not json')).toBeNull();
    expect(asJson('hello')).toBeNull();
  });
});
