import { compactText, DEFAULT_MAX_INPUT_CHARS, MIN_SAVING, type TextCompaction } from './compact';
import { compactJsonValue } from './json';
import { markerId, markerText } from './marker';
import type { ContentKind } from './types';

/** Results smaller than this are left as they are: too little to save. */
export const DEFAULT_MIN_BYTES = 2048;

export interface ToolResultOptions {
  mode: 'full' | 'light';
  tool: string;
  args?: unknown;
  minBytes?: number;
  maxInputChars?: number;
}

/** A tool result compacted: what the model sees, and (when lossy) the original to keep. */
export interface ToolResultCompaction {
  kind: ContentKind | 'oversize';
  lossy: boolean;
  /** The text a retrieval returns: a string result verbatim, any other value as 2-space JSON. */
  original: string;
  /** The marker id of a lossy compaction (`markerText` is what the model sees). */
  marker?: string;
  /** The tool message's content: a header naming the marker, the result's other fields, the compacted text. */
  content: string;
  originalBytes: number;
  contentBytes: number;
}

/** Where a tool's value keeps its payload: the whole value, or one text field of it. */
interface Payload {
  text?: string;
  /** A JSON value compacted as it is (no parse of its text again). */
  value?: unknown;
  /** The value's other fields, shown as they are. */
  rest?: Record<string, unknown>;
  contentType?: string;
}

/**
 * The payload of a tool's value: a string; `http_fetch`'s `text` (its other fields kept); an MCP
 * result whose content is text only; any other object or array as JSON.
 */
function payloadOf(value: unknown): Payload | undefined {
  if (typeof value === 'string') return { text: value };
  if (typeof value !== 'object' || value === null) return undefined;
  const v = value as Record<string, unknown>;
  if (typeof v.text === 'string' && ('url' in v || 'contentType' in v)) {
    const { text, ...rest } = v;
    return { text, rest, contentType: typeof v.contentType === 'string' ? v.contentType : undefined };
  }
  if (Array.isArray(v.content) && !('structuredContent' in v) && Object.keys(v).length === 1) {
    const items = v.content as { type?: unknown; text?: unknown }[];
    if (items.length > 0 && items.every((i) => i?.type === 'text' && typeof i.text === 'string'))
      return { text: items.map((i) => i.text as string).join('\n') };
  }
  return { value };
}

/**
 * Compacts a successful tool result before it enters history (seed 000 "TokenJuice"; docs/adr/0033),
 * or `undefined` to leave it as it is: too small, nothing to gain, or nothing this mode may rewrite.
 * A lossy compaction carries its marker; the caller stores `original` under it before the content
 * enters history.
 */
export function compactToolResult(value: unknown, o: ToolResultOptions): ToolResultCompaction | undefined {
  const p = payloadOf(value);
  if (!p) return undefined;
  const min = o.minBytes ?? DEFAULT_MIN_BYTES;
  const maxInputChars = o.maxInputChars ?? DEFAULT_MAX_INPUT_CHARS;
  let original: string;
  let c: TextCompaction | undefined;
  if (p.text !== undefined) {
    original = p.text;
    if (Buffer.byteLength(original, 'utf8') < min) return undefined;
    c = compactText(original, {
      mode: o.mode,
      hint: { tool: o.tool, args: o.args, contentType: p.contentType },
      maxInputChars,
    });
  } else {
    original = JSON.stringify(p.value, null, 2) ?? 'null';
    // The JSON the model would have seen is the compact form: that is what has to be beaten.
    const compactForm = JSON.stringify(p.value) ?? 'null';
    if (Buffer.byteLength(compactForm, 'utf8') < min) return undefined;
    if (original.length > maxInputChars) {
      c = compactText(original, { mode: o.mode, maxInputChars });
    } else {
      const j = compactJsonValue(p.value, o.mode);
      c = j.text.length <= compactForm.length * (1 - MIN_SAVING) ? { kind: 'json', ...j } : undefined;
    }
  }
  if (!c) return undefined;
  const marker = c.lossy ? markerId(original) : undefined;
  const originalBytes = Buffer.byteLength(original, 'utf8');
  const content = render(c, marker, originalBytes, o.tool, p.rest);
  return {
    kind: c.kind,
    lossy: c.lossy,
    original,
    marker,
    content,
    originalBytes,
    contentBytes: Buffer.byteLength(content, 'utf8'),
  };
}

function render(
  c: TextCompaction,
  marker: string | undefined,
  originalBytes: number,
  tool: string,
  rest: Record<string, unknown> | undefined,
): string {
  const what = c.kind === 'oversize' ? 'output, too large to compact by kind' : c.kind;
  const header = marker
    ? `${markerText(marker)} ${tool} returned ${originalBytes} bytes of ${what}; TokenJuice shortened it. ` +
      `For anything left out call tokenjuice_retrieve {"marker":"tj:${marker}"} (whole, or startLine/endLine, or startByte/endByte).`
    : `[${tool} returned ${originalBytes} bytes of ${c.kind}; TokenJuice rewrote it without loss]`;
  const fields = rest && Object.keys(rest).length > 0 ? `\n${JSON.stringify(rest)}` : '';
  return `${header}${fields}\n${c.text}`;
}
