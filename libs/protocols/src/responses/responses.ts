import { randomBytes } from 'node:crypto';
import { z } from 'zod';
import {
  cancelledText,
  ClientToolRefused,
  SessionRefused,
  EventType,
  isEnded,
  responsesMessageImages,
  responsesMessageText,
  ResponseFunctionTool,
  ResponseToolChoice,
  TextFormat,
  type MessageImage,
  type CompactionObject,
  type CreateResponseRequest,
  type ResponseObject,
  type ResponseFunctionCallItem,
  type ResponseOutputItem,
  type ResponseOutputMessage,
  type ResponseStatus,
  type ResponseToolCallItem,
  type ResponseUsage,
  type ResponsesInputMessage,
  type ToolCallResponse,
  type TurnResponse,
} from '@switchboard/contracts';
import {
  createdAt,
  OpenAiError,
  type ConversationPlan,
  type HandedCall,
  type HistoryEntry,
} from '../openai-chat/chat-completions';

/**
 * The Responses adapter's mapping (docs/adr/0035-responses-api.md): a response is a turn (its id is
 * derived from the turn's, so nothing is stored beside the turn), the request's input → what is
 * admitted, the turn's events → output items and the semantic stream events. Plain functions and one
 * plain class; the controller and the streamer do the I/O.
 */

const RESPONSE_ID = /^resp_([0-9a-f]{32})(?:_([1-9][0-9]{0,15}))?$/;

/**
 * `resp_<turn id, hex without dashes>`: derived, so a response id survives anything the turn does.
 * A request that answered the turn's client tool calls (docs/adr/0047) follows the same turn from
 * the journal seq its answer committed: its response is `resp_<turn hex>_<seq>`, the turn from there
 * on (a new id per request, as OpenAI gives; its output holds only what came after the answer).
 */
export const responseIdOf = (turnId: string, after?: number): string =>
  `resp_${turnId.replace(/-/g, '')}${after ? `_${after}` : ''}`;

/** The turn a response id names and the seq it starts after, or undefined when it is no response id of ours. */
export function responseRefOf(responseId: string): { turnId: string; after: number } | undefined {
  const m = RESPONSE_ID.exec(responseId);
  if (!m) return undefined;
  const h = m[1];
  const turnId = `${h.slice(0, 8)}-${h.slice(8, 12)}-${h.slice(12, 16)}-${h.slice(16, 20)}-${h.slice(20)}`;
  return { turnId, after: m[2] ? Number(m[2]) : 0 };
}

/** The turn a response id names, or undefined when the text is no response id of ours. */
export const turnIdOf = (responseId: string): string | undefined => responseRefOf(responseId)?.turnId;

/** The request's function tools as client tool declarations (`tool_choice: "none"`: none are offered). */
export function responsesClientTools(
  req: Pick<CreateResponseRequest, 'tools' | 'tool_choice'>,
): { name: string; description: string; parameters: Record<string, unknown> }[] {
  if (req.tool_choice === 'none') return [];
  return (req.tools ?? []).map((t) => ({
    name: t.name ?? '',
    description: t.description ?? '',
    parameters: t.parameters ?? { type: 'object', properties: {} },
  }));
}

/** Names the i-th declared tool's field as OpenAI's `param` does. */
export const responsesToolParam = (i: number, field: string): string => `tools[${i}].${field}`;

/**
 * The client's results in the input: its `function_call_output` items after the last message
 * (replayed `function_call` and `reasoning` items between are history). Their ids (`call_<wait id>`,
 * unique) name the waiting turn (docs/adr/0047). Undefined when the input ends with a message (a new
 * message is admitted then).
 */
export function functionCallOutputs(
  input: CreateResponseRequest['input'],
): { callId: string; output: string }[] | undefined {
  if (typeof input === 'string') return undefined;
  const results: { callId: string; output: string }[] = [];
  for (let i = input.length - 1; i >= 0; i--) {
    const item = input[i];
    const type = item.type ?? 'message';
    if (type === 'message' || type === 'compaction') break;
    if (item.type !== 'function_call_output') continue;
    const output =
      typeof item.output === 'string'
        ? item.output
        : item.output
            .map((p) => (typeof p.text === 'string' ? p.text : ''))
            .filter((t) => t !== '')
            .join('\n\n');
    results.unshift({ callId: item.call_id, output });
  }
  return results.length > 0 ? results : undefined;
}

