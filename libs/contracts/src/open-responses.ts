import { z } from 'zod';
import { ApiSchemas } from './responses';
import { TextFormat } from './structured-output';
import type { ToolChoice } from './tool-choice';

/**
 * `/v1/responses`: OpenAI's Responses API as the Open Responses specification (openresponses.org)
 * writes it down, so the `openai` client's `responses.*`, the AI SDK's default `openai(model)` and the
 * OpenAI Agents SDK talk to an agent (docs/adr/0035-responses-api.md). `model` names an agent, a
 * response is a turn, `previous_response_id` continues the turn's session. The request object is
 * strict like every other body: parameters that cannot be honoured and would mislead if ignored are
 * refused (`unsupportedResponsesParameter`), sampling knobs are accepted and ignored (the agent's
 * model settings decide), fields the API does not define are refused.
 */

const Text = z.string().max(200_000);

const InputText = z.strictObject({ type: z.literal('input_text'), text: Text });
/** What an assistant said earlier (a client replaying the conversation): its text counts. */
const OutputText = z.looseObject({ type: z.literal('output_text'), text: Text });
const Refusal = z.looseObject({ type: z.literal('refusal'), refusal: z.string().max(200_000) });
/**
 * An image of a user message, for an agent whose model takes images (docs/adr/0035): a `data:` URL
 * (png, jpeg, gif, webp, base64) or an https URL; `file_id` (the Files API) is refused.
 */
export const InputImage = z.strictObject({
  type: z.literal('input_image'),
  image_url: z.string().max(20_000_000).nullable().optional(),
  detail: z.enum(['auto', 'low', 'high']).nullable().optional(),
  file_id: z.string().max(200).nullable().optional(),
});
export type InputImage = z.infer<typeof InputImage>;
/** Parts the adapter refuses; typed loosely so the refusal can name the part. */
const OtherPart = z.looseObject({ type: z.enum(['input_file', 'input_audio', 'input_video']) });

const MessageContent = z.union([
  Text,
  z.array(z.union([InputText, OutputText, Refusal, InputImage, OtherPart])).max(100),
]);

/** An image URL a model can be given: a base64 `data:` URL of a common format, or https. */
export const IMAGE_URL = /^(data:image\/(png|jpeg|gif|webp);base64,[A-Za-z0-9+/=]+|https:\/\/\S+)$/;

/** A message input item (`type: "message"` may be left out, as OpenAI's EasyInputMessage). */
export const ResponsesInputMessage = z.strictObject({
  type: z.literal('message').optional(),
  role: z.enum(['user', 'system', 'developer', 'assistant']),
  content: MessageContent,
  id: z.string().max(200).optional(),
  status: z.enum(['in_progress', 'completed', 'incomplete']).nullable().optional(),
  phase: z.string().max(40).nullable().optional(),
});
export type ResponsesInputMessage = z.infer<typeof ResponsesInputMessage>;

/**
 * Items a client may replay from an earlier output: the agent's own tool calls (`reasoning` items,
 * `mcp_call` from before docs/adr/0035's amendment) and reasoning. They are history the session
 * already holds: accepted and left out.
 */
const ReplayedItem = z.looseObject({ type: z.enum(['mcp_call', 'mcp_list_tools', 'reasoning']) });

/**
 * What `POST /v1/responses/compact` answered, passed back as the base of a new input: its
 * `encrypted_content` is opaque to the client (docs/adr/0035) and seeds the new session.
 */
export const ResponsesCompactionItem = z.strictObject({
  type: z.literal('compaction'),
  id: z.string().max(200).optional(),
  encrypted_content: z.string().max(2_000_000),
  created_by: z.string().max(200).nullable().optional(),
});
export type ResponsesCompactionItem = z.infer<typeof ResponsesCompactionItem>;
/**
 * A client function call a client replays from an earlier output (docs/adr/0047): history the session
 * already holds, accepted and left out, as the agent's own calls are.
 */
export const ResponsesFunctionCallItem = z.looseObject({
  type: z.literal('function_call'),
  call_id: z.string().max(200),
  name: z.string().max(200),
  arguments: z.string().max(2_000_000),
});

