import { safeHref } from './safe-url';

describe('safeHref', () => {
  it.each([
    'https://example.com/a?b=1',
    'http://localhost:3000/x',
    'mailto:ops@example.com',
    '/console/sessions',
    '#top',
  ])('keeps %s', (href) => expect(safeHref(href)).toBe(href));

  it.each([
    'javascript:alert(1)',
    'JavaScript:alert(1)',
    ' javascript:alert(1)',
    'java\tscript:alert(1)',
    'java\u0000script:alert(1)',
    'data:text/html,<script>alert(1)</script>',
    'vbscript:msgbox(1)',
    '//evil.example/x',
    'relative/path',
    '',
    null,
    undefined,
  ])('drops %p', (href) => expect(safeHref(href)).toBeNull());
});
