import { DELEGATION_TOOLS, offeredTools } from './tasks';

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
});
