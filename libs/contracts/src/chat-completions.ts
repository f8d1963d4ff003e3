import { z } from 'zod';
import { ApiSchemas } from './responses';
import { ChatResponseFormat } from './structured-output';

/**
 * `POST /v1/chat/completions`: OpenAI's Chat Completions wire format, so the stock `openai` client
 * works against the gateway (docs/adr/0016-chat-completions-facade.md). `model` names an agent; the
 * conversation is a session. Objects are strict like every other request body: OpenAI parameters the
 * facade cannot honour are accepted where ignoring them is harmless (sampling knobs: the agent's own
 * settings decide) and refused with `unsupported_parameter` where the client would get something other
 * than it asked for (several choices, logprobs, audio, a forced tool choice); fields OpenAI does not
 * define are refused like anywhere else. `response_format` (`json_object`, `json_schema`) is honoured:
 * the answer is validated (docs/adr/0048-structured-output.md). `tools` are tools the client runs
 * (docs/adr/0047): their calls come back as `tool_calls`, and `tool` messages answer them.
 */

const Text = z.string().max(200_000);

const TextPart = z.strictObject({ type: z.literal('text'), text: Text });
/** Parts the facade refuses (agents take text); typed loosely so the refusal can name the part. */
const OtherPart = z.looseObject({ type: z.enum(['image_url', 'input_audio', 'file', 'refusal']) });
const Content = z.union([Text, z.array(z.union([TextPart, OtherPart])).max(100)]);
const Name = z.string().max(200).optional();

const SystemMessage = z.strictObject({
  role: z.enum(['system', 'developer']),
  content: Content,
  name: Name,
});
const UserMessage = z.strictObject({ role: z.literal('user'), content: Content, name: Name });
/** A call to a client tool the assistant made (docs/adr/0047), as the client sends it back. */
const ToolCallParam = z.strictObject({
  id: z.string().min(1).max(200),
  type: z.literal('function'),
  function: z.strictObject({ name: z.string().max(200), arguments: z.string().max(1_000_000) }),
});
const AssistantMessage = z.strictObject({
  role: z.literal('assistant'),
  content: Content.nullable().optional(),
  name: Name,
  refusal: z.string().max(200_000).nullable().optional(),
  /** The client tool calls the facade handed out (docs/adr/0047), resent with the conversation. */
  tool_calls: z.array(ToolCallParam).max(128).optional(),
  /** The legacy single function call: refused (use `tools`). */
  function_call: z.unknown().optional(),
  audio: z.unknown().optional(),
});
/** A client tool's result (docs/adr/0047): trailing ones answer the waiting turn's calls. */
const ToolMessage = z.strictObject({
  role: z.literal('tool'),
  content: Content,
  tool_call_id: z.string().min(1).max(200),
});
/** The legacy function result: refused (use `tools` and `tool` messages). */
const FunctionMessage = z.looseObject({ role: z.literal('function') });

/**
 * A tool the client declares and runs (docs/adr/0047): offered to the agent's model beside its own
 * tools; a call to it is handed back with `finish_reason: "tool_calls"`.
 */
export const ChatToolParam = z.strictObject({
  type: z.literal('function'),
  function: z.strictObject({
    name: z.string().max(200),
    description: z.string().max(4000).optional(),
    /** The arguments' JSON Schema (an object schema); default: no arguments. */
    parameters: z.record(z.string(), z.unknown()).optional(),
    /** Accepted; the provider decides how strictly it follows the schema. */
    strict: z.boolean().nullable().optional(),
  }),
});
export type ChatToolParam = z.infer<typeof ChatToolParam>;

export const ChatMessageParam = z.discriminatedUnion('role', [
  SystemMessage,
  UserMessage,
  AssistantMessage,
  ToolMessage,
  FunctionMessage,
]);
export type ChatMessageParam = z.infer<typeof ChatMessageParam>;

const Probability = z.number().min(0).max(2);

