import { agentMaxUsd, childMaxUsd } from './budget';

/** A child's share of its parent's budget (docs/adr/0025). */
describe('childMaxUsd', () => {
  it.each([
    // child agent's own cap, parent cap, parent + children spent → child's cap
    [undefined, null, 0.4, { maxUsd: undefined }],
    [2, null, 0.4, { maxUsd: 2 }],
    [undefined, 1, 0.25, { maxUsd: 0.75 }],
    [2, 1, 0.25, { maxUsd: 0.75 }],
    [0.1, 1, 0.25, { maxUsd: 0.1 }],
    [0.1, 1, 1, 'exhausted'],
    [undefined, 1, 1.3, 'exhausted'],
  ] as const)('own %s, parent %s spent %s → %j', (own, maxUsd, spentUsd, expected) => {
    expect(childMaxUsd(own, { maxUsd, spentUsd })).toEqual(expected);
  });

  it('computes in the cost columns’ 8 decimal places, without binary float error', () => {
    expect(childMaxUsd(undefined, { maxUsd: 1, spentUsd: 0.3 + 0.2 })).toEqual({ maxUsd: 0.5 });
    expect(childMaxUsd(undefined, { maxUsd: 0.1, spentUsd: 0.07 })).toEqual({ maxUsd: 0.03 });
  });

  it('reads an agent’s stored maxUsd', () => {
    expect(agentMaxUsd({ maxUsd: 0.5, maxIterations: 3 })).toBe(0.5);
    expect(agentMaxUsd({ maxIterations: 3 })).toBeUndefined();
    expect(agentMaxUsd(null)).toBeUndefined();
    expect(agentMaxUsd({ maxUsd: 'x' })).toBeUndefined();
  });
});
