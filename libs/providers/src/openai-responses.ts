import type OpenAI from 'openai';
import type {
  ResponseFormatTextConfig,
  ResponseInputItem,
  ResponseStreamEvent,
  Response,
} from 'openai/resources/responses/responses';
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
} from './types';

/** `openai/<model>`: the Responses API, streaming. */
export class OpenAIResponsesProvider implements ModelProvider {
  readonly name = 'openai';
  private readonly client: OpenAI;
  private readonly timeouts: StreamTimeouts;

  constructor(options: OpenAIClientOptions) {
    this.client = createOpenAIClient(options);
    this.timeouts = { ...DEFAULT_STREAM_TIMEOUTS, ...options.streamTimeouts };
  }

  async complete(request: ModelRequest): Promise<ModelResponse> {
    const guard = new AttemptGuard(this.name, request.signal, this.timeouts);
    try {
      const system = request.messages.filter((m) => m.role === 'system').map((m) => m.content);
      const stream = await this.client.responses.create(
        {
          model: request.model,
          ...(system.length > 0 ? { instructions: system.join('\n\n') } : {}),
          input: request.messages.flatMap(toInput),
          ...(request.tools.length > 0
            ? {
                tools: request.tools.map((t) => ({
                  type: 'function' as const,
                  name: t.name,
                  description: t.description,
                  parameters: t.parameters,
                  strict: t.strict ?? false,
                })),
                ...(request.toolChoice
                  ? {
                      tool_choice:
                        request.toolChoice.type === 'required' || request.toolChoice.type === 'none'
                          ? request.toolChoice.type
                          : { type: 'function' as const, name: request.toolChoice.name },
                    }
                  : {}),
              }
            : {}),
          ...openAiCacheParams(request),
          ...(request.responseFormat ? { text: { format: textFormat(request.responseFormat) } } : {}),
          stream: true,
          store: false,
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

/** The format as the Responses API's `text.format`. */
function textFormat(f: ResponseFormat): ResponseFormatTextConfig {
  if (f.type === 'json_object') return { type: 'json_object' };
  return {
    type: 'json_schema',
    name: f.name,
    schema: f.schema,
    ...(f.description === undefined ? {} : { description: f.description }),
    ...(f.strict === undefined ? {} : { strict: f.strict }),
  };
}

function toInput(m: ChatMessage): ResponseInputItem[] {
  switch (m.role) {
    case 'system':
      return [];
    case 'user':
      if (!m.images?.length) return [{ role: 'user', content: m.content }];
      return [
        {
          role: 'user',
          content: [
            { type: 'input_text', text: m.content },
            ...m.images.map((i) => ({
              type: 'input_image' as const,
              image_url: i.url,
              detail: i.detail ?? 'auto',
            })),
          ],
        },
      ];
    case 'assistant':
      return [
        ...(m.content ? [{ role: 'assistant' as const, content: m.content }] : []),
        ...m.toolCalls.map((c) => ({
          type: 'function_call' as const,
          call_id: c.id,
          name: c.name,
          arguments: c.arguments,
        })),
      ];
    case 'tool':
      return [{ type: 'function_call_output', call_id: m.toolCallId, output: m.content }];
  }
}

async function assemble(
  stream: AsyncIterable<ResponseStreamEvent>,
  onTextDelta?: (d: string) => void,
): Promise<ModelResponse> {
  let final: Response | undefined;
  for await (const event of stream) {
    if (event.type === 'response.output_text.delta') onTextDelta?.(event.delta);
    else if (event.type === 'response.completed' || event.type === 'response.incomplete')
      final = event.response;
    else if (event.type === 'response.failed') {
      throw new ProviderError('server', event.response.error?.message ?? 'response failed');
    } else if (event.type === 'error') {
      throw new ProviderError('server', event.message);
    }
  }
  if (!final) throw new ProviderError('invalid_response', 'stream ended without a completed response');
  let text = '';
  const toolCalls: ModelResponse['toolCalls'] = [];
  for (const item of final.output ?? []) {
    if (item.type === 'message') {
      for (const part of item.content) if (part.type === 'output_text') text += part.text;
    } else if (item.type === 'function_call') {
      toolCalls.push({ id: item.call_id, name: item.name, arguments: item.arguments });
    }
  }
  const usage = final.usage;
  const cost = (usage as { cost?: unknown } | undefined)?.cost;
  return {
    text,
    toolCalls,
    usage: {
      inputTokens: usage?.input_tokens ?? 0,
      outputTokens: usage?.output_tokens ?? 0,
      cachedTokens: usage?.input_tokens_details?.cached_tokens ?? 0,
      cacheWriteTokens: usage?.input_tokens_details?.cache_write_tokens ?? 0,
    },
    reportedCostUsd: typeof cost === 'number' ? cost : undefined,
    finishReason: toolCalls.length > 0 ? 'tool_calls' : final.status === 'incomplete' ? 'length' : 'stop',
  };
}
