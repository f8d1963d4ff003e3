import {
  cancelledText,
  chatMessageText,
  ClientToolRefused,
  SessionRefused,
  type ChatCompletionChunk,
  type ChatCompletionRequest,
  type ChatCompletionResponse,
  type ChatCompletionUsage,
  type FinishReason,
  type OpenAiErrorResponse,
  type TurnResponse,
  type ErrorAnswer,
  type ToolChoice,
} from '@switchboard/contracts';

/**
 * The OpenAI-compatible facade's mapping (docs/adr/0016-chat-completions-facade.md): OpenAI's
 * request → what is admitted, an ended turn → `chat.completion` / chunks, any failure → OpenAI's
 * error shape. Plain functions; the controller does the I/O.
 */

/**
 * An error in OpenAI's terms. `retry` sets `x-should-retry`, which the openai SDK obeys: its default
 * retries 408, 409, 429 and 5xx, and a retry of an admitted request without an Idempotency-Key would
 * admit the message again.
 */
export class OpenAiError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    readonly options: {
      param?: string;
      type?: string;
      retry?: boolean;
      headers?: Record<string, string>;
    } = {},
  ) {
    super(message);
    this.name = 'OpenAiError';
  }
}

const TYPE_BY_STATUS: Record<number, string> = {
  400: 'invalid_request_error',
  401: 'authentication_error',
  403: 'permission_error',
  404: 'not_found_error',
  408: 'timeout_error',
  409: 'conflict_error',
  413: 'invalid_request_error',
  414: 'invalid_request_error',
  415: 'invalid_request_error',
  422: 'invalid_request_error',
  429: 'rate_limit_error',
  431: 'invalid_request_error',
};
const typeOf = (status: number) =>
  TYPE_BY_STATUS[status] ?? (status >= 500 ? 'server_error' : 'invalid_request_error');

export interface OpenAiErrorAnswer {
  status: number;
  body: OpenAiErrorResponse;
  headers: Record<string, string>;
}

/** An OpenAiError as the answer it is. */
export function renderOpenAiError(err: OpenAiError): OpenAiErrorAnswer {
  const headers = { ...err.options.headers };
  if (err.options.retry !== undefined) headers['x-should-retry'] = String(err.options.retry);
  return {
    status: err.status,
    body: {
      error: {
        message: err.message,
        type: err.options.type ?? typeOf(err.status),
        param: err.options.param ?? null,
        code: err.code,
      },
    },
    headers,
  };
}

/**
 * Any thrown value → OpenAI's `{error: {message, type, param, code}}`: the facade's own errors as
 * they are, everything else as `native` (the gateway's one error mapping) answers it, same status,
 * reshaped; a validation failure's first issue is the `param`.
 */
export function toOpenAiErrorAnswer(err: unknown, native: (err: unknown) => ErrorAnswer): OpenAiErrorAnswer {
  if (err instanceof OpenAiError) return renderOpenAiError(err);
  const answer = native(err);
  const { code, message, details } = answer.body.error;
  const issues = (details as { issues?: { path: string }[] } | undefined)?.issues;
  return {
    status: answer.status,
    body: {
      error: {
        message,
        type: typeOf(answer.status),
        param: issues?.[0]?.path || null,
        code: code === 'unauthorized' ? 'invalid_api_key' : code,
      },
    },
    headers: answer.headers,
  };
}

/** A text the conversation carries over into a new session: user and assistant turns, in order. */
export interface HistoryEntry {
  role: 'user' | 'assistant';
  text: string;
}

/** What a request admits (docs/adr/0016): the last user message; the earlier ones seed a new session. */
export interface ConversationPlan {
  prompt: string;
  history: HistoryEntry[];
}

/**
 * The messages of a request → the message to admit and the history before it. `system` and
 * `developer` messages are left out: the agent's instructions are the system prompt, and a client
 * cannot replace them (what it wants to add, it says in a user message).
 */
