/**
 * FakeLlmServer: a local HTTP server that speaks the real provider wire protocols so integration tests can
 * point the official `openai` and `@anthropic-ai/sdk` clients at it (via `baseURL`) and script each reply.
 *
 * Endpoints (all POST, JSON request bodies):
 *   - `/v1/chat/completions`  OpenAI Chat Completions (non-stream JSON, or SSE `data:` chunks + `data: [DONE]`)
 *   - `/v1/responses`         OpenAI Responses API (non-stream JSON, or SSE `event:`/`data:` typed events)
 *   - `/v1/messages`          Anthropic Messages (non-stream JSON, or SSE `event:`/`data:` typed events)
 *   - `/v1/embeddings`        OpenAI embeddings: deterministic vectors (the lexical `hashEmbed` of each input,
 *                             so texts sharing words are close), `dimensions`, `encoding_format` `float` or
 *                             `base64` (the openai SDK's default), `usage.prompt_tokens`; models it does not
 *                             know get OpenAI's 404 `model_not_found`. It answers on its own, without the
 *                             script; `enqueueEmbeddings(...)` scripts its failures (errors, hangs, malformed).
 *
 * Every request that reaches a model endpoint consumes one scripted reply (FIFO, shared by all endpoints),
 * falls back to `setDefault(...)`, or otherwise gets a provider-shaped 500 explaining that the script ran
 * out. Note that the SDKs retry 408/409/429/5xx and connection errors (`maxRetries`, default 2): every retry
 * is a new request and consumes a new reply.
 *
 * Conventions shared by all three wire formats:
 *   - `usage.input` is the TOTAL number of prompt tokens, cached ones included (OpenAI semantics:
 *     `prompt_tokens` / `input_tokens` include `cached_tokens`). Anthropic reports cache reads separately
 *     and excludes them from `input_tokens`, so there `input_tokens = input - cached` and
 *     `cache_read_input_tokens = cached`.
 *   - Without `usage`, tokens are estimated as ceil(chars / 4) of the raw request body (input) and of the
 *     scripted text + tool arguments (output); `cached` defaults to 0, unless `simulatePromptCache()`
 *     turned on the providers' prefix caching (prompt-cache-sim.ts): then cached reads and (Anthropic)
 *     cache writes are what the provider would report for the request, on its own wire fields
 *     (`prompt_tokens_details.cached_tokens`, `input_tokens_details.cached_tokens`,
 *     `cache_read_input_tokens` / `cache_creation_input_tokens` / `cache_creation`).
 *   - `costUsd` is reported the way OpenRouter-style gateways do: an extra numeric `usage.cost` (USD) next to
 *     the token counts (chat completion `usage` / final usage chunk, Responses `response.usage`, Anthropic
 *     `usage` / final `message_delta.usage`). First-party OpenAI and Anthropic never send it; it is omitted
 *     when `costUsd` is undefined.
 *   - Streaming splits text and tool-call arguments into several deltas (at code-point boundaries).
 *   - Tool-call ids default to deterministic, provider-flavoured ids (`call_fake_N`, `toolu_fake_N`).
 */
import * as http from 'node:http';
import { hashEmbed } from '@switchboard/providers';
import { PromptCacheSim, type CacheOutcome, type PromptCacheOptions } from './prompt-cache-sim';
import type { ChatCompletion, ChatCompletionChunk } from 'openai/resources/chat/completions/completions';
import type { CompletionUsage } from 'openai/resources/completions';
import type {
  Response as OpenAiResponse,
  ResponseFunctionToolCall,
  ResponseOutputMessage,
  ResponseOutputText,
  ResponseStreamEvent,
  ResponseUsage,
} from 'openai/resources/responses/responses';
import type {
  ContentBlock as AnthropicContentBlock,
  Message as AnthropicMessage,
  MessageDeltaUsage as AnthropicMessageDeltaUsage,
  RawMessageStreamEvent as AnthropicStreamEvent,
  StopReason as AnthropicStopReason,
  Usage as AnthropicUsage,
} from '@anthropic-ai/sdk/resources/messages/messages';

// ---------------------------------------------------------------------------------------------------------
// Public types
// ---------------------------------------------------------------------------------------------------------

export interface ScriptedToolCall {
  /** Provider tool-call id (`tool_calls[].id`, Responses `call_id`, Anthropic `tool_use.id`). Generated if omitted. */
  id?: string;
  name: string;
  /** JSON-encoded arguments, exactly as OpenAI sends them. Anthropic gets `JSON.parse(arguments)` (`''` -> `{}`). */
  arguments: string;
}

export interface ScriptedUsage {
  /** Total prompt tokens, cached ones included. */
  input: number;
  output: number;
  /** Prompt tokens served from the provider's prompt cache (subset of `input`). */
  cached?: number;
  /** Prompt tokens written to the provider's prompt cache (subset of `input`, apart from `cached`). */
  cacheWrite?: number;
}

export interface ScriptedMessage {
  kind: 'message';
  text?: string;
  toolCalls?: ScriptedToolCall[];
  usage?: ScriptedUsage;
  /** Reported as an extra `usage.cost` field (USD), the OpenRouter convention. */
  costUsd?: number;
  /** Wait this long before sending anything (for streams: before the status line / first byte). */
  delayMs?: number;
  /** Streams only: wait this long between two SSE frames (a slow but live stream). */
  frameIntervalMs?: number;
  /**
   * Streams only: split the text into this many deltas (default 3), so a stream can be as chatty as
   * a real one (one frame per token) when combined with `frameIntervalMs`.
   */
  textPieces?: number;
  /**
   * Streams only: send this many SSE frames, then nothing more, holding the connection open until
   * the client aborts or the server closes (a stream that stalls after its first chunks).
   */
  stallAfterFrames?: number;
}

export interface ScriptedError {
  kind: 'error';
  status: number;
  /**
   * Response body. Objects are sent as JSON; strings are sent verbatim as `text/plain` (e.g. an HTML page from
   * a proxy). When omitted, a body in the provider's own error shape is generated from `status`.
   */
  body?: unknown;
  /** Extra response headers, e.g. `{ 'retry-after': '1' }`. */
  headers?: Record<string, string>;
}

/** Accept the request and never answer until the client aborts (or the server closes). */
export interface ScriptedHang {
  kind: 'hang';
}

/** 200 with a body that is not valid JSON (non-stream) or an SSE stream that breaks after one valid event. */
export interface ScriptedMalformed {
  kind: 'malformed';
}

export type ScriptedReply = ScriptedMessage | ScriptedError | ScriptedHang | ScriptedMalformed;

export type FakeLlmEndpoint =
  'openai.chat.completions' | 'openai.responses' | 'anthropic.messages' | 'openai.embeddings';

