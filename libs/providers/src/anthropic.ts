import Anthropic from '@anthropic-ai/sdk';
import type {
  CacheControlEphemeral,
  ImageBlockParam,
  MessageParam,
  OutputConfig,
  TextBlockParam,
  ToolResultBlockParam,
} from '@anthropic-ai/sdk/resources/messages';
import { formatInstruction, type ResponseFormat } from '@switchboard/contracts';
import { classifyHttpError } from './errors';
import { AttemptGuard, DEFAULT_STREAM_TIMEOUTS, type StreamTimeouts } from './stream-guard';
import {
  ProviderError,
  type ChatMessage,
  type ImagePart,
  type ModelProvider,
  type ModelRequest,
  type ModelResponse,
} from './types';

/** `anthropic/<model>`: the Messages API, streaming. */
export class AnthropicProvider implements ModelProvider {
  readonly name = 'anthropic';
  private readonly client: Anthropic;

  constructor(options: {
    apiKey?: string;
    baseURL?: string;
    timeoutMs?: number;
    maxTokens?: number;
    /** Silence between chunks, and the whole attempt (DEFAULT_STREAM_TIMEOUTS when absent). */
    streamTimeouts?: Partial<StreamTimeouts>;
    fetch?: typeof fetch;
  }) {
    this.client = new Anthropic({
      apiKey: options.apiKey ?? 'unset',
      baseURL: options.baseURL,
      maxRetries: 0,
      timeout: options.timeoutMs ?? 120_000,
      ...(options.fetch ? { fetch: options.fetch } : {}),
    });
    this.maxTokens = options.maxTokens ?? 4096;
    this.timeouts = { ...DEFAULT_STREAM_TIMEOUTS, ...options.streamTimeouts };
  }

  private readonly maxTokens: number;
  private readonly timeouts: StreamTimeouts;

  async complete(request: ModelRequest): Promise<ModelResponse> {
    const guard = new AttemptGuard(this.name, request.signal, this.timeouts);
    try {
      const system = request.messages.filter((m) => m.role === 'system').map((m) => m.content);
      const breakpoint = cacheControl(request);
      const tools: Anthropic.Tool[] = request.tools.map((t) => ({
        name: t.name,
        description: t.description,
        input_schema: t.parameters as Anthropic.Tool.InputSchema,
        ...(t.strict ? { strict: true } : {}),
      }));
      const lastTool = tools[tools.length - 1];
      if (breakpoint && lastTool) lastTool.cache_control = breakpoint;
      // A breakpoint needs the system prompt as a block; without one it stays a string.
      const systemText = system.join('\n\n');
      let systemParam: string | TextBlockParam[] | undefined =
        system.length === 0
          ? undefined
          : breakpoint
            ? [{ type: 'text', text: systemText, cache_control: breakpoint }]
            : systemText;
      const format = request.responseFormat;
      const native = format ? outputConfig(format) : undefined;
      if (format && !native) {
        // Told in words, in a block after the cached prefix, so the prompt cache still serves it.
        const said: TextBlockParam = { type: 'text', text: formatInstruction(format) };
        systemParam =
          systemParam === undefined
            ? [said]
            : typeof systemParam === 'string'
              ? [{ type: 'text', text: systemParam }, said]
              : [...systemParam, said];
      }
      const stream = this.client.messages.stream(
        {
          model: request.model,
          max_tokens: this.maxTokens,
          ...(systemParam === undefined ? {} : { system: systemParam }),
          messages: markLastMessage(toMessages(request.messages), breakpoint),
          ...(tools.length > 0 ? { tools } : {}),
          ...(tools.length > 0 && request.toolChoice
            ? {
                tool_choice:
                  request.toolChoice.type === 'required'
                    ? { type: 'any' as const }
                    : request.toolChoice.type === 'none'
                      ? { type: 'none' as const }
                      : { type: 'tool' as const, name: request.toolChoice.name },
              }
            : {}),
          ...(native ? { output_config: native } : {}),
        },
        { signal: guard.signal },
      );
      // The idle clock starts with the response headers and restarts at every stream event.
      stream.on('connect', () => guard.touch());
      stream.on('streamEvent', () => guard.touch());
      if (request.onTextDelta) stream.on('text', (delta) => request.onTextDelta?.(delta));
      const message = await stream.finalMessage();
      let text = '';
      const toolCalls: ModelResponse['toolCalls'] = [];
      for (const block of message.content) {
        if (block.type === 'text') text += block.text;
        else if (block.type === 'tool_use') {
          toolCalls.push({ id: block.id, name: block.name, arguments: JSON.stringify(block.input ?? {}) });
        }
      }
      return {
        text,
        toolCalls,
        usage: usageOf(message.usage),
        finishReason:
          message.stop_reason === 'tool_use'
            ? 'tool_calls'
            : message.stop_reason === 'max_tokens'
              ? 'length'
              : 'stop',
      };
    } catch (err) {
      const e = guard.errorFor(err, request.signal);
      if (e instanceof ProviderError) throw e;
      throw classifyHttpError(e, this.name, request.signal);
    } finally {
      guard.dispose();
    }
  }
}

