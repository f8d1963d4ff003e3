import { calcPrice, type PriceCalculation } from '@pydantic/genai-prices';
import type { Usage } from './types';

/**
 * Prices of model calls (ADR 0007). Lookup order for one call:
 *  1. the cost the provider reported (OpenRouter-style gateways send one);
 *  2. an override: the tenant's `modelPrices`, then the deployment's `MODEL_PRICES`, by
 *     `provider/model`, the OpenAI family name (`openai-chat/x` → `openai/x`), then `provider/*`;
 *  3. the built-in simulated price of the `scripted` provider;
 *  4. the maintained price table of `@pydantic/genai-prices` (bundled data, no network) for the
 *     OpenAI and Anthropic families: aliases and dated snapshots, cached-token and tiered prices.
 * Anything else is `unpriced`: booked at zero and flagged, never silently free.
 */

/**
 * USD per million tokens. Cached input is billed at `cachedInput` when given, else at `input`; input
 * written to the provider's cache at `cacheWrite` when given, else at `input`.
 */
export interface ModelPrice {
  input: number;
  output: number;
  cachedInput?: number;
  cacheWrite?: number;
}

/** Prices by `provider/model` or `provider/*`, over the maintained table. */
export type PriceOverrides = Record<string, ModelPrice>;

/** Where a call's cost came from (the ledger's `cost_source`). */
export type CostSource = 'provider' | 'override' | 'rate_table' | 'unpriced';

/** What a turn's cost is worth (the turn's `cost_status`). */
export type CostStatus = 'provider_reported' | 'priced' | 'unpriced';

export interface Cost {
  usd: number;
  source: CostSource;
}

/**
 * The scripted provider's spend is simulated at a small model's rate, so the offline demo and the
 * tests exercise cost accounting and `maxUsd` budgets end to end. It is an explicit price, never
 * "unpriced".
 */
const SCRIPTED: ModelPrice = { input: 0.5, output: 1.5 };

/** Provider names of this project → the provider ids of the maintained table. */
const TABLE_PROVIDER: Record<string, string> = {
  openai: 'openai',
  'openai-chat': 'openai',
  anthropic: 'anthropic',
};

function overrideFor(provider: string, model: string, overrides: PriceOverrides): ModelPrice | undefined {
  const family = provider === 'openai-chat' ? 'openai' : provider;
  return (
    overrides[`${provider}/${model}`] ??
    overrides[`${family}/${model}`] ??
    overrides[`${provider}/*`] ??
    overrides[`${family}/*`]
  );
}

/** The maintained table's answer for a model, or null when it does not know the model. */
function tableLookup(provider: string, model: string, usage: Usage): PriceCalculation | null {
  const providerId = TABLE_PROVIDER[provider];
  if (!providerId) return null;
  const { input, read, write, write1h } = inputParts(usage);
  try {
    return calcPrice(
      {
        input_tokens: input,
        cache_read_tokens: read,
        // The table prices writes at the model's cache-write rate (1 h writes at their own, Anthropic).
        ...(write > 0 ? { cache_write_tokens: write } : {}),
        ...(write1h > 0 ? { cache_write_1h_tokens: write1h } : {}),
        output_tokens: Math.max(0, usage.outputTokens),
      },
      model,
      { providerId },
    );
  } catch {
    return null;
  }
}

/** The prompt's parts, clamped so reads and writes never exceed the input they are part of. */
function inputParts(usage: Usage): { input: number; read: number; write: number; write1h: number } {
  const input = Math.max(0, usage.inputTokens);
  const read = Math.min(Math.max(0, usage.cachedTokens), input);
  const write = Math.min(Math.max(0, usage.cacheWriteTokens ?? 0), input - read);
  const write1h = Math.min(Math.max(0, usage.cacheWrite1hTokens ?? 0), write);
  return { input, read, write, write1h };
}

function byRate(rate: ModelPrice, usage: Usage): number {
  const { input, read, write } = inputParts(usage);
  return (
    ((input - read - write) * rate.input +
      read * (rate.cachedInput ?? rate.input) +
      write * (rate.cacheWrite ?? rate.input) +
      usage.outputTokens * rate.output) /
    1_000_000
  );
}