/** A refusal of client tools in OpenAI's shape: 400 naming the parameter or the ids, 404, 409. */
export function responsesClientToolRefusal(err: unknown): never {
  if (!(err instanceof ClientToolRefused)) throw err;
  const ids = err.o.callIds?.length ? { param: 'input' } : {};
  const param = err.o.param !== undefined ? { param: err.o.param } : ids;
  throw new OpenAiError(err.status, err.reason, err.message, { ...param, retry: false });
}

/** A call of the client's function tool as its output item. */
export const functionCallItem = (c: HandedCall): ResponseFunctionCallItem => ({
  type: 'function_call',
  id: `fc_${c.callId.replace(/^call_/, '')}`,
  call_id: c.callId,
  name: c.name,
  arguments: c.arguments,
  status: 'completed',
});

const hex = (id: string) => id.replace(/-/g, '');

/**
 * What the adapter keeps about a request, on the admitted message's metadata (key `responses`): what
 * the response object echoes, so a response read later (after a restart too) is the one answered.
 */
export interface ResponseRequestRecord {
  model: string;
  background: boolean;
  previous_response_id: string | null;
  metadata: Record<string, string>;
  user: string | null;
  /** The request created the session with this many earlier messages (its input items). */
  imported: number;
  /**
   * `text.format` when it asked for structured output (docs/adr/0048); absent: `text`. The turn
   * stores the format it validates against; this is what the response echoes.
   */
  text_format?: TextFormat;
  /** False: `store: false` (not retrievable, continued only on its WebSocket; docs/adr/0035). */
  store: boolean;
  /** The function tools the request declared (docs/adr/0047), echoed; absent: none. */
  tools?: ResponseFunctionTool[];
  /** The `tool_choice` it gave, echoed; absent: `auto`. */
  tool_choice?: ResponseToolChoice;
}

/** The request's function tools and tool choice as the response echoes them (none: nothing kept). */
export function echoedTools(
  req: Pick<CreateResponseRequest, 'tools' | 'tool_choice'>,
): Pick<ResponseRequestRecord, 'tools' | 'tool_choice'> {
  const tools = (req.tools ?? []).flatMap((t) =>
    t.type === 'function'
      ? [
          {
            type: 'function' as const,
            name: t.name ?? '',
            description: t.description ?? null,
            parameters: t.parameters ?? null,
            strict: t.strict ?? null,
          },
        ]
      : [],
  );
  const choice = ResponseToolChoice.safeParse(req.tool_choice);
  return {
    ...(tools.length > 0 ? { tools } : {}),
    ...(choice.success && choice.data !== 'auto' ? { tool_choice: choice.data } : {}),
  };
}

/** The record on a message's metadata, read tolerantly (a message admitted elsewhere has none). */
export function requestRecordOf(metadata: unknown, fallbackModel: string): ResponseRequestRecord {
  const r = (metadata as { responses?: Partial<ResponseRequestRecord> } | null)?.responses ?? {};
  return {
    model: typeof r.model === 'string' ? r.model : fallbackModel,
    background: r.background === true,
    previous_response_id: typeof r.previous_response_id === 'string' ? r.previous_response_id : null,
    metadata: r.metadata && typeof r.metadata === 'object' ? r.metadata : {},
    user: typeof r.user === 'string' ? r.user : null,
    imported: typeof r.imported === 'number' ? r.imported : 0,
    ...textFormatOf(r.text_format),
    store: r.store !== false,
    ...toolsOf(r.tools, r.tool_choice),
  };
}

/** Recorded tools and tool choice, read tolerantly: what this version cannot read is left out. */
function toolsOf(tools: unknown, choice: unknown): Pick<ResponseRequestRecord, 'tools' | 'tool_choice'> {
  const t = z.array(ResponseFunctionTool).safeParse(tools);
  const c = ResponseToolChoice.safeParse(choice);
  return {
    ...(t.success && t.data.length > 0 ? { tools: t.data } : {}),
    ...(c.success ? { tool_choice: c.data } : {}),
  };
}

/** A recorded `text.format`, read tolerantly: one this version cannot read is left out. */
function textFormatOf(stored: unknown): Pick<ResponseRequestRecord, 'text_format'> {
  if (stored === undefined) return {};
  const parsed = TextFormat.safeParse(stored);
  return parsed.success && parsed.data.type !== 'text' ? { text_format: parsed.data } : {};
}

