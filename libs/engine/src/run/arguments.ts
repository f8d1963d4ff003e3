/** A call's arguments, parsed once: the value, or why they are not JSON. A leaf: it imports nothing. */
export type ParsedArguments = { ok: true; value: unknown } | { ok: false; error: string };

/** A call's arguments as JSON (empty: `{}`), or why they are not. */
export function parseArguments(raw: string): ParsedArguments {
  try {
    return { ok: true, value: raw.trim() === '' ? {} : (JSON.parse(raw) as unknown) };
  } catch (err) {
    return { ok: false, error: (err as Error).message };
  }
}
