import type { Compacted } from './types';

/**
 * JSON (seed 000 "SmartCrusher"): an array of objects becomes a table with each key once. `light`
 * keeps every row and every value, each cell written so it reads back to the same JSON value;
 * `full` keeps the first and last rows, rows that carry an error and rows with a numeric outlier,
 * and summarises the rest per column.
 */

type Json = null | boolean | number | string | Json[] | { [k: string]: Json };
type Obj = { [k: string]: Json };

/** Rows shown of a table whatever else is kept (`full`). */
const HEAD_ROWS = 3;
const TAIL_ROWS = 1;
/** At most this many error and outlier rows are shown (`full`). */
const MAX_SIGNAL_ROWS = 15;
/** A table of at most this many rows keeps them all (`full`): search hits, a page of results. */
const ALL_ROWS_UP_TO = 12;
/** A cell or string longer than this is cut (`full`). */
const MAX_CELL_CHARS = 100;
const MAX_STRING_CHARS = 300;
/** Arrays of scalars longer than this show their first elements only (`full`). */
const MAX_ARRAY_ITEMS = 20;
/** Nested objects are flattened into dotted columns down to this depth. */
const FLATTEN_DEPTH = 3;

const ERROR_KEY =
  /(^|_|\.)(error|errors|err|failure|failures|exception|failure_code|failure_message|fault)$/i;
const STATUS_KEY = /(^|_|\.)(status|state|outcome|result|level|severity|conclusion|type)$/i;
const ERROR_VALUE =
  /(error|fail|declin|denied|invalid|reject|timeout|timed_out|exception|fatal|expired|unavailable|refused|critical|cancelled)/i;

const isObj = (v: unknown): v is Obj => typeof v === 'object' && v !== null && !Array.isArray(v);

export function compactJsonText(text: string, mode: 'full' | 'light'): Compacted | undefined {
  let value: Json;
  try {
    value = JSON.parse(text) as Json;
  } catch {
    return undefined;
  }
  return compactJsonValue(value, mode);
}

export function compactJsonValue(value: unknown, mode: 'full' | 'light'): Compacted {
  const ctx = { mode, lossy: false };
  const text = render(value as Json, ctx, 0);
  return { text, lossy: ctx.lossy };
}

interface Ctx {
  mode: 'full' | 'light';
  lossy: boolean;
}

function isTable(v: Json): v is Obj[] {
  return Array.isArray(v) && v.length >= 3 && v.every(isObj);
}

/** A value as text: tables for arrays of objects (here or one level down), compact JSON for the rest. */
function render(v: Json, ctx: Ctx, depth: number): string {
  if (isTable(v)) return table(v, ctx);
  if (isObj(v) && depth < 2 && Object.values(v).some((x) => isTable(x) || (isObj(x) && depth < 1))) {
    return Object.entries(v)
      .map(([k, x]) => {
        if (isTable(x)) return `${k}:\n${table(x, ctx)}`;
        if (isObj(x) && Object.values(x).some(isTable)) return `${k}:\n${render(x, ctx, depth + 1)}`;
        return `${k}: ${inline(x, ctx)}`;
      })
      .join('\n');
  }
  return inline(v, ctx);
}

/** Compact JSON; in `full` mode long strings and long arrays of scalars are cut. */
function inline(v: Json, ctx: Ctx): string {
  if (ctx.mode === 'light') return JSON.stringify(v);
  return JSON.stringify(v, (_k, x: Json) => {
    if (typeof x === 'string' && x.length > MAX_STRING_CHARS) {
      ctx.lossy = true;
      return `${x.slice(0, MAX_STRING_CHARS)}…(+${x.length - MAX_STRING_CHARS} chars)`;
    }
    if (
      Array.isArray(x) &&
      x.length > MAX_ARRAY_ITEMS &&
      !x.some((e) => typeof e === 'object' && e !== null)
    ) {
      ctx.lossy = true;
      return [...x.slice(0, MAX_ARRAY_ITEMS), `…+${x.length - MAX_ARRAY_ITEMS} more`];
    }
    return x;
  });
}

