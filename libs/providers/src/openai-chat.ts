import type OpenAI from 'openai';
import type { ChatCompletionChunk, ChatCompletionMessageParam } from 'openai/resources/chat/completions';
import type { ResponseFormatJSONObject, ResponseFormatJSONSchema } from 'openai/resources/shared';
import type { ResponseFormat } from '@switchboard/contracts';
import { classifyHttpError } from './errors';
import { createOpenAIClient, openAiCacheParams, type OpenAIClientOptions } from './openai-client';
import { AttemptGuard, DEFAULT_STREAM_TIMEOUTS, type StreamTimeouts } from './stream-guard';
import {
  ProviderError,
  type ChatMessage,
  type ModelProvider,
  type ModelRequest,
  type ModelResponse,
  type ToolCallRequest,
} from './types';

/** `openai-chat/<model>`: Chat Completions, for OpenAI and compatible servers (vLLM, Ollama, llama.cpp). */
export class OpenAIChatProvider implements ModelProvider {
  readonly name = 'openai-chat';
  private readonly client: OpenAI;
  private readonly timeouts: StreamTimeouts;

  constructor(options: OpenAIClientOptions) {
    this.client = createOpenAIClient(options);
    this.timeouts = { ...DEFAULT_STREAM_TIMEOUTS, ...options.streamTimeouts };
  }

  async complete(request: ModelRequest): Promise<ModelResponse> {
    const guard = new AttemptGuard(this.name, request.signal, this.timeouts);
    try {
      const stream = await this.client.chat.completions.create(
        {
          model: request.model,
          messages: request.messages.map(toWire),
          ...(request.tools.length > 0
            ? {
                tools: request.tools.map((t) => ({
                  type: 'function' as const,
                  function: {
                    name: t.name,
                    description: t.description,
                    parameters: t.parameters,
                    strict: t.strict ?? false,
                  },
                })),
                ...(request.toolChoice
                  ? {
                      tool_choice:
                        request.toolChoice.type === 'required' || request.toolChoice.type === 'none'
                          ? request.toolChoice.type
                          : { type: 'function' as const, function: { name: request.toolChoice.name } },
                    }
                  : {}),
              }
            : {}),
          ...openAiCacheParams(request),
          ...(request.responseFormat ? { response_format: chatResponseFormat(request.responseFormat) } : {}),
          stream: true,
          stream_options: { include_usage: true },
        },
        { signal: guard.signal },
      );
      return await assemble(guard.watch(stream), request.onTextDelta);
    } catch (err) {
      throw classifyHttpError(guard.errorFor(err, request.signal), this.name, request.signal);
    } finally {
      guard.dispose();
    }
  }
}

/** The format as Chat Completions' `response_format` (OpenAI enforces `strict` schemas while decoding). */
function chatResponseFormat(f: ResponseFormat): ResponseFormatJSONObject | ResponseFormatJSONSchema {
  if (f.type === 'json_object') return { type: 'json_object' };
  return {
    type: 'json_schema',
    json_schema: {
      name: f.name,
      schema: f.schema,
      ...(f.description === undefined ? {} : { description: f.description }),
      ...(f.strict === undefined ? {} : { strict: f.strict }),
    },
  };
}

function toWire(m: ChatMessage): ChatCompletionMessageParam {
  switch (m.role) {
    case 'system':
      return { role: m.role, content: m.content };
    case 'user':
      if (!m.images?.length) return { role: m.role, content: m.content };
      return {
        role: 'user',
        content: [
          { type: 'text', text: m.content },
          ...m.images.map((i) => ({
            type: 'image_url' as const,
            image_url: { url: i.url, ...(i.detail ? { detail: i.detail } : {}) },
          })),
        ],
      };
    case 'assistant':
      return {
        role: 'assistant',
        content: m.content || null,
        ...(m.toolCalls.length > 0
          ? {
              tool_calls: m.toolCalls.map((c) => ({
                id: c.id,
                type: 'function' as const,
                function: { name: c.name, arguments: c.arguments },
              })),
            }
          : {}),
      };
    case 'tool':
      return { role: 'tool', tool_call_id: m.toolCallId, content: m.content };
  }
}

async function assemble(
  stream: AsyncIterable<ChatCompletionChunk>,
  onTextDelta?: (d: string) => void,
): Promise<ModelResponse> {
  let text = '';
  let finish: string | null = null;
  const calls = new Map<number, ToolCallRequest>();
  let usage: ModelResponse['usage'] = { inputTokens: 0, outputTokens: 0, cachedTokens: 0 };
  let reportedCostUsd: number | undefined;
  for await (const chunk of stream) {
    if (chunk.usage) {
      usage = {
        inputTokens: chunk.usage.prompt_tokens ?? 0,
        outputTokens: chunk.usage.completion_tokens ?? 0,
        cachedTokens: chunk.usage.prompt_tokens_details?.cached_tokens ?? 0,
        cacheWriteTokens: chunk.usage.prompt_tokens_details?.cache_write_tokens ?? 0,
      };
      // Some OpenAI-compatible gateways report spend alongside usage.
      const cost = (chunk.usage as { cost?: unknown }).cost;
      if (typeof cost === 'number') reportedCostUsd = cost;
    }
    const choice = chunk.choices?.[0];
    if (!choice) continue;
    const delta = choice.delta;
    if (delta?.content) {
      text += delta.content;
      onTextDelta?.(delta.content);
    }
    for (const tc of delta?.tool_calls ?? []) {
      const existing = calls.get(tc.index) ?? { id: '', name: '', arguments: '' };
      if (tc.id) existing.id = tc.id;
      if (tc.function?.name) existing.name += tc.function.name;
      if (tc.function?.arguments) existing.arguments += tc.function.arguments;
      calls.set(tc.index, existing);
    }
    if (choice.finish_reason) finish = choice.finish_reason;
  }
  if (finish === null) throw new ProviderError('invalid_response', 'stream ended without a finish reason');
  const toolCalls = [...calls.entries()].sort(([a], [b]) => a - b).map(([, c]) => c);
  if (toolCalls.some((c) => !c.id || !c.name)) {
    throw new ProviderError('invalid_response', 'tool call without id or name');
  }
  return {
    text,
    toolCalls,
    usage,
    reportedCostUsd,
    finishReason:
      finish === 'tool_calls' || toolCalls.length > 0
        ? 'tool_calls'
        : finish === 'length'
          ? 'length'
          : 'stop',
  };
}
