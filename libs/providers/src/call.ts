import { SpanKind, withSpan } from '@switchboard/observability';
import type { ResolvedModel } from './registry';
import type { ModelRequest, ModelResponse } from './types';

/**
 * One provider call inside an OpenTelemetry GenAI client span (`chat <model>`, the GenAI semantic
 * conventions: `gen_ai.provider.name`, the request and response model, the usage once the answer is
 * in); callers add the conversation (`gen_ai.conversation.id`), tenant and agent.
 */
export function tracedComplete(
  resolved: ResolvedModel,
  request: Omit<ModelRequest, 'model'>,
  attributes: Record<string, string> = {},
): Promise<ModelResponse> {
  return withSpan(
    `chat ${resolved.model}`,
    {
      kind: SpanKind.CLIENT,
      attributes: {
        'gen_ai.operation.name': 'chat',
        'gen_ai.provider.name': resolved.provider.name,
        'gen_ai.request.model': resolved.model,
        ...attributes,
      },
    },
    async (span) => {
      const response = await resolved.provider.complete({ ...request, model: resolved.model });
      span.setAttributes({
        'gen_ai.response.model': resolved.model,
        'gen_ai.response.finish_reasons': [response.finishReason],
        'gen_ai.usage.input_tokens': response.usage.inputTokens,
        'gen_ai.usage.output_tokens': response.usage.outputTokens,
      });
      return response;
    },
  );
}
