import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { encode } from 'gpt-tokenizer';
import parseDiff from 'parse-diff';
import {
  compactCode,
  compactDiff,
  compactHtml,
  compactJsonText,
  compactLog,
  compactSearch,
  compactText,
  HTML_MAX_CHARS,
  CORPUS_DIR,
  detectKind,
  tokenjuiceCorpusReport,
} from './index';

const read = (f: string) => readFileSync(join(CORPUS_DIR, f), 'utf8');
const tokens = (s: string) => encode(s).length;
const ratio = (before: string, after: string) => tokens(before) / tokens(after);

describe('TokenJuice compactors on the corpus', () => {
  describe('JSON: an API list', () => {
    const raw = read('api-charges-list.json');
    const doc = JSON.parse(raw) as { data: { id: string; amount: number; status: string }[] };
    const full = compactJsonText(raw, 'full')!;

    it('keeps every failed charge and the amount outlier, with its id', () => {
      const failed = doc.data.filter((c) => c.status === 'failed');
      expect(failed).toHaveLength(4);
      for (const c of failed) expect(full.text).toContain(c.id);
      const outlier = doc.data.find((c) => c.amount === 2_450_000)!;
      expect(full.text).toContain(outlier.id);
      expect(full.text).toContain('2450000');
      expect(full.lossy).toBe(true);
    });

    it('says each key once, the constant columns once, and counts what it left out', () => {
      expect(full.text.match(/billing_details\.email/g)).toHaveLength(1);
      expect(full.text).toContain('same in every row: object=charge | amount_refunded=0');
      expect(full.text).toContain('(120 rows × 40 columns)');
      expect(full.text).toMatch(/status "succeeded"×116 "failed"×4/);
      const shownRows = full.text.split('\n').filter((l) => l.startsWith('ch_')).length;
      const omittedRows = [...full.text.matchAll(/^… (\d+) rows$/gm)].reduce((n, m) => n + Number(m[1]), 0);
      expect(shownRows + omittedRows).toBe(120);
    });

    it('reduces the tokens at least 10×', () => {
      expect(ratio(raw, full.text)).toBeGreaterThan(10);
    });

    it('light keeps every row and value, losslessly', () => {
      const light = compactJsonText(raw, 'light')!;
      expect(light.lossy).toBe(false);
      for (const c of doc.data) expect(light.text).toContain(`${c.id} | ${c.amount} |`);
      expect(ratio(raw, light.text)).toBeGreaterThan(2);
    });

    it('flags a row whose ok is false or whose status is an HTTP error', () => {
      const rows = Array.from({ length: 12 }, (_, i) => ({ id: i, ok: i !== 7, code: i === 9 ? 503 : 200 }));
      const t = compactJsonText(JSON.stringify(rows), 'full')!.text;
      expect(t).toMatch(/^7 \| false/m);
      expect(t).toMatch(/^9 \| true \| 503/m);
    });
  });

  describe('log: a failing test run', () => {
    const raw = read('failing-test-run.log');
    const full = compactLog(raw, 'full')!;

    it('keeps every failing test, its expectation and the summary', () => {
      for (const name of [
        'refuses a budget of 101 iterations',
        'keeps the tools in order',
        'reads empty tenant settings as defaults',
      ]) {
        expect(full.text).toContain(`● agent request limits › ${name}`);
        expect(full.text).toContain(`✕ ${name}`);
      }
      expect(full.text).toContain('Expected: true');
      expect(full.text).toContain('at Object.toBe (libs/contracts/src/zz-corpus-failing.spec.ts:8:63)');
      expect(full.text).toContain('Tests:       3 failed, 245 passed, 248 total');
      expect(full.text).toContain('npm error code 1');
    });

    it('drops passing tests, tallied with their original line numbers', () => {
      expect(full.text).not.toMatch(/✓/);
      expect(full.text).toMatch(/… \[lines \d+–\d+ omitted: .*\d+ passing tests/);
    });

    it('reduces the tokens at least 4×', () => {
      expect(ratio(raw, full.text)).toBeGreaterThan(4);
    });

    it('light only merges identical runs, with their count', () => {
      expect(compactLog(raw, 'light')).toBeUndefined();
      const runs = compactLog('a\nretrying\nretrying\nretrying\nb', 'light')!;
      expect(runs).toEqual({ text: 'a\nretrying [×3]\nb', lossy: false });
    });
  });

  describe('diff: git log -p with a lockfile', () => {
    const raw = read('git-log-patch-with-lockfile.diff');
    const full = compactDiff(raw, 'full')!;

    it('keeps every changed line outside the lockfiles, with its hunk header', () => {
      const files = parseDiff(raw).filter((f) => !f.to?.endsWith('package-lock.json'));
      let changed = 0;
      for (const f of files) {
        for (const chunk of f.chunks) {
          expect(full.text).toContain(chunk.content);
          for (const c of chunk.changes) {
            if (c.type === 'normal') continue;
            expect(full.text).toContain(c.content);
            changed++;
          }
        }
      }
      expect(changed).toBeGreaterThan(100);
    });

    it('summarises the lockfile hunks by package', () => {
      expect(full.text).not.toContain('"node_modules/@modelcontextprotocol/sdk": {');
      expect(full.text).toMatch(
        /lockfile: 58 hunks summarised; added or changed 49 packages: .*@modelcontextprotocol\/sdk@1\.32\.2/,
      );
      expect(full.text).toMatch(/lockfile: 4 hunks summarised; added or changed 1 packages: undici@7\.29\.0/);
    });

    it('keeps the commit headers and messages', () => {
      expect(full.text).toContain('commit 5a3d0c9d93fa3d2b3efc4294fa99af7700481992');
      expect(full.text).toContain('MCP connections check the address at connect time');
    });

    it('reduces the tokens at least 5×', () => {
      expect(ratio(raw, full.text)).toBeGreaterThan(5);
    });

    it('has no lossless form', () => {
      expect(compactDiff(raw, 'light')).toBeUndefined();
    });
  });

  describe('HTML: a documentation page', () => {
    const raw = read('docs-page.html');
    const full = compactHtml(raw, 'full')!;

    it('is readable text: no markup, no style or script', () => {
      expect(full.text).not.toMatch(/<\/?(div|p|a|code|style|script)\b/);
      expect(full.text).not.toContain('font-family');
      expect(full.text).toContain('ROUNDING_MODE');
      expect(full.text).toContain('Returns a BigNumber whose value is the absolute value');
    });

    it('reduces the tokens at least 2×', () => {
      expect(ratio(raw, full.text)).toBeGreaterThan(2);
    });
  });

  describe('search results', () => {
    const raw = read('search-results.txt');
    const lines = raw.trim().split('\n');
    const files = new Set(lines.map((l) => l.split(':')[0]));
    const hint = { tool: 'grep', args: { pattern: 'tenantId' } };
    const full = compactSearch(raw, 'full', hint)!;

    it('names every file with its count, and tallies what it leaves out', () => {
      expect(full.text.startsWith(`${lines.length} matches in ${files.size} files`)).toBe(true);
      const shownFiles = full.text.split('\n').filter((l) => /^\S.* \(\d+\)$/.test(l)).length;
      const moreFiles = Number(/^\+(\d+) more files/m.exec(full.text)?.[1] ?? 0);
      expect(shownFiles + moreFiles).toBe(files.size);
      const shown = full.text.split('\n').filter((l) => /^ {2}\d+: /.test(l)).length;
      const more = [...full.text.matchAll(/^ {2}\+(\d+) more/gm)].reduce((n, m) => n + Number(m[1]), 0);
      const hidden = Number(/with (\d+) matches$/m.exec(full.text)?.[1] ?? 0);
      expect(shown + more + hidden).toBe(lines.length);
    });

    it('prefers definitions among a file’s matches', () => {
      expect(full.text).toContain('30: find(tenantId: string, id: string): Promise<Approval | null> {');
    });

    it('reduces the tokens at least 4×; light keeps every match', () => {
      expect(ratio(raw, full.text)).toBeGreaterThan(4);
      const light = compactSearch(raw, 'light', hint)!;
      expect(light.lossy).toBe(false);
      for (const l of lines) {
        const [, n, ...text] = l.split(':');
        expect(light.text).toContain(`  ${n}: ${text.join(':')}`);
      }
    });
  });

  describe('code: a source file', () => {
    const raw = read('source-file.ts.txt');
    const full = compactCode(raw, 'full', { args: { path: 'tasks.ts' } })!;

    it('keeps imports, declarations and every method signature', () => {
      expect(full.text).toContain("import { agentMaxUsd, type ParentBudget } from './budget';");
      expect(full.text).toContain('export class TaskService {');
      const signatures = raw.split('\n').filter((l) => /^ {2}(async )?\w+\(.*\)(: .*)? \{$/.test(l));
      expect(signatures.length).toBeGreaterThan(5);
      for (const s of signatures) expect(full.text).toContain(s.trimEnd());
    });

    it('collapses bodies with their length', () => {
      expect(full.text).toMatch(/\{ … \d+ lines \}/);
    });

    it('reduces the tokens at least 2×', () => {
      expect(ratio(raw, full.text)).toBeGreaterThan(2);
    });

    it('collapses Python function bodies by indentation', () => {
      const py = [
        'class Repo:',
        '    def find(self, id):',
        '        """Finds one."""',
        '        row = self.db.get(id)',
        '        if row is None:',
        '            return None',
        '        return row',
        '',
        'def main():',
        '    pass',
      ].join('\n');
      const t = compactCode(py, 'full', { args: { path: 'repo.py' } })!.text;
      expect(t).toContain('    def find(self, id):\n        """Finds one.…"""\n        … 5 lines');
      expect(t).toContain('def main():\n    pass');
    });
  });

  describe('detection', () => {
    it.each([
      ['api-charges-list.json', 'json'],
      ['failing-test-run.log', 'log'],
      ['git-log-patch-with-lockfile.diff', 'diff'],
      ['docs-page.html', 'html'],
      ['search-results.txt', 'search'],
      ['source-file.ts.txt', 'code'],
    ])('reads %s as %s from its bytes alone', (file, kind) => {
      expect(detectKind(read(file))).toBe(kind);
    });

    it('takes the hint where the bytes do not decide', () => {
      expect(detectKind('plain words', { contentType: 'text/html' })).toBe('html');
      expect(detectKind('x = 1', { args: { path: 'src/a.py' } })).toBe('code');
      expect(detectKind('hello', { tool: 'run_shell' })).toBe('log');
      expect(detectKind('hello there')).toBe('text');
    });
  });

  it('leaves alone what it cannot shorten, and never parses an oversized input', () => {
    expect(compactText('just one line of prose', { mode: 'full' })).toBeUndefined();
    const big = Array.from({ length: 50_000 }, (_, i) => `line ${i} ok`).join('\n');
    const c = compactText(big, { mode: 'full', maxInputChars: 100_000 })!;
    expect(c.kind).toBe('oversize');
    expect(c.text).toContain('line 0 ok');
    expect(c.text).toContain('line 49999 ok');
    expect(compactText(big, { mode: 'light', maxInputChars: 100_000 })).toBeUndefined();
  });

  it('reduces the corpus’s tool-result tokens at least 3× overall (issue 21 goal)', () => {
    const report = tokenjuiceCorpusReport(tokens, 'full');
    expect(report.files).toHaveLength(6);
    for (const f of report.files) expect(f.ratio).toBeGreaterThan(2);
    expect(report.ratio).toBeGreaterThan(3);
  });
});

describe('HTML past its bound', () => {
  it('converts the first HTML_MAX_CHARS and says the page goes on', () => {
    const page = `<html><body>${'<p>paragraph of text</p>'.repeat(HTML_MAX_CHARS / 20)}<p>THE END</p></body></html>`;
    const c = compactHtml(page, 'full')!;
    expect(c.text).toContain('paragraph of text');
    expect(c.text).not.toContain('THE END');
    expect(c.text).toMatch(/… \[the page goes on: its last \d+ characters of HTML were not converted\]$/);
  });
});

describe('JSON: a short list', () => {
  it('keeps every row of a table of up to 12 rows, long cells cut', () => {
    const hits = Array.from({ length: 10 }, (_, i) => ({
      title: `Result ${i}`,
      url: `https://example.com/${i}`,
      snippet: `${'words '.repeat(30)}end ${i}`,
    }));
    const t = compactJsonText(JSON.stringify(hits), 'full')!.text;
    for (let i = 0; i < 10; i++) expect(t).toContain(`Result ${i} | https://example.com/${i} |`);
    expect(t).not.toContain('end 3');
    expect(t).not.toMatch(/… \d+ rows/);
  });
});

describe('JSON: keys with dots', () => {
  it('makes no dotted columns when a key has a dot, so nothing collides', () => {
    const rows = Array.from({ length: 4 }, (_, i) => ({ 'a.b': i, a: { b: i + 100 } }));
    const t = compactJsonText(JSON.stringify(rows), 'light')!.text;
    expect(t).toContain('a.b | a');
    expect(t).toContain('2 | {"b":102}');
  });
});

describe('search: compiler output read as matches', () => {
  it('ranks a file’s errors first', () => {
    const lines = [
      ...Array.from({ length: 6 }, (_, i) => `src/a.c:${i + 1}:1: warning: unused variable 'x${i}'`),
      'src/a.c:40:5: error: expected ‘;’ before ‘}’ token',
      ...Array.from({ length: 6 }, (_, i) => `src/b.c:${i + 1}:1: note: declared here`),
    ];
    const t = compactSearch(lines.join('\n'), 'full', {})!.text;
    expect(t).toContain('40:5: error: expected ‘;’ before ‘}’ token');
  });
});
