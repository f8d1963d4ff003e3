import type { Compacted, KindHint } from './types';

/**
 * Source code (seed 000: a signature keeper): imports, declarations and signatures stay, function
 * bodies longer than a few lines collapse to `{ … N lines }`, long doc comments to their first line.
 * Brace depth for C-like languages, indentation for Python. A heuristic by design (docs/adr/0033):
 * it needs no grammar per language, and a body it misjudges is still retrievable whole.
 */

const MIN_BODY = 3;
const CONTROL =
  /^\s*(}\s*)?(if|else|for|while|switch|catch|try|do|finally|return|with|when|match|loop|unsafe)\b/;
const OPENER = /(\)\s*(:\s*[^={]+)?\s*(=>\s*)?\{$|=>\s*\{$|\bfunction\b[^{]*\{$|\b(get|set)\s+\w+\(\)\s*\{$)/;

export function compactCode(text: string, mode: 'full' | 'light', hint: KindHint): Compacted | undefined {
  if (mode === 'light') return undefined;
  const lines = text.split('\n');
  const python = isPython(lines, hint);
  const out = python ? collapsePython(lines) : collapseBraces(lines);
  return { text: collapseDocComments(out).join('\n'), lossy: true };
}

function isPython(lines: string[], hint: KindHint): boolean {
  const path = JSON.stringify(hint.args ?? '');
  if (/\.py\b/.test(path)) return true;
  const defs = lines.filter((l) => /^\s*(async\s+)?def\s+\w+\(.*:\s*$|^\s*class\s+\w+.*:\s*$/.test(l)).length;
  const braces = lines.filter((l) => /\{\s*$/.test(l)).length;
  return defs > braces;
}

/** A line without its string literals and line comment, for counting braces. */
function code(line: string): string {
  return line
    .replace(/\\./g, '')
    .replace(/'[^']*'|"[^"]*"|`[^`]*`/g, '""')
    .replace(/\/\/.*$/, '')
    .replace(/\/\*.*?\*\//g, '');
}

function collapseBraces(lines: string[]): string[] {
  const stripped = lines.map(code);
  const delta = stripped.map((l) => (l.match(/\{/g)?.length ?? 0) - (l.match(/\}/g)?.length ?? 0));
  const out: string[] = [];
  for (let i = 0; i < lines.length; i++) {
    const l = stripped[i].trimEnd();
    if (delta[i] > 0 && OPENER.test(l) && !CONTROL.test(l)) {
      // Find where the block that opens here closes.
      let depth = 0;
      let j = i;
      for (; j < lines.length; j++) {
        depth += delta[j];
        if (depth <= 0) break;
      }
      const body = j - i - 1;
      if (j < lines.length && body >= MIN_BODY && delta[j] <= 0) {
        const tail = lines[j].trim().replace(/^\}/, '');
        out.push(`${lines[i].trimEnd()} … ${body} lines }${tail}`);
        i = j;
        continue;
      }
    }
    out.push(lines[i]);
  }
  return out;
}

function collapsePython(lines: string[]): string[] {
  const indent = (l: string) => l.length - l.trimStart().length;
  const out: string[] = [];
  for (let i = 0; i < lines.length; i++) {
    const l = lines[i];
    if (/^\s*(async\s+)?def\s+\w+.*:\s*(#.*)?$/.test(l)) {
      const base = indent(l);
      let j = i + 1;
      while (j < lines.length && (lines[j].trim() === '' || indent(lines[j]) > base)) j++;
      while (j > i + 1 && lines[j - 1].trim() === '') j--;
      const body = j - i - 1;
      if (body >= MIN_BODY) {
        out.push(l);
        const first = lines[i + 1].trim();
        if (/^("""|''')/.test(first))
          out.push(`${' '.repeat(base + 4)}${first.replace(/("""|''')?$/, '')}…"""`);
        out.push(`${' '.repeat(base + 4)}… ${body} lines`);
        i = j - 1;
        continue;
      }
    }
    out.push(l);
  }
  return out;
}

/** A doc comment of more than two lines becomes its first line of text. */
function collapseDocComments(lines: string[]): string[] {
  const out: string[] = [];
  for (let i = 0; i < lines.length; i++) {
    const l = lines[i];
    if (/^\s*\/\*\*\s*$|^\s*\/\*\*\s+\S/.test(l) && !l.includes('*/')) {
      let j = i + 1;
      while (j < lines.length && !lines[j].includes('*/')) j++;
      if (j < lines.length && j - i >= 2) {
        const indent = l.slice(0, l.length - l.trimStart().length);
        const text = lines
          .slice(i, j + 1)
          .map((x) =>
            x
              .trim()
              .replace(/^\/\*\*|\*\/$|^\*/g, '')
              .trim(),
          )
          .find((x) => x !== '');
        out.push(`${indent}/** ${text ?? ''} … */`);
        i = j;
        continue;
      }
    }
    out.push(l);
  }
  return out;
}
