/** A part of a stored original: by 1-based inclusive lines, or by [start, end) UTF-8 bytes. */
export interface OriginalRange {
  startLine?: number;
  endLine?: number;
  startByte?: number;
  endByte?: number;
}

export interface OriginalSlice {
  content: string;
  totalBytes: number;
  totalLines: number;
  /** What `content` covers. */
  range: { startByte: number; endByte: number; startLine?: number; endLine?: number };
  /** The slice was cut at `maxBytes`: ask again from `nextStartByte`. */
  truncated: boolean;
  nextStartByte?: number;
}

/**
 * The part of `original` a retrieval asks for, at most `maxBytes` of it (cut at a character
 * boundary). Lines and bytes are exclusive of each other; neither: the whole original.
 */
export function sliceOriginal(original: string, r: OriginalRange, maxBytes: number): OriginalSlice {
  const buf = Buffer.from(original, 'utf8');
  const totalBytes = buf.length;
  const totalLines = original === '' ? 0 : original.split('\n').length;
  let start = 0;
  let end = totalBytes;
  let lines: { startLine: number; endLine: number } | undefined;
  if (r.startLine !== undefined || r.endLine !== undefined) {
    const startLine = Math.max(1, r.startLine ?? 1);
    const endLine = Math.min(totalLines, r.endLine ?? totalLines);
    start = byteOfLine(buf, startLine);
    end = endLine >= totalLines ? totalBytes : byteOfLine(buf, endLine + 1);
    lines = { startLine, endLine };
  } else {
    start = Math.min(totalBytes, Math.max(0, r.startByte ?? 0));
    end = Math.min(totalBytes, Math.max(start, r.endByte ?? totalBytes));
  }
  start = charStart(buf, start);
  end = charStart(buf, end);
  const truncated = end - start > maxBytes;
  const cut = truncated ? charStart(buf, start + maxBytes) : end;
  return {
    content: buf.subarray(start, cut).toString('utf8'),
    totalBytes,
    totalLines,
    range: { startByte: start, endByte: cut, ...(lines && !truncated ? lines : {}) },
    truncated,
    ...(truncated ? { nextStartByte: cut } : {}),
  };
}

/** The byte where 1-based `line` starts (the end when there is no such line). */
function byteOfLine(buf: Buffer, line: number): number {
  let at = 0;
  for (let l = 1; l < line; l++) {
    const nl = buf.indexOf(10, at);
    if (nl < 0) return buf.length;
    at = nl + 1;
  }
  return at;
}

/** `i` moved back to the first byte of the UTF-8 character it falls in. */
function charStart(buf: Buffer, i: number): number {
  let k = Math.min(i, buf.length);
  while (k > 0 && k < buf.length && (buf[k] & 0xc0) === 0x80) k--;
  return k;
}
