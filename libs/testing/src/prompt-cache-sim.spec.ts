import { PromptCacheSim } from './prompt-cache-sim';

const SYSTEM = 'x'.repeat(5000);
const anthropic = (ttl: '5m' | '1h' | undefined, extra: string[] = []) => ({
  model: 'm',
  system: [{ type: 'text', text: SYSTEM, cache_control: { type: 'ephemeral', ...(ttl ? { ttl } : {}) } }],
  messages: [...extra.map((t) => ({ role: 'user', content: t })), { role: 'user', content: 'last' }],
});

describe('PromptCacheSim', () => {
  it('Anthropic: writes at a breakpoint, reads it back, and forgets it after its lifetime', () => {
    let now = 0;
    const sim = new PromptCacheSim({ now: () => now });
    const first = sim.apply('anthropic.messages', anthropic('5m'));
    expect(first).toEqual({ read: 0, write: expect.any(Number), write1h: 0 });
    expect(first.write).toBeGreaterThanOrEqual(1024);
    now = 4 * 60_000;
    expect(sim.apply('anthropic.messages', anthropic('5m')).read).toBe(first.write);
    // A hit refreshed it: 5 minutes after the hit, not after the write.
    now = 8 * 60_000;
    expect(sim.apply('anthropic.messages', anthropic('5m')).read).toBe(first.write);
    now = 14 * 60_000;
    expect(sim.apply('anthropic.messages', anthropic('5m')).read).toBe(0);
  });

  it('Anthropic: a 1 h breakpoint outlives 5 minutes and reports its writes as 1 h', () => {
    let now = 0;
    const sim = new PromptCacheSim({ now: () => now });
    const first = sim.apply('anthropic.messages', anthropic('1h'));
    expect(first.write1h).toBe(first.write);
    now = 50 * 60_000;
    expect(sim.apply('anthropic.messages', anthropic('1h')).read).toBe(first.write);
  });

  it('Anthropic: caches nothing without a breakpoint, nor a prefix under the minimum', () => {
    const sim = new PromptCacheSim();
    const bare = { model: 'm', system: SYSTEM, messages: [{ role: 'user', content: 'hi' }] };
    sim.apply('anthropic.messages', bare);
    expect(sim.apply('anthropic.messages', bare)).toEqual({ read: 0, write: 0, write1h: 0 });
    const small = {
      model: 'm',
      system: [{ type: 'text', text: 'short', cache_control: { type: 'ephemeral' } }],
      messages: [{ role: 'user', content: 'hi' }],
    };
    sim.apply('anthropic.messages', small);
    expect(sim.apply('anthropic.messages', small)).toEqual({ read: 0, write: 0, write1h: 0 });
  });

  it('OpenAI: reads the longest cached prefix per model and key, in 128-token steps', () => {
    const sim = new PromptCacheSim();
    const req = (key: string, messages: string[]) => ({
      model: 'gpt',
      prompt_cache_key: key,
      messages: [
        { role: 'system', content: SYSTEM },
        ...messages.map((content) => ({ role: 'user', content })),
      ],
    });
    expect(sim.apply('openai.chat.completions', req('a', ['one'])).read).toBe(0);
    const second = sim.apply('openai.chat.completions', req('a', ['one', 'two']));
    expect(second.read).toBeGreaterThanOrEqual(1024);
    expect(second.read % 128).toBe(0);
    expect(second.write).toBe(0);
    expect(sim.apply('openai.chat.completions', req('b', ['one', 'two'])).read).toBe(0);
  });
});