export interface RecordedRequest {
  method: string;
  /** URL path without the query string, e.g. `/v1/chat/completions`. */
  path: string;
  /** Query string including the leading `?` (Anthropic's beta client sends `?beta=true`), or `''`. */
  query: string;
  headers: http.IncomingHttpHeaders;
  /** Parsed JSON body; `undefined` when the body was empty or not valid JSON. */
  body: unknown;
  rawBody: string;
  /** Which fake endpoint handled the request, or `null` for unknown paths (answered 404). */
  endpoint: FakeLlmEndpoint | null;
  /** Whether the request asked for a streamed response (`"stream": true`). */
  stream: boolean;
  /** Set when the connection closed before the response ended (the client aborted it, e.g. a cancel). */
  closedEarly?: boolean;
}

/** A fixed reply, or one computed per request; a promise holds the request until the test says how to answer. */
export type DefaultReply = ScriptedReply | ((req: RecordedRequest) => ScriptedReply | Promise<ScriptedReply>);

// ---------------------------------------------------------------------------------------------------------
// Reply builders (optional sugar)
// ---------------------------------------------------------------------------------------------------------

/** OpenAI error envelope: `{ error: { message, type, param, code } }` (what `APIError.error` exposes). */
export function openAiErrorBody(
  message: string,
  options: { type?: string; param?: string | null; code?: string | null } = {},
): { error: { message: string; type: string; param: string | null; code: string | null } } {
  return {
    error: {
      message,
      type: options.type ?? 'invalid_request_error',
      param: options.param ?? null,
      code: options.code ?? null,
    },
  };
}

/** Anthropic error envelope: `{ type: 'error', error: { type, message }, request_id }`. */
export function anthropicErrorBody(
  type: string,
  message: string,
  requestId: string | null = null,
): { type: 'error'; error: { type: string; message: string }; request_id: string | null } {
  return { type: 'error', error: { type, message }, request_id: requestId };
}

export const scripted = {
  text(text: string, extra: Omit<ScriptedMessage, 'kind' | 'text'> = {}): ScriptedMessage {
    return { kind: 'message', text, ...extra };
  },
  toolCall(
    name: string,
    args: unknown,
    extra: Omit<ScriptedMessage, 'kind' | 'toolCalls'> & { id?: string } = {},
  ): ScriptedMessage {
    const { id, ...rest } = extra;
    const encoded = typeof args === 'string' ? args : JSON.stringify(args);
    return {
      kind: 'message',
      ...rest,
      toolCalls: [{ ...(id === undefined ? {} : { id }), name, arguments: encoded }],
    };
  },
  rateLimited(retryAfterSeconds = 1): ScriptedError {
    return { kind: 'error', status: 429, headers: { 'retry-after': String(retryAfterSeconds) } };
  },
  error(status: number, body?: unknown, headers?: Record<string, string>): ScriptedError {
    return { kind: 'error', status, body, headers };
  },
  /** What OpenAI (Chat Completions and Responses) answers when the prompt exceeds the context window. */
  openAiContextLengthExceeded(maxTokens = 128000, requestedTokens = 130000): ScriptedError {
    return {
      kind: 'error',
      status: 400,
      body: openAiErrorBody(
        `This model's maximum context length is ${maxTokens} tokens. However, your messages resulted in ` +
          `${requestedTokens} tokens. Please reduce the length of the messages.`,
        { type: 'invalid_request_error', param: 'messages', code: 'context_length_exceeded' },
      ),
    };
  },
  /** What Anthropic answers when the prompt exceeds the context window. */
  anthropicPromptTooLong(maxTokens = 200000, requestedTokens = 210000): ScriptedError {
    return {
      kind: 'error',
      status: 400,
      body: anthropicErrorBody(
        'invalid_request_error',
        `prompt is too long: ${requestedTokens} tokens > ${maxTokens} maximum`,
      ),
    };
  },
  hang(): ScriptedHang {
    return { kind: 'hang' };
  },
  malformed(): ScriptedMalformed {
    return { kind: 'malformed' };
  },
};

// ---------------------------------------------------------------------------------------------------------
// Jest helper
// ---------------------------------------------------------------------------------------------------------

/**
 * Drop-in `fetch` for SDK clients used under Jest. Jest runs test code in its own realm while Node's `fetch`
 * (undici) throws errors from the host realm, so they fail `instanceof Error`. `openai@6` then turns the abort
 * `DOMException` into a nameless `Error('{}')` and reports its own timeouts as a plain `APIConnectionError`
 * instead of `APIConnectionTimeoutError` (`@anthropic-ai/sdk` already handles this). Pass
 * `new OpenAI({ ..., fetch: crossRealmSafeFetch })` to get production behaviour in tests.
 */
export const crossRealmSafeFetch: typeof fetch = async (input, init) => {
  try {
    return await fetch(input, init);
  } catch (err) {
    throw adoptForeignError(err);
  }
};

function adoptForeignError(err: unknown): unknown {
  if (err instanceof Error || typeof err !== 'object' || err === null) return err;
  const name = 'name' in err && typeof err.name === 'string' ? err.name : 'Error';
  const message = 'message' in err && typeof err.message === 'string' ? err.message : JSON.stringify(err);
  const adopted = new Error(message, { cause: err });
  adopted.name = name;
  return adopted;
}

// ---------------------------------------------------------------------------------------------------------
// Internals shared by the wire formats
// ---------------------------------------------------------------------------------------------------------

type JsonRecord = Record<string, unknown>;

