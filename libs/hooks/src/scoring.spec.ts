import { randomBytes } from 'node:crypto';
import { context } from '@opentelemetry/api';
import { SamplingDecision, TraceIdRatioBasedSampler } from '@opentelemetry/sdk-trace-base';
import { CreateAgentRequest, newId, Scorers } from '@switchboard/contracts';
import { evaluateRule, type RuleScorer, type RuleTurn } from './scoring-rules';
import { sampledAt, samplingIdOf, traceIdOfParent } from './scoring-sampler';

describe('sampledAt', () => {
  const otel = (ratio: number, traceId: string) =>
    new TraceIdRatioBasedSampler(ratio).shouldSample(context.active(), traceId).decision ===
    SamplingDecision.RECORD_AND_SAMPLED;

  it("decides exactly as OpenTelemetry's TraceIdRatioBasedSampler at every ratio", () => {
    const ids = Array.from({ length: 2000 }, () => randomBytes(16).toString('hex'));
    for (const percent of [0, 1, 10, 30, 50, 75, 99.5, 100]) {
      for (const id of ids)
        expect([percent, id, sampledAt(id, percent)]).toEqual([percent, id, otel(percent / 100, id)]);
    }
  });

  it('keeps about the share asked, and the same turns every time', () => {
    const ids = Array.from({ length: 10_000 }, () => randomBytes(16).toString('hex'));
    const kept = ids.filter((id) => sampledAt(id, 30));
    expect(kept.length / ids.length).toBeGreaterThan(0.27);
    expect(kept.length / ids.length).toBeLessThan(0.33);
    expect(ids.filter((id) => sampledAt(id, 30))).toEqual(kept);
    // A turn kept at 30 % is kept at every higher share.
    expect(kept.every((id) => sampledAt(id, 60))).toBe(true);
  });

  it('samples by the traceparent trace id, else by the turn id', () => {
    const traceId = '4bf92f3577b34da6a3ce929d0e0e4736';
    expect(traceIdOfParent(`00-${traceId}-00f067aa0ba902b7-01`)).toBe(traceId);
    expect(traceIdOfParent(`00-${'0'.repeat(32)}-00f067aa0ba902b7-01`)).toBeNull();
    expect(traceIdOfParent('garbage')).toBeNull();
    expect(samplingIdOf({ traceparent: `00-${traceId}-00f067aa0ba902b7-01` }, newId())).toEqual({
      id: traceId,
      fromTrace: true,
    });
    const turnId = newId();
    expect(samplingIdOf({}, turnId)).toEqual({ id: turnId.replace(/-/g, ''), fromTrace: false });
    expect(sampledAt('not-hex', 100)).toBe(false);
  });
});

describe('evaluateRule', () => {
  const turn: RuleTurn = {
    status: 'completed',
    finalText: '{"a": 1, "b": [2]}',
    latencyMs: 1200,
    costUsd: 0.01,
    tools: ['word_count'],
  };
  const rule = (r: Record<string, unknown>) =>
    ({ name: 'r', kind: 'rule', samplePercent: 100, ...r }) as RuleScorer;

  it.each([
    [{ check: 'json_schema', schema: { type: 'object', required: ['a'] } }, true],
    [{ check: 'json_schema', schema: { type: 'object', required: ['z'] } }, false],
    [{ check: 'regex', pattern: '"A"', flags: 'i' }, true],
    [{ check: 'regex', pattern: '^nope' }, false],
    [{ check: 'tool_called', tool: 'word_count', called: true }, true],
    [{ check: 'tool_called', tool: 'word_count', called: false }, false],
    [{ check: 'tool_called', tool: 'http_fetch', called: false }, true],
    [{ check: 'max_latency_ms', maxMs: 1200 }, true],
    [{ check: 'max_latency_ms', maxMs: 1000 }, false],
    [{ check: 'max_cost_usd', maxUsd: 0.01 }, true],
    [{ check: 'max_cost_usd', maxUsd: 0.001 }, false],
    [{ check: 'not_failed' }, true],
    [{ check: 'expected', expected: '  {"a": 1, "b": [2]} ' }, true],
    [{ check: 'expected', expected: '"b"', match: 'contains' }, true],
    [{ check: 'expected', expected: '{"b":[2],"a":1}', match: 'json' }, true],
    [{ check: 'expected', expected: '{"b":[3],"a":1}', match: 'json' }, false],
    [{ check: 'expected', expected: '{"b":[2],"a":1}' }, false],
  ])('%j → passed %s', (r, passed) => {
    const v = evaluateRule(rule(r), turn);
    expect(v).toMatchObject({ passed, score: passed ? 1 : 0 });
    if (!passed) expect(v.reason).toEqual(expect.any(String));
  });

  it('fails not_failed on a failed turn and json rules on no answer', () => {
    expect(evaluateRule(rule({ check: 'not_failed' }), { ...turn, status: 'failed' }).passed).toBe(false);
    expect(
      evaluateRule(rule({ check: 'expected', expected: '{}', match: 'json' }), { ...turn, finalText: null })
        .passed,
    ).toBe(false);
  });
});

describe('Scorers', () => {
  const ok = [
    { name: 'judge', kind: 'llm_judge', rubric: 'Correct?' },
    { name: 'shape', kind: 'rule', check: 'json_schema', schema: { type: 'object' }, samplePercent: 30 },
    { name: 'ext:1', kind: 'webhook', url: 'https://scorer.example/score' },
  ];

  it('accepts valid scorers with their defaults', () => {
    const parsed = Scorers.parse(ok);
    expect(parsed.map((s) => s.samplePercent)).toEqual([100, 30, 100]);
  });

  it.each([
    ['duplicate names', [ok[0], { ...ok[1], name: 'judge' }], 'duplicate scorer names: judge'],
    ['an invalid JSON schema', [{ ...ok[1], schema: { type: 'nonsense' } }], 'not a valid JSON Schema'],
    [
      'a bad regex',
      [{ name: 'r', kind: 'rule', check: 'regex', pattern: '(' }],
      'not a valid regular expression',
    ],
    ['an unknown model', [{ ...ok[0], model: 'nope/model' }], 'provider'],
    ['a bad name', [{ ...ok[0], name: 'Judge!' }], 'lowercase'],
    ['a share over 100', [{ ...ok[0], samplePercent: 101 }], ''],
    ['an unknown kind', [{ name: 'x', kind: 'vibes' }], ''],
    ['an empty rubric', [{ ...ok[0], rubric: '' }], ''],
    ['an unknown field', [{ ...ok[0], extra: 1 }], ''],
  ])('refuses %s', (_what, scorers, message) => {
    const r = Scorers.safeParse(scorers);
    expect(r.success).toBe(false);
    expect(JSON.stringify(r.error?.issues)).toContain(message);
  });

  it('is part of the agent request; hint:evaluation is a model ref', () => {
    expect(CreateAgentRequest.safeParse({ name: 'a', scorers: ok }).success).toBe(true);
    expect(CreateAgentRequest.safeParse({ name: 'a', model: 'hint:evaluation' }).success).toBe(true);
  });
});