export const ChatCompletionRequest = z.strictObject({
  /** An agent of the tenant, by name (or by id). */
  model: z.string().min(1).max(200),
  messages: z.array(ChatMessageParam).min(1).max(1000),
  stream: z.boolean().nullable().optional(),
  stream_options: z
    .strictObject({ include_usage: z.boolean().optional(), include_obfuscation: z.boolean().optional() })
    .nullable()
    .optional(),
  /**
   * OpenAI's metadata (up to 16 string pairs). `session_id` names the session to continue (as the
   * `X-Session-Id` header does); the other pairs are kept on the admitted message.
   */
  metadata: z
    .record(z.string().min(1).max(64), z.string().max(512))
    .refine((m) => Object.keys(m).length <= 16, { message: 'at most 16 metadata pairs' })
    .nullable()
    .optional(),
  /** The end user, kept on the admitted message (it does not pick a session: one user has many). */
  user: z.string().max(256).optional(),
  // Accepted and ignored: the agent's model settings decide.
  temperature: Probability.nullable().optional(),
  top_p: z.number().min(0).max(1).nullable().optional(),
  frequency_penalty: z.number().min(-2).max(2).nullable().optional(),
  presence_penalty: z.number().min(-2).max(2).nullable().optional(),
  seed: z.int().nullable().optional(),
  stop: z
    .union([z.string().max(1000), z.array(z.string().max(1000)).max(4)])
    .nullable()
    .optional(),
  logit_bias: z.record(z.string().max(20), z.number()).nullable().optional(),
  max_tokens: z.int().min(1).nullable().optional(),
  max_completion_tokens: z.int().min(1).nullable().optional(),
  parallel_tool_calls: z.boolean().optional(),
  store: z.boolean().nullable().optional(),
  service_tier: z.string().max(40).nullable().optional(),
  reasoning_effort: z.string().max(40).nullable().optional(),
  verbosity: z.string().max(40).nullable().optional(),
  prompt_cache_key: z.string().max(1000).optional(),
  safety_identifier: z.string().max(1000).optional(),
  /**
   * Structured output (docs/adr/0048): `text` (the default), `json_object` or `json_schema` with
   * `{name, schema, strict?}`. The final answer is validated; one repair round, then the turn fails.
   */
  response_format: ChatResponseFormat.nullable().optional(),
  // Refused unless harmless (see unsupportedChatParameter).
  n: z.int().min(1).max(128).nullable().optional(),
  logprobs: z.boolean().nullable().optional(),
  top_logprobs: z.int().min(0).max(20).nullable().optional(),
  /** Tools the client runs (docs/adr/0047); names must differ from the agent's own tools. */
  tools: z.array(ChatToolParam).max(128).optional(),
  /**
   * `auto` (default), `none` (the client's tools are not offered), `required` or a named client
   * function: forced for the turn's first model round only (docs/adr/0047).
   */
  tool_choice: z
    .union([
      z.enum(['none', 'auto', 'required']),
      z.strictObject({
        type: z.literal('function'),
        function: z.strictObject({ name: z.string().max(200) }),
      }),
    ])
    .optional(),
  functions: z.array(z.unknown()).max(128).optional(),
  function_call: z.unknown().optional(),
  audio: z.unknown().nullable().optional(),
  modalities: z.array(z.string().max(40)).max(4).nullable().optional(),
  prediction: z.unknown().nullable().optional(),
  web_search_options: z.unknown().optional(),
});
export type ChatCompletionRequest = z.infer<typeof ChatCompletionRequest>;

/** A parameter the facade cannot honour: the 400 `unsupported_parameter` / `unsupported_value` names it. */
export interface UnsupportedParameter {
  param: string;
  code: 'unsupported_parameter' | 'unsupported_value';
  message: string;
}

const LEGACY_FUNCTIONS =
  'the legacy function-calling fields are not supported: declare `tools` of type function';