/**
 * The client's result for one of its function calls (docs/adr/0047): `call_id` is the id the
 * `function_call` item handed out; `output` its text (or text parts).
 */
export const ResponsesFunctionCallOutputItem = z.strictObject({
  type: z.literal('function_call_output'),
  call_id: z.string().min(1).max(200),
  output: z.union([
    z.string().max(2_000_000),
    z.array(z.looseObject({ type: z.string().max(40), text: z.string().max(2_000_000).optional() })).max(100),
  ]),
  id: z.string().max(200).nullable().optional(),
  status: z.enum(['in_progress', 'completed', 'incomplete']).nullable().optional(),
});
export type ResponsesFunctionCallOutputItem = z.infer<typeof ResponsesFunctionCallOutputItem>;

/** Other items the adapter refuses; typed loosely so the refusal names them. */
const RefusedItem = z.looseObject({
  type: z.enum([
    'item_reference',
    'custom_tool_call',
    'custom_tool_call_output',
    'computer_call',
    'computer_call_output',
    'web_search_call',
    'file_search_call',
    'image_generation_call',
    'code_interpreter_call',
    'local_shell_call',
    'local_shell_call_output',
    'shell_call',
    'shell_call_output',
    'apply_patch_call',
    'apply_patch_call_output',
    'mcp_approval_request',
    'mcp_approval_response',
  ]),
});

export const ResponsesInputItem = z.union([
  ResponsesInputMessage,
  ResponsesCompactionItem,
  ResponsesFunctionCallItem,
  ResponsesFunctionCallOutputItem,
  ReplayedItem,
  RefusedItem,
]);
export type ResponsesInputItem = z.infer<typeof ResponsesInputItem>;

/** A tool of the request: `function` (a client tool, docs/adr/0047); other types are refused by name. */
export const ResponsesTool = z.looseObject({
  type: z.string().max(64),
  name: z.string().max(200).optional(),
  description: z.string().max(100_000).nullable().optional(),
  parameters: z.record(z.string(), z.unknown()).nullable().optional(),
  /** Accepted; the schema is passed to the model as is. */
  strict: z.boolean().nullable().optional(),
});
export type ResponsesTool = z.infer<typeof ResponsesTool>;

const Metadata = z
  .record(z.string().min(1).max(64), z.string().max(512))
  .refine((m) => Object.keys(m).length <= 16, { message: 'at most 16 metadata pairs' });

export const CreateResponseRequest = z.strictObject({
  /** An agent of the tenant, by name (or by id). */
  model: z.string().min(1).max(200),
  input: z.union([Text, z.array(ResponsesInputItem).min(1).max(1000)]),
  /** A response of the same agent: the new turn runs in its session. */
  previous_response_id: z.string().max(200).nullable().optional(),
  /** Left out (docs/adr/0035): the agent's instructions are its system prompt. */
  instructions: z.string().max(200_000).nullable().optional(),
  /** Answer at once with the queued response; poll or stream it by id. */
  background: z.boolean().nullable().optional(),
  stream: z.boolean().nullable().optional(),
  stream_options: z.strictObject({ include_obfuscation: z.boolean().optional() }).nullable().optional(),
  /**
   * `false`: the response is not kept as a response (docs/adr/0035): it cannot be retrieved, and it
   * can be continued only on the WebSocket that created it (connection-local state).
   */
  store: z.boolean().nullable().optional(),
  metadata: Metadata.nullable().optional(),
  user: z.string().max(256).optional(),
  // Accepted and ignored: the agent's model settings decide.
  temperature: z.number().min(0).max(2).nullable().optional(),
  top_p: z.number().min(0).max(1).nullable().optional(),
  max_output_tokens: z.int().min(1).nullable().optional(),
  max_tool_calls: z.int().min(1).nullable().optional(),
  parallel_tool_calls: z.boolean().nullable().optional(),
  truncation: z.enum(['auto', 'disabled']).nullable().optional(),
  service_tier: z.string().max(40).nullable().optional(),
  reasoning: z.looseObject({}).nullable().optional(),
  prompt_cache_key: z.string().max(1000).nullable().optional(),
  prompt_cache_retention: z.string().max(40).nullable().optional(),
  safety_identifier: z.string().max(1000).nullable().optional(),
  include: z.array(z.string().max(100)).max(20).nullable().optional(),
  text: z
    .looseObject({
      /**
       * Structured output (docs/adr/0048): `text` (the default), `json_object`, or `json_schema` with
       * `name`, `schema`, `strict?`. The final answer is validated; one repair round, then the turn fails.
       */
      format: TextFormat.optional(),
      verbosity: z.string().max(40).nullable().optional(),
    })
    .nullable()
    .optional(),
  /**
   * Function tools the client runs (docs/adr/0047): when the agent's model calls one the response
   * completes with `function_call` items; other tool types are refused.
   */
  tools: z.array(ResponsesTool).max(128).optional(),
  /**
   * `auto` (default), `none` (the client's tools are not offered), `required` or a named function
   * (`{type: "function", name}`), forced for the first model round only; others are refused.
   */
  tool_choice: z.unknown().optional(),
  top_logprobs: z.int().min(0).max(20).nullable().optional(),
  conversation: z.unknown().optional(),
  prompt: z.unknown().optional(),
  context_management: z.unknown().optional(),
  moderation: z.unknown().optional(),
  prompt_cache_options: z.unknown().optional(),
});
export type CreateResponseRequest = z.infer<typeof CreateResponseRequest>;

