import { z } from 'zod';
import { defineTool, ToolError, type ToolDefinition } from '@switchboard/tools';
import { parseMarker } from '../marker';
import { sliceOriginal, type OriginalRange, type OriginalSlice } from '../range';
import { TOKENJUICE_RETRIEVE_TOOL } from '../types';
import type { OriginalsStore } from './originals';

/**
 * Most bytes one answer's `content` takes once rendered as JSON (escapes included), so the answer fits
 * the engine's 16 KiB result budget with its other fields; the answer says where to go on.
 */
export const RETRIEVE_DEFAULT_MAX_BYTES = 12 * 1024;

/** The slice whose JSON rendering fits `maxBytes`: cut shorter while escapes make it larger. */
function fittingSlice(original: string, range: OriginalRange, maxBytes: number): OriginalSlice {
  let budget = maxBytes;
  for (;;) {
    const slice = sliceOriginal(original, range, budget);
    const rendered = Buffer.byteLength(JSON.stringify(slice.content), 'utf8');
    if (rendered <= maxBytes || budget <= 64) return slice;
    const raw = slice.range.endByte - slice.range.startByte;
    budget = Math.max(64, Math.floor((raw * maxBytes) / rendered) - 16);
  }
}

const Range = z.int().min(0).max(1_000_000_000);

/**
 * `tokenjuice_retrieve` (seed 000 "CCR"): the exact original behind a TokenJuice marker, whole or by
 * 1-based lines or byte range, at most `maxBytes` a call. Read-only; the tenant comes from the turn's
 * context, never from the model, so another tenant's marker is not found. Its answer is never
 * compacted again (`rawResult`).
 */
export function tokenjuiceRetrieveTool(
  store: Pick<OriginalsStore, 'get'>,
  options: { maxBytes?: number } = {},
): ToolDefinition {
  const maxBytes = options.maxBytes ?? RETRIEVE_DEFAULT_MAX_BYTES;
  return defineTool({
    name: TOKENJUICE_RETRIEVE_TOOL,
    description:
      'Returns the original of a tool result TokenJuice shortened, by the marker ⟦tj:…⟧ shown in it: ' +
      `whole, or lines startLine–endLine (1-based, inclusive), or bytes startByte–endByte; about ${maxBytes} bytes ` +
      'at most a call (then truncated is true and nextStartByte says where to go on).',
    schema: z
      .strictObject({
        marker: z
          .string()
          .min(1)
          .max(100)
          .describe('The marker as shown, e.g. "tj:1c6d686160370f66c7b90e1f"'),
        startLine: Range.min(1).optional(),
        endLine: Range.min(1).optional(),
        startByte: Range.optional(),
        endByte: Range.optional(),
      })
      .refine(
        (a) => !((a.startLine ?? a.endLine) !== undefined && (a.startByte ?? a.endByte) !== undefined),
        {
          message: 'ask for lines or for bytes, not both',
        },
      )
      .refine((a) => a.endLine === undefined || a.startLine === undefined || a.endLine >= a.startLine, {
        message: 'endLine must not be before startLine',
        path: ['endLine'],
      })
      .refine((a) => a.endByte === undefined || a.startByte === undefined || a.endByte >= a.startByte, {
        message: 'endByte must not be before startByte',
        path: ['endByte'],
      }),
    sideEffect: 'read_only',
    timeoutMs: 5_000,
    needsApproval: false,
    rawResult: true,
    async execute({ marker, ...range }, ctx) {
      const id = parseMarker(marker);
      if (id === undefined) {
        throw new ToolError('invalid_arguments', 'marker is not a TokenJuice marker', {
          details: { field: 'marker' },
          recoveryHint: 'copy the marker exactly as shown, e.g. "tj:1c6d686160370f66c7b90e1f"',
          retryable: true,
        });
      }
      const stored = await store.get(ctx.tenantId, id);
      if (!stored) {
        throw new ToolError(
          'not_found',
          `no original is stored under tj:${id} (unknown, or past its retention)`,
          {
            recoveryHint: 'run the original tool call again',
          },
        );
      }
      const { content, ...slice } = fittingSlice(stored.content, range, maxBytes);
      return { marker: `tj:${id}`, tool: stored.tool, kind: stored.kind, ...slice, content };
    },
  });
}
