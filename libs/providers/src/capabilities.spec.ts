import { modelCapabilities, ROUTE_REQUIREMENTS, takesImages } from './capabilities';

describe('takesImages', () => {
  it.each([
    ['openai-chat/gpt-4o-mini', true],
    ['openai/gpt-5', true],
    ['anthropic/claude-sonnet-4-5', true],
    ['openai-chat/gpt-3.5-turbo', false],
    ['openai/o3-mini', false],
    ['anthropic/claude-2.1', false],
    ['scripted/demo', false],
    ['hint:fast', false],
    ['nonsense', false],
  ])('%s → %s', (ref, expected) => {
    expect(takesImages(ref)).toBe(expected);
  });
});

describe('modelCapabilities (docs/adr/0059)', () => {
  it.each([
    ['openai-chat/gpt-4o-mini', { vision: true, tools: true, structuredOutput: true }],
    ['openai/gpt-3.5-turbo', { vision: false, tools: true, structuredOutput: false }],
    ['openai-chat/davinci-002', { vision: false, tools: false, structuredOutput: false }],
    ['anthropic/claude-sonnet-4-5', { vision: true, tools: true, structuredOutput: true }],
    ['anthropic/claude-3-haiku-20240307', { vision: true, tools: true, structuredOutput: false }],
    ['anthropic/claude-2.1', { vision: false, tools: false, structuredOutput: false }],
    ['scripted/demo', { vision: false, tools: true, structuredOutput: false }],
    ['hint:vision', { vision: false, tools: false, structuredOutput: false }],
  ])('%s', (ref, expected) => {
    expect(modelCapabilities(ref)).toEqual(expected);
  });

  it('the vision route needs the vision flag', () => {
    expect(ROUTE_REQUIREMENTS.vision).toEqual(['vision']);
    expect(ROUTE_REQUIREMENTS.chat).toBeUndefined();
  });
});