/**
 * WebSocket mode's client event (Open Responses 2026-04-24): `type: "response.create"` and the
 * request body, without the HTTP transport's `stream`, `stream_options` and `background`.
 */
export const ResponseCreateEvent = CreateResponseRequest.omit({
  stream: true,
  stream_options: true,
  background: true,
}).extend({ type: z.literal('response.create') });
export type ResponseCreateEvent = z.infer<typeof ResponseCreateEvent>;

/**
 * `POST /v1/responses/compact`: the conversation in `input` packed into one `compaction` item that a
 * new response takes as its base input (docs/adr/0035). `model` names the agent, as on create.
 */
export const CompactResponseRequest = z.strictObject({
  model: z.string().min(1).max(200),
  input: z.union([Text, z.array(ResponsesInputItem).min(1).max(1000)]),
  /** Left out, as on create: the agent's instructions are its system prompt. */
  instructions: z.string().max(200_000).nullable().optional(),
  /** Accepted and ignored (no model call is made). */
  prompt_cache_key: z.string().max(1000).nullable().optional(),
  /** Refused: compacting a stored chain is not supported; send its items as `input`. */
  previous_response_id: z.string().max(200).nullable().optional(),
});
export type CompactResponseRequest = z.infer<typeof CompactResponseRequest>;

/** A parameter the adapter cannot honour: the 400 `unsupported_parameter` / `unsupported_value` names it. */
export interface UnsupportedResponsesParameter {
  param: string;
  code: 'unsupported_parameter' | 'unsupported_value';
  message: string;
}

const CLIENT_TOOLS =
  "the agent's own tools run inside the turn (they appear as reasoning output items); the client's " +
  "are `function` tools, and the agent's model decides whether to call one";

/**
 * The request's `tool_choice` as the turn's forced choice: undefined for `auto`, `none` or absent,
 * null for a form the adapter does not take (`allowed_tools`, hosted tool types, a malformed object).
 */
export function responsesToolChoice(choice: unknown): ToolChoice | undefined | null {
  if (choice == null || choice === 'auto' || choice === 'none') return undefined;
  if (choice === 'required') return { type: 'required' };
  const named = z
    .strictObject({ type: z.literal('function'), name: z.string().min(1).max(200) })
    .safeParse(choice);
  return named.success ? { type: 'tool', name: named.data.name } : null;
}