/**
 * The input → the message to admit and the history before it. The trailing user messages are
 * admitted as one message (their texts joined by blank lines: with `previous_response_id` they are
 * all new). Earlier user and assistant messages seed a new session (as on chat completions, ADR
 * 0016) and are left out of a continued one (the session's history is the truth); a `compaction`
 * item stands for the messages it packed (`POST /v1/responses/compact`). `system` and `developer`
 * messages are left out (the agent's instructions are its system prompt); replayed `reasoning` /
 * `mcp_call` items too (the session holds what the agent did).
 */
export function planInput(input: CreateResponseRequest['input']): ResponsesPlan {
  const messages: (HistoryEntry & { images?: MessageImage[]; index?: number })[] = [];
  if (typeof input === 'string') messages.push({ role: 'user', text: input });
  else {
    for (const [i, item] of input.entries()) {
      if (item.type === 'compaction') {
        messages.push(...unpackCompaction(item.encrypted_content, i));
        continue;
      }
      if ((item.type ?? 'message') !== 'message') continue;
      const m = item as ResponsesInputMessage;
      if (m.role !== 'user' && m.role !== 'assistant') continue;
      const text = responsesMessageText(m.content);
      if (m.role === 'assistant' && text === '') continue;
      const images = m.role === 'user' ? responsesMessageImages(m.content) : [];
      messages.push({ role: m.role, text, ...(images.length ? { images, index: i } : {}) });
    }
  }
  let start = messages.length;
  while (start > 0 && messages[start - 1].role === 'user') start--;
  const trailing = messages.slice(start);
  if (trailing.length === 0) {
    throw new OpenAiError(
      400,
      'invalid_value',
      'input: the input must end with a user message (system and developer messages do not count: ' +
        "the agent's own instructions are its system prompt)",
      { param: 'input' },
    );
  }
  const prompt = trailing.map((m) => m.text).join('\n\n');
  const images = trailing.flatMap((m) => m.images ?? []);
  if (prompt.trim() === '' && images.length === 0) {
    throw new OpenAiError(400, 'invalid_value', 'input: the user message has no text', { param: 'input' });
  }
  const earlier = messages.slice(0, start).find((m) => m.images);
  if (earlier) {
    throw new OpenAiError(
      400,
      'unsupported_value',
      `input[${earlier.index}]: images are taken in the new user message only, not in earlier ones`,
      { param: `input[${earlier.index}]` },
    );
  }
  return { prompt, history: messages.slice(0, start).map((m) => ({ role: m.role, text: m.text })), images };
}

/** What a create admits: the prompt, its images, and the history a new session is seeded with. */
export interface ResponsesPlan extends ConversationPlan {
  images: MessageImage[];
}

/** The prefix of a packed conversation, so a foreign or corrupted blob is told apart. */
const COMPACTION_PREFIX = 'sbc1.';

/**
 * The input's user and assistant messages packed into a `compaction` item's content (docs/adr/0035):
 * opaque to the client but not encrypted — it holds only what the client sent. Seeding a session
 * with it is the same as sending the messages; the engine's context guard compacts them further
 * (with its summary) when they near the model's window (ADR 0033's compaction, run in the turn).
 */
export function packCompaction(messages: HistoryEntry[]): string {
  return COMPACTION_PREFIX + Buffer.from(JSON.stringify({ m: messages }), 'utf8').toString('base64url');
}

/** The messages a `compaction` item packed; a 400 naming the item when it is not one of ours. */
export function unpackCompaction(content: string, index: number): HistoryEntry[] {
  const refuse = () =>
    new OpenAiError(
      400,
      'invalid_value',
      `input[${index}].encrypted_content: not a compaction this server made (pass the item back as /v1/responses/compact answered it)`,
      { param: `input[${index}].encrypted_content` },
    );
  if (!content.startsWith(COMPACTION_PREFIX)) throw refuse();
  let parsed: unknown;
  try {
    parsed = JSON.parse(Buffer.from(content.slice(COMPACTION_PREFIX.length), 'base64url').toString('utf8'));
  } catch {
    throw refuse();
  }
  const m = (parsed as { m?: unknown } | null)?.m;
  if (
    !Array.isArray(m) ||
    !m.every(
      (e: unknown) =>
        typeof e === 'object' &&
        e !== null &&
        ((e as HistoryEntry).role === 'user' || (e as HistoryEntry).role === 'assistant') &&
        typeof (e as HistoryEntry).text === 'string',
    )
  ) {
    throw refuse();
  }
  return (m as HistoryEntry[]).map((e) => ({ role: e.role, text: e.text }));
}

