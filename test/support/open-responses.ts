import type { ZodType } from 'zod';

/*
 * Loaded with require: the vendored files are Bun-style TypeScript (imports ending in `.ts`) that the
 * typecheck leaves out (test/open-responses/README.md); Jest's transform runs them as they are.
 */
/* eslint-disable @typescript-eslint/no-require-imports */
const { compactResourceSchema } =
  require('../open-responses/src/generated/kubb/zod/compactResourceSchema') as {
    compactResourceSchema: ZodType;
  };
const { responseResourceSchema } =
  require('../open-responses/src/generated/kubb/zod/responseResourceSchema') as {
    responseResourceSchema: ZodType;
  };
const { parseStreamingEventData } = require('../open-responses/src/lib/sse-parser') as {
  parseStreamingEventData: (
    data: unknown,
    eventName: string | undefined,
    o: { transport: 'http' | 'websocket' },
  ) => { event: string; validationResult: ReturnType<ZodType['safeParse']> };
};
/* eslint-enable @typescript-eslint/no-require-imports */

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
