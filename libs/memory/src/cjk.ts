/**
 * CJK handling for Postgres full-text search (seed 002 "Memory Search Index", docs/adr/0022).
 *
 * Postgres' default parser has no word breaker for Chinese or Japanese: a run such as `我喜欢机器学习`
 * is one "word", so a query for `机器学习` would never match it. Both sides therefore go through the
 * same split here: text is cut into script runs; a CJK run (Han, Hiragana, Katakana, Hangul) becomes
 * its overlapping bigrams (and its single characters, for one-character queries); other text is kept
 * as words for the configured text search language (stemming, stop words).
 *
 * - `searchText` is what a record's `search` vector is built from (title and content).
 * - `searchQuery` is a `to_tsquery` expression for a query: its words OR-ed (ranking prefers records
 *   that match more of them). A short CJK run (a keyword: at most `CJK_KEYWORD_CHARS` characters) is
 *   the AND of its bigrams: every bigram must occur, which is how `机器学习` "matches" without a word
 *   breaker and its characters scattered do not. A longer run is a sentence (`我最喜欢的颜色是什么`),
 *   which no record contains whole: its bigrams are OR-ed like words, and ranking prefers records
 *   sharing more of them.
 */

/** The text search configuration records and queries are parsed with. */
export const SEARCH_CONFIG = 'english';

const CJK = /[\p{Script=Han}\p{Script=Hiragana}\p{Script=Katakana}\p{Script=Hangul}ー々〆]/u;
/** Script runs: CJK runs, or runs of other letters, marks and digits; everything else separates. */
const RUNS =
  /[\p{Script=Han}\p{Script=Hiragana}\p{Script=Katakana}\p{Script=Hangul}ー々〆]+|[^\s\p{P}\p{S}\p{Script=Han}\p{Script=Hiragana}\p{Script=Katakana}\p{Script=Hangul}ー々〆]+/gu;
/** Pieces the tsquery syntax gives meaning to never reach it: only letters, marks and digits do. */
const WORD = /^[\p{L}\p{M}\p{N}]+$/u;
/** CJK runs up to this long are keywords (all bigrams required); longer ones are sentences. */
export const CJK_KEYWORD_CHARS = 4;
/** A query of this many terms is enough; a pasted page must not become a huge tsquery. */
const MAX_QUERY_TERMS = 32;

export type Term = { kind: 'word'; text: string } | { kind: 'cjk'; text: string };

/** The script runs of `text`, lower-cased (CJK runs and words of letters and digits). */
export function terms(text: string): Term[] {
  const out: Term[] = [];
  for (const m of text.normalize('NFKC').toLowerCase().matchAll(RUNS)) {
    const run = m[0];
    if (CJK.test(run[0])) out.push({ kind: 'cjk', text: run });
    else
      for (const piece of run.split(/[^\p{L}\p{M}\p{N}]+/u))
        if (piece !== '') out.push({ kind: 'word', text: piece });
  }
  return out;
}

/** Overlapping pairs of characters (`机器学习` → 机器 器学 学习); a single character stays itself. */
export function bigrams(run: string): string[] {
  const chars = [...run];
  if (chars.length < 2) return chars;
  return chars.slice(1).map((c, i) => chars[i] + c);
}

/** The text a record's search vector is built from: words as they are, CJK runs as unigrams + bigrams. */
export function searchText(text: string): string {
  return terms(text)
    .map((t) => (t.kind === 'word' ? t.text : [...[...t.text], ...bigrams(t.text)].join(' ')))
    .join(' ');
}

/** A query's distinct terms, the first MAX_QUERY_TERMS of them (a pasted page is not a query). */
function queryTerms(query: string): Term[] {
  const seen = new Set<string>();
  const out: Term[] = [];
  for (const t of terms(query)) {
    const key = `${t.kind}:${t.text}`;
    if (seen.has(key)) continue;
    seen.add(key);
    out.push(t);
    if (out.length === MAX_QUERY_TERMS) break;
  }
  return out;
}

/**
 * The `to_tsquery` expression for a search (`null` when the query has no searchable term):
 * `colour | favourite | ( 机器 & 器学 & 学习 )`. Every operand is letters, marks and digits only,
 * so nothing a user types can break the tsquery syntax.
 */
export function searchQuery(query: string): string | null {
  const operands = queryTerms(query).flatMap((t) => {
    const parts = (t.kind === 'word' ? [t.text] : bigrams(t.text)).filter((p) => WORD.test(p));
    if (parts.length <= 1) return parts;
    if ([...t.text].length > CJK_KEYWORD_CHARS) return [...new Set(parts)];
    return [`( ${parts.join(' & ')} )`];
  });
  return operands.length > 0 ? [...new Set(operands)].join(' | ') : null;
}

/** Strings to look for in a record's original text when cutting a snippet around the first match. */
export function highlightNeedles(query: string): string[] {
  return queryTerms(query).flatMap((t) => (t.kind === 'word' ? [t.text] : [t.text, ...bigrams(t.text)]));
}