/** `POST /v1/responses/compact`'s answer: the messages as one `compaction` item; no model call, no usage. */
export function compactionOf(messages: HistoryEntry[], now = new Date()): CompactionObject {
  const id = randomBytes(16).toString('hex');
  return {
    id: `cmp_${id}`,
    object: 'response.compaction',
    output: [
      {
        type: 'compaction',
        id: `cmp_${id}_0`,
        encrypted_content: packCompaction(messages),
        created_by: 'switchboard',
      },
    ],
    created_at: Math.floor(now.getTime() / 1000),
    usage: {
      input_tokens: 0,
      input_tokens_details: { cached_tokens: 0 },
      output_tokens: 0,
      output_tokens_details: { reasoning_tokens: 0 },
      total_tokens: 0,
    },
  };
}

/**
 * The messages `POST /v1/responses/compact` packs: every user and assistant message of the input
 * (earlier compactions unpacked), in order; a 400 when there is none.
 */
export function compactionInput(input: CreateResponseRequest['input']): HistoryEntry[] {
  const messages: HistoryEntry[] = [];
  if (typeof input === 'string') messages.push({ role: 'user', text: input });
  else {
    for (const [i, item] of input.entries()) {
      if (item.type === 'compaction') {
        messages.push(...unpackCompaction(item.encrypted_content, i));
      } else if ((item.type ?? 'message') === 'message') {
        const m = item as ResponsesInputMessage;
        if (m.role !== 'user' && m.role !== 'assistant') continue;
        const text = responsesMessageText(m.content);
        if (text !== '') messages.push({ role: m.role, text });
      }
    }
  }
  if (messages.length === 0) {
    throw new OpenAiError(400, 'invalid_value', 'input: no user or assistant message to compact', {
      param: 'input',
    });
  }
  return messages;
}

/** The response's status from the turn's. */
export function statusOf(turn: Pick<TurnResponse, 'status' | 'stopReason'>): ResponseStatus {
  switch (turn.status) {
    case 'queued':
      return 'queued';
    case 'completed':
      return turn.stopReason === 'final_answer' || turn.stopReason === null ? 'completed' : 'incomplete';
    case 'failed':
      return 'failed';
    case 'cancelled':
      return 'cancelled';
    case 'running':
    case 'awaiting_approval':
    case 'awaiting_subagent':
    case 'awaiting_client_tool':
      return 'in_progress';
  }
}

export const responsesUsageOf = (turn: Pick<TurnResponse, 'usage'>): ResponseUsage => ({
  input_tokens: turn.usage.inputTokens,
  input_tokens_details: { cached_tokens: turn.usage.cachedTokens },
  output_tokens: turn.usage.outputTokens,
  output_tokens_details: { reasoning_tokens: 0 },
  total_tokens: turn.usage.inputTokens + turn.usage.outputTokens,
});

/** A failed or cancelled turn's `error` (Open Responses' `{code, message}`). */
export function errorOf(turn: TurnResponse): ResponseObject['error'] {
  if (turn.status === 'cancelled') {
    // Open Responses has no cancel reason field: the message names it (docs/adr/0055).
    return { code: 'turn_cancelled', message: cancelledText(turn) };
  }
  if (turn.status !== 'failed') return null;
  const f = turn.failure;
  const why = f ? `${f.kind}: ${f.brief || f.message}` : (turn.stopReason ?? 'failed');
  // The client's format that never matched says so in its code (docs/adr/0048).
  const code = f?.kind === 'structured_output_invalid' ? f.kind : 'server_error';
  return { code, message: `turn ${turn.id} failed (${why})` };
}

const secondsOf = (iso: string | null): number | null =>
  iso === null ? null : Math.floor(new Date(iso).getTime() / 1000);

const jsonText = (v: unknown): string => (typeof v === 'string' ? v : JSON.stringify(v ?? null));

