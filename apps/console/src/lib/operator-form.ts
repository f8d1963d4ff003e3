/**
 * The operator's number fields: empty means "back to the default" (the API's `null`), anything else
 * must be a number within the contract's bounds (libs/contracts), checked here so the form names the
 * field instead of answering with the API's 400.
 */
export type FieldValue = { ok: true; value: number | null } | { ok: false; error: string };

export function parseSetting(
  text: string,
  bounds: { min: number; max: number; integer?: boolean; label: string },
): FieldValue {
  const trimmed = text.trim();
  if (trimmed === '') return { ok: true, value: null };
  const n = Number(trimmed);
  if (!Number.isFinite(n)) return { ok: false, error: `${bounds.label}: not a number` };
  if (bounds.integer && !Number.isInteger(n)) {
    return { ok: false, error: `${bounds.label}: a whole number` };
  }
  if (n < bounds.min || n > bounds.max) {
    return { ok: false, error: `${bounds.label}: between ${bounds.min} and ${bounds.max}` };
  }
  return { ok: true, value: n };
}

/** A setting as the text of its field: the default (null or absent) is the empty field. */
export function fieldText(value: number | null | undefined): string {
  return value === null || value === undefined ? '' : String(value);
}

/** A wait in milliseconds as a person reads it: 850 ms, 12 s, 3 min 5 s, 2 h 10 min. */
export function formatWait(ms: number | null | undefined): string {
  if (ms === null || ms === undefined) return '—';
  if (ms < 1000) return `${Math.max(0, Math.round(ms))} ms`;
  const s = Math.floor(ms / 1000);
  if (s < 60) return `${s} s`;
  const m = Math.floor(s / 60);
  if (m < 60) return s % 60 ? `${m} min ${s % 60} s` : `${m} min`;
  const h = Math.floor(m / 60);
  return m % 60 ? `${h} h ${m % 60} min` : `${h} h`;
}
