import OpenAI from 'openai';
import type { StreamTimeouts } from './stream-guard';

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