/** Flattens nested objects into `a.b.c` keys, down to FLATTEN_DEPTH. */
function flatten(o: Obj, prefix = '', depth = 0, out: Record<string, Json> = {}): Record<string, Json> {
  for (const [k, v] of Object.entries(o)) {
    const key = prefix + k;
    if (isObj(v) && Object.keys(v).length > 0 && depth < FLATTEN_DEPTH) flatten(v, `${key}.`, depth + 1, out);
    else out[key] = v;
  }
  return out;
}

/** A key with a dot anywhere flattening would reach: dotted columns would be ambiguous, so none are made. */
function hasDottedKey(o: Obj, depth = 0): boolean {
  return Object.entries(o).some(
    ([k, v]) => k.includes('.') || (isObj(v) && depth < FLATTEN_DEPTH && hasDottedKey(v, depth + 1)),
  );
}

/** JSON with `|` escaped (it can only occur inside strings), so a cell never holds the column separator. */
const cellJson = (v: Json): string => JSON.stringify(v).replace(/\|/g, '\\u007c');

/** A cell that reads back to its JSON value: bare when unambiguous, else JSON. */
function cell(v: Json | undefined, ctx: Ctx): string {
  if (v === undefined) return '';
  let s: string;
  if (typeof v === 'string') {
    const ambiguous =
      v === '' ||
      v !== v.trim() ||
      /[|\n\r\t]/.test(v) ||
      /^[[{"]/.test(v) ||
      /^(true|false|null|-?\d[\d.eE+-]*)$/.test(v);
    s = ambiguous ? cellJson(v) : v;
  } else s = cellJson(v);
  if (ctx.mode === 'full' && s.length > MAX_CELL_CHARS) {
    ctx.lossy = true;
    return `${s.slice(0, MAX_CELL_CHARS)}…`;
  }
  return s;
}

function table(rows: Obj[], ctx: Ctx): string {
  const flat = rows.some((r) => hasDottedKey(r)) ? rows.map((r) => ({ ...r })) : rows.map((r) => flatten(r));
  const columns: string[] = [];
  const seen = new Set<string>();
  for (const r of flat) {
    for (const k of Object.keys(r)) {
      if (!seen.has(k)) {
        seen.add(k);
        columns.push(k);
      }
    }
  }
  // A column with one value in every row is said once.
  const constant = columns.filter((c) => {
    const first = JSON.stringify(flat[0][c]);
    return flat.every((r) => c in r && JSON.stringify(r[c]) === first);
  });
  const shown = columns.filter((c) => !constant.includes(c));
  const lines = [`(${rows.length} rows × ${columns.length} columns)`];
  if (constant.length > 0) {
    lines.push(`same in every row: ${constant.map((c) => `${c}=${cell(flat[0][c], ctx)}`).join(' | ')}`);
  }
  lines.push(shown.join(' | '));
  const keep =
    ctx.mode === 'light' || flat.length <= ALL_ROWS_UP_TO ? flat.map((_, i) => i) : keptRows(flat, shown);
  let previous = -1;
  for (const i of keep) {
    if (i > previous + 1) lines.push(`… ${i - previous - 1} rows`);
    lines.push(shown.map((c) => cell(flat[i][c], ctx)).join(' | '));
    previous = i;
  }
  if (previous < flat.length - 1) lines.push(`… ${flat.length - previous - 1} rows`);
  if (keep.length < flat.length) {
    ctx.lossy = true;
    const summary = columnSummaries(flat, shown);
    if (summary.length > 0) lines.push(`columns over all ${rows.length} rows: ${summary.join('; ')}`);
  }
  return lines.join('\n');
}

/** Row indexes `full` keeps, in order: head, tail, then error rows and outliers up to the cap. */
function keptRows(flat: Record<string, Json>[], columns: string[]): number[] {
  const keep = new Set<number>();
  for (let i = 0; i < Math.min(HEAD_ROWS, flat.length); i++) keep.add(i);
  for (let i = Math.max(0, flat.length - TAIL_ROWS); i < flat.length; i++) keep.add(i);
  const signal: number[] = [];
  flat.forEach((r, i) => {
    if (isErrorRow(r)) signal.push(i);
  });
  for (const i of outlierRows(flat, columns)) if (!signal.includes(i)) signal.push(i);
  for (const i of signal.slice(0, MAX_SIGNAL_ROWS)) keep.add(i);
  return [...keep].sort((a, b) => a - b);
}

/** A row that reports a failure: an error field with a value, `ok`/`success` false, or a failing status. */
function isErrorRow(r: Record<string, Json>): boolean {
  for (const [k, v] of Object.entries(r)) {
    if (ERROR_KEY.test(k) && v !== null && v !== '' && v !== false && !(Array.isArray(v) && v.length === 0))
      return true;
    if (/(^|\.)(ok|success|succeeded|passed)$/i.test(k) && v === false) return true;
    if (STATUS_KEY.test(k) && typeof v === 'string' && ERROR_VALUE.test(v)) return true;
    if (/(^|\.|_)(status|status_code|code)$/i.test(k) && typeof v === 'number' && v >= 400 && v < 600)
      return true;
  }
  return false;
}

/** Rows with a value far outside its column's spread (Tukey's far-out fences: beyond 3 IQR of the quartiles). */
function outlierRows(flat: Record<string, Json>[], columns: string[]): number[] {
  const out = new Set<number>();
  for (const c of columns) {
    const values = flat.map((r) => r[c]);
    if (!values.every((v) => typeof v === 'number' || v === null || v === undefined)) continue;
    const nums = values.filter((v): v is number => typeof v === 'number');
    if (nums.length < 8) continue;
    // Identifiers and timestamps grow steadily: no outlier there.
    if (/(^|_|\.)(id|created|updated|timestamp|time|date)$/i.test(c) || /_at$/.test(c)) continue;
    const s = [...nums].sort((a, b) => a - b);
    const q1 = s[Math.floor((s.length - 1) / 4)];
    const q3 = s[Math.ceil(((s.length - 1) * 3) / 4)];
    const iqr = q3 - q1;
    if (iqr === 0) continue;
    values.forEach((v, i) => {
      if (typeof v === 'number' && (v > q3 + 3 * iqr || v < q1 - 3 * iqr)) out.add(i);
    });
  }
  return [...out].sort((a, b) => a - b);
}

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2;
}

/** Per column, what the omitted rows held: numbers' range and median, a few values' counts. */
function columnSummaries(flat: Record<string, Json>[], columns: string[]): string[] {
  const out: string[] = [];
  for (const c of columns) {
    const values = flat.map((r) => r[c]).filter((v) => v !== undefined);
    if (values.length > 0 && values.every((v) => typeof v === 'number')) {
      if (/(^|_|\.)(id|created|updated|timestamp)$/i.test(c)) continue;
      const nums = values;
      const min = Math.min(...nums);
      const max = Math.max(...nums);
      if (min !== max) out.push(`${c} min ${min} median ${median(nums)} max ${max}`);
      continue;
    }
    const counts = new Map<string, number>();
    for (const v of values) {
      if (typeof v === 'object' && v !== null) break;
      const k = JSON.stringify(v);
      counts.set(k, (counts.get(k) ?? 0) + 1);
      if (counts.size > 6) break;
    }
    if (
      counts.size >= 2 &&
      counts.size <= 6 &&
      [...counts.values()].reduce((a, b) => a + b, 0) === values.length
    ) {
      const parts = [...counts.entries()].sort((a, b) => b[1] - a[1]).map(([k, n]) => `${k}×${n}`);
      out.push(`${c} ${parts.join(' ')}`);
    }
  }
  return out;
}
