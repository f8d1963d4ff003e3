import { contextWindow, costOf, costStatusOf, isPriced } from './pricing';
import type { Usage } from './types';

const M = 1_000_000;
const usage = (inputTokens: number, outputTokens: number, cachedTokens = 0): Usage => ({
  inputTokens,
  outputTokens,
  cachedTokens,
});

describe('costOf', () => {
  it('uses the provider-reported cost when there is one, even for a priced or overridden model', () => {
    expect(costOf('openai', 'gpt-5', usage(M, M), 0.42)).toEqual({ usd: 0.42, source: 'provider' });
    expect(costOf('fake', 'unknown', usage(M, M), 0.42)).toEqual({ usd: 0.42, source: 'provider' });
    const overrides = { 'openai/gpt-5': { input: 1, output: 1 } };
    expect(costOf('openai', 'gpt-5', usage(M, M), 0.42, overrides)).toEqual({
      usd: 0.42,
      source: 'provider',
    });
  });

  it('accepts a reported cost of zero as the provider figure', () => {
    expect(costOf('openai', 'gpt-5', usage(M, M), 0)).toEqual({ usd: 0, source: 'provider' });
  });

  it.each([Number.NaN, Number.POSITIVE_INFINITY, -1])(
    'ignores a reported cost of %p and uses the price table',
    (bad) => {
      const cost = costOf('openai', 'gpt-5', usage(M, M), bad);
      expect(cost.source).toBe('rate_table');
      expect(cost.usd).toBeCloseTo(1.25 + 10, 10);
    },
  );

  it('prices current OpenAI models from the maintained table', () => {
    expect(costOf('openai', 'gpt-5', usage(M, M))).toEqual({
      usd: expect.closeTo(11.25, 10),
      source: 'rate_table',
    });
    expect(costOf('openai', 'gpt-5-mini', usage(M, M)).usd).toBeCloseTo(0.25 + 2, 10);
    expect(costOf('openai', 'gpt-4o', usage(M, M)).usd).toBeCloseTo(2.5 + 10, 10);
    expect(costOf('openai', 'gpt-4.1-mini', usage(2 * M, 0)).usd).toBeCloseTo(0.8, 10);
  });

  it('prices current Anthropic models from the maintained table', () => {
    expect(costOf('anthropic', 'claude-sonnet-4-6', usage(M, M)).usd).toBeCloseTo(3 + 15, 10);
    expect(costOf('anthropic', 'claude-opus-4-6', usage(0, M)).usd).toBeCloseTo(25, 10);
    expect(costOf('anthropic', 'claude-haiku-4-5', usage(1000, 1000)).usd).toBeCloseTo(0.006, 12);
    // The model the README routes to.
    const sonnet = costOf('anthropic', 'claude-sonnet-5-5', usage(1000, 1000));
    expect(sonnet.source).toBe('rate_table');
    expect(sonnet.usd).toBeGreaterThan(0);
  });

  it('matches dated snapshots to their model', () => {
    expect(costOf('openai', 'gpt-5-2025-08-07', usage(M, M))).toEqual(costOf('openai', 'gpt-5', usage(M, M)));
    expect(costOf('anthropic', 'claude-sonnet-4-5-20250929', usage(1000, 1000))).toEqual(
      costOf('anthropic', 'claude-sonnet-4-5', usage(1000, 1000)),
    );
  });

  it('bills cached input tokens at the cached rate', () => {
    // 600k fresh input at 1.25 + 400k cached at 0.125 + 1M output at 10
    expect(costOf('openai', 'gpt-5', usage(M, M, 400_000)).usd).toBeCloseTo(0.75 + 0.05 + 10, 10);
    // 1M cached at 0.3 on Anthropic
    expect(costOf('anthropic', 'claude-sonnet-4-6', usage(M, 0, M)).usd).toBeCloseTo(0.3, 10);
  });

  it('never counts more cached tokens than input tokens', () => {
    expect(costOf('openai', 'gpt-5', usage(M, 0, 5 * M)).usd).toBeCloseTo(0.125, 10);
    expect(
      costOf('openai', 'x', usage(M, 0, 5 * M), undefined, { 'openai/x': { input: 2, output: 2 } }).usd,
    ).toBeCloseTo(2, 10);
  });

  it('prices openai-chat models like openai models', () => {
    expect(costOf('openai-chat', 'gpt-5', usage(M, M, M))).toEqual(costOf('openai', 'gpt-5', usage(M, M, M)));
    expect(costOf('openai-chat', 'gpt-5', usage(M, M, M)).usd).toBeCloseTo(0.125 + 10, 10);
  });

  it('lets an override win over the table, by model, family name or provider wildcard', () => {
    const overrides = {
      'openai/gpt-5': { input: 1, output: 2, cachedInput: 0.5 },
      'openai-chat/*': { input: 0, output: 0 },
    };
    expect(costOf('openai', 'gpt-5', usage(M, M, M), undefined, overrides)).toEqual({
      usd: 0.5 + 2,
      source: 'override',
    });
    // openai-chat/gpt-5 takes the family's price before the wildcard of its provider.
    expect(costOf('openai-chat', 'gpt-5', usage(M, M), undefined, overrides).usd).toBeCloseTo(3, 10);
    expect(costOf('openai-chat', 'llama3.1:8b', usage(M, M), undefined, overrides)).toEqual({
      usd: 0,
      source: 'override',
    });
    // Without a cached price, cached tokens cost the input price.
    expect(
      costOf('vllm', 'x', usage(M, 0, M), undefined, { 'vllm/x': { input: 4, output: 0 } }).usd,
    ).toBeCloseTo(4, 10);
  });

  it('prices the scripted provider explicitly (simulated spend), whatever the fixture', () => {
    expect(costOf('scripted', 'any-fixture', usage(M, 0))).toEqual({ usd: 0.5, source: 'rate_table' });
    expect(costOf('scripted', 'demo', usage(M, M, M)).usd).toBeCloseTo(0.5 + 1.5, 10);
    expect(
      costOf('scripted', 'demo', usage(M, 0), undefined, { 'scripted/*': { input: 0, output: 0 } }),
    ).toEqual({
      usd: 0,
      source: 'override',
    });
  });

  it('reports an unknown model or provider as unpriced at zero', () => {
    expect(costOf('openai', 'gpt-9-imaginary', usage(M, M))).toEqual({ usd: 0, source: 'unpriced' });
    expect(costOf('openai-chat', 'llama3.1:8b', usage(M, M))).toEqual({ usd: 0, source: 'unpriced' });
    expect(costOf('fake', 'm1', usage(M, M))).toEqual({ usd: 0, source: 'unpriced' });
    expect(costOf('anthropic', 'gpt-5', usage(M, M))).toEqual({ usd: 0, source: 'unpriced' });
  });

  it('costs nothing for no tokens on a priced model', () => {
    expect(costOf('openai', 'gpt-5', usage(0, 0))).toEqual({ usd: 0, source: 'rate_table' });
  });
});