export function planConversation(messages: ChatCompletionRequest['messages']): ConversationPlan {
  const turns: HistoryEntry[] = [];
  for (const m of messages) {
    if (m.role === 'user' || m.role === 'assistant') {
      const text = chatMessageText(m.content);
      // An assistant message with no text (an empty reply) says nothing the agent needs.
      if (m.role === 'assistant' && text === '') continue;
      turns.push({ role: m.role, text });
    }
  }
  const last = turns.pop();
  if (!last || last.role !== 'user') {
    throw new OpenAiError(
      400,
      'invalid_value',
      'messages: the conversation must end with a user message (system and developer messages do not count: ' +
        "the agent's own instructions are its system prompt)",
      { param: 'messages' },
    );
  }
  if (last.text.trim() === '') {
    throw new OpenAiError(400, 'invalid_value', 'messages: the last user message has no text', {
      param: 'messages',
    });
  }
  return { prompt: last.text, history: turns };
}

/**
 * The session a request names: the `X-Session-Id` header or `metadata.session_id` (both must agree),
 * or undefined for a new session.
 */
export function requestedSessionId(
  header: string | string[] | undefined,
  metadata: Record<string, string> | null | undefined,
): string | undefined {
  if (Array.isArray(header)) {
    throw new OpenAiError(400, 'invalid_value', 'X-Session-Id: send the header once', {
      param: 'X-Session-Id',
    });
  }
  const fromHeader = header?.trim() || undefined;
  const fromMetadata = metadata?.session_id;
  if (fromHeader && fromMetadata && fromHeader !== fromMetadata) {
    throw new OpenAiError(
      400,
      'invalid_value',
      'X-Session-Id and metadata.session_id name different sessions: send one',
      { param: 'metadata.session_id' },
    );
  }
  return fromHeader ?? fromMetadata;
}

export const completionId = (turnId: string) => `chatcmpl-${turnId}`;

/** Unix seconds of the admission: a turn id is a UUIDv7, whose first 48 bits are its millisecond time. */
export function createdAt(turnId: string): number {
  const ms = parseInt(turnId.replace(/-/g, '').slice(0, 12), 16);
  return Number.isFinite(ms) ? Math.floor(ms / 1000) : Math.floor(Date.now() / 1000);
}

// ---- client-side tools (docs/adr/0047) --------------------------------------------------------------

/** A client tool call as the facade hands it out. */
export interface HandedCall {
  callId: string;
  name: string;
  arguments: string;
}

/** The request's `tools` as declarations (`tool_choice: "none"`: none are offered). */
export function chatClientTools(
  req: Pick<ChatCompletionRequest, 'tools' | 'tool_choice'>,
): { name: string; description: string; parameters: Record<string, unknown> }[] {
  if (req.tool_choice === 'none') return [];
  return (req.tools ?? []).map((t) => ({
    name: t.function.name,
    description: t.function.description ?? '',
    parameters: t.function.parameters ?? { type: 'object', properties: {} },
  }));
}

/** The request's `tool_choice` as the turn's forced choice (docs/adr/0047); undefined: `auto`/`none`. */
export function chatToolChoice(req: Pick<ChatCompletionRequest, 'tool_choice'>): ToolChoice | undefined {
  const c = req.tool_choice;
  if (c === undefined || c === 'auto' || c === 'none') return undefined;
  if (c === 'required') return { type: 'required' };
  return { type: 'tool', name: c.function.name };
}

/** Names the i-th declared tool's field as OpenAI's `param` does. */
export const chatToolParam = (i: number, field: string): string =>
  field === 'name' ? `tools[${i}].function.name` : `tools[${i}].function.${field}`;

/**
 * The results a conversation ends with: the `tool` messages after its last assistant message. A
 * stateless client resends the whole conversation; its trailing tool messages answer the calls the
 * facade handed out, and their ids (unique: `call_<wait id>`) name the waiting turn. Undefined when
 * the conversation does not end with tool messages (a new message is admitted then).
 */
export function trailingToolResults(
  messages: ChatCompletionRequest['messages'],
): { callId: string; output: string }[] | undefined {
  const results: { callId: string; output: string }[] = [];
  for (let i = messages.length - 1; i >= 0; i--) {
    const m = messages[i];
    if (m.role !== 'tool') break;
    results.unshift({ callId: String(m.tool_call_id), output: chatMessageText(m.content) });
  }
  return results.length > 0 ? results : undefined;
}

/** A turn that waits for the client's tools → `finish_reason: "tool_calls"` with the calls. */
export function toolCallsCompletion(
  turn: TurnResponse,
  calls: readonly HandedCall[],
  model: string,
): ChatCompletionResponse {
  const message = {
    role: 'assistant' as const,
    content: turn.finalText ? turn.finalText : null,
    refusal: null,
    tool_calls: calls.map(toolCallOut),
  };
  return completion(turn, model, message, 'tool_calls');
}