/**
 * The first parameter of a valid request the facade refuses, or undefined. Harmless spellings of
 * the defaults pass (`n: 1`, `tool_choice: "none"`, `modalities: ["text"]`, `logprobs: false`).
 */
export function unsupportedChatParameter(req: ChatCompletionRequest): UnsupportedParameter | undefined {
  const param = (name: string, message: string): UnsupportedParameter => ({
    param: name,
    code: 'unsupported_parameter',
    message: `${name}: ${message}`,
  });
  const value = (name: string, message: string): UnsupportedParameter => ({
    param: name,
    code: 'unsupported_value',
    message: `${name}: ${message}`,
  });
  if (req.functions !== undefined && req.functions.length > 0) return param('functions', LEGACY_FUNCTIONS);
  if (req.function_call !== undefined && req.function_call !== 'none' && req.function_call !== 'auto')
    return param('function_call', LEGACY_FUNCTIONS);
  if (req.n != null && req.n > 1) return value('n', 'only one choice is generated (n: 1)');
  if (req.logprobs === true || (req.top_logprobs ?? 0) > 0)
    return param('logprobs', 'log probabilities are not available');
  if (req.audio != null) return param('audio', 'audio output is not supported');
  if (req.modalities != null && req.modalities.some((m) => m !== 'text')) {
    return value('modalities', 'only ["text"] is supported');
  }
  if (req.prediction != null) return param('prediction', 'predicted outputs are not supported');
  if (req.web_search_options !== undefined) return param('web_search_options', 'web search is not supported');
  for (const [i, m] of req.messages.entries()) {
    if (m.role === 'function') return value(`messages[${i}].role`, LEGACY_FUNCTIONS);
    if (m.role === 'assistant') {
      if (m.function_call != null) return param(`messages[${i}].function_call`, LEGACY_FUNCTIONS);
      if (m.audio != null) return param(`messages[${i}].audio`, 'audio is not supported');
    }
    const content: unknown = 'content' in m ? m.content : undefined;
    if (Array.isArray(content)) {
      const parts = content as { type: string }[];
      const j = parts.findIndex(
        (p) => p.type !== 'text' && !(m.role === 'assistant' && p.type === 'refusal'),
      );
      if (j >= 0) {
        return value(
          `messages[${i}].content[${j}].type`,
          `${parts[j].type} parts are not supported: send text`,
        );
      }
    }
  }
  return undefined;
}

/** A message's text: a string, or its text parts joined by blank lines (refusal parts left out). */
export function chatMessageText(content: unknown): string {
  if (typeof content === 'string') return content;
  if (!Array.isArray(content)) return '';
  return (content as { type: string; text?: string }[])
    .filter((p) => p.type === 'text')
    .map((p) => p.text ?? '')
    .join('\n\n');
}

// ---- responses ----------------------------------------------------------------------------------

/** `{error: {message, type, param, code}}`: OpenAI's error shape, the only error body of this route. */
export const OpenAiErrorResponse = z
  .strictObject({
    error: z.strictObject({
      message: z.string(),
      /** `invalid_request_error`, `authentication_error`, `not_found_error`, `rate_limit_error`, `server_error`… */
      type: z.string(),
      /** The request parameter at fault, when one is. */
      param: z.string().nullable(),
      /** Machine-readable: `model_not_found`, `invalid_api_key`, `unsupported_parameter`, `turn_timeout`… */
      code: z.string().nullable(),
    }),
  })
  .register(ApiSchemas, { id: 'OpenAiError' });
export type OpenAiErrorResponse = z.infer<typeof OpenAiErrorResponse>;

/**
 * `stop` for a final answer, `length` when a budget (iterations, tool calls, spend, deadline) ended the
 * turn, `tool_calls` when the turn waits for the client's tools (docs/adr/0047).
 */
export const FinishReason = z.enum(['stop', 'length', 'tool_calls']);
export type FinishReason = z.infer<typeof FinishReason>;

