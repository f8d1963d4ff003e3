import type { ResponseFormat, ToolChoice } from '@switchboard/contracts';

/** The provider-neutral message and tool-call model every provider maps to and from. */

export interface ToolCallRequest {
  /** The provider's id for this call; tool results answer it. */
  id: string;
  name: string;
  /** Raw JSON text as the model produced it: it may be malformed. */
  arguments: string;
}

/** An image of a user message: a `data:` URL or an https URL (docs/adr/0035). */
export interface ImagePart {
  url: string;
  detail?: 'auto' | 'low' | 'high';
}

export type ChatMessage =
  | { role: 'system'; content: string }
  | { role: 'user'; content: string; images?: ImagePart[] }
  | { role: 'assistant'; content: string; toolCalls: ToolCallRequest[] }
  | { role: 'tool'; toolCallId: string; name: string; content: string };

export interface ToolSpec {
  name: string;
  description: string;
  /** JSON Schema of the arguments object. */
  parameters: Record<string, unknown>;
  /** Emit the schema in the provider's strict mode (seed 002 "Provider Tool Schema Contract"). */
  strict?: boolean;
}

export interface Usage {
  /** Every prompt token, cached reads and cache writes included (OpenAI's semantics on every provider). */
  inputTokens: number;
  outputTokens: number;
  /** Prompt tokens read from the provider's prompt cache (a part of inputTokens). */
  cachedTokens: number;
  /** Prompt tokens written to the provider's prompt cache (a part of inputTokens; Anthropic, some OpenAI models). */
  cacheWriteTokens?: number;
  /** Of cacheWriteTokens, those written with the long (1 h) lifetime, priced apart (Anthropic). */
  cacheWrite1hTokens?: number;
}

/**
 * What the provider's prompt cache is asked for (docs/adr/0032). `key` groups requests that share a
 * prefix (OpenAI `prompt_cache_key`: one per agent and session, a sub-agent on its parent's agent and
 * model gets its parent's); `retention` `long` asks for the longer lifetime where the API has one
 * (Anthropic `ttl: 1h`, OpenAI `prompt_cache_retention: 24h`), for turns that may wait.
 */
export interface PromptCache {
  key: string;
  retention: 'short' | 'long';
}

export interface ModelRequest {
  /** Model name without the provider prefix. */
  model: string;
  messages: ChatMessage[];
  tools: ToolSpec[];
  signal?: AbortSignal;
  onTextDelta?: (delta: string) => void;
  /** Ask the provider to cache the request's stable prefix; absent: no cache is asked for. */
  cache?: PromptCache;
  /**
   * The structured output the final answer must have (docs/adr/0048): a provider that supports it
   * sends it natively, one that does not tells the model in words. The engine validates either way.
   */
  responseFormat?: ResponseFormat;
  /**
   * Force a tool call (`required`) or the named tool; absent: the model decides (docs/adr/0047).
   * `none`: the tools are described but the model may not call one (the summarising call at the
   * model-call cap, docs/adr/0058).
   */
  toolChoice?: ToolChoice | { type: 'none' };
}

export interface ModelResponse {
  text: string;
  toolCalls: ToolCallRequest[];
  usage: Usage;
  /** Spend the provider itself reported, when it does; it wins over the rate table. */
  reportedCostUsd?: number;
  finishReason: 'stop' | 'tool_calls' | 'length' | 'other';
}

export interface ModelProvider {
  /** The `provider` part of a `provider/model` reference. */
  readonly name: string;
  complete(request: ModelRequest): Promise<ModelResponse>;
}

export type ProviderErrorKind =
  | 'timeout'
  | 'connection'
  | 'rate_limited'
  | 'server'
  | 'auth'
  | 'bad_request'
  | 'context_length'
  | 'invalid_response'
  | 'cancelled';

const RETRYABLE: ReadonlySet<ProviderErrorKind> = new Set([
  'timeout',
  'connection',
  'rate_limited',
  'server',
]);

/**
 * Where a provider request failed (seed 002 `transport_diagnostics`): enough to
 * tell a timeout from a refused connection from a bad body, without putting
 * any of it in operator-facing summaries.
 */
export interface TransportDiagnostics {
  stage: 'resolve' | 'connect' | 'timeout' | 'http_status' | 'decode' | 'stream' | 'aborted';
  provider?: string;
  status?: number;
  requestId?: string;
  /** The error and its causes, outermost first (`Name: message`). */
  sourceChain: string[];
}

export interface ProviderErrorDetails {
  status?: number;
  retryAfterMs?: number;
  provider?: string;
  requestId?: string;
  diagnostics?: TransportDiagnostics;
}

/** A classified provider failure (seed 002 "Provider Transport Contract"). */
export class ProviderError extends Error {
  readonly retryable: boolean;
  constructor(
    readonly kind: ProviderErrorKind,
    message: string,
    readonly details: ProviderErrorDetails = {},
  ) {
    super(message);
    this.name = 'ProviderError';
    this.retryable = RETRYABLE.has(kind);
  }
}