function isRecord(value: unknown): value is JsonRecord {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

interface RenderContext {
  body: JsonRecord;
  rawBody: string;
  model: string;
  stream: boolean;
  nextId: (prefix: string) => string;
  requestId: string;
  /** What the simulated prompt cache read and wrote for this request, when it is on. */
  cache?: CacheOutcome;
}

interface ResolvedUsage {
  input: number;
  output: number;
  cached: number;
  cacheWrite: number;
  cacheWrite1h: number;
  costUsd: number | undefined;
}

interface ResolvedToolCall {
  id: string;
  name: string;
  arguments: string;
}

/** Split a string into up to `pieces` non-empty parts without cutting surrogate pairs. */
function splitInPieces(value: string, pieces = 3): string[] {
  const codePoints = Array.from(value);
  if (codePoints.length <= 1) return codePoints.length === 0 ? [] : [value];
  const size = Math.ceil(codePoints.length / pieces);
  const out: string[] = [];
  for (let i = 0; i < codePoints.length; i += size) out.push(codePoints.slice(i, i + size).join(''));
  return out;
}

function estimateTokens(chars: number): number {
  return Math.max(1, Math.ceil(chars / 4));
}

function resolveUsage(reply: ScriptedMessage, ctx: RenderContext): ResolvedUsage {
  if (reply.usage) {
    return {
      input: reply.usage.input,
      output: reply.usage.output,
      cached: reply.usage.cached ?? 0,
      cacheWrite: reply.usage.cacheWrite ?? 0,
      cacheWrite1h: 0,
      costUsd: reply.costUsd,
    };
  }
  const outputChars =
    (reply.text ?? '').length + (reply.toolCalls ?? []).reduce((n, call) => n + call.arguments.length, 0);
  const cache = ctx.cache ?? { read: 0, write: 0, write1h: 0 };
  return {
    input: Math.max(estimateTokens(ctx.rawBody.length), cache.read + cache.write),
    output: estimateTokens(outputChars),
    cached: cache.read,
    cacheWrite: cache.write,
    cacheWrite1h: cache.write1h,
    costUsd: reply.costUsd,
  };
}

function resolveToolCalls(reply: ScriptedMessage, ctx: RenderContext, prefix: string): ResolvedToolCall[] {
  return (reply.toolCalls ?? []).map((call) => ({
    id: call.id ?? ctx.nextId(prefix),
    name: call.name,
    arguments: call.arguments,
  }));
}

function withCost<T extends object>(usage: T, costUsd: number | undefined): T & { cost?: number } {
  return costUsd === undefined ? usage : { ...usage, cost: costUsd };
}

function nowSeconds(): number {
  return Math.floor(Date.now() / 1000);
}

class ScriptError extends Error {}

interface WireFormat {
  requestIdHeader: string;
  /** Whether the request asks for a streamed answer. */
  isStream(body: JsonRecord): boolean;
  json(reply: ScriptedMessage, ctx: RenderContext): unknown;
  /** Complete SSE frames, each ending in a blank line. */
  sse(reply: ScriptedMessage, ctx: RenderContext): string[];
  malformedSse(ctx: RenderContext): string[];
  errorBody(status: number, message: string | undefined, ctx: Pick<RenderContext, 'requestId'>): unknown;
}

function dataFrame(payload: unknown): string {
  return `data: ${JSON.stringify(payload)}\n\n`;
}

function eventFrame(event: string, payload: unknown): string {
  return `event: ${event}\ndata: ${JSON.stringify(payload)}\n\n`;
}

// ---------------------------------------------------------------------------------------------------------
// OpenAI Chat Completions
// ---------------------------------------------------------------------------------------------------------

function openAiDefaultError(status: number, message: string | undefined): unknown {
  switch (status) {
    case 400:
      return openAiErrorBody(message ?? 'Invalid request.', { type: 'invalid_request_error' });
    case 401:
      return openAiErrorBody(
        message ??
          'Incorrect API key provided. You can find your API key at https://platform.openai.com/account/api-keys.',
        { type: 'invalid_request_error', code: 'invalid_api_key' },
      );
    case 403:
      return openAiErrorBody(message ?? 'You are not allowed to sample from this model.', {
        type: 'invalid_request_error',
      });
    case 404:
      return openAiErrorBody(message ?? 'The model does not exist or you do not have access to it.', {
        type: 'invalid_request_error',
        code: 'model_not_found',
      });
    case 429:
      return openAiErrorBody(message ?? 'Rate limit reached for requests. Please try again later.', {
        type: 'requests',
        code: 'rate_limit_exceeded',
      });
    case 503:
      return openAiErrorBody(message ?? 'The engine is currently overloaded, please try again later.', {
        type: 'server_error',
      });
    default:
      return openAiErrorBody(
        message ??
          (status >= 500
            ? 'The server had an error while processing your request. Sorry about that!'
            : `Request failed with status ${status}.`),
        { type: status >= 500 ? 'server_error' : 'invalid_request_error' },
      );
  }
}

function chatUsage(usage: ResolvedUsage): CompletionUsage & { cost?: number } {
  return withCost(
    {
      prompt_tokens: usage.input,
      completion_tokens: usage.output,
      total_tokens: usage.input + usage.output,
      prompt_tokens_details: {
        cached_tokens: usage.cached,
        audio_tokens: 0,
        ...(usage.cacheWrite > 0 ? { cache_write_tokens: usage.cacheWrite } : {}),
      },
      completion_tokens_details: {
        reasoning_tokens: 0,
        audio_tokens: 0,
        accepted_prediction_tokens: 0,
        rejected_prediction_tokens: 0,
      },
    },
    usage.costUsd,
  );
}

const chatCompletions: WireFormat = {
  requestIdHeader: 'x-request-id',
  isStream: (body) => body['stream'] === true,

  json(reply, ctx): ChatCompletion {
    const toolCalls = resolveToolCalls(reply, ctx, 'call_');
    return {
      id: ctx.nextId('chatcmpl-'),
      object: 'chat.completion',
      created: nowSeconds(),
      model: ctx.model,
      choices: [
        {
          index: 0,
          message: {
            role: 'assistant',
            content: reply.text ?? (toolCalls.length > 0 ? null : ''),
            refusal: null,
            annotations: [],
            ...(toolCalls.length > 0
              ? {
                  tool_calls: toolCalls.map((call) => ({
                    id: call.id,
                    type: 'function' as const,
                    function: { name: call.name, arguments: call.arguments },
                  })),
                }
              : {}),
          },
          logprobs: null,
          finish_reason: toolCalls.length > 0 ? 'tool_calls' : 'stop',
        },
      ],
      usage: chatUsage(resolveUsage(reply, ctx)),
      service_tier: 'default',
      system_fingerprint: 'fp_fake',
    };
  },

  sse(reply, ctx): string[] {
    const toolCalls = resolveToolCalls(reply, ctx, 'call_');
    const streamOptions = ctx.body['stream_options'];
    const includeUsage = isRecord(streamOptions) && streamOptions['include_usage'] === true;
    const id = ctx.nextId('chatcmpl-');
    const created = nowSeconds();
    const chunk = (choices: ChatCompletionChunk['choices']): ChatCompletionChunk => ({
      id,
      object: 'chat.completion.chunk',
      created,
      model: ctx.model,
      service_tier: 'default',
      system_fingerprint: 'fp_fake',
      // With include_usage every chunk carries `usage: null`; only the extra final chunk has numbers.
      ...(includeUsage ? { usage: null } : {}),
      choices,
    });
    const delta = (d: ChatCompletionChunk.Choice.Delta): ChatCompletionChunk =>
      chunk([{ index: 0, delta: d, logprobs: null, finish_reason: null }]);

    const chunks: ChatCompletionChunk[] = [delta({ role: 'assistant', content: '', refusal: null })];
    for (const piece of splitInPieces(reply.text ?? '', reply.textPieces))
      chunks.push(delta({ content: piece }));
    toolCalls.forEach((call, index) => {
      chunks.push(
        delta({
          tool_calls: [
            { index, id: call.id, type: 'function', function: { name: call.name, arguments: '' } },
          ],
        }),
      );
      for (const piece of splitInPieces(call.arguments)) {
        chunks.push(delta({ tool_calls: [{ index, function: { arguments: piece } }] }));
      }
    });
    chunks.push(
      chunk([
        { index: 0, delta: {}, logprobs: null, finish_reason: toolCalls.length > 0 ? 'tool_calls' : 'stop' },
      ]),
    );
    if (includeUsage) chunks.push({ ...chunk([]), usage: chatUsage(resolveUsage(reply, ctx)) });
    return [...chunks.map(dataFrame), 'data: [DONE]\n\n'];
  },

  malformedSse(ctx): string[] {
    const first: ChatCompletionChunk = {
      id: ctx.nextId('chatcmpl-'),
      object: 'chat.completion.chunk',
      created: nowSeconds(),
      model: ctx.model,
      choices: [{ index: 0, delta: { role: 'assistant', content: '' }, logprobs: null, finish_reason: null }],
    };
    return [
      dataFrame(first),
      'data: {"id":"chatcmpl-broken","choices":[{"index":0,"delta":{"content":"oo\n\n',
    ];
  },

  errorBody: (status, message) => openAiDefaultError(status, message),
};

// ---------------------------------------------------------------------------------------------------------
// OpenAI Responses API
// ---------------------------------------------------------------------------------------------------------

/**
 * What the Responses API actually puts on the wire: `output_text` is computed client-side by the SDK,
 * `usage` is `null` until the response completes, and `usage.cost` is our cost extension.
 */
type WireResponse = Omit<OpenAiResponse, 'output_text' | 'usage'> & {
  usage: (ResponseUsage & { cost?: number }) | null;
};

type WireResponseEvent =
  | Exclude<ResponseStreamEvent, { type: 'response.created' | 'response.in_progress' | 'response.completed' }>
  | {
      type: 'response.created' | 'response.in_progress' | 'response.completed';
      response: WireResponse;
      sequence_number: number;
    };

function responsesUsage(usage: ResolvedUsage): ResponseUsage & { cost?: number } {
  return withCost(
    {
      input_tokens: usage.input,
      input_tokens_details: { cached_tokens: usage.cached, cache_write_tokens: usage.cacheWrite },
      output_tokens: usage.output,
      output_tokens_details: { reasoning_tokens: 0 },
      total_tokens: usage.input + usage.output,
    },
    usage.costUsd,
  );
}

function responseEnvelope(ctx: RenderContext, id: string, createdAt: number): WireResponse {
  const instructions = ctx.body['instructions'];
  const tools = ctx.body['tools'];
  return {
    id,
    object: 'response',
    created_at: createdAt,
    status: 'in_progress',
    background: false,
    error: null,
    incomplete_details: null,
    instructions: typeof instructions === 'string' ? instructions : null,
    max_output_tokens: null,
    metadata: {},
    model: ctx.model,
    output: [],
    parallel_tool_calls: true,
    previous_response_id: null,
    reasoning: { effort: null, summary: null },
    service_tier: 'default',
    temperature: 1,
    text: { format: { type: 'text' } },
    tool_choice: 'auto',
    // Echo the request's tool definitions like the real API does; they are opaque to the fake.
    tools: Array.isArray(tools) ? (tools as OpenAiResponse['tools']) : [],
    top_p: 1,
    truncation: 'disabled',
    usage: null,
  };
}

interface ResponsesItems {
  message: ResponseOutputMessage | undefined;
  calls: ResponseFunctionToolCall[];
}

function responsesItems(reply: ScriptedMessage, ctx: RenderContext): ResponsesItems {
  const text = reply.text;
  const message: ResponseOutputMessage | undefined =
    text === undefined
      ? undefined
      : {
          id: ctx.nextId('msg_'),
          type: 'message',
          status: 'completed',
          role: 'assistant',
          content: [{ type: 'output_text', text, annotations: [], logprobs: [] }],
        };
  const calls = resolveToolCalls(reply, ctx, 'call_').map((call): ResponseFunctionToolCall => ({
    id: ctx.nextId('fc_'),
    type: 'function_call',
    status: 'completed',
    call_id: call.id,
    name: call.name,
    arguments: call.arguments,
  }));
  return { message, calls };
}

const responses: WireFormat = {
  requestIdHeader: 'x-request-id',
  isStream: (body) => body['stream'] === true,

  json(reply, ctx): WireResponse {
    const { message, calls } = responsesItems(reply, ctx);
    return {
      ...responseEnvelope(ctx, ctx.nextId('resp_'), nowSeconds()),
      status: 'completed',
      completed_at: nowSeconds(),
      output: [...(message ? [message] : []), ...calls],
      usage: responsesUsage(resolveUsage(reply, ctx)),
    };
  },

  sse(reply, ctx): string[] {
    const { message, calls } = responsesItems(reply, ctx);
    const envelope = responseEnvelope(ctx, ctx.nextId('resp_'), nowSeconds());
    const events: WireResponseEvent[] = [];
    let seq = 0;
    const push = (event: WireResponseEvent): void => {
      events.push(event);
    };
    push({ type: 'response.created', sequence_number: seq++, response: envelope });
    push({ type: 'response.in_progress', sequence_number: seq++, response: envelope });

    let outputIndex = 0;
    if (message) {
      const index = outputIndex++;
      const text = message.content.map((part) => (part.type === 'output_text' ? part.text : '')).join('');
      const emptyPart: ResponseOutputText = { type: 'output_text', text: '', annotations: [], logprobs: [] };
      const fullPart: ResponseOutputText = { ...emptyPart, text };
      push({
        type: 'response.output_item.added',
        sequence_number: seq++,
        output_index: index,
        item: { ...message, status: 'in_progress', content: [] },
      });
      push({
        type: 'response.content_part.added',
        sequence_number: seq++,
        item_id: message.id,
        output_index: index,
        content_index: 0,
        part: emptyPart,
      });
      for (const piece of splitInPieces(text, reply.textPieces)) {
        push({
          type: 'response.output_text.delta',
          sequence_number: seq++,
          item_id: message.id,
          output_index: index,
          content_index: 0,
          delta: piece,
          logprobs: [],
        });
      }
      push({
        type: 'response.output_text.done',
        sequence_number: seq++,
        item_id: message.id,
        output_index: index,
        content_index: 0,
        text,
        logprobs: [],
      });
      push({
        type: 'response.content_part.done',
        sequence_number: seq++,
        item_id: message.id,
        output_index: index,
        content_index: 0,
        part: fullPart,
      });
      push({ type: 'response.output_item.done', sequence_number: seq++, output_index: index, item: message });
    }
    for (const call of calls) {
      const index = outputIndex++;
      const itemId = call.id ?? '';
      push({
        type: 'response.output_item.added',
        sequence_number: seq++,
        output_index: index,
        item: { ...call, status: 'in_progress', arguments: '' },
      });
      for (const piece of splitInPieces(call.arguments)) {
        push({
          type: 'response.function_call_arguments.delta',
          sequence_number: seq++,
          item_id: itemId,
          output_index: index,
          delta: piece,
        });
      }
      push({
        type: 'response.function_call_arguments.done',
        sequence_number: seq++,
        item_id: itemId,
        output_index: index,
        name: call.name,
        arguments: call.arguments,
      });
      push({ type: 'response.output_item.done', sequence_number: seq++, output_index: index, item: call });
    }
    push({
      type: 'response.completed',
      sequence_number: seq++,
      response: {
        ...envelope,
        status: 'completed',
        completed_at: nowSeconds(),
        output: [...(message ? [message] : []), ...calls],
        usage: responsesUsage(resolveUsage(reply, ctx)),
      },
    });
    return events.map((event) => eventFrame(event.type, event));
  },

  malformedSse(ctx): string[] {
    const envelope = responseEnvelope(ctx, ctx.nextId('resp_'), nowSeconds());
    return [
      eventFrame('response.created', { type: 'response.created', sequence_number: 0, response: envelope }),
      'event: response.output_item.added\ndata: {"type":"response.output_item.added","item":{"type":\n\n',
    ];
  },

  errorBody: (status, message) => openAiDefaultError(status, message),
};

// ---------------------------------------------------------------------------------------------------------
// Anthropic Messages
// ---------------------------------------------------------------------------------------------------------

function anthropicErrorType(status: number): string {
  switch (status) {
    case 400:
      return 'invalid_request_error';
    case 401:
      return 'authentication_error';
    case 402:
      return 'billing_error';
    case 403:
      return 'permission_error';
    case 404:
      return 'not_found_error';
    case 413:
      return 'request_too_large';
    case 429:
      return 'rate_limit_error';
    case 504:
      return 'timeout_error';
    case 529:
      return 'overloaded_error';
    default:
      return status >= 500 ? 'api_error' : 'invalid_request_error';
  }
}

function anthropicDefaultMessage(status: number): string {
  switch (status) {
    case 401:
      return 'invalid x-api-key';
    case 429:
      return 'Number of request tokens has exceeded your per-minute rate limit. Please try again later.';
    case 529:
      return 'Overloaded';
    default:
      return status >= 500 ? 'Internal server error' : `Request failed with status ${status}.`;
  }
}

type WireAnthropicUsage = AnthropicUsage & { cost?: number };

function anthropicUsage(usage: ResolvedUsage): WireAnthropicUsage {
  return withCost(
    {
      // Anthropic counts cache reads and writes apart from input_tokens.
      input_tokens: Math.max(0, usage.input - usage.cached - usage.cacheWrite),
      cache_creation_input_tokens: usage.cacheWrite,
      cache_read_input_tokens: usage.cached,
      cache_creation: {
        ephemeral_5m_input_tokens: usage.cacheWrite - usage.cacheWrite1h,
        ephemeral_1h_input_tokens: usage.cacheWrite1h,
      },
      output_tokens: usage.output,
      output_tokens_details: null,
      server_tool_use: null,
      service_tier: 'standard',
      inference_geo: null,
      speed: null,
    },
    usage.costUsd,
  );
}

function anthropicBlocks(reply: ScriptedMessage, ctx: RenderContext): AnthropicContentBlock[] {
  const blocks: AnthropicContentBlock[] = [];
  if (reply.text !== undefined && reply.text !== '') {
    blocks.push({ type: 'text', text: reply.text, citations: null });
  }
  for (const call of resolveToolCalls(reply, ctx, 'toolu_')) {
    let input: unknown;
    try {
      input = call.arguments.trim() === '' ? {} : JSON.parse(call.arguments);
    } catch {
      throw new ScriptError(
        `FakeLlmServer: scripted tool call "${call.name}" has arguments that are not valid JSON ` +
          `(Anthropic needs an object for tool_use.input): ${call.arguments}`,
      );
    }
    blocks.push({ type: 'tool_use', id: call.id, name: call.name, input, caller: { type: 'direct' } });
  }
  return blocks;
}

function anthropicStopReason(blocks: AnthropicContentBlock[]): AnthropicStopReason {
  return blocks.some((block) => block.type === 'tool_use') ? 'tool_use' : 'end_turn';
}

type WireAnthropicMessage = Omit<AnthropicMessage, 'usage'> & { usage: WireAnthropicUsage };

const anthropicMessages: WireFormat = {
  requestIdHeader: 'request-id',
  isStream: (body) => body['stream'] === true,

  json(reply, ctx): WireAnthropicMessage {
    const content = anthropicBlocks(reply, ctx);
    return {
      id: ctx.nextId('msg_'),
      type: 'message',
      role: 'assistant',
      model: ctx.model,
      content,
      stop_reason: anthropicStopReason(content),
      stop_sequence: null,
      stop_details: null,
      container: null,
      diagnostics: null,
      usage: anthropicUsage(resolveUsage(reply, ctx)),
    };
  },

  sse(reply, ctx): string[] {
    const content = anthropicBlocks(reply, ctx);
    const resolved = resolveUsage(reply, ctx);
    const usage = anthropicUsage(resolved);
    const frames: string[] = [];
    const push = (event: AnthropicStreamEvent): void => {
      frames.push(eventFrame(event.type, event));
    };
    push({
      type: 'message_start',
      message: {
        id: ctx.nextId('msg_'),
        type: 'message',
        role: 'assistant',
        model: ctx.model,
        content: [],
        stop_reason: null,
        stop_sequence: null,
        stop_details: null,
        container: null,
        diagnostics: null,
        // Like the real API: input-side counts up front, output_tokens is a placeholder until message_delta.
        usage: anthropicUsage({ ...resolved, output: Math.min(1, resolved.output), costUsd: undefined }),
      },
    });
    frames.push(eventFrame('ping', { type: 'ping' }));
    content.forEach((block, index) => {
      if (block.type === 'text') {
        push({ type: 'content_block_start', index, content_block: { ...block, text: '' } });
        for (const piece of splitInPieces(block.text, reply.textPieces)) {
          push({ type: 'content_block_delta', index, delta: { type: 'text_delta', text: piece } });
        }
      } else if (block.type === 'tool_use') {
        push({ type: 'content_block_start', index, content_block: { ...block, input: {} } });
        // The real API opens every tool_use with an empty partial_json before the actual pieces.
        const pieces = ['', ...splitInPieces(JSON.stringify(block.input))];
        for (const piece of pieces) {
          push({
            type: 'content_block_delta',
            index,
            delta: { type: 'input_json_delta', partial_json: piece },
          });
        }
      }
      push({ type: 'content_block_stop', index });
    });
    const deltaUsage: AnthropicMessageDeltaUsage & { cost?: number } = {
      input_tokens: usage.input_tokens,
      cache_creation_input_tokens: usage.cache_creation_input_tokens,
      cache_read_input_tokens: usage.cache_read_input_tokens,
      output_tokens: usage.output_tokens,
      output_tokens_details: null,
      server_tool_use: null,
      ...(usage.cost === undefined ? {} : { cost: usage.cost }),
    };
    push({
      type: 'message_delta',
      delta: {
        stop_reason: anthropicStopReason(content),
        stop_sequence: null,
        stop_details: null,
        container: null,
      },
      usage: deltaUsage,
    });
    push({ type: 'message_stop' });
    return frames;
  },

  malformedSse(ctx): string[] {
    const start = {
      type: 'message_start',
      message: {
        id: ctx.nextId('msg_'),
        type: 'message',
        role: 'assistant',
        model: ctx.model,
        content: [],
        stop_reason: null,
        stop_sequence: null,
        usage: { input_tokens: 1, output_tokens: 1 },
      },
    };
    return [
      eventFrame('message_start', start),
      'event: content_block_start\ndata: {"type":"content_block_start","index":0,"content_block":{\n\n',
    ];
  },

  errorBody: (status, message, ctx) =>
    anthropicErrorBody(anthropicErrorType(status), message ?? anthropicDefaultMessage(status), ctx.requestId),
};

const EMBEDDINGS_PATH = '/v1/embeddings';

const ROUTES: Record<
  string,
  { endpoint: Exclude<FakeLlmEndpoint, 'openai.embeddings'>; format: WireFormat }
> = {
  '/v1/chat/completions': { endpoint: 'openai.chat.completions', format: chatCompletions },
  '/v1/responses': { endpoint: 'openai.responses', format: responses },
  '/v1/messages': { endpoint: 'anthropic.messages', format: anthropicMessages },
};

// ---------------------------------------------------------------------------------------------------------
// Server
// ---------------------------------------------------------------------------------------------------------

function readBody(req: http.IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
    req.on('error', reject);
  });
}

