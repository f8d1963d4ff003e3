import { compactResourceSchema } from '../open-responses/src/generated/kubb/zod/compactResourceSchema';
import { responseResourceSchema } from '../open-responses/src/generated/kubb/zod/responseResourceSchema';
import { parseStreamingEventData } from '../open-responses/src/lib/sse-parser';

/**
 * The Open Responses compliance suite's own schemas (vendored in test/open-responses): what the
 * suite checks a response, a compaction and every streamed event against. Each throws with the
 * issues when the value does not conform.
 */
export function expectResponseResource(value: unknown): void {
  const r = responseResourceSchema.safeParse(value);
  if (!r.success)
    throw new Error(`not an Open Responses ResponseResource: ${JSON.stringify(r.error.issues)}`);
}

export function expectCompactResource(value: unknown): void {
  const r = compactResourceSchema.safeParse(value);
  if (!r.success) throw new Error(`not an Open Responses CompactResource: ${JSON.stringify(r.error.issues)}`);
}

/** A streamed event (SSE), or with `websocket` a WebSocket message (error envelopes included). */
export function expectStreamingEvent(value: unknown, transport: 'http' | 'websocket' = 'http'): void {
  const parsed = parseStreamingEventData(value, undefined, { transport });
  if (!parsed.validationResult.success) {
    throw new Error(
      `not an Open Responses streaming event (${parsed.event}): ${JSON.stringify(parsed.validationResult.error.issues)}`,
    );
  }
  const response = (value as { response?: unknown }).response;
  if (response !== undefined) expectResponseResource(response);
}
