import OpenAI from 'openai';
import type { StreamTimeouts } from './stream-guard';
import type { ModelRequest } from './types';

export interface OpenAIClientOptions {
  apiKey?: string;
  baseURL?: string;
  /** Wait for response headers (the SDK's own timeout). */
  timeoutMs?: number;
  /** Silence between chunks, and the whole attempt (DEFAULT_STREAM_TIMEOUTS when absent). */
  streamTimeouts?: Partial<StreamTimeouts>;
  fetch?: typeof fetch;
}

/** The one way both OpenAI providers (Responses, Chat Completions) build their SDK client. */
export function createOpenAIClient(options: OpenAIClientOptions): OpenAI {
  return new OpenAI({
    apiKey: options.apiKey ?? 'unset',
    baseURL: options.baseURL,
    // Retries and fallback are the engine's (seed 002 policy), never the SDK's.
    maxRetries: 0,
    timeout: options.timeoutMs ?? 120_000,
    ...(options.fetch ? { fetch: options.fetch } : {}),
  });
}

/**
 * The prompt-cache fields of both OpenAI APIs (docs/adr/0032). OpenAI caches prompts of 1024 tokens
 * or more on its own; `prompt_cache_key` routes requests that share a prefix to the same cache (one
 * key per agent and session). `long` asks for `prompt_cache_retention: 24h`, the only lifetime longer
 * than the default the API offers (`prompt_cache_options.ttl` knows only `30m`); the field is marked
 * deprecated in favour of that one, which cannot say it.
 */
export function openAiCacheParams(request: Pick<ModelRequest, 'cache'>): {
  prompt_cache_key?: string;
  prompt_cache_retention?: '24h';
} {
  if (!request.cache) return {};
  return {
    prompt_cache_key: request.cache.key,
    ...(request.cache.retention === 'long' ? { prompt_cache_retention: '24h' as const } : {}),
  };
}
