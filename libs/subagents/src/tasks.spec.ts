import { ASK_USER, DELEGATION_TOOLS, offeredTools } from './tasks';

describe('offeredTools', () => {
  it('takes the delegation tools from a worker-tier agent and leaves its other tools', () => {
    expect(
      offeredTools({ tier: 'worker', tools: ['spawn_subagent', 'current_time', 'wait_subagent'] }),
    ).toEqual(['current_time']);
  });

  it.each(['chat', 'reasoning', undefined])('leaves a %s agent its tools as named', (tier) => {
    const tools = [...DELEGATION_TOOLS, 'word_count'];
    expect(offeredTools({ tier, tools })).toEqual(tools);
  });

  it('adds ask_user for a child turn, once', () => {
    expect(offeredTools({ tier: 'worker', tools: ['word_count'] }, true)).toEqual(['word_count', ASK_USER]);
    expect(offeredTools({ tier: 'chat', tools: [ASK_USER] }, true)).toEqual([ASK_USER]);
    expect(offeredTools({ tier: 'chat', tools: ['word_count'] }, false)).toEqual(['word_count']);
  });
});