/** The first parameter of a valid request the adapter refuses, or undefined. */
export function unsupportedResponsesParameter(
  req: CreateResponseRequest,
): UnsupportedResponsesParameter | undefined {
  const param = (name: string, message: string): UnsupportedResponsesParameter => ({
    param: name,
    code: 'unsupported_parameter',
    message: `${name}: ${message}`,
  });
  const value = (name: string, message: string): UnsupportedResponsesParameter => ({
    param: name,
    code: 'unsupported_value',
    message: `${name}: ${message}`,
  });
  for (const [i, tool] of (req.tools ?? []).entries()) {
    if (tool.type !== 'function') {
      return value(`tools[${i}].type`, `${tool.type} tools are not supported; ${CLIENT_TOOLS}`);
    }
  }
  if (req.tool_choice != null && responsesToolChoice(req.tool_choice) === null)
    return value('tool_choice', `only auto, none, required or {type: "function", name}: ${CLIENT_TOOLS}`);
  if ((req.top_logprobs ?? 0) > 0) return param('top_logprobs', 'log probabilities are not available');
  for (const name of ['conversation', 'prompt', 'context_management'] as const) {
    if (req[name] != null) {
      return param(
        name,
        name === 'conversation'
          ? 'conversations are not supported: continue with previous_response_id'
          : 'not supported',
      );
    }
  }
  if (Array.isArray(req.input)) {
    for (const [i, item] of req.input.entries()) {
      const type = item.type ?? 'message';
      if (type !== 'message') {
        if (
          [
            'mcp_call',
            'mcp_list_tools',
            'reasoning',
            'compaction',
            'function_call',
            'function_call_output',
          ].includes(type)
        )
          continue;
        return value(`input[${i}].type`, `${type} items are not supported: send message items`);
      }
      const message = item as ResponsesInputMessage;
      const content = message.content;
      if (Array.isArray(content)) {
        for (const [j, p] of content.entries()) {
          if (p.type === 'input_image') {
            const at = `input[${i}].content[${j}]`;
            const image = p;
            if (message.role !== 'user') return value(`${at}.type`, 'images are taken in user messages only');
            if (image.file_id != null)
              return param(`${at}.file_id`, 'file ids are not supported: send image_url');
            if (typeof image.image_url !== 'string' || !IMAGE_URL.test(image.image_url)) {
              return value(
                `${at}.image_url`,
                'an image is a base64 data: URL (png, jpeg, gif or webp) or an https URL',
              );
            }
          } else if (!['input_text', 'output_text', 'refusal'].includes(p.type)) {
            return value(`${at(i, j)}.type`, `${p.type} parts are not supported: send text or input_image`);
          }
        }
      }
    }
  }
  return undefined;
}

const at = (i: number, j: number) => `input[${i}].content[${j}]`;

/** A message item's images (`input_image` parts with a URL). */
export function responsesMessageImages(
  content: ResponsesInputMessage['content'],
): { url: string; detail?: 'auto' | 'low' | 'high' }[] {
  if (typeof content === 'string') return [];
  return content.flatMap((p) =>
    p.type === 'input_image' && typeof p.image_url === 'string'
      ? [
          {
            url: p.image_url,
            ...(p.detail ? { detail: p.detail } : {}),
          },
        ]
      : [],
  );
}

/** A message item's text: a string, or its text parts joined by blank lines (refusals left out). */
export function responsesMessageText(content: ResponsesInputMessage['content']): string {
  if (typeof content === 'string') return content;
  return content
    .filter((p) => p.type === 'input_text' || p.type === 'output_text')
    .map((p) => (p as { text: string }).text)
    .join('\n\n');
}

// ---- responses ----------------------------------------------------------------------------------

export const ResponseOutputText = z.strictObject({
  type: z.literal('output_text'),
  text: z.string(),
  annotations: z.array(z.never()),
  logprobs: z.array(z.never()),
});

/** What the agent said in one model round. */
export const ResponseOutputMessage = z.strictObject({
  type: z.literal('message'),
  /** `msg_<turn id hex>_<round>`. */
  id: z.string(),
  role: z.literal('assistant'),
  status: z.enum(['in_progress', 'completed', 'incomplete']),
  content: z.array(ResponseOutputText),
});

/**
 * One of the agent's own tool calls, run inside the turn (docs/adr/0035): a `reasoning` item — the
 * work the "model" (the agent) did on its way to the answer — whose summary says what was called and
 * what came back, with the call itself in `switchboard_tool_call`. Not `function_call`: that asks the
 * client to run a function, and the stock clients would (or would fail to).
 */