describe('isPriced', () => {
  it('knows the table, the scripted provider and overrides', () => {
    expect(isPriced('openai/gpt-5')).toBe(true);
    expect(isPriced('openai-chat/gpt-5')).toBe(true);
    expect(isPriced('anthropic/claude-sonnet-4-6')).toBe(true);
    expect(isPriced('anthropic/claude-sonnet-5-5')).toBe(true);
    expect(isPriced('scripted/demo')).toBe(true);
    expect(isPriced('openai-chat/llama3.1:8b', { 'openai-chat/llama3.1:8b': { input: 0, output: 0 } })).toBe(
      true,
    );
  });

  it('is false for unknown models, other providers and malformed refs', () => {
    expect(isPriced('openai-chat/llama3.1:8b')).toBe(false);
    expect(isPriced('openai/gpt-9-imaginary')).toBe(false);
    expect(isPriced('fake/m1')).toBe(false);
    expect(isPriced('openai')).toBe(false);
  });
});

describe('costStatusOf', () => {
  it('maps ledger sources to turn statuses', () => {
    expect(costStatusOf('provider')).toBe('provider_reported');
    expect(costStatusOf('rate_table')).toBe('priced');
    expect(costStatusOf('override')).toBe('priced');
    expect(costStatusOf('unpriced')).toBe('unpriced');
  });
});

describe('contextWindow', () => {
  it('reads the maintained table by model, then the provider family, else 128k', () => {
    expect(contextWindow('openai/gpt-5')).toBe(400_000);
    expect(contextWindow('openai-chat/gpt-4o')).toBe(128_000);
    expect(contextWindow('anthropic/claude-sonnet-4-6')).toBe(1_000_000);
    expect(contextWindow('anthropic/claude-unknown-1')).toBe(200_000);
    expect(contextWindow('openai-chat/llama3.1:8b')).toBe(128_000);
    expect(contextWindow('scripted/demo')).toBe(128_000);
  });

  it('lets the deployment’s overrides win', () => {
    const overrides = { 'openai-chat/llama3.1:8b': 8192, 'anthropic/claude-sonnet-5-5': 500_000 };
    expect(contextWindow('openai-chat/llama3.1:8b', overrides)).toBe(8192);
    expect(contextWindow('anthropic/claude-sonnet-5-5', overrides)).toBe(500_000);
    expect(contextWindow('openai/gpt-5', overrides)).toBe(400_000);
  });
});
