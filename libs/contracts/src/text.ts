/**
 * Text the API accepts. Postgres cannot store U+0000 in `text` or `jsonb`, and a UTF-16 lone
 * surrogate (`"\ud800"` in JSON) is not a Unicode scalar value: `jsonb` refuses it and it has no
 * UTF-8 encoding. Both are rejected at the edge, in every string and every object key of a request,
 * instead of failing in the database (docs/adr/0005).
 */

/** Deepest nesting of objects and arrays a JSON request body may have. */
export const MAX_JSON_DEPTH = 32;

/** A surrogate code unit that is not half of a pair (a `u` regex sees a pair as one code point). */
const LONE_SURROGATE = /\p{Cs}/u;
const invalidText = (s: string) => s.includes('\u0000') || LONE_SURROGATE.test(s);

export interface TextIssue {
  /** Dotted path like the validation issues' (`metadata.a.0`); empty for the value itself. */
  path: string;
  message: string;
  code: 'invalid_text';
}

/** The strings and object keys in `value` that cannot be stored; at most `limit` of them. */
export function findInvalidText(value: unknown, limit = 20): TextIssue[] {
  const issues: TextIssue[] = [];
  // Iterative, so even a value nested deeper than any bound cannot overflow the stack; each entry
  // links to its parent's path rather than copying it, so a deep value costs linear time.
  const stack: { value: unknown; path?: PathLink }[] = [{ value }];
  while (stack.length > 0 && issues.length < limit) {
    const { value: v, path } = stack.pop()!;
    if (typeof v === 'string') {
      if (invalidText(v)) issues.push(issue(pathOf(path), describe(v)));
    } else if (Array.isArray(v)) {
      for (let i = v.length - 1; i >= 0; i--) stack.push({ value: v[i], path: { parent: path, step: i } });
    } else if (v !== null && typeof v === 'object') {
      const entries = Object.entries(v as Record<string, unknown>);
      for (let i = entries.length - 1; i >= 0; i--) {
        const [key, child] = entries[i];
        const at: PathLink = { parent: path, step: key };
        if (invalidText(key)) issues.push(issue(pathOf(at), `key ${describe(key)}`));
        stack.push({ value: child, path: at });
      }
    }
  }
  return issues;
}

/** One step of a path, linked to the steps before it. */
interface PathLink {
  parent?: PathLink;
  step: string | number;
}

function pathOf(link: PathLink | undefined): (string | number)[] {
  const steps: (string | number)[] = [];
  for (let at = link; at; at = at.parent) steps.push(at.step);
  return steps.reverse();
}

const describe = (s: string) =>
  s.includes('\u0000')
    ? 'contains a NUL character (U+0000)'
    : 'contains a lone UTF-16 surrogate (not a Unicode character)';

const issue = (path: (string | number)[], message: string): TextIssue => ({
  path: path.map((p) => (typeof p === 'string' ? JSON.stringify(p).slice(1, -1) : p)).join('.'),
  message,
  code: 'invalid_text',
});