export const ResponseToolCallItem = z.strictObject({
  type: z.literal('reasoning'),
  /** `rs_<turn id hex>_<n>`. */
  id: z.string(),
  status: z.enum(['in_progress', 'completed', 'incomplete']),
  /** One `summary_text`: `Called <tool> with <arguments> → <result>` (empty while the call runs). */
  summary: z.array(z.strictObject({ type: z.literal('summary_text'), text: z.string() })),
  /** Switchboard's extension field: the call as recorded. */
  switchboard_tool_call: z.strictObject({
    /** The model's id for the call. */
    call_id: z.string(),
    name: z.string(),
    /** JSON text; `{}` while the call runs on a live stream. */
    arguments: z.string(),
    /** The result as JSON text once it completed; null otherwise. */
    output: z.string().nullable(),
    error: z.string().nullable(),
    status: z.enum(['in_progress', 'completed', 'failed']),
  }),
});

/**
 * A call of one of the client's function tools (docs/adr/0047): the client runs it and answers with a
 * `function_call_output` item of the same `call_id`.
 */
export const ResponseFunctionCallItem = z.strictObject({
  type: z.literal('function_call'),
  /** `fc_<call id>`. */
  id: z.string(),
  /** The turn's wait for the call (`call_<uuid hex>`): unique, it names the waiting turn. */
  call_id: z.string(),
  name: z.string(),
  /** The model's JSON arguments, as written. */
  arguments: z.string(),
  status: z.literal('completed'),
});
export type ResponseFunctionCallItem = z.infer<typeof ResponseFunctionCallItem>;

export const ResponseOutputItem = z.discriminatedUnion('type', [
  ResponseOutputMessage,
  ResponseToolCallItem,
  ResponseFunctionCallItem,
]);
export type ResponseOutputItem = z.infer<typeof ResponseOutputItem>;
export type ResponseOutputMessage = z.infer<typeof ResponseOutputMessage>;
export type ResponseToolCallItem = z.infer<typeof ResponseToolCallItem>;

export const ResponseUsage = z
  .strictObject({
    input_tokens: z.int(),
    input_tokens_details: z.strictObject({ cached_tokens: z.int() }),
    output_tokens: z.int(),
    output_tokens_details: z.strictObject({ reasoning_tokens: z.int() }),
    total_tokens: z.int(),
  })
  .register(ApiSchemas, { id: 'ResponseUsage' });
export type ResponseUsage = z.infer<typeof ResponseUsage>;

export const ResponseStatus = z.enum([
  'queued',
  'in_progress',
  'completed',
  'failed',
  'incomplete',
  'cancelled',
]);
export type ResponseStatus = z.infer<typeof ResponseStatus>;

/** A function tool the request declared, as the response echoes it (Open Responses `FunctionTool`). */
export const ResponseFunctionTool = z
  .strictObject({
    type: z.literal('function'),
    name: z.string(),
    description: z.string().nullable(),
    parameters: z.record(z.string(), z.unknown()).nullable(),
    strict: z.boolean().nullable(),
  })
  .register(ApiSchemas, { id: 'ResponseFunctionTool' });
export type ResponseFunctionTool = z.infer<typeof ResponseFunctionTool>;

/** The `tool_choice` the request gave, as the response echoes it (`auto` when it gave none). */
export const ResponseToolChoice = z.union([
  z.enum(['none', 'auto', 'required']),
  z.strictObject({ type: z.literal('function'), name: z.string() }),
]);
export type ResponseToolChoice = z.infer<typeof ResponseToolChoice>;

