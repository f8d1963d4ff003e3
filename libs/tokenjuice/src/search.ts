import { startsWithTimestamp } from './lines';
import type { Compacted, KindHint } from './types';

/**
 * Search results, `path:line:text` (grep -n, ripgrep): grouped by file, the path said once. `light`
 * keeps every match (the grouping alone is lossless); `full` keeps each file's best matches (errors,
 * then the query's exact text, then definitions) in line order with a `+N more` tally and their line numbers.
 */

/** `path:line:[column:]text`; the path may start with a Windows drive (`C:\src\a.ts:3:…`). */
const MATCH = /^((?:[A-Za-z]:[\\/])?[^\s:][^:\n]{0,300}?):(\d+):(?:(\d+):)?(.*)$/;
const PER_FILE = 3;
const MAX_FILES = 30;
const MAX_LINE_CHARS = 200;
const DEFINITION =
  /\b(function|class|interface|type|enum|def|fn|struct|trait|export|const|let|var|public|private)\b/;

/** One `path:line:` match, or `undefined` for any other line — a line starting with a timestamp among them. */
export function parseSearchLine(line: string): RegExpExecArray | undefined {
  const m = MATCH.exec(line);
  return m && !startsWithTimestamp(line) ? m : undefined;
}

interface Match {
  line: number;
  col?: string;
  text: string;
}

export function compactSearch(text: string, mode: 'full' | 'light', hint: KindHint): Compacted | undefined {
  const files = new Map<string, Match[]>();
  const other: string[] = [];
  for (const l of text.split('\n')) {
    const m = parseSearchLine(l);
    if (!m) {
      if (l.trim() !== '' && l !== '--') other.push(l);
      continue;
    }
    const list = files.get(m[1]) ?? [];
    list.push({ line: Number(m[2]), col: m[3], text: m[4] });
    files.set(m[1], list);
  }
  if (files.size === 0) return undefined;
  // Lines that are not matches (a tool's own notes) stay; in light mode their place would be lost.
  if (mode === 'light' && other.length > 0) return undefined;
  const total = [...files.values()].reduce((n, l) => n + l.length, 0);
  const out = [`${total} matches in ${files.size} files`, ...other];
  const query = queryOf(hint.args);
  let shownFiles = 0;
  let hiddenMatches = 0;
  for (const [path, found] of files) {
    const matches = mode === 'full' ? [...found].sort((a, b) => a.line - b.line) : found;
    if (mode === 'full' && shownFiles >= MAX_FILES) {
      hiddenMatches += matches.length;
      continue;
    }
    shownFiles++;
    out.push(`${path} (${matches.length})`);
    const kept = mode === 'light' ? matches : best(matches, query);
    for (const m of kept) {
      const body = mode === 'full' ? m.text.trim() : m.text;
      const cut =
        mode === 'full' && body.length > MAX_LINE_CHARS ? `${body.slice(0, MAX_LINE_CHARS)}…` : body;
      out.push(`  ${m.line}${m.col ? `:${m.col}` : ''}: ${cut}`);
    }
    const rest = matches.filter((m) => !kept.includes(m));
    if (rest.length > 0) {
      const lines = rest.slice(0, 10).map((m) => m.line);
      out.push(`  +${rest.length} more (lines ${lines.join(', ')}${rest.length > 10 ? ', …' : ''})`);
    }
  }
  if (files.size > shownFiles)
    out.push(`+${files.size - shownFiles} more files with ${hiddenMatches} matches`);
  return { text: out.join('\n'), lossy: mode === 'full' };
}

/** The best `PER_FILE` matches of a file, in line order. */
function best(matches: Match[], query: string | undefined): Match[] {
  // Compiler output (`file:line:col: error: …`) reads like search results: its errors rank first.
  const score = (m: Match) =>
    (/\b(error|fatal|fail(ed|ure)?)\b/i.test(m.text) ? 4 : 0) +
    (query && m.text.includes(query) ? 2 : 0) +
    (DEFINITION.test(m.text) ? 1 : 0) -
    m.text.length / 10_000;
  return [...matches]
    .map((m, i) => ({ m, i, s: score(m) }))
    .sort((a, b) => b.s - a.s || a.i - b.i)
    .slice(0, PER_FILE)
    .sort((a, b) => a.i - b.i)
    .map((x) => x.m);
}

function queryOf(args: unknown): string | undefined {
  if (!args || typeof args !== 'object') return undefined;
  const a = args as Record<string, unknown>;
  for (const k of ['pattern', 'query', 'q', 'regex', 'search']) if (typeof a[k] === 'string') return a[k];
  return undefined;
}