export class FakeLlmServer {
  /** Every request received, in arrival order (including ones answered 404/400 without consuming a reply). */
  readonly requests: RecordedRequest[] = [];
  /** e.g. `http://127.0.0.1:54321` */
  readonly url: string;
  /**
   * Called with each SSE frame of a streamed reply just before it is written (a benchmark records
   * when each chunk left the provider, docs/BENCHMARKS.md).
   */
  onFrame?: (frame: string) => void;

  /**
   * Embedding models the fake knows: name → vector length, and whether `dimensions` may shorten it
   * (OpenAI's v3 models). Tests may add a compatible server's model.
   */
  readonly embeddingModels = new Map<string, { dimensions: number; shortenable: boolean }>([
    ['text-embedding-3-small', { dimensions: 1536, shortenable: true }],
    ['text-embedding-3-large', { dimensions: 3072, shortenable: true }],
    ['text-embedding-ada-002', { dimensions: 1536, shortenable: false }],
  ]);

  private readonly queue: ScriptedReply[] = [];
  private readonly embeddingQueue: ScriptedReply[] = [];
  private fallback: DefaultReply | undefined;
  private readonly openResponses = new Set<http.ServerResponse>();
  private readonly requestWaiters: { count: number; resolve: () => void }[] = [];
  private idCounter = 0;
  private closing: Promise<void> | undefined;
  private promptCache: PromptCacheSim | undefined;