/** What a finished call's summary says: the call and its outcome, cut to stay readable. */
function toolCallSummary(
  call: Pick<ToolCallResponse, 'name' | 'arguments' | 'status' | 'result' | 'error'>,
): string {
  const cut = (t: string) => (t.length > 2000 ? `${t.slice(0, 2000)}…` : t);
  const args = cut(jsonText(call.arguments ?? {}));
  if (call.status === 'completed') return `Called ${call.name} with ${args} → ${cut(jsonText(call.result))}`;
  if (call.status === 'failed')
    return `Called ${call.name} with ${args}: it failed (${cut(jsonText(call.error))})`;
  return '';
}

/**
 * A tool call of the turn as its output item (docs/adr/0035): a `reasoning` item whose summary says
 * what was called and what came back, the call itself in `switchboard_tool_call`.
 */
export function toolCallItem(
  id: string,
  callId: string,
  call: Pick<ToolCallResponse, 'name' | 'arguments' | 'status' | 'result' | 'error'>,
): ResponseToolCallItem {
  const status =
    call.status === 'completed' ? 'completed' : call.status === 'failed' ? 'failed' : 'in_progress';
  const summary = toolCallSummary(call);
  return {
    type: 'reasoning',
    id,
    status: status === 'in_progress' ? 'in_progress' : 'completed',
    summary: summary === '' ? [] : [{ type: 'summary_text', text: summary }],
    switchboard_tool_call: {
      call_id: callId,
      name: call.name,
      arguments: jsonText(call.arguments ?? {}),
      output: call.status === 'completed' ? jsonText(call.result) : null,
      error: call.status === 'failed' ? jsonText(call.error) : null,
      status,
    },
  };
}

/** What the stream and the response object show of one request. */
export interface ResponseMeta {
  turnId: string;
  sessionId: string;
  record: ResponseRequestRecord;
  /**
   * A response that answered the turn's client tool calls (docs/adr/0047) shows the turn after this
   * journal seq (its id says so: `resp_<turn hex>_<seq>`); 0 or absent: the whole turn.
   */
  after?: number;
}

/** One semantic stream event (`type` + its fields + `sequence_number`). */
export type ResponseStreamEvent = { type: string; sequence_number: number } & Record<string, unknown>;

/** An event as the journal or the live channel hands it to the builder. */
export interface TurnEventLike {
  type: string;
  data: Record<string, unknown>;
}

interface OpenMessage {
  index: number;
  item: ResponseOutputMessage;
  text: string;
}

/**
 * Builds a response from its turn's events, one at a time, and the semantic events a stream carries:
 * `response.created`, `response.in_progress`, per model round that says something a `message` item
 * (`output_item.added`, `content_part.added`, `output_text.delta`…, `output_text.done`,
 * `content_part.done`, `output_item.done`), per tool call of the agent a `reasoning` item
 * (`output_item.added` when it starts; when it ends its summary — `reasoning_summary_part.added`,
 * `reasoning_summary_text.delta`, `reasoning_summary_text.done`, `reasoning_summary_part.done` —
 * and `output_item.done`), and at the end
 * `response.completed` / `response.incomplete` / `response.failed`.
 *
 * Sequence numbers are positions, not counters: every event takes one number, except a text delta,
 * which takes as many as it has characters (its number is its last). So the journal's replay of a
 * turn (one delta per round) and its live stream (many small deltas) number every other event alike,
 * and a stream resumed with `starting_after = N` (any number a client saw) carries on exactly after
 * N: events at or below N are dropped, a delta that spans N is cut.
 */
export class ResponseBuilder {
  /** The last number given. */
  private seq = -1;
  readonly items: ResponseOutputItem[] = [];
  private message?: OpenMessage;
  private round = -1;
  private readonly calls = new Map<string, number>();
  private readonly out: ResponseStreamEvent[] = [];

  constructor(
    private readonly meta: ResponseMeta,
    /** Events numbered at or below this are not sent (a resumed stream). */
    private readonly startingAfter = -1,
  ) {}

  /** The events built since the last call. */
  take(): ResponseStreamEvent[] {
    return this.out.splice(0);
  }

  /** `response.created` and `response.in_progress`, the response as it stands (no output yet). */
  start(): void {
    const r = this.snapshot('in_progress');
    this.emit({ type: 'response.created', response: r });
    this.emit({ type: 'response.in_progress', response: r });
  }

