/** The provider-neutral message and tool-call model every provider maps to and from. */

export interface ToolCallRequest {
  /** The provider's id for this call; tool results answer it. */
  id: string;
  name: string;
  /** Raw JSON text as the model produced it: it may be malformed. */
  arguments: string;
}

export type ChatMessage =
  | { role: 'system'; content: string }
  | { role: 'user'; content: string }
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
  inputTokens: number;
  outputTokens: number;
  cachedTokens: number;
}

export interface ModelRequest {
  /** Model name without the provider prefix. */
  model: string;
  messages: ChatMessage[];
  tools: ToolSpec[];
  signal?: AbortSignal;
  onTextDelta?: (delta: string) => void;
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
