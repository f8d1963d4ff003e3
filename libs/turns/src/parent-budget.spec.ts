import type { TranscriptEntry } from '@switchboard/store';
import { parentBudgetCap } from './parent-budget';

const entry = (metadata: unknown) => ({ metadata }) as unknown as TranscriptEntry;

/** A child turn's maxUsd is lowered to the share its spawn wrote on its input message (docs/adr/0025). */
describe('parentBudgetCap', () => {
  const budget = { maxIterations: 10, maxUsd: 2 };

  it('lowers maxUsd to the share, and sets it when the agent has none', () => {
    expect(parentBudgetCap(budget, [entry({ subagent: { taskId: 't', maxUsd: 0.5 } })])).toEqual({
      maxIterations: 10,
      maxUsd: 0.5,
    });
    const uncapped: { maxIterations: number; maxUsd?: number } = { maxIterations: 10 };
    expect(parentBudgetCap(uncapped, [entry({ subagent: { maxUsd: 0.5 } })])).toEqual({
      maxIterations: 10,
      maxUsd: 0.5,
    });
  });

  it('never raises it, and leaves a turn without a share as it was', () => {
    expect(parentBudgetCap(budget, [entry({ subagent: { maxUsd: 5 } })])).toBe(budget);
    expect(parentBudgetCap(budget, [entry({ subagent: { taskId: 't' } }), entry(null)])).toBe(budget);
    expect(parentBudgetCap(budget, [])).toBe(budget);
  });
});
