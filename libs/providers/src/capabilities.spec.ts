import { takesImages } from './capabilities';

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
