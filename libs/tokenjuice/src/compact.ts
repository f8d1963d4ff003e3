import { compactCode } from './code';
import { detectKind } from './detect';
import { compactDiff } from './diff';
import { compactHtml } from './html';
import { compactJsonText } from './json';
import { collapseRuns } from './lines';
import { compactLog } from './log';
import { compactSearch } from './search';
import type { Compacted, Compactor, ContentKind, KindHint } from './types';

/** The compactor of each kind; plain text only loses its repeated lines (losslessly). */
const COMPACTORS: Record<ContentKind, Compactor> = {
  json: (t, mode) => compactJsonText(t, mode),
  log: (t, mode) => compactLog(t, mode),
  diff: (t, mode) => compactDiff(t, mode),
  html: (t, mode) => compactHtml(t, mode),
  search: (t, mode, hint) => compactSearch(t, mode, hint),
  code: (t, mode, hint) => compactCode(t, mode, hint),
  text: (t) => {
    const runs = collapseRuns(t.split('\n'));
    return runs.changed ? { text: runs.lines.join('\n'), lossy: false } : undefined;
  },
};

export interface CompactOptions {
  mode: 'full' | 'light';
  hint?: KindHint;
  /** Inputs larger than this (UTF-16 code units) are not parsed: `full` keeps their head and tail. */
  maxInputChars?: number;
}

/** The defaults the harness uses unless configured (TOKENJUICE_*). */
export const DEFAULT_MAX_INPUT_CHARS = 256 * 1024;
/** A compaction must save at least this share of the bytes to be used. */
export const MIN_SAVING = 0.1;

export interface TextCompaction extends Compacted {
  kind: ContentKind | 'oversize';
}

/**
 * Compacts one text by its kind, or `undefined` when nothing worth having comes out (the mode allows
 * no rewrite of this kind, or it saves less than MIN_SAVING). Synchronous and bounded: an input over
 * `maxInputChars` is never parsed (`full` keeps its head and tail; `light` leaves it alone): one call
 * at the default bound costs tens of milliseconds, HTML the most (docs/BENCHMARKS.md).
 */
export function compactText(text: string, o: CompactOptions): TextCompaction | undefined {
  const max = o.maxInputChars ?? DEFAULT_MAX_INPUT_CHARS;
  if (text.length > max) {
    if (o.mode === 'light') return undefined;
    return { kind: 'oversize', lossy: true, text: headAndTail(text, max) };
  }
  const hint = o.hint ?? {};
  const kind = detectKind(text, hint);
  let out: Compacted | undefined;
  try {
    out = COMPACTORS[kind](text, o.mode, hint);
  } catch {
    // A compactor that chokes on its input leaves it as it is.
    out = undefined;
  }
  if (!out || out.text.length > text.length * (1 - MIN_SAVING)) return undefined;
  return { kind, ...out };
}

/** Too large to parse: the first 16 KB and the last 4 KB, cut at line ends. */
function headAndTail(text: string, max: number): string {
  const head = text.slice(0, Math.min(16_384, max / 4));
  const tail = text.slice(text.length - 4096);
  const h = head.slice(0, head.lastIndexOf('\n') + 1 || head.length);
  const t = tail.slice(tail.indexOf('\n') + 1);
  return `${h}… [${text.length - h.length - t.length} characters omitted: the input is too large to compact by kind]\n${t}`;
}
