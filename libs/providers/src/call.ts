import { SpanKind, withSpan } from '@switchboard/observability';
import type { ResolvedModel } from './registry';
import type { ModelRequest, ModelResponse } from './types';

/**
 * One provider call inside an OpenTelemetry GenAI client span (`chat <model>`),
 * with the token usage on the span once the answer is in.
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
        'gen_ai.system': resolved.provider.name,
        'gen_ai.request.model': resolved.model,
        ...attributes,
      },
    },
    async (span) => {
      const response = await resolved.provider.complete({ ...request, model: resolved.model });
      span.setAttributes({
        'gen_ai.usage.input_tokens': response.usage.inputTokens,
        'gen_ai.usage.output_tokens': response.usage.outputTokens,
      });
      return response;
    },
  );
}
