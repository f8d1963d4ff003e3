import type { Usage } from './types';

/** USD per million tokens. Cached input is billed at `cachedInput` when the provider discounts it. */
interface Rate {
  input: number;
  output: number;
  cachedInput?: number;
}

/**
 * Per-model rate table, used when the provider reports no cost. Keys are
 * `provider/model` or `provider/*`. The scripted provider is priced like a small
 * model so the demo exercises cost accounting end to end; its spend is simulated.
 */
const RATES: Record<string, Rate> = {
  'openai/gpt-4o': { input: 2.5, output: 10, cachedInput: 1.25 },
  'openai/gpt-4o-mini': { input: 0.15, output: 0.6, cachedInput: 0.075 },
  'openai/gpt-4.1': { input: 2, output: 8, cachedInput: 0.5 },
  'openai/gpt-4.1-mini': { input: 0.4, output: 1.6, cachedInput: 0.1 },
  'anthropic/claude-sonnet-4-5': { input: 3, output: 15, cachedInput: 0.3 },
  'anthropic/claude-haiku-4-5': { input: 1, output: 5, cachedInput: 0.1 },
  'scripted/*': { input: 0.5, output: 1.5 },
};

function rateFor(provider: string, model: string): Rate | undefined {
  const family = provider === 'openai-chat' ? 'openai' : provider;
  return RATES[`${family}/${model}`] ?? RATES[`${family}/*`];
}

export interface Cost {
  usd: number;
  source: 'provider' | 'rate_table' | 'unpriced';
}

export function costOf(provider: string, model: string, usage: Usage, reportedUsd?: number): Cost {
  if (reportedUsd !== undefined && Number.isFinite(reportedUsd) && reportedUsd >= 0) {
    return { usd: reportedUsd, source: 'provider' };
  }
  const rate = rateFor(provider, model);
  if (!rate) return { usd: 0, source: 'unpriced' };
  const cached = Math.min(usage.cachedTokens, usage.inputTokens);
  const usd =
    ((usage.inputTokens - cached) * rate.input +
      cached * (rate.cachedInput ?? rate.input) +
      usage.outputTokens * rate.output) /
    1_000_000;
  return { usd, source: 'rate_table' };
}

/** Context windows in tokens, by `provider/model` or `provider/*`; unknown models get 128k. */
const WINDOWS: Record<string, number> = {
  'openai/gpt-4o': 128_000,
  'openai/gpt-4o-mini': 128_000,
  'openai/gpt-4.1': 1_047_576,
  'openai/gpt-4.1-mini': 1_047_576,
  'anthropic/*': 200_000,
  'scripted/*': 128_000,
};

/** A model's context window in tokens; `overrides` (deployment config) win over the built-in table. */
export function contextWindow(ref: string, overrides: Record<string, number> = {}): number {
  if (overrides[ref] !== undefined) return overrides[ref];
  const [provider, ...rest] = ref.split('/');
  const family = provider === 'openai-chat' ? 'openai' : provider;
  return WINDOWS[`${family}/${rest.join('/')}`] ?? WINDOWS[`${family}/*`] ?? 128_000;
}