/** The cost of one provider call. */
export function costOf(
  provider: string,
  model: string,
  usage: Usage,
  reportedUsd?: number,
  overrides: PriceOverrides = {},
): Cost {
  if (reportedUsd !== undefined && Number.isFinite(reportedUsd) && reportedUsd >= 0) {
    return { usd: reportedUsd, source: 'provider' };
  }
  const override = overrideFor(provider, model, overrides);
  if (override) return { usd: byRate(override, usage), source: 'override' };
  if (provider === 'scripted') return { usd: byRate(SCRIPTED, usage), source: 'rate_table' };
  const table = tableLookup(provider, model, usage);
  if (table) return { usd: table.total_price, source: 'rate_table' };
  return { usd: 0, source: 'unpriced' };
}

/**
 * What the provider's prompt cache saved on one call (docs/adr/0032): its cost with every prompt token
 * billed as plain input, less its cost as billed (cheaper reads, dearer writes). Negative when a call
 * only wrote the cache (the first call of a prefix pays for the writes the later ones read). Priced
 * the same way as the call, from the rates (a provider-reported cost has no rates: the rate table's
 * or the override's are used when there are any, else nothing is claimed).
 */
export function cacheSavingsUsd(
  provider: string,
  model: string,
  usage: Usage,
  overrides: PriceOverrides = {},
): number {
  const { read, write } = inputParts(usage);
  if (read === 0 && write === 0) return 0;
  const plain: Usage = { inputTokens: usage.inputTokens, outputTokens: usage.outputTokens, cachedTokens: 0 };
  const without = costOf(provider, model, plain, undefined, overrides);
  if (without.source === 'unpriced') return 0;
  return without.usd - costOf(provider, model, usage, undefined, overrides).usd;
}

/**
 * Whether calls to `ref` (`provider/model`) can be priced before they are made: an override, the
 * scripted provider or the maintained table knows it. A provider that reports its own cost may
 * still price an unknown model, but only after the call: a budget cannot rely on that.
 */
export function isPriced(ref: string, overrides: PriceOverrides = {}): boolean {
  const [provider, ...rest] = ref.split('/');
  const model = rest.join('/');
  if (!model) return false;
  if (overrideFor(provider, model, overrides) || provider === 'scripted') return true;
  return tableLookup(provider, model, { inputTokens: 0, outputTokens: 0, cachedTokens: 0 }) !== null;
}

/** The turn-level status one call contributes. */
export function costStatusOf(source: string): CostStatus {
  if (source === 'provider') return 'provider_reported';
  if (source === 'unpriced') return 'unpriced';
  return 'priced';
}

/** Context windows by provider family when neither an override nor the maintained table knows the model. */
const WINDOWS: Record<string, number> = {
  'anthropic/*': 200_000,
  'scripted/*': 128_000,
};

/**
 * A model's context window in tokens: the deployment's `overrides` first, then the maintained
 * table, then the provider family, else 128k.
 */
export function contextWindow(ref: string, overrides: Record<string, number> = {}): number {
  if (overrides[ref] !== undefined) return overrides[ref];
  const [provider, ...rest] = ref.split('/');
  const model = rest.join('/');
  const known = tableLookup(provider, model, { inputTokens: 0, outputTokens: 0, cachedTokens: 0 })?.model
    .context_window;
  if (known) return known;
  const family = provider === 'openai-chat' ? 'openai' : provider;
  return WINDOWS[`${family}/*`] ?? 128_000;
}

/**
 * The cost of one embeddings call to `ref` (`<provider>/<model>`, docs/adr/0049), from the tokens
 * the provider billed: the built-in `local/*` embedders are free (an explicit zero rate, not
 * "unpriced"); `openai/*` is priced like a model call (an override, then the maintained table,
 * which knows text-embedding-3-small, -3-large and ada-002), with every token as input.
 */
export function embeddingCost(ref: string, inputTokens: number, overrides: PriceOverrides = {}): Cost {
  const slash = ref.indexOf('/');
  const provider = slash > 0 ? ref.slice(0, slash) : ref;
  const model = ref.slice(slash + 1);
  if (provider === 'local' && !overrideFor(provider, model, overrides))
    return { usd: 0, source: 'rate_table' };
  return costOf(provider, model, { inputTokens, outputTokens: 0, cachedTokens: 0 }, undefined, overrides);
}

/** {@link embeddingCost} in USD (0 when unpriced: check `embeddingCost(...).source` to tell). */
export function embeddingCostUsd(ref: string, inputTokens: number, overrides: PriceOverrides = {}): number {
  return embeddingCost(ref, inputTokens, overrides).usd;
}
