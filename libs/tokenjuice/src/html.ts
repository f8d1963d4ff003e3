import { convert } from 'html-to-text';
import type { Compacted } from './types';

/** HTML (seed 000): the readable text, by `html-to-text`; scripts, styles, images and in-page anchors go. */
export function compactHtml(html: string, mode: 'full' | 'light'): Compacted | undefined {
  // Markup to text drops the markup: never lossless.
  if (mode === 'light') return undefined;
  const text = convert(html, {
    wordwrap: false,
    limits: { maxInputLength: html.length },
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
  return { text: text.replace(/\n{3,}/g, '\n\n').trim(), lossy: true };
}