  private constructor(private readonly server: http.Server) {
    const address = server.address();
    if (address === null || typeof address === 'string') {
      throw new Error('FakeLlmServer: server is not listening on a TCP port');
    }
    this.url = `http://127.0.0.1:${address.port}`;
  }

  /**
   * Start a server on 127.0.0.1 with a random free port. `keepAliveTimeoutMs` (Node's default, 5 s,
   * when absent): how long an idle keep-alive connection stays open. A spec whose requests are
   * seconds apart on a loaded machine sets it long, so the server never closes a pooled connection
   * just as the client reuses it (the client would see "Connection error").
   */
  static async start(options: { keepAliveTimeoutMs?: number } = {}): Promise<FakeLlmServer> {
    const server = http.createServer();
    if (options.keepAliveTimeoutMs !== undefined) server.keepAliveTimeout = options.keepAliveTimeoutMs;
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(0, '127.0.0.1', () => {
        server.off('error', reject);
        resolve();
      });
    });
    const fake = new FakeLlmServer(server);
    server.on('request', (req: http.IncomingMessage, res: http.ServerResponse) => {
      void fake.handle(req, res);
    });
    return fake;
  }

  /** `baseURL` for `new OpenAI(...)`: `${url}/v1`. */
  get openaiBaseUrl(): string {
    return `${this.url}/v1`;
  }

  /** `baseURL` for `new Anthropic(...)` (the SDK appends `/v1/messages` itself). */
  get anthropicBaseUrl(): string {
    return this.url;
  }

  /** The provider variables (SPEC §14) that point a Switchboard process's SDKs at this server. */
  get providerEnv(): Record<string, string> {
    return {
      OPENAI_BASE_URL: this.openaiBaseUrl,
      OPENAI_API_KEY: 'sk-test',
      ANTHROPIC_BASE_URL: this.anthropicBaseUrl,
      ANTHROPIC_API_KEY: 'sk-ant-test',
    };
  }

  /** Responses not yet finished (streams in progress, delayed or hanging replies). */
  get openResponseCount(): number {
    return this.openResponses.size;
  }

  /** Number of scripted replies not yet consumed. */
  get pendingReplies(): number {
    return this.queue.length;
  }

  /**
   * Simulate the providers' prefix caching (prompt-cache-sim.ts) for replies without scripted
   * `usage`: Anthropic at its `cache_control` breakpoints, OpenAI automatically per
   * `prompt_cache_key`. Off by default. Returns the simulation (e.g. to `clear()` it).
   */
  simulatePromptCache(options: PromptCacheOptions = {}): PromptCacheSim {
    this.promptCache = new PromptCacheSim(options);
    return this.promptCache;
  }

  /** Append replies to the FIFO script; each model request consumes one. */
  enqueue(...replies: ScriptedReply[]): this {
    this.queue.push(...replies);
    return this;
  }

  /**
   * Script the next embeddings requests, one reply each (FIFO, apart from the model script): an
   * error, a hang or a malformed body; a `message` reply means "answer normally".
   */
  enqueueEmbeddings(...replies: ScriptedReply[]): this {
    this.embeddingQueue.push(...replies);
    return this;
  }

  /** Reply used when the script is empty (instead of the "script ran out" 500). `undefined` clears it. */
  setDefault(reply: DefaultReply | undefined): this {
    this.fallback = reply;
    return this;
  }

  /** Resolves once at least `count` requests have been received (e.g. to know a `hang` is in flight). */
  waitForRequests(count: number): Promise<void> {
    if (this.requests.length >= count) return Promise.resolve();
    return new Promise((resolve) => this.requestWaiters.push({ count, resolve }));
  }

  /** Stop listening, abort hanging/delayed/in-flight responses and drop keep-alive connections. Idempotent. */
  close(): Promise<void> {
    if (!this.closing) {
      this.closing = new Promise<void>((resolve, reject) => {
        this.server.close((err) => (err ? reject(err) : resolve()));
        for (const res of this.openResponses) res.destroy();
        this.openResponses.clear();
        this.server.closeAllConnections();
      });
    }
    return this.closing;
  }

  private nextId(prefix: string): string {
    this.idCounter += 1;
    return `${prefix}fake_${this.idCounter}`;
  }

  private record(request: RecordedRequest): void {
    this.requests.push(request);
    for (let i = this.requestWaiters.length - 1; i >= 0; i -= 1) {
      const waiter = this.requestWaiters[i];
      if (waiter && this.requests.length >= waiter.count) {
        this.requestWaiters.splice(i, 1);
        waiter.resolve();
      }
    }
  }

  private takeReply(request: RecordedRequest): ScriptedReply | Promise<ScriptedReply> | undefined {
    const next = this.queue.shift();
    if (next) return next;
    if (typeof this.fallback === 'function') return this.fallback(request);
    return this.fallback;
  }

  private async handle(req: http.IncomingMessage, res: http.ServerResponse): Promise<void> {
    this.openResponses.add(res);
    res.on('close', () => this.openResponses.delete(res));
    const requestId = this.nextId('req_');
    let format: WireFormat | undefined;
    try {
      const rawBody = await readBody(req);
      const target = req.url ?? '/';
      const queryStart = target.indexOf('?');
      const path = queryStart === -1 ? target : target.slice(0, queryStart);
      const query = queryStart === -1 ? '' : target.slice(queryStart);
      const route = ROUTES[path];
      format = route?.format ?? (path === EMBEDDINGS_PATH ? chatCompletions : undefined);
      let body: unknown;
      try {
        body = rawBody === '' ? undefined : JSON.parse(rawBody);
      } catch {
        body = undefined;
      }
      const stream = isRecord(body) && body['stream'] === true;
      const recorded: RecordedRequest = {
        method: req.method ?? 'GET',
        path,
        query,
        headers: req.headers,
        body,
        rawBody,
        endpoint: route?.endpoint ?? (path === EMBEDDINGS_PATH ? 'openai.embeddings' : null),
        stream,
      };
      this.record(recorded);
      res.once('close', () => {
        if (!res.writableEnded) recorded.closedEarly = true;
      });

      if (path === EMBEDDINGS_PATH) {
        await this.embeddings(recorded, res, requestId);
        return;
      }
      if (!route) {
        this.sendJson(res, 404, openAiDefaultError(404, `FakeLlmServer: no fake endpoint for ${path}`), {
          'x-request-id': requestId,
        });
        return;
      }
      const headers = { [route.format.requestIdHeader]: requestId };
      if (recorded.method !== 'POST') {
        const message = `FakeLlmServer: ${recorded.method} ${path} is not supported, use POST`;
        this.sendJson(res, 405, route.format.errorBody(405, message, { requestId }), headers);
        return;
      }
      if (!isRecord(body)) {
        const message = 'FakeLlmServer: request body is not a JSON object';
        this.sendJson(res, 400, route.format.errorBody(400, message, { requestId }), headers);
        return;
      }

      const reply = await this.takeReply(recorded);
      if (!reply) {
        const message =
          `FakeLlmServer: the script ran out of replies (request #${this.requests.length}: POST ${path}). ` +
          'Enqueue more replies with enqueue(...) or set a fallback with setDefault(...).';
        this.sendJson(res, 500, route.format.errorBody(500, message, { requestId }), headers);
        return;
      }

      const model = typeof body['model'] === 'string' ? body['model'] : 'fake-model';
      const ctx: RenderContext = {
        body,
        rawBody,
        model,
        stream: route.format.isStream(body),
        nextId: (prefix) => this.nextId(prefix),
        requestId,
        // Only an answered request reads or writes the cache.
        ...(this.promptCache && reply.kind === 'message'
          ? { cache: this.promptCache.apply(route.endpoint, body) }
          : {}),
      };
      await this.respond(route.format, reply, ctx, res, headers);
    } catch (err) {
      if (res.headersSent || res.destroyed) {
        res.destroy();
        return;
      }
      const message =
        err instanceof ScriptError ? err.message : `FakeLlmServer: internal error: ${String(err)}`;
      const errorBody = format
        ? format.errorBody(500, message, { requestId })
        : openAiDefaultError(500, message);
      this.sendJson(res, 500, errorBody, {});
    }
  }

  private async respond(
    format: WireFormat,
    reply: ScriptedReply,
    ctx: RenderContext,
    res: http.ServerResponse,
    headers: Record<string, string>,
  ): Promise<void> {
    switch (reply.kind) {
      case 'hang':
        // Keep the response open: it is destroyed when the client aborts (res 'close') or on close().
        return;
      case 'error': {
        const merged = { ...headers, ...reply.headers };
        if (reply.body === undefined) {
          this.sendJson(res, reply.status, format.errorBody(reply.status, undefined, ctx), merged);
        } else if (typeof reply.body === 'string') {
          this.send(res, reply.status, reply.body, {
            'content-type': 'text/plain; charset=utf-8',
            ...merged,
          });
        } else {
          this.sendJson(res, reply.status, reply.body, merged);
        }
        return;
      }
      case 'malformed':
        if (ctx.stream) {
          this.sendSse(res, format.malformedSse(ctx), headers);
        } else {
          this.send(res, 200, '{"id":"broken","object":', { 'content-type': 'application/json', ...headers });
        }
        return;
      case 'message': {
        // Render before waiting so script errors (e.g. invalid tool arguments) surface as a clean 500.
        const frames = ctx.stream ? format.sse(reply, ctx) : undefined;
        const json = frames ? undefined : format.json(reply, ctx);
        if (reply.delayMs !== undefined && reply.delayMs > 0) {
          const alive = await this.delay(reply.delayMs, res);
          if (!alive) return;
        }
        if (frames && (reply.frameIntervalMs !== undefined || reply.stallAfterFrames !== undefined)) {
          await this.paceSse(res, frames, headers, reply.frameIntervalMs ?? 0, reply.stallAfterFrames);
        } else if (frames) {
          this.sendSse(res, frames, headers);
        } else {
          this.sendJson(res, 200, json, headers);
        }
        return;
      }
    }
  }

  /** `/v1/embeddings`, as OpenAI answers it (see the header); failures as OpenAI words them. */
  private async embeddings(
    recorded: RecordedRequest,
    res: http.ServerResponse,
    requestId: string,
  ): Promise<void> {
    const headers = { 'x-request-id': requestId };
    const fail = (
      status: number,
      message: string,
      param: string | null = null,
      code: string | null = null,
    ): void => this.sendJson(res, status, openAiErrorBody(message, { param, code }), headers);
    if (recorded.method !== 'POST')
      return fail(405, `FakeLlmServer: ${recorded.method} is not supported, use POST`);
    const body = recorded.body;
    if (!isRecord(body)) return fail(400, 'FakeLlmServer: request body is not a JSON object');
    const scriptedReply = this.embeddingQueue.shift();
    if (scriptedReply && scriptedReply.kind !== 'message') {
      const ctx = {
        body,
        rawBody: recorded.rawBody,
        model: String(body['model']),
        stream: false,
        nextId: (p: string) => this.nextId(p),
        requestId,
      };
      return this.respond(chatCompletions, scriptedReply, ctx, res, headers);
    }
    const model = body['model'];
    if (typeof model !== 'string' || model === '')
      return fail(400, 'you must provide a model parameter', 'model');
    const known = this.embeddingModels.get(model);
    if (!known) {
      return fail(
        404,
        `The model \`${model}\` does not exist or you do not have access to it.`,
        null,
        'model_not_found',
      );
    }
    const raw = body['input'];
    const inputs: unknown[] = Array.isArray(raw) && raw.every((x) => typeof x !== 'number') ? raw : [raw];
    const texts = inputs.map((x) =>
      typeof x === 'string'
        ? x
        : Array.isArray(x) && x.every((t) => Number.isInteger(t))
          ? x.join(' ')
          : null,
    );
    if (texts.length === 0 || texts.length > 2048 || texts.some((t) => t === null || t === '')) {
      return fail(
        400,
        "'$.input' is invalid. Please check the API reference: https://platform.openai.com/docs/api-reference.",
        'input',
      );
    }
    let dimensions = known.dimensions;
    if (body['dimensions'] !== undefined) {
      const asked = body['dimensions'];
      if (!known.shortenable)
        return fail(400, 'This model does not support specifying dimensions.', 'dimensions');
      if (typeof asked !== 'number' || !Number.isInteger(asked) || asked < 1 || asked > known.dimensions) {
        return fail(
          400,
          `Invalid value for 'dimensions' = ${JSON.stringify(asked)}. Must be between 1 and ${known.dimensions}.`,
          'dimensions',
        );
      }
      dimensions = asked;
    }
    const format = body['encoding_format'] ?? 'float';
    if (format !== 'float' && format !== 'base64') {
      return fail(400, `Invalid value for 'encoding_format': ${JSON.stringify(format)}.`, 'encoding_format');
    }
    const promptTokens = (texts as string[]).reduce((n, t) => n + Math.max(1, Math.ceil(t.length / 4)), 0);
    this.sendJson(
      res,
      200,
      {
        object: 'list',
        model,
        data: (texts as string[]).map((text, index) => {
          const v = hashEmbed(text, dimensions);
          return {
            object: 'embedding',
            index,
            embedding:
              format === 'base64'
                ? Buffer.from(v.buffer, v.byteOffset, v.byteLength).toString('base64')
                : Array.from(v),
          };
        }),
        usage: { prompt_tokens: promptTokens, total_tokens: promptTokens },
      },
      headers,
    );
  }

  /** Resolves `true` after `ms`, or `false` as soon as the response is closed (client abort / server close). */
  private delay(ms: number, res: http.ServerResponse): Promise<boolean> {
    if (res.destroyed) return Promise.resolve(false);
    return new Promise((resolve) => {
      const onClose = (): void => {
        clearTimeout(timer);
        resolve(false);
      };
      const timer = setTimeout(() => {
        res.off('close', onClose);
        resolve(!res.destroyed);
      }, ms);
      res.once('close', onClose);
    });
  }

  private send(
    res: http.ServerResponse,
    status: number,
    body: string,
    headers: Record<string, string>,
  ): void {
    if (res.destroyed) return;
    res.writeHead(status, { 'content-length': String(Buffer.byteLength(body)), ...headers });
    res.end(body);
  }

  private sendJson(
    res: http.ServerResponse,
    status: number,
    body: unknown,
    headers: Record<string, string>,
  ): void {
    this.send(res, status, JSON.stringify(body), { 'content-type': 'application/json', ...headers });
  }

  /** SSE frames one by one, `intervalMs` apart; after `stallAfter` frames the stream goes silent, left open. */
  private async paceSse(
    res: http.ServerResponse,
    frames: string[],
    headers: Record<string, string>,
    intervalMs: number,
    stallAfter: number | undefined,
  ): Promise<void> {
    if (res.destroyed) return;
    res.writeHead(200, {
      'content-type': 'text/event-stream; charset=utf-8',
      'cache-control': 'no-cache',
      connection: 'keep-alive',
      ...headers,
    });
    for (const [i, frame] of frames.entries()) {
      if (stallAfter !== undefined && i >= stallAfter) return;
      if (i > 0 && intervalMs > 0 && !(await this.delay(intervalMs, res))) return;
      this.onFrame?.(frame);
      res.write(frame);
    }
    res.end();
  }

  private sendSse(res: http.ServerResponse, frames: string[], headers: Record<string, string>): void {
    if (res.destroyed) return;
    res.writeHead(200, {
      'content-type': 'text/event-stream; charset=utf-8',
      'cache-control': 'no-cache',
      connection: 'keep-alive',
      ...headers,
    });
    for (const frame of frames) {
      this.onFrame?.(frame);
      res.write(frame);
    }
    res.end();
  }
}
