import parseDiff from 'parse-diff';
import type { Compacted } from './types';

/**
 * Unified diffs (seed 000): every changed line of every hunk, one line of context around each run of
 * changes, longer unchanged runs collapsed to a count; a lockfile's hunks become one line with the
 * packages they touch. Parsing is `parse-diff`'s; only the text around the files (a `git log -p`
 * commit header and message) is kept here as it is.
 */

const LOCKFILES =
  /(^|\/)(package-lock\.json|npm-shrinkwrap\.json|yarn\.lock|pnpm-lock\.yaml|bun\.lock|Cargo\.lock|poetry\.lock|Pipfile\.lock|uv\.lock|go\.sum|Gemfile\.lock|composer\.lock|packages\.lock\.json|mix\.lock|pubspec\.lock)$/;
const CONTEXT = 1;
const MAX_PACKAGES = 12;

export function compactDiff(text: string, mode: 'full' | 'light'): Compacted | undefined {
  // A diff has no lossless rewrite worth having.
  if (mode === 'light') return undefined;
  const out: string[] = [];
  for (const part of splitFiles(text)) {
    if (part.file === undefined) {
      out.push(...part.lines);
      continue;
    }
    const [file] = parseDiff(part.lines.join('\n'));
    if (!file) {
      out.push(...part.lines);
      continue;
    }
    out.push(...renderFile(file, part.lines[0]));
  }
  return { text: out.join('\n'), lossy: true };
}

/** The input in parts: each file's section (from its `diff --git`), and the text between them. */
function splitFiles(text: string): { file?: string; lines: string[] }[] {
  const parts: { file?: string; lines: string[] }[] = [];
  let current: { file?: string; lines: string[] } = { lines: [] };
  for (const line of text.split('\n')) {
    const starts = line.startsWith('diff --git ');
    // A commit header (`git log -p`) ends the file before it.
    const ends = current.file !== undefined && /^commit [0-9a-f]{7,40}\b/.test(line);
    if (starts || ends) {
      if (current.lines.length > 0) parts.push(current);
      current = { file: starts ? line : undefined, lines: [] };
    }
    current.lines.push(line);
  }
  if (current.lines.length > 0) parts.push(current);
  return parts;
}

function renderFile(file: parseDiff.File, header: string): string[] {
  const name = file.to && file.to !== '/dev/null' ? file.to : (file.from ?? header);
  const what = file.new ? ' (new file)' : file.deleted ? ' (deleted)' : '';
  const head = `${header}${what} +${file.additions} -${file.deletions}`;
  if (LOCKFILES.test(name))
    return [head, `  lockfile: ${file.chunks.length} hunks summarised; ${lockfileSummary(file)}`];
  const out = [head];
  for (const chunk of file.chunks) {
    out.push(chunk.content);
    const changes = chunk.changes;
    const near = changes.map((c, i) => {
      if (c.type !== 'normal') return true;
      for (let d = 1; d <= CONTEXT; d++) {
        if (changes[i - d]?.type !== 'normal' && changes[i - d]) return true;
        if (changes[i + d]?.type !== 'normal' && changes[i + d]) return true;
      }
      return false;
    });
    for (let i = 0; i < changes.length;) {
      if (near[i]) {
        out.push(changes[i].content);
        i++;
        continue;
      }
      let j = i;
      while (j < changes.length && !near[j]) j++;
      out.push(j - i === 1 ? changes[i].content : ` … ${j - i} unchanged lines`);
      i = j;
    }
  }
  return out;
}

/** The packages a lockfile's changed lines name, with a version where one is on the next lines. */
function lockfileSummary(file: parseDiff.File): string {
  const added = new Map<string, string>();
  const removed = new Map<string, string>();
  for (const chunk of file.chunks) {
    const ch = chunk.changes;
    ch.forEach((c, i) => {
      if (c.type === 'normal') return;
      const body = c.content.slice(1);
      // package-lock.json: `"node_modules/<name>": {`; yarn/pnpm: `<name>@<range>:`; Cargo/poetry: `name = "<name>"`.
      const name =
        /^\s*"(?:[^"]*\/)?node_modules\/((?:@[^/"]+\/)?[^/"]+)":\s*\{/.exec(body)?.[1] ??
        /^"?((?:@[^@/\s"]+\/)?[^@\s"]+)@[^:]*:\s*$/.exec(body)?.[1] ??
        /^\s*\/?((?:@[^@/\s]+\/)?[^@\s/]+)@[\d.]+[^:]*:\s*$/.exec(body)?.[1] ??
        /^name = "([^"]+)"/.exec(body)?.[1] ??
        /^([\w.-]+\/[\w./-]+) v[\d.]+/.exec(body)?.[1];
      if (!name) return;
      let version = '';
      for (let k = i + 1; k < Math.min(ch.length, i + 6); k++) {
        const m = /"?version"?\s*[:=]\s*"([^"]+)"/.exec(ch[k].content);
        if (m) {
          version = m[1];
          break;
        }
      }
      (c.type === 'add' ? added : removed).set(name, version);
    });
  }
  const list = (m: Map<string, string>) => {
    const names = [...m].map(([n, v]) => (v ? `${n}@${v}` : n));
    return names.length > MAX_PACKAGES
      ? `${names.slice(0, MAX_PACKAGES).join(', ')} +${names.length - MAX_PACKAGES} more`
      : names.join(', ');
  };
  const parts = [];
  if (added.size > 0) parts.push(`added or changed ${added.size} packages: ${list(added)}`);
  if (removed.size > 0) parts.push(`removed or replaced ${removed.size}: ${list(removed)}`);
  return parts.length > 0 ? parts.join('; ') : 'no package names found in the changed lines';
}
