import type { TranscriptEntry } from '@switchboard/store';
import { reactorCap } from './reactor-cap';

const entry = (kind: string, metadata: unknown): TranscriptEntry => ({
  role: 'user',
  kind,
  trust: 'untrusted',
  authorityClass: 'external_evidence',
  body: { type: 'text', text: 'x' },
  toolCalls: null,
  toolCallId: null,
  metadata,
  turnSeq: 1,
  position: 0,
});

describe('reactorCap (spawn_reactor, docs/adr/0018)', () => {
  const budget = { maxIterations: 10, maxCostUsd: 1 };

  it("lowers the iteration budget to a webhook_event's triage cap", () => {
    expect(reactorCap(budget, [entry('webhook_event', { triage: { maxIterations: 3 } })])).toEqual({
      maxIterations: 3,
      maxCostUsd: 1,
    });
  });

  it('never raises it, and ignores the cap on other kinds or malformed values', () => {
    expect(
      reactorCap({ ...budget, maxIterations: 2 }, [entry('webhook_event', { triage: { maxIterations: 3 } })]),
    ).toEqual({ ...budget, maxIterations: 2 });
    expect(reactorCap(budget, [entry('operator_prompt', { triage: { maxIterations: 1 } })])).toBe(budget);
    expect(reactorCap(budget, [entry('webhook_event', { triage: { maxIterations: '1' } })])).toBe(budget);
    expect(reactorCap(budget, [entry('webhook_event', { triage: { maxIterations: 0 } })])).toBe(budget);
    expect(reactorCap(budget, [entry('webhook_event', null)])).toBe(budget);
  });
});
