import { convert } from 'html-to-text';
import type { Compacted } from './types';

/**
 * HTML converted at most: html-to-text is the costliest compactor (about 0.4 ms per KiB on a busy
 * 2-core machine, docs/BENCHMARKS.md), so a longer page is converted up to here and the rest is left
 * to `tokenjuice_retrieve`.
 */
export const HTML_MAX_CHARS = 96 * 1024;

/** HTML (seed 000): the readable text, by `html-to-text`; scripts, styles, images and in-page anchors go. */
export function compactHtml(html: string, mode: 'full' | 'light'): Compacted | undefined {
  // Markup to text drops the markup: never lossless.
  if (mode === 'light') return undefined;
  const input = html.length > HTML_MAX_CHARS ? html.slice(0, HTML_MAX_CHARS) : html;
  const text = convert(input, {
    wordwrap: false,
    limits: { maxInputLength: input.length },
    selectors: [
      {
        selector: 'a',
        options: { noAnchorUrl: true, hideLinkHrefIfSameAsText: true, linkBrackets: ['<', '>'] },
      },
      { selector: 'img', format: 'skip' },
      { selector: 'script', format: 'skip' },
      { selector: 'style', format: 'skip' },
      { selector: 'noscript', format: 'skip' },
      { selector: 'svg', format: 'skip' },
      { selector: 'h1', options: { uppercase: false } },
      { selector: 'h2', options: { uppercase: false } },
      { selector: 'h3', options: { uppercase: false } },
      { selector: 'table', format: 'dataTable', options: { uppercaseHeaderCells: false } },
    ],
  });
  const rest =
    input.length < html.length
      ? `\n… [the page goes on: its last ${html.length - input.length} characters of HTML were not converted]`
      : '';
  return { text: text.replace(/\n{3,}/g, '\n\n').trim() + rest, lossy: true };
}