/** The response object (Open Responses `ResponseResource`): every field it requires, plus two of ours. */
export const ResponseObject = z
  .strictObject({
    /** `resp_<turn id hex>`. */
    id: z.string(),
    object: z.literal('response'),
    /** Unix seconds of the admission. */
    created_at: z.int(),
    completed_at: z.int().nullable(),
    status: ResponseStatus,
    /** When the turn ended without a final answer: `reason` is its stop reason (max_iterations, deadline…). */
    incomplete_details: z.strictObject({ reason: z.string() }).nullable(),
    /** The `model` the request named (the agent). */
    model: z.string(),
    previous_response_id: z.string().nullable(),
    /** Always null: the agent's instructions are its system prompt (docs/adr/0035). */
    instructions: z.null(),
    output: z.array(ResponseOutputItem),
    /** The final answer's text (the openai SDK's `output_text`). */
    output_text: z.string(),
    error: z.strictObject({ code: z.string(), message: z.string() }).nullable(),
    /** The function tools the request declared (docs/adr/0047); the agent's own tools are not listed. */
    tools: z.array(ResponseFunctionTool),
    tool_choice: ResponseToolChoice,
    truncation: z.literal('disabled'),
    parallel_tool_calls: z.boolean(),
    /** The format the request asked for (docs/adr/0048): `text`, `json_object` or `json_schema`. */
    text: z.strictObject({ format: TextFormat }),
    top_p: z.number(),
    presence_penalty: z.number(),
    frequency_penalty: z.number(),
    top_logprobs: z.int(),
    temperature: z.number(),
    reasoning: z.null(),
    user: z.string().nullable(),
    /** Tokens of every model round of the turn; null until it ended. */
    usage: ResponseUsage.nullable(),
    max_output_tokens: z.null(),
    max_tool_calls: z.null(),
    /** False when the request asked for `store: false` (docs/adr/0035). */
    store: z.boolean(),
    background: z.boolean(),
    service_tier: z.literal('default'),
    metadata: z.record(z.string(), z.string()),
    safety_identifier: z.null(),
    prompt_cache_key: z.null(),
    /** Switchboard: the session the response's turn ran in. */
    session_id: z.uuid(),
    /** Switchboard: the turn (GET /v1/turns/{id}). */
    turn_id: z.uuid(),
  })
  .register(ApiSchemas, { id: 'Response' });
export type ResponseObject = z.infer<typeof ResponseObject>;

/** An input item as `GET /v1/responses/{id}/input_items` lists it: the message the turn admitted. */
export const ResponseInputItemObject = z.strictObject({
  type: z.literal('message'),
  /** `msg_<message id hex>`. */
  id: z.string(),
  role: z.literal('user'),
  status: z.literal('completed'),
  content: z.array(z.strictObject({ type: z.literal('input_text'), text: z.string() })),
});
export type ResponseInputItemObject = z.infer<typeof ResponseInputItemObject>;

export const ResponseInputItemList = z
  .strictObject({
    object: z.literal('list'),
    data: z.array(ResponseInputItemObject),
    first_id: z.string().nullable(),
    last_id: z.string().nullable(),
    has_more: z.boolean(),
  })
  .register(ApiSchemas, { id: 'ResponseInputItemList' });
export type ResponseInputItemList = z.infer<typeof ResponseInputItemList>;

export const InputItemsQuery = z.strictObject({
  limit: z.coerce.number().int().min(1).max(100).optional(),
  order: z.enum(['asc', 'desc']).optional(),
  after: z.string().max(200).optional(),
  before: z.string().max(200).optional(),
  include: z.union([z.string().max(100), z.array(z.string().max(100)).max(20)]).optional(),
});
export type InputItemsQuery = z.infer<typeof InputItemsQuery>;

export const RetrieveResponseQuery = z.strictObject({
  stream: z.enum(['true', 'false']).optional(),
  starting_after: z.coerce.number().int().min(-1).max(Number.MAX_SAFE_INTEGER).optional(),
  include: z.union([z.string().max(100), z.array(z.string().max(100)).max(20)]).optional(),
  include_obfuscation: z.enum(['true', 'false']).optional(),
});
export type RetrieveResponseQuery = z.infer<typeof RetrieveResponseQuery>;

/** A `compaction` output item: the packed conversation, opaque to the client. */
export const ResponseCompactionItem = z.strictObject({
  type: z.literal('compaction'),
  /** `cmp_<random hex>`. */
  id: z.string(),
  encrypted_content: z.string(),
  created_by: z.string(),
});
export type ResponseCompactionItem = z.infer<typeof ResponseCompactionItem>;

/** What `POST /v1/responses/compact` answers (Open Responses `CompactResource`). */
export const CompactionObject = z
  .strictObject({
    id: z.string(),
    object: z.literal('response.compaction'),
    /** The compacted window: one `compaction` item; a new response takes it as its base input. */
    output: z.array(ResponseCompactionItem),
    created_at: z.int(),
    /** No model call is made: every count is 0. */
    usage: ResponseUsage,
  })
  .register(ApiSchemas, { id: 'ResponseCompaction' });
export type CompactionObject = z.infer<typeof CompactionObject>;
