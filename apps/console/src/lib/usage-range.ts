/**
 * The usage page's window: two UTC calendar days, both inclusive, as the two usage endpoints take
 * them (GET /v1/usage/daily: days; GET /v1/usage: instants, `to` exclusive).
 */
export interface DayRange {
  from: string;
  to: string;
}

const DAY_MS = 24 * 3600 * 1000;
const day = (d: Date) => d.toISOString().slice(0, 10);

/** The last `days` UTC days up to today. */
export function lastDays(days: number, now = new Date()): DayRange {
  return { from: day(new Date(now.getTime() - (days - 1) * DAY_MS)), to: day(now) };
}

const DAY_RE = /^\d{4}-\d{2}-\d{2}$/;

/** The query of GET /v1/usage for the range: from its first instant to the instant after its last day. */
export function instantsOf(r: DayRange): { from: string; to: string } | null {
  if (!DAY_RE.test(r.from) || !DAY_RE.test(r.to)) return null;
  const from = new Date(`${r.from}T00:00:00.000Z`);
  const to = new Date(new Date(`${r.to}T00:00:00.000Z`).getTime() + DAY_MS);
  if (Number.isNaN(from.getTime()) || Number.isNaN(to.getTime())) return null;
  return { from: from.toISOString(), to: to.toISOString() };
}

/** A decimal USD string as a number for a chart (tables keep the exact string). */
export const usd = (s: string | undefined): number => (s ? Number(s) : 0);
