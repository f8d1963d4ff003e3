import { collapseRuns, lastCarriageState, omitted, stripAnsi } from './lines';
import type { Compacted } from './types';

/**
 * Logs and command output (seed 000: rules for command output, keep-failures otherwise): the first
 * lines (the command), every failure with its context, and the tail (the summary); what is left out
 * is marked with its original line numbers, with a tally of the routine lines the rules recognised.
 */

/** Routine lines of common tools: counted, never shown. */
const NOISE_RULES: [RegExp, string][] = [
  [/^\s*(✓|√|✔)\s/, 'passing tests'],
  [/^\s*PASS\s/, 'passing suites'],
  [/^\s*ok \d+ /, 'passing TAP tests'],
  [/^\s*test .* \.\.\. ok$/, 'passing tests'],
  [/^\s*[\w./:[\]-]+ (passed|PASSED)\b/, 'passing tests'],
  [/^\s*--- PASS: /, 'passing tests'],
  [/^=== (RUN|PAUSE|CONT|NAME) /, 'progress lines'],
  [/^npm (warn|WARN) deprecated /, 'deprecation warnings'],
  [
    /^\s*(Compiling|Downloading|Downloaded|Fetching|Resolving|Installing|Unpacking|Checking|Collecting|Building|Updating) /,
    'progress lines',
  ],
  [/^\s*(\d{1,3}%|\[[=#>.\s-]{5,}\])/, 'progress lines'],
  [/^\s*at .*(node_modules|node:internal|<anonymous>)/, 'stack frames outside the project'],
];

/**
 * A failure line: error words, test runners' failure marks (Jest `●`/`✕`, pytest's `E   ` lines, test
 * headers and `…Error:` lines), and an access log's 5xx response (`"GET / HTTP/1.1" 502 …`).
 */
const FAILURE =
  /(\b(error|errors|failed|failure|failures|fail|fatal|panic(ked)?|exception|traceback|assertion|expected|received|denied|refused|segmentation fault|undefined reference|cannot find|not found|exit (code|status) [1-9])\b|✕|✗|✘|ERR!|^\s*●\s|^FAIL\b|HTTP\/[\d.]+" 5\d\d )/i;
/** The same, case-sensitive: an exception's class name, pytest's `E   ` lines and test headers. */
const FAILURE_CASED = /[a-z](Error|Exception)\b|^E {2,}\S|^_{3,} \S.* _{3,}$/;
const WARNING = /\bwarn(ing)?\b/i;

const HEAD_LINES = 5;
const TAIL_LINES = 15;
const BEFORE = 2;
const AFTER = 8;
/** A failure block (`● suite › test`, a traceback) runs on to its next blank line, up to this many lines. */
const BLOCK_LINES = 40;
const MAX_KEPT_LINES = 300;
const MAX_LINE_CHARS = 400;

export function compactLog(text: string, mode: 'full' | 'light'): Compacted | undefined {
  const raw = text.split('\n');
  if (mode === 'light') {
    const runs = collapseRuns(raw);
    return runs.changed ? { text: runs.lines.join('\n'), lossy: false } : undefined;
  }
  const lines = raw.map((l) => stripAnsi(lastCarriageState(l)));
  const n = lines.length;
  const keep = new Uint8Array(n);
  const mark = (from: number, to: number) => {
    for (let i = Math.max(0, from); i <= Math.min(n - 1, to); i++) keep[i] = 1;
  };
  mark(0, HEAD_LINES - 1);
  mark(n - TAIL_LINES, n - 1);
  const noise = lines.map((l) => NOISE_RULES.find(([re]) => re.test(l))?.[1]);
  let warnings = 0;
  for (let i = 0; i < n; i++) {
    if (noise[i]) continue;
    if (FAILURE.test(lines[i]) || FAILURE_CASED.test(lines[i])) {
      let end = i + AFTER;
      // A block: runs on to its blank line.
      if (/^\s*(●|Traceback|FAIL\b|error(\[\w+\])?:|panicked)/i.test(lines[i])) {
        let j = i + 1;
        while (j < n && j - i < BLOCK_LINES && lines[j].trim() !== '') j++;
        // Jest separates a failure's parts with blank lines: keep up to the next failure header.
        while (
          j < n &&
          j - i < BLOCK_LINES &&
          !/^\s*●\s/.test(lines[j]) &&
          !/^\s*(PASS|FAIL)\s/.test(lines[j])
        )
          j++;
        end = Math.max(end, j - 1);
      }
      mark(i - BEFORE, end);
    } else if (WARNING.test(lines[i]) && warnings < 20) {
      warnings++;
      mark(i, i);
    }
  }
  // Noise inside a kept window is dropped too (it is counted instead).
  const out: string[] = [];
  let kept = 0;
  for (let i = 0; i < n;) {
    if (keep[i] && !noise[i] && kept < MAX_KEPT_LINES) {
      const l = lines[i];
      out.push(
        l.length > MAX_LINE_CHARS ? `${l.slice(0, MAX_LINE_CHARS)}…(+${l.length - MAX_LINE_CHARS} chars)` : l,
      );
      kept++;
      i++;
      continue;
    }
    let j = i;
    const tally = new Map<string, number>();
    while (j < n && !(keep[j] && !noise[j] && kept < MAX_KEPT_LINES)) {
      const what = noise[j] ?? 'other lines';
      tally.set(what, (tally.get(what) ?? 0) + 1);
      j++;
    }
    // One ordinary line costs less than its omission note.
    if (j - i === 1 && !noise[i]) out.push(lines[i]);
    else out.push(omitted(i + 1, j, [...tally].map(([w, c]) => `${c} ${w}`).join(', ')));
    i = j;
  }
  const collapsed = collapseRuns(out).lines;
  return { text: collapsed.join('\n'), lossy: true };
}
