/** Line helpers shared by the compactors. */

// eslint-disable-next-line no-control-regex
const ANSI = /\u001b\[[0-9;?]*[ -/]*[@-~]|\u001b\][^\u0007]*\u0007/g;

export function stripAnsi(s: string): string {
  return s.replace(ANSI, '');
}

/**
 * A clock (`10:36:00`, `9:05:07.123`, Apache's `2026:10:36:00`) whose first colon is the line's first
 * colon: the line starts with a timestamp (ISO-8601, RFC 3339, syslog, Python logging, Kubernetes, access
 * logs…), so what precedes that colon is a date, not a path, and `:36:` is minutes, not a line number.
 * `path:12:34:` is no clock (a colon follows the seconds), nor is a path that ends in a letter.
 */
const TIMESTAMP_START = /^[^:\n]*?(?:(?<!\d)\d{1,2}|(?<!\d)\d{4}:\d\d):[0-5]\d:[0-5]\d(?![\d:])/;

export function startsWithTimestamp(line: string): boolean {
  // Cheap first: a clock's first colon follows a digit (a path's rarely does).
  const colon = line.indexOf(':');
  if (colon < 1) return false;
  const before = line.charCodeAt(colon - 1);
  return before >= 48 && before <= 57 && TIMESTAMP_START.test(line);
}

/** What a terminal shows of a line a progress bar rewrote with carriage returns: its last state. */
export function lastCarriageState(line: string): string {
  const parts = line.replace(/\r$/, '').split('\r');
  return parts[parts.length - 1];
}

/**
 * Lossless: a run of three or more identical lines becomes the line once and `[×N]`. Lines that
 * already end with a `[×N]` tally are never merged, so the form reads back unambiguously.
 */
export function collapseRuns(lines: string[]): { lines: string[]; changed: boolean } {
  const out: string[] = [];
  let changed = false;
  for (let i = 0; i < lines.length;) {
    let j = i + 1;
    while (j < lines.length && lines[j] === lines[i]) j++;
    const n = j - i;
    if (n >= 3 && !/ \[×\d+\]$/.test(lines[i])) {
      out.push(`${lines[i]} [×${n}]`);
      changed = true;
    } else for (let k = i; k < j; k++) out.push(lines[k]);
    i = j;
  }
  return { lines: out, changed };
}

/** `… lines a–b omitted` in 1-based original line numbers, so a range can be retrieved. */
export function omitted(from: number, to: number, what = ''): string {
  const n = to - from + 1;
  const range = n === 1 ? `line ${from}` : `lines ${from}–${to}`;
  return `… [${range} omitted${what ? `: ${what}` : ''}]`;
}