  /** One of the turn's events (journaled or live). */
  event(e: TurnEventLike, lookup?: (callId: string) => ToolCallResponse | undefined): void {
    if (e.type === EventType.ProviderRoundStarted) {
      this.startRound(typeof e.data.round === 'number' ? e.data.round : 0);
    } else if (e.type === EventType.TextDelta) {
      // A structured answer (docs/adr/0048) is shown once validated, at the end: a rejected one, or a
      // tool round's text, must not reach `output_text`.
      if (this.meta.record.text_format) return;
      this.text(typeof e.data.text === 'string' ? e.data.text : '');
    } else if (e.type === EventType.ToolCallStarted) {
      this.toolStarted(String(e.data.callId), String(e.data.name));
    } else if (e.type === EventType.ToolCallCompleted) {
      const callId = String(e.data.callId);
      const known = lookup?.(callId);
      this.toolEnded(
        callId,
        known ?? {
          name: String(e.data.name),
          arguments: {},
          status: e.data.ok === false ? 'failed' : 'completed',
          result: null,
          error: typeof e.data.error === 'string' ? e.data.error : null,
        },
      );
    }
  }

  /** A provider round started (a repeat of one already seen changes nothing): its text is a new item. */
  startRound(n: number): void {
    if (n <= this.round) return;
    this.closeMessage();
    this.round = n;
  }

  text(delta: string): void {
    if (delta === '') return;
    const m = this.openMessage();
    m.text += delta;
    this.emit(
      {
        type: 'response.output_text.delta',
        item_id: m.item.id,
        output_index: m.index,
        content_index: 0,
        delta,
        logprobs: [],
      },
      delta.length,
    );
  }

  toolStarted(callId: string, name: string): void {
    if (this.calls.has(callId)) return;
    this.closeMessage();
    const item = toolCallItem(this.toolItemId(), callId, {
      name,
      arguments: {},
      status: 'running',
      result: null,
      error: null,
    });
    this.calls.set(callId, this.items.length);
    this.items.push(item);
    this.emit({ type: 'response.output_item.added', output_index: this.items.length - 1, item });
  }

  toolEnded(
    callId: string,
    call: Pick<ToolCallResponse, 'name' | 'arguments' | 'status' | 'result' | 'error'>,
  ): void {
    if (!this.calls.has(callId)) this.toolStarted(callId, call.name);
    const index = this.calls.get(callId)!;
    const current = this.items[index] as ResponseToolCallItem;
    if (current.status !== 'in_progress') return;
    const item = toolCallItem(current.id, callId, call);
    this.items[index] = item;
    const summary = item.summary[0];
    if (summary) {
      const at = { item_id: item.id, output_index: index, summary_index: 0 };
      this.emit({ type: 'response.reasoning_summary_part.added', ...at, part: { ...summary, text: '' } });
      this.emit({ type: 'response.reasoning_summary_text.delta', ...at, delta: summary.text });
      this.emit({ type: 'response.reasoning_summary_text.done', ...at, text: summary.text });
      this.emit({ type: 'response.reasoning_summary_part.done', ...at, part: { ...summary } });
    }
    this.emit({ type: 'response.output_item.done', output_index: index, item: structuredClone(item) });
  }

  /**
   * The turn ended: the final answer's text the deltas did not carry (a resumed turn streams
   * nothing), the open message closed, the tool items completed from the turn's record, and the
   * terminal event.
   */
  finish(turn: TurnResponse): ResponseObject {
    const final = turn.finalText ?? '';
    const open = this.message;
    if (final !== '') {
      if (open && final.startsWith(open.text)) {
        this.text(final.slice(open.text.length));
      } else if (open || this.lastMessage()?.item.content[0]?.text !== final) {
        // Not what the last round said (a resumed turn's rounds were not all seen): its own item.
        this.closeMessage();
        this.round = Number.MAX_SAFE_INTEGER;
        this.text(final);
      }
    }
    this.closeMessage(statusOf(turn) === 'completed' ? 'completed' : 'incomplete');
    for (const call of turn.toolCalls) {
      if (this.calls.has(call.callId)) {
        const i = this.calls.get(call.callId)!;
        this.items[i] = toolCallItem(this.items[i].id, call.callId, call);
      } else if (!this.meta.after) {
        // A response that starts after an answer (docs/adr/0047) shows only the calls it saw.
        this.calls.set(call.callId, this.items.length);
        this.items.push(toolCallItem(this.toolItemId(), call.callId, call));
      }
    }
    const response = this.snapshot(statusOf(turn), turn);
    const type =
      response.status === 'completed'
        ? 'response.completed'
        : response.status === 'incomplete'
          ? 'response.incomplete'
          : 'response.failed';
    this.emit({ type, response });
    return response;
  }

