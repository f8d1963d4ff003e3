import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import {
  compactSearch,
  compactText,
  CORPUS_DIR,
  detectKind,
  logFormatCorpus,
  type LogCorpusEntry,
} from './index';
import { startsWithTimestamp } from './lines';

/** The checked-in `jest --verbose` run, as one more row: every failing test and the summary kept. */
function jestRun(): LogCorpusEntry {
  const text = readFileSync(join(CORPUS_DIR, 'failing-test-run.log'), 'utf8');
  const mustKeep = text.split('\n').filter((l) => /✕|●|^Tests: |^FAIL /.test(l));
  return { name: 'jest --verbose (the file corpus’s run)', text, kind: 'log', mustKeep };
}

const corpus = [...logFormatCorpus(), jestRun()];
/** `path:line:[column:]text` as the corpus writes it (a Windows drive allowed). */
const MATCH = /^((?:[A-Z]:\\)?[^:]+):(\d+):(?:(\d+):)?(.*)$/;
const parse = (l: string) => {
  const [, path, line, col, text] = MATCH.exec(l)!;
  return { path, line, col, text };
};
const logs = corpus.filter((e) => e.kind === 'log');
const searches = corpus.filter((e) => e.kind === 'search');

/**
 * Reads a log compaction back against its original: every shown line is the original's next line,
 * every `… [lines a–b omitted]` starts where the last shown line ended, and together they reach the
 * last line — so the line numbers and counts the model reads are true.
 */
function expectEveryLineAccountedFor(original: string, compacted: string): void {
  const lines = original.split('\n');
  let next = 0;
  for (const l of compacted.split('\n')) {
    const gap = /^… \[lines? (\d+)(?:–(\d+))? omitted/.exec(l);
    if (gap) {
      expect(Number(gap[1])).toBe(next + 1);
      next = Number(gap[2] ?? gap[1]);
      continue;
    }
    const run = / \[×(\d+)\]$/.exec(l);
    if (run && l.slice(0, run.index) === lines[next]) {
      next += Number(run[1]);
      continue;
    }
    expect(l).toBe(lines[next]);
    next++;
  }
  expect(next).toBe(lines.length);
}

describe('TokenJuice on the common log formats (issue 30)', () => {
  describe.each(logs.map((e) => [e.name, e] as const))('%s', (_, e) => {
    it('is read as a log, with or without its hint, never as search results', () => {
      expect(detectKind(e.text, e.hint)).toBe('log');
      expect(detectKind(e.text)).toBe('log');
      expect(compactText(e.text, { mode: 'light', hint: e.hint })?.kind).not.toBe('search');
    });

    it('full: shows every error, fatal and failure line whole', () => {
      const c = compactText(e.text, { mode: 'full', hint: e.hint })!;
      expect(c.kind).toBe('log');
      expect(c.lossy).toBe(true);
      expect(e.mustKeep.length).toBeGreaterThanOrEqual(4);
      const shown = new Set(c.text.split('\n'));
      for (const l of e.mustKeep) expect(shown.has(l) ? l : `missing: ${l}`).toBe(l);
    });

    it('full: its omissions name the right lines, and every line is shown or counted', () => {
      const c = compactText(e.text, { mode: 'full', hint: e.hint })!;
      expectEveryLineAccountedFor(e.text, c.text);
      expect(c.text.length).toBeLessThan(e.text.length / 2);
    });
  });

  describe.each(searches.map((e) => [e.name, e] as const))('search output: %s', (_, e) => {
    it('is still read as search results, from its bytes and with a search tool’s hint', () => {
      expect(detectKind(e.text)).toBe('search');
      expect(detectKind(e.text, { tool: 'workspace__grep' })).toBe('search');
    });

    it('full: counts every match and file, and names every file', () => {
      const c = compactText(e.text, { mode: 'full' })!;
      expect(c.kind).toBe('search');
      expect(c.text.split('\n')[0]).toBe(`${e.matches} matches in ${e.files} files`);
      const paths = new Set(e.text.split('\n').map((l) => parse(l).path));
      expect(paths.size).toBe(e.files);
      for (const p of paths) expect(c.text).toContain(`\n${p} (${e.matches! / e.files!})\n`);
    });

    it('light: every match, grouped by file (used where it saves 10 %)', () => {
      expect([undefined, 'search']).toContain(compactText(e.text, { mode: 'light' })?.kind);
      const c = compactSearch(e.text, 'light', {})!;
      expect(c.lossy).toBe(false);
      for (const l of e.text.split('\n')) {
        const m = parse(l);
        expect(c.text).toContain(`  ${m.line}${m.col ? `:${m.col}` : ''}: ${m.text}`);
      }
    });
  });

  it('a search result’s stray timestamped line is kept as a note, not grouped as a file', () => {
    const text = [
      '2026-11-30T10:36:00Z rg: searching 3 files',
      ...Array.from({ length: 6 }, (_, i) => `src/a.ts:${i + 1}:const x${i} = 1;`),
    ].join('\n');
    const c = compactText(text, { mode: 'full' })!;
    expect(c.kind).toBe('search');
    expect(c.text).toMatch(
      /^6 matches in 1 files\n2026-11-30T10:36:00Z rg: searching 3 files\nsrc\/a\.ts \(6\)/,
    );
  });
});

describe('startsWithTimestamp: a clock before the first colon is a timestamp, not path:line:', () => {
  it.each([
    '2026-11-30T10:36:00Z INFO worker-3 ready',
    '2026-11-30T10:36:00.123+01:00 INFO ready',
    '2026-11-30 10:36:00.123456-05:00 [info] ready',
    '2026-11-30 10:36:00,123 - app.worker - ERROR - boom',
    '2026-11-30T10:36:00.123456789Z stdout F ready',
    '[2026-11-30T10:36:00.123Z] [ERROR] boom',
    'Nov 30 10:36:00 web-1 sshd[812]: Accepted publickey',
    'Nov  3 09:05:07 web-1 kernel: eth0 up',
    '<134>1 2026-11-30T10:36:00.003Z web-1 app 2001 JOB - ready',
    '10.0.0.5 - - [30/Nov/2026:10:36:00 +0000] "GET / HTTP/1.1" 200 512 "-" "curl/8.5"',
    '[Sun Nov 30 10:36:00.123456 2026] [core:error] [pid 3001] boom',
    '2026/11/30 10:36:00 listening on :8080',
    '[10:36:00] compiled in 1.2 s',
    'I, [2026-11-30T10:36:00.123456 #1234]  INFO -- : ready',
  ])('%s', (line) => {
    expect(startsWithTimestamp(line)).toBe(true);
  });

  it.each([
    'src/a.ts:12:const tenantId = 1;',
    'src/a.ts:12:34:const tenantId = 1;',
    'src/v2:12:34: text after a column',
    'file2:12:34:text after a column',
    'C:\\work\\src\\a.ts:3:export const a = 1;',
    'logs/app.log:120:2026-11-30T10:36:00Z ERROR worker-1 boom',
    'INFO ready at 10:36',
    'no colon at all',
  ])('%s', (line) => {
    expect(startsWithTimestamp(line)).toBe(false);
  });
});