/** A client tool call handed out (docs/adr/0047): `id` is what the `tool` message answers. */
const ToolCallOut = z.strictObject({
  id: z.string(),
  type: z.literal('function'),
  function: z.strictObject({ name: z.string(), arguments: z.string() }),
});

export const ChatCompletionUsage = z
  .strictObject({
    prompt_tokens: z.int(),
    completion_tokens: z.int(),
    total_tokens: z.int(),
    prompt_tokens_details: z.strictObject({ cached_tokens: z.int() }),
  })
  .register(ApiSchemas, { id: 'ChatCompletionUsage' });
export type ChatCompletionUsage = z.infer<typeof ChatCompletionUsage>;

export const ChatCompletionResponse = z
  .strictObject({
    /** `chatcmpl-<turn id>`. */
    id: z.string(),
    object: z.literal('chat.completion'),
    /** Unix seconds of the admission. */
    created: z.int(),
    /** The `model` the request named (the agent). */
    model: z.string(),
    choices: z.array(
      z.strictObject({
        index: z.int(),
        message: z.strictObject({
          role: z.literal('assistant'),
          /** The answer; with `tool_calls`, what the model said beside them (null when nothing). */
          content: z.string().nullable(),
          refusal: z.null(),
          /** The client tool calls the turn waits for (docs/adr/0047): run them, send `tool` messages. */
          tool_calls: z.array(ToolCallOut).optional(),
        }),
        logprobs: z.null(),
        finish_reason: FinishReason,
      }),
    ),
    /** Tokens of every model round of the turn. */
    usage: ChatCompletionUsage,
    system_fingerprint: z.null(),
    /** Switchboard: the session the conversation continues in (also the `X-Session-Id` header). */
    session_id: z.uuid(),
    /** Switchboard: the turn that produced the answer (GET /v1/turns/{id}). */
    turn_id: z.uuid(),
  })
  .register(ApiSchemas, { id: 'ChatCompletion' });
export type ChatCompletionResponse = z.infer<typeof ChatCompletionResponse>;

/** One `data:` frame of a streamed completion; the stream ends with `data: [DONE]`. */
export const ChatCompletionChunk = z
  .strictObject({
    id: z.string(),
    object: z.literal('chat.completion.chunk'),
    created: z.int(),
    model: z.string(),
    choices: z.array(
      z.strictObject({
        index: z.int(),
        delta: z.strictObject({
          role: z.literal('assistant').optional(),
          content: z.string().optional(),
          tool_calls: z.array(ToolCallOut.extend({ index: z.int() })).optional(),
        }),
        logprobs: z.null(),
        finish_reason: FinishReason.nullable(),
      }),
    ),
    /** With `stream_options.include_usage`: null on every chunk but the last, whose `choices` is empty. */
    usage: ChatCompletionUsage.nullable().optional(),
    system_fingerprint: z.null(),
    session_id: z.uuid(),
    turn_id: z.uuid(),
  })
  .register(ApiSchemas, { id: 'ChatCompletionChunk' });
export type ChatCompletionChunk = z.infer<typeof ChatCompletionChunk>;

/**
 * `GET /v1/models` (OpenAI-compatible): the tenant's agents as models, named as `model` names them in
 * a chat completion, so front-ends that list models offer the agents.
 */
export const ModelObject = z
  .strictObject({
    /** The agent's name (the most recent agent of that name answers it). */
    id: z.string(),
    object: z.literal('model'),
    /** Unix seconds of the agent's creation. */
    created: z.int(),
    owned_by: z.string(),
  })
  .register(ApiSchemas, { id: 'Model' });
export type ModelObject = z.infer<typeof ModelObject>;

export const ModelList = z
  .strictObject({ object: z.literal('list'), data: z.array(ModelObject) })
  .register(ApiSchemas, { id: 'ModelList' });
export type ModelList = z.infer<typeof ModelList>;