const toolCallOut = (c: HandedCall) => ({
  id: c.callId,
  type: 'function' as const,
  function: { name: c.name, arguments: c.arguments },
});

/** A refusal of client tools in OpenAI's shape: 400 naming the parameter or the ids, 404, 409. */
export function chatClientToolRefusal(err: unknown): never {
  if (!(err instanceof ClientToolRefused)) throw err;
  const ids = err.o.callIds?.length ? { param: 'messages' } : {};
  const param = err.o.param !== undefined ? { param: err.o.param } : ids;
  throw new OpenAiError(err.status, err.reason, err.message, { ...param, retry: false });
}

/** `stop` for the model's final answer; `length` when a stop hook (iterations, tool calls, spend, deadline) ended the turn. */
export const finishReason = (stopReason: string | null): FinishReason =>
  stopReason === 'final_answer' || stopReason === null ? 'stop' : 'length';

export const usageOf = (turn: Pick<TurnResponse, 'usage'>): ChatCompletionUsage => ({
  prompt_tokens: turn.usage.inputTokens,
  completion_tokens: turn.usage.outputTokens,
  total_tokens: turn.usage.inputTokens + turn.usage.outputTokens,
  prompt_tokens_details: { cached_tokens: turn.usage.cachedTokens },
});

/**
 * An ended turn that has no answer → the error a client gets. A failed turn is final (a retry would
 * replay it), so the openai SDK is told not to retry; the message names the turn to inspect.
 */
export function endedTurnError(turn: TurnResponse): OpenAiError | undefined {
  if (turn.status === 'completed') return undefined;
  if (turn.status === 'cancelled') {
    // finish_reason has no value for a cancel: the error's message names why (docs/adr/0055).
    return new OpenAiError(409, 'turn_cancelled', cancelledText(turn), {
      retry: false,
    });
  }
  const failure = turn.failure;
  const why = failure
    ? `${failure.kind}: ${failure.brief || failure.message}`
    : (turn.stopReason ?? 'failed');
  // A structured answer that never matched says so in its code (docs/adr/0048): the client's format failed, not the service.
  const code = failure?.kind === 'structured_output_invalid' ? failure.kind : 'turn_failed';
  return new OpenAiError(502, code, `turn ${turn.id} failed (${why})`, {
    type: 'server_error',
    retry: false,
  });
}

/** The completion of an ended, completed turn. */
export function completionOf(turn: TurnResponse, model: string): ChatCompletionResponse {
  const message = { role: 'assistant' as const, content: turn.finalText ?? '', refusal: null };
  return completion(turn, model, message, finishReason(turn.stopReason));
}

/** The one choice of a turn's completion around its message. */
function completion(
  turn: TurnResponse,
  model: string,
  message: ChatCompletionResponse['choices'][number]['message'],
  finish: ChatCompletionResponse['choices'][number]['finish_reason'],
): ChatCompletionResponse {
  return {
    id: completionId(turn.id),
    object: 'chat.completion',
    created: createdAt(turn.id),
    model,
    choices: [{ index: 0, message, logprobs: null, finish_reason: finish }],
    usage: usageOf(turn),
    system_fingerprint: null,
    session_id: turn.sessionId,
    turn_id: turn.id,
  };
}

/** Builds the chunks of one streamed completion. */
export class ChunkWriter {
  constructor(
    private readonly o: { turnId: string; sessionId: string; model: string; includeUsage: boolean },
  ) {}

  private chunk(choices: ChatCompletionChunk['choices'], usage?: ChatCompletionUsage): ChatCompletionChunk {
    return {
      id: completionId(this.o.turnId),
      object: 'chat.completion.chunk',
      created: createdAt(this.o.turnId),
      model: this.o.model,
      choices,
      ...(this.o.includeUsage ? { usage: usage ?? null } : {}),
      system_fingerprint: null,
      session_id: this.o.sessionId,
      turn_id: this.o.turnId,
    };
  }

  /** The first chunk: the assistant's role, no text yet. */
  role(): ChatCompletionChunk {
    return this.chunk([
      { index: 0, delta: { role: 'assistant', content: '' }, logprobs: null, finish_reason: null },
    ]);
  }

  text(content: string): ChatCompletionChunk {
    return this.chunk([{ index: 0, delta: { content }, logprobs: null, finish_reason: null }]);
  }