  /**
   * The turn waits for the client's tools (docs/adr/0047): the open message closed, one
   * `function_call` item per call (`output_item.added`, `function_call_arguments.delta` / `.done`,
   * `output_item.done`), and `response.completed` — as OpenAI completes a response whose model
   * called a function. The client answers with `function_call_output` items.
   */
  waiting(turn: TurnResponse, calls: readonly HandedCall[]): ResponseObject {
    const final = turn.finalText ?? '';
    const open = this.message;
    if (open && final.startsWith(open.text)) this.text(final.slice(open.text.length));
    this.closeMessage();
    for (const call of calls) {
      const item = functionCallItem(call);
      const index = this.items.length;
      this.items.push(item);
      this.emit({
        type: 'response.output_item.added',
        output_index: index,
        item: { ...item, arguments: '', status: 'in_progress' },
      });
      const at = { item_id: item.id, output_index: index };
      this.emit({ type: 'response.function_call_arguments.delta', ...at, delta: item.arguments });
      this.emit({ type: 'response.function_call_arguments.done', ...at, arguments: item.arguments });
      this.emit({ type: 'response.output_item.done', output_index: index, item: { ...item } });
    }
    const response = this.snapshot('completed', turn);
    this.emit({ type: 'response.completed', response });
    return response;
  }

  /** The response as it stands: no usage or error before the turn ended (or waits for the client). */
  snapshot(status: ResponseStatus, turn?: TurnResponse): ResponseObject {
    const r = this.meta.record;
    const waiting = turn?.status === 'awaiting_client_tool' && status === 'completed';
    const ended = turn !== undefined && (isEnded(turn.status) || waiting);
    const output = this.items.map((i) => structuredClone(i));
    return {
      id: responseIdOf(this.meta.turnId, this.meta.after),
      object: 'response',
      created_at: createdAt(this.meta.turnId),
      completed_at: ended && !waiting ? secondsOf(turn.completedAt) : null,
      status,
      incomplete_details:
        ended && status === 'incomplete' ? { reason: turn.stopReason ?? 'incomplete' } : null,
      model: r.model,
      previous_response_id: r.previous_response_id,
      instructions: null,
      output,
      output_text: output.flatMap((i) => (i.type === 'message' ? i.content.map((c) => c.text) : [])).join(''),
      error: ended && !waiting ? errorOf(turn) : null,
      tools: structuredClone(r.tools ?? []),
      tool_choice: r.tool_choice ?? 'auto',
      truncation: 'disabled',
      parallel_tool_calls: true,
      text: { format: r.text_format ?? { type: 'text' } },
      top_p: 1,
      presence_penalty: 0,
      frequency_penalty: 0,
      top_logprobs: 0,
      temperature: 1,
      reasoning: null,
      user: r.user,
      usage: ended ? responsesUsageOf(turn) : null,
      max_output_tokens: null,
      max_tool_calls: null,
      store: r.store,
      background: r.background,
      service_tier: 'default',
      metadata: r.metadata,
      safety_identifier: null,
      prompt_cache_key: null,
      session_id: this.meta.sessionId,
      turn_id: this.meta.turnId,
    };
  }

  /**
   * A stream that ends early (the gateway shuts down): the `error` event, its payload both where
   * Open Responses puts it (`error`) and where OpenAI's SDK reads it (top level).
   */
  error(code: string, message: string): void {
    this.emit({
      type: 'error',
      code,
      message,
      param: null,
      error: { type: 'server_error', code, message, param: null },
    });
  }

  /** The last item, when it is a (closed) message. */
  private lastMessage(): { item: ResponseOutputMessage } | undefined {
    const item = this.items.at(-1);
    return item?.type === 'message' ? { item } : undefined;
  }

  private toolItemId(): string {
    return `rs_${this.itemBase()}_${this.items.length}`;
  }

  /** Item ids of a response that starts after an answer carry its seq, so they differ from the turn's first response's. */
  private itemBase(): string {
    return this.meta.after ? `${hex(this.meta.turnId)}_${this.meta.after}` : hex(this.meta.turnId);
  }

