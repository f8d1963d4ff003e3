import { brokenReferrers, subagentIssues, tierResolver, type TierAgent } from './tiers';

let n = 0;
const agent = (
  name: string,
  tier: string,
  allowedSubagents: string[] = [],
  createdAt = new Date(1000 + n),
): TierAgent => ({
  id: `id-${name}-${n++}`,
  name,
  tier,
  allowedSubagents,
  createdAt,
});

describe('subagentIssues', () => {
  const resolve = tierResolver([agent('mine', 'worker'), agent('deep', 'reasoning'), agent('front', 'chat')]);

  it('accepts what the tier rules allow, tenant agents and archetypes alike', () => {
    expect(
      subagentIssues({ tier: 'chat', allowedSubagents: ['planner', 'researcher', 'mine', 'deep'] }, resolve),
    ).toEqual([]);
    expect(subagentIssues({ tier: 'reasoning', allowedSubagents: ['researcher', 'mine'] }, resolve)).toEqual(
      [],
    );
    expect(subagentIssues({ tier: 'worker', allowedSubagents: [] }, resolve)).toEqual([]);
  });

  it('refuses same-tier and upward spawns, naming the entry', () => {
    expect(
      subagentIssues({ tier: 'chat', allowedSubagents: ['researcher', 'orchestrator'] }, resolve),
    ).toEqual([
      {
        path: 'allowedSubagents.1',
        message: expect.stringContaining('a chat agent may not spawn orchestrator'),
      },
    ]);
    expect(subagentIssues({ tier: 'reasoning', allowedSubagents: ['planner'] }, resolve)[0].path).toBe(
      'allowedSubagents.0',
    );
    expect(subagentIssues({ tier: 'reasoning', allowedSubagents: ['front'] }, resolve)).toHaveLength(1);
  });

  it('refuses any list on a worker, unknown names and duplicates', () => {
    expect(subagentIssues({ tier: 'worker', allowedSubagents: ['researcher'] }, resolve)).toEqual([
      { path: 'allowedSubagents', message: expect.stringContaining('worker') },
    ]);
    expect(subagentIssues({ tier: 'chat', allowedSubagents: ['ghost'] }, resolve)[0].message).toContain(
      'neither an agent of the tenant nor a built-in archetype',
    );
    expect(subagentIssues({ tier: 'chat', allowedSubagents: ['mine', 'mine'] }, resolve)).toEqual([
      { path: 'allowedSubagents.1', message: 'mine is listed twice' },
    ]);
  });

  it('resolves a name to the oldest same-name agent, then to the archetype', () => {
    const r = tierResolver([
      agent('researcher', 'chat', [], new Date(2000)),
      agent('researcher', 'worker', [], new Date(1000)),
    ]);
    expect(r('researcher')).toEqual({ tier: 'worker', source: 'agent' });
    expect(r('planner')).toEqual({ tier: 'reasoning', source: 'archetype' });
    expect(r('ghost')).toBeUndefined();
  });
});

describe('brokenReferrers', () => {
  it('names an agent whose list a tier change breaks, and not one already broken', () => {
    const child = agent('helper', 'worker');
    const front = agent('front', 'chat', ['helper']);
    const already = agent('bad', 'reasoning', ['helper', 'planner']);
    const before = [child, front, already];
    const promoted = { ...child, tier: 'chat' };
    const after = [front, already, promoted];
    const broken = brokenReferrers(before, after, child.id);
    expect(broken.map((b) => [b.name, b.subagent])).toEqual([
      ['front', 'helper'],
      ['bad', 'helper'],
    ]);
    // `bad`'s planner entry was broken before the change: not reported.
    expect(broken.some((b) => b.subagent === 'planner')).toBe(false);
  });

  it('names referrers of a deleted or renamed agent with no archetype behind its name', () => {
    const child = agent('helper', 'worker');
    const front = agent('front', 'chat', ['helper']);
    expect(brokenReferrers([child, front], [front], child.id)).toHaveLength(1);
    expect(brokenReferrers([child, front], [front, { ...child, name: 'other' }], child.id)).toHaveLength(1);
  });

  it('lets a delete fall back to the archetype of the same name', () => {
    const own = agent('researcher', 'worker');
    const front = agent('front', 'chat', ['researcher']);
    expect(brokenReferrers([own, front], [front], own.id)).toEqual([]);
  });

  it('names referrers a new override of an archetype name breaks', () => {
    const front = agent('front', 'reasoning', ['researcher']);
    const override = agent('researcher', 'reasoning');
    expect(brokenReferrers([front], [front, override], override.id)).toHaveLength(1);
  });
});