  /** The client tool calls the turn waits for (docs/adr/0047), one chunk each, whole. */
  toolCalls(calls: readonly HandedCall[]): ChatCompletionChunk[] {
    return calls.map((c, index) =>
      this.chunk([
        {
          index: 0,
          delta: { tool_calls: [{ index, ...toolCallOut(c) }] },
          logprobs: null,
          finish_reason: null,
        },
      ]),
    );
  }

  finish(reason: FinishReason): ChatCompletionChunk {
    return this.chunk([{ index: 0, delta: {}, logprobs: null, finish_reason: reason }]);
  }

  /** With `include_usage`: the last chunk, no choices, the turn's usage. */
  usage(usage: ChatCompletionUsage): ChatCompletionChunk {
    return this.chunk([], usage);
  }
}

/**
 * The text a stream carries, round by round: rounds after one that said something are set apart by
 * a blank line, and at the end whatever of the final answer the last round's deltas did not carry is
 * sent (all of it for a resumed turn, whose rounds streamed nothing here).
 */
export class RoundText {
  private n = -1;
  private current = '';
  private earlier = false;

  constructor(private readonly send: (text: string) => void) {}

  /** A provider round started (a repeat of a round already seen, its committed copy, changes nothing). */
  round(n: number): void {
    if (n <= this.n) return;
    if (this.current !== '') this.earlier = true;
    this.n = n;
    this.current = '';
  }

  add(delta: string): void {
    if (delta === '') return;
    if (this.current === '' && this.earlier) this.send('\n\n');
    this.current += delta;
    this.send(delta);
  }

  /** The turn ended with this final answer: send what the deltas left out. */
  complete(final: string): void {
    if (final.length > this.current.length && final.startsWith(this.current)) {
      this.add(final.slice(this.current.length));
    }
  }
}

/** One SSE frame. */
export const sseData = (data: unknown): string => `data: ${JSON.stringify(data)}\n\n`;

/** OpenAI's streaming error: a `data:` frame with an `error` object (the openai SDK throws an APIError). */
export const sseError = (e: OpenAiError): string => sseData(renderOpenAiError(e).body);

/** 404 model_not_found: `model` names no agent of the tenant (`list`: where the client finds them). */
export const modelNotFound = (model: string, list = 'GET /v1/agents'): OpenAiError =>
  new OpenAiError(
    404,
    'model_not_found',
    `The model \`${model}\` does not exist: name an agent of the tenant (${list}), by name or id`,
    { param: 'model' },
  );

/** Why the facade could not use the session a request named (`X-Session-Id`), in OpenAI's shape. */
export const chatSessionRefusal =
  (requested: string | undefined) =>
  (err: unknown): never => {
    if (!(err instanceof SessionRefused)) throw err;
    switch (err.reason) {
      case 'other_agent':
        throw new OpenAiError(400, 'model_session_mismatch', 'model: the session belongs to another agent', {
          param: 'model',
        });
      case 'session_closed':
        throw new OpenAiError(409, 'session_closed', `session ${requested} is closed`, { retry: false });
      case 'key_reused':
        throw new OpenAiError(422, 'idempotency_key_reused', err.message);
      case 'session_not_found':
      case 'previous_not_found':
        throw new OpenAiError(404, 'session_not_found', `session ${requested} not found`, {
          param: 'X-Session-Id',
        });
    }
  };

/** A held request whose turn did not end (the bound passed, or the gateway is shutting down): it goes on. */
export function notEnded(
  turnId: string,
  why: 'deadline' | 'shutdown',
  boundMs: number,
  idempotencyKey: string | undefined,
): OpenAiError {
  // A retry with the same key waits for the same turn; without one it would admit the message again.
  const o = { retry: idempotencyKey !== undefined, headers: { 'x-turn-id': turnId } };
  if (why === 'shutdown') {
    return new OpenAiError(
      503,
      'server_shutting_down',
      `the gateway is shutting down; turn ${turnId} goes on: GET /v1/turns/${turnId} for its answer`,
      o,
    );
  }
  return new OpenAiError(
    408,
    'turn_timeout',
    `turn ${turnId} did not end within ${Math.round(boundMs / 1000)} s; it goes on running: ` +
      `GET /v1/turns/${turnId} for its answer` +
      (idempotencyKey ? ', or send the request again with the same Idempotency-Key to wait again' : ''),
    o,
  );
}
