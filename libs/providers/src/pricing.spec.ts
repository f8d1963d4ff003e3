import { contextWindow, costOf } from './pricing';
import type { Usage } from './types';

const M = 1_000_000;
const usage = (inputTokens: number, outputTokens: number, cachedTokens = 0): Usage => ({
  inputTokens,
  outputTokens,
  cachedTokens,
});

describe('costOf', () => {
  it('uses the provider-reported cost when there is one, even for a priced model', () => {
    expect(costOf('openai', 'gpt-4o', usage(M, M), 0.42)).toEqual({ usd: 0.42, source: 'provider' });
    expect(costOf('fake', 'unknown', usage(M, M), 0.42)).toEqual({ usd: 0.42, source: 'provider' });
  });

  it('accepts a reported cost of zero as the provider figure', () => {
    expect(costOf('openai', 'gpt-4o', usage(M, M), 0)).toEqual({ usd: 0, source: 'provider' });
  });

  it.each([Number.NaN, Number.POSITIVE_INFINITY, -1])(
    'ignores a reported cost of %p and uses the rate table',
    (bad) => {
      const cost = costOf('openai', 'gpt-4o', usage(M, M), bad);
      expect(cost.source).toBe('rate_table');
      expect(cost.usd).toBeCloseTo(12.5, 10);
    },
  );

  it('prices input and output tokens per million from the rate table', () => {
    expect(costOf('openai', 'gpt-4o', usage(M, M)).usd).toBeCloseTo(2.5 + 10, 10);
    expect(costOf('openai', 'gpt-4o-mini', usage(2 * M, 0)).usd).toBeCloseTo(0.3, 10);
    expect(costOf('anthropic', 'claude-sonnet-4-5', usage(0, M)).usd).toBeCloseTo(15, 10);
    expect(costOf('anthropic', 'claude-haiku-4-5', usage(1000, 1000)).usd).toBeCloseTo(0.006, 12);
  });

  it('bills cached input tokens at the cached rate', () => {
    // 600k fresh input at 2.5 + 400k cached at 1.25 + 1M output at 10
    expect(costOf('openai', 'gpt-4o', usage(M, M, 400_000)).usd).toBeCloseTo(1.5 + 0.5 + 10, 10);
    // 1M cached at 0.3 on Anthropic
    expect(costOf('anthropic', 'claude-sonnet-4-5', usage(M, 0, M)).usd).toBeCloseTo(0.3, 10);
  });

  it('never counts more cached tokens than input tokens', () => {
    expect(costOf('openai', 'gpt-4o', usage(M, 0, 5 * M)).usd).toBeCloseTo(1.25, 10);
  });

  it('bills cached tokens at the input rate when the model has no cached discount', () => {
    expect(costOf('scripted', 'demo', usage(M, M, M)).usd).toBeCloseTo(0.5 + 1.5, 10);
  });

  it('prices every scripted fixture with the scripted/* wildcard', () => {
    expect(costOf('scripted', 'any-fixture', usage(M, 0))).toEqual({ usd: 0.5, source: 'rate_table' });
  });

  it('prices openai-chat models like openai models', () => {
    expect(costOf('openai-chat', 'gpt-4.1', usage(M, M, M))).toEqual(
      costOf('openai', 'gpt-4.1', usage(M, M, M)),
    );
    expect(costOf('openai-chat', 'gpt-4.1', usage(M, M, M)).usd).toBeCloseTo(0.5 + 8, 10);
  });

  it('reports an unknown model or provider as unpriced at zero', () => {
    expect(costOf('openai', 'gpt-9-imaginary', usage(M, M))).toEqual({ usd: 0, source: 'unpriced' });
    expect(costOf('fake', 'm1', usage(M, M))).toEqual({ usd: 0, source: 'unpriced' });
    expect(costOf('anthropic', 'gpt-4o', usage(M, M))).toEqual({ usd: 0, source: 'unpriced' });
  });

  it('costs nothing for no tokens on a priced model', () => {
    expect(costOf('openai', 'gpt-4o', usage(0, 0))).toEqual({ usd: 0, source: 'rate_table' });
  });
});

describe('contextWindow', () => {
  it('reads the table by model, then by provider family, else 128k', () => {
    expect(contextWindow('openai/gpt-4.1')).toBe(1_047_576);
    expect(contextWindow('openai-chat/gpt-4.1')).toBe(1_047_576);
    expect(contextWindow('anthropic/claude-sonnet-5-5')).toBe(200_000);
    expect(contextWindow('openai-chat/llama3.1:8b')).toBe(128_000);
  });

  it('lets the deployment’s overrides win', () => {
    const overrides = { 'openai-chat/llama3.1:8b': 8192, 'anthropic/claude-sonnet-5-5': 1_000_000 };
    expect(contextWindow('openai-chat/llama3.1:8b', overrides)).toBe(8192);
    expect(contextWindow('anthropic/claude-sonnet-5-5', overrides)).toBe(1_000_000);
    expect(contextWindow('openai/gpt-4o', overrides)).toBe(128_000);
  });
});