  private openMessage(): OpenMessage {
    if (this.message) return this.message;
    const index = this.items.length;
    const item: ResponseOutputMessage = {
      type: 'message',
      id: `msg_${this.itemBase()}_${index}`,
      role: 'assistant',
      status: 'in_progress',
      content: [],
    };
    this.items.push(item);
    this.message = { index, item, text: '' };
    this.emit({ type: 'response.output_item.added', output_index: index, item: structuredClone(item) });
    const part = { type: 'output_text', text: '', annotations: [], logprobs: [] };
    this.emit({
      type: 'response.content_part.added',
      item_id: item.id,
      output_index: index,
      content_index: 0,
      part,
    });
    return this.message;
  }

  private closeMessage(status: 'completed' | 'incomplete' = 'completed'): void {
    const m = this.message;
    if (!m) return;
    this.message = undefined;
    const part = { type: 'output_text' as const, text: m.text, annotations: [], logprobs: [] };
    m.item.content = [part];
    m.item.status = status;
    const at = { item_id: m.item.id, output_index: m.index, content_index: 0 };
    this.emit({ type: 'response.output_text.done', ...at, text: m.text, logprobs: [] });
    this.emit({ type: 'response.content_part.done', ...at, part: structuredClone(part) });
    this.emit({ type: 'response.output_item.done', output_index: m.index, item: structuredClone(m.item) });
  }

  /** Numbers an event and keeps it unless a resumed stream has seen it (a delta spanning the cut is cut). */
  private emit(event: Record<string, unknown> & { type: string }, weight = 1): void {
    const first = this.seq + 1;
    this.seq += weight;
    if (this.seq <= this.startingAfter) return;
    let e = event;
    if (first <= this.startingAfter && typeof event.delta === 'string') {
      e = { ...event, delta: event.delta.slice(this.startingAfter - first + 1) };
    }
    this.out.push({ ...e, sequence_number: this.seq });
  }
}

/** The response of a turn that has not ended (a background one answered at once, or a cancel). */
export function pendingResponse(meta: ResponseMeta, turn: TurnResponse): ResponseObject {
  return new ResponseBuilder(meta).snapshot(statusOf(turn), turn);
}

/** `msg_<message id hex>`: an input item's id. */
export const inputItemIdOf = (messageId: string): string => `msg_${hex(messageId)}`;

/** Why a response could not go on in the session it asked for, in OpenAI's shape. */
export const responsesSessionRefusal =
  (previous: string | null) =>
  (err: unknown): never => {
    if (!(err instanceof SessionRefused)) throw err;
    switch (err.reason) {
      case 'other_agent':
        throw new OpenAiError(
          400,
          'model_session_mismatch',
          'model: the previous response was answered by another agent',
          { param: 'model' },
        );
      case 'session_closed':
        throw new OpenAiError(409, 'session_closed', `the session of ${previous} is closed`, {
          retry: false,
        });
      case 'key_reused':
        throw new OpenAiError(
          422,
          'idempotency_key_reused',
          'this Idempotency-Key was already used with a different request: use a new key for a new request',
        );
      case 'session_not_found':
      case 'previous_not_found':
        throw previousNotFound(previous ?? '');
    }
  };

export const previousNotFound = (previous: string): OpenAiError =>
  new OpenAiError(404, 'previous_response_not_found', `Previous response with id '${previous}' not found.`, {
    param: 'previous_response_id',
  });

/** A held response that did not end (the bound passed, or the gateway is shutting down): it goes on. */
export function responseNotEnded(
  turnId: string,
  why: 'deadline' | 'shutdown',
  boundMs: number,
  idempotencyKey: string | undefined,
): OpenAiError {
  const id = responseIdOf(turnId);
  const o = { retry: idempotencyKey !== undefined, headers: { 'x-turn-id': turnId, 'x-response-id': id } };
  if (why === 'shutdown') {
    return new OpenAiError(
      503,
      'server_shutting_down',
      `the gateway is shutting down; response ${id} goes on: GET /v1/responses/${id} for it`,
      o,
    );
  }
  return new OpenAiError(
    408,
    'turn_timeout',
    `response ${id} did not end within ${Math.round(boundMs / 1000)} s; it goes on running: ` +
      `GET /v1/responses/${id} for it (or send it with background: true)` +
      (idempotencyKey ? ', or send the request again with the same Idempotency-Key to wait again' : ''),
    o,
  );
}
