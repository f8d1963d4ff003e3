import Anthropic from '@anthropic-ai/sdk';
import type { MessageParam, ToolResultBlockParam } from '@anthropic-ai/sdk/resources/messages';
import { classifyHttpError } from './errors';
import { AttemptGuard, DEFAULT_STREAM_TIMEOUTS, type StreamTimeouts } from './stream-guard';
import {
  ProviderError,
  type ChatMessage,
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
      const stream = this.client.messages.stream(
        {
          model: request.model,
          max_tokens: this.maxTokens,
          ...(system.length > 0 ? { system: system.join('\n\n') } : {}),
          messages: toMessages(request.messages),
          ...(request.tools.length > 0
            ? {
                tools: request.tools.map((t) => ({
                  name: t.name,
                  description: t.description,
                  input_schema: t.parameters as Anthropic.Tool.InputSchema,
                  ...(t.strict ? { strict: true } : {}),
                })),
              }
            : {}),
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
      const cached = message.usage.cache_read_input_tokens ?? 0;
      return {
        text,
        toolCalls,
        usage: {
          // Anthropic reports cached reads apart from input; the neutral model counts them as input.
          inputTokens: message.usage.input_tokens + cached,
          outputTokens: message.usage.output_tokens,
          cachedTokens: cached,
        },
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

/** Anthropic alternates user and assistant turns; consecutive tool results share one user message. */
function toMessages(messages: ChatMessage[]): MessageParam[] {
  const out: MessageParam[] = [];
  for (const m of messages) {
    switch (m.role) {
      case 'system':
        break;
      case 'user':
        out.push({ role: 'user', content: m.content });
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

function safeJson(raw: string): unknown {
  try {
    return raw.trim() === '' ? {} : JSON.parse(raw);
  } catch {
    return { _raw: raw };
  }
}
