/**
 * Model and tool output is untrusted: a link in it may only go to http(s) or mailto. Anything else
 * (`javascript:`, `data:`, `vbscript:`, a protocol-relative `//host`, control characters hiding a
 * scheme) gives null and is rendered as plain text.
 */
export function safeHref(href: string | null | undefined): string | null {
  if (!href) return null;
  // Browsers drop ASCII whitespace and control characters inside a scheme: `java\tscript:` is javascript:.
  // eslint-disable-next-line no-control-regex
  const squeezed = href.replace(/[\u0000-\u0020\u007f-\u009f]/g, '');
  if (squeezed.startsWith('//')) return null;
  const scheme = /^([a-z][a-z0-9+.-]*):/i.exec(squeezed)?.[1]?.toLowerCase();
  if (scheme === undefined) return squeezed.startsWith('/') || squeezed.startsWith('#') ? href.trim() : null;
  return scheme === 'http' || scheme === 'https' || scheme === 'mailto' ? href.trim() : null;
}