/**
 * The breakpoint every cached request carries (docs/adr/0032): Anthropic caches nothing unless asked.
 * Three of its four breakpoints: the last tool (tools come first in the prefix), the system prompt,
 * and the last block of the latest message, so the next round of the turn, and the next turn, re-read
 * all of it. `long` asks for the 1 h lifetime on all three (a 1 h entry may not follow a 5 min one).
 */
function cacheControl(request: ModelRequest): CacheControlEphemeral | undefined {
  if (!request.cache) return undefined;
  return request.cache.retention === 'long' ? { type: 'ephemeral', ttl: '1h' } : { type: 'ephemeral' };
}

/** The latest message with the breakpoint on its last content block (a string becomes a text block). */
/**
 * Anthropic's native structured outputs (`output_config.format`, a JSON schema the model is held to
 * while decoding) for a `strict` schema: the client asked for the subset such decoders accept. A
 * non-strict schema, or `json_object` (no schema), is asked for in words (`formatInstruction`).
 */
function outputConfig(f: ResponseFormat): OutputConfig | undefined {
  if (f.type !== 'json_schema' || f.strict !== true) return undefined;
  return { format: { type: 'json_schema', schema: f.schema } };
}

function markLastMessage(
  messages: MessageParam[],
  breakpoint: CacheControlEphemeral | undefined,
): MessageParam[] {
  const last = messages[messages.length - 1];
  if (!breakpoint || !last) return messages;
  const blocks =
    typeof last.content === 'string' ? [{ type: 'text' as const, text: last.content }] : [...last.content];
  const tail = blocks[blocks.length - 1];
  // An empty text block cannot carry a breakpoint (the API refuses it); nothing else is ever empty here.
  if (!tail || (tail.type === 'text' && tail.text === '')) return messages;
  blocks[blocks.length - 1] = { ...tail, cache_control: breakpoint } as typeof tail;
  return [...messages.slice(0, -1), { ...last, content: blocks } as MessageParam];
}

/**
 * Anthropic reports cache reads and writes apart from `input_tokens`; the neutral model counts every
 * prompt token as input, with the cached reads and the writes as parts of it.
 */
export function usageOf(u: Anthropic.Usage): ModelResponse['usage'] {
  const read = u.cache_read_input_tokens ?? 0;
  const write = u.cache_creation_input_tokens ?? 0;
  const write1h = u.cache_creation?.ephemeral_1h_input_tokens ?? 0;
  return {
    inputTokens: u.input_tokens + read + write,
    outputTokens: u.output_tokens,
    cachedTokens: read,
    cacheWriteTokens: write,
    ...(write1h > 0 ? { cacheWrite1hTokens: Math.min(write1h, write) } : {}),
  };
}

/** Anthropic alternates user and assistant turns; consecutive tool results share one user message. */
function toMessages(messages: ChatMessage[]): MessageParam[] {
  const out: MessageParam[] = [];
  for (const m of messages) {
    switch (m.role) {
      case 'system':
        break;
      case 'user':
        out.push(
          m.images?.length
            ? { role: 'user', content: [{ type: 'text', text: m.content }, ...m.images.map(imageBlock)] }
            : { role: 'user', content: m.content },
        );
        break;
      case 'assistant':
        out.push({
          role: 'assistant',
          content: [
            ...(m.content ? [{ type: 'text' as const, text: m.content }] : []),
            ...m.toolCalls.map((c) => ({
              type: 'tool_use' as const,
              id: c.id,
              name: c.name,
              input: safeJson(c.arguments),
            })),
          ],
        });
        break;
      case 'tool': {
        const block: ToolResultBlockParam = {
          type: 'tool_result',
          tool_use_id: m.toolCallId,
          content: m.content,
        };
        const last = out[out.length - 1];
        if (
          last?.role === 'user' &&
          Array.isArray(last.content) &&
          last.content.every((b) => b.type === 'tool_result')
        ) {
          last.content.push(block);
        } else {
          out.push({ role: 'user', content: [block] });
        }
        break;
      }
    }
  }
  return out;
}

/** An image as Anthropic takes it: a `data:` URL's bytes inline, any other URL by reference. */
function imageBlock(i: ImagePart): ImageBlockParam {
  const m = /^data:(image\/(?:png|jpeg|gif|webp));base64,(.*)$/s.exec(i.url);
  return m
    ? { type: 'image', source: { type: 'base64', media_type: m[1] as 'image/png', data: m[2] } }
    : { type: 'image', source: { type: 'url', url: i.url } };
}

function safeJson(raw: string): unknown {
  try {
    return raw.trim() === '' ? {} : JSON.parse(raw);
  } catch {
    return { _raw: raw };
  }
}
