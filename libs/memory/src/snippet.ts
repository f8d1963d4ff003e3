import { highlightNeedles } from './cjk';

const BEFORE = 60;
const AFTER = 180;

/**
 * A short window of the original text around the first place a query term occurs (the start of the
 * text when none does literally, e.g. a stemmed match). Cut from the exact content, so a snippet
 * never shows CJK expansion tokens; whitespace is collapsed.
 */
export function snippetOf(content: string, query: string, max = BEFORE + AFTER): string {
  const lower = content.toLowerCase();
  let at = -1;
  for (const needle of highlightNeedles(query)) {
    const i = lower.indexOf(needle);
    if (i >= 0 && (at < 0 || i < at)) at = i;
  }
  const start = at <= BEFORE ? 0 : at - BEFORE;
  const end = Math.min(content.length, start + max);
  const text = content.slice(start, end).replace(/\s+/g, ' ').trim();
  return `${start > 0 ? '…' : ''}${text}${end < content.length ? '…' : ''}`;
}
