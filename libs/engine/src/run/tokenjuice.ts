import { setImmediate as yieldToEventLoop } from 'node:timers/promises';
import { compactToolResult, DEFAULT_MIN_BYTES, type ToolResultCompaction } from '@switchboard/tokenjuice';
import type { ToolCallMeta } from '../types';
import type { TurnRun } from './turn-run';

/**
 * TokenJuice (seed 000 "Stage 1a"; docs/adr/0033): a successful result, before the summarizer and
 * the byte budget, compacted by its kind in the turn's mode. A lossy compaction's original is kept
 * first; when it cannot be (no store, or the write fails) the result stays as it is.
 */
export async function compactResult(
  run: TurnRun,
  meta: ToolCallMeta,
  value: unknown,
  renderedChars: number,
): Promise<ToolResultCompaction | undefined> {
  const mode = run.input.toolResultCompression ?? 'off';
  const o = run.resources.tokenjuice;
  // A rendering under minBytes characters holds a payload too small to compact: no cost on the hot path.
  if (mode === 'off' || run.signal.aborted || renderedChars < (o.minBytes ?? DEFAULT_MIN_BYTES))
    return undefined;
  const { call } = meta;
  // Compaction is synchronous (bounded by maxInputChars): let pending I/O run first.
  await yieldToEventLoop();
  const used = mode === 'full' && o.originals ? 'full' : 'light';
  const c = compactToolResult(value, {
    mode: used,
    tool: call.name,
    args: meta.arguments,
    minBytes: o.minBytes,
    maxInputChars: o.maxInputChars,
  });
  if (!c) return undefined;
  if (c.marker !== undefined) {
    const { tenantId, sessionId, turnId } = run.input;
    try {
      await o.originals!.keep({
        tenantId,
        id: c.marker,
        sessionId,
        turnId,
        callId: call.id,
        tool: call.name,
        kind: c.kind,
        content: c.original,
      });
    } catch {
      // Nowhere to keep the original: the model sees the result as it is (the byte budget still holds).
      return undefined;
    }
  }
  await run.cp.emit('tool_result_compacted', {
    callId: call.id,
    tool: call.name,
    kind: c.kind,
    mode: used,
    lossy: c.lossy,
    ...(c.marker !== undefined ? { marker: `tj:${c.marker}` } : {}),
    originalBytes: c.originalBytes,
    contentBytes: c.contentBytes,
  });
  return c;
}
