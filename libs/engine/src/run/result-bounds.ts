import { createHash } from 'node:crypto';

/**
 * The per-call result budget: a result over `maxBytes` is cut at a UTF-8
 * boundary and ends with an explicit marker, so the model knows it saw a part.
 */
export function boundToolResult(content: string, maxBytes: number): string {
  const bytes = Buffer.byteLength(content, 'utf8');
  if (bytes <= maxBytes) return content;
  const marker = `\n…[truncated: showing the first ${maxBytes} of ${bytes} bytes of this tool result]`;
  const keep = Math.max(0, maxBytes - Buffer.byteLength(marker, 'utf8'));
  let cut = Buffer.from(content, 'utf8').subarray(0, keep).toString('utf8');
  // A multi-byte character cut in half decodes to U+FFFD: drop it.
  if (cut.endsWith('\uFFFD')) cut = cut.slice(0, -1);
  return cut + marker;
}

/** Largest `details` of a tool error shown whole; a larger one becomes a preview and a digest (seed 002). */
export const TOOL_ERROR_DETAILS_MAX_BYTES = 2048;

export function boundDetails(details: unknown): unknown {
  let json: string;
  try {
    json = JSON.stringify(details) ?? 'null';
  } catch {
    return { unserialisable: true };
  }
  const bytes = Buffer.byteLength(json, 'utf8');
  if (bytes <= TOOL_ERROR_DETAILS_MAX_BYTES) return details;
  return {
    preview: json.slice(0, 256),
    digest: `sha256:${createHash('sha256').update(json).digest('hex')}`,
    bytes,
  };
}
