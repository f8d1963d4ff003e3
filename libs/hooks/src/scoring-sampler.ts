/**
 * Deterministic sampling of turns for scoring (docs/adr/0062), consistent with OpenTelemetry's
 * `TraceIdRatioBasedSampler` (@opentelemetry/sdk-trace-base): the trace id's four 32-bit words are
 * XOR-ed together and the turn is kept when that number is below `ratio × 0xffffffff` (every id at a
 * ratio of 1). So a scorer at p % scores exactly the turns whose traces a p % ratio sampler keeps, and
 * the same ones every time it is asked.
 */

const TRACE_ID = /^[0-9a-f]{32}$/;
const INVALID_TRACE_ID = '0'.repeat(32);

/** The trace id of a W3C `traceparent` (`00-<trace id>-<span id>-<flags>`), or null. */
export function traceIdOfParent(traceparent: unknown): string | null {
  if (typeof traceparent !== 'string') return null;
  const id = traceparent.trim().toLowerCase().split('-')[1] ?? '';
  return TRACE_ID.test(id) && id !== INVALID_TRACE_ID ? id : null;
}

/**
 * The id a turn is sampled by: its trace id (from `turns.trace_context`'s traceparent), else its own
 * id's 32 hex digits (a UUID is as many bits as a trace id).
 */
export function samplingIdOf(traceContext: unknown, turnId: string): { id: string; fromTrace: boolean } {
  const tp =
    traceContext && typeof traceContext === 'object'
      ? (traceContext as Record<string, unknown>).traceparent
      : undefined;
  const traceId = traceIdOfParent(tp);
  if (traceId) return { id: traceId, fromTrace: true };
  return { id: turnId.replace(/-/g, '').toLowerCase(), fromTrace: false };
}

/** The sampler's accumulation: the XOR of the id's four 32-bit words, unsigned. */
export function accumulate(traceId: string): number {
  let acc = 0;
  for (let i = 0; i < 32; i += 8) {
    acc = (acc ^ parseInt(traceId.slice(i, i + 8), 16)) >>> 0;
  }
  return acc;
}

/** Whether a ratio sampler at `percent` % keeps the trace `traceId` (32 lowercase hex digits). */
export function sampledAt(traceId: string, percent: number): boolean {
  if (!TRACE_ID.test(traceId) || traceId === INVALID_TRACE_ID) return false;
  const ratio = Number.isNaN(percent) ? 0 : Math.min(1, Math.max(0, percent / 100));
  const upperBound = ratio === 1 ? 0x100000000 : Math.floor(ratio * 0xffffffff);
  return accumulate(traceId) < upperBound;
}
