import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { compactToolResult } from './tool-result';

/** The checked-in corpus (libs/tokenjuice/fixtures): one realistic tool output of each kind. */
export const CORPUS_DIR = join(__dirname, '..', 'fixtures');

/** One corpus entry as a tool would return it: the tool, its arguments and its value. */
export interface CorpusEntry {
  file: string;
  tool: string;
  args: Record<string, unknown>;
  value: unknown;
}

const mcpText = (text: string) => ({ content: [{ type: 'text', text }] });

/** The corpus as tool results: http_fetch for the API list and the web page, MCP tools for the rest. */
export function tokenjuiceCorpus(dir = CORPUS_DIR): CorpusEntry[] {
  const read = (f: string) => readFileSync(join(dir, f), 'utf8');
  const fetched = (url: string, contentType: string, text: string) => ({
    url,
    status: 200,
    contentType,
    text,
    bytes: Buffer.byteLength(text),
    truncated: false,
  });
  return [
    {
      file: 'api-charges-list.json',
      tool: 'http_fetch',
      args: { url: 'https://api.example.com/v1/charges?limit=120' },
      value: fetched(
        'https://api.example.com/v1/charges?limit=120',
        'application/json',
        read('api-charges-list.json'),
      ),
    },
    {
      file: 'failing-test-run.log',
      tool: 'workspace__run_command',
      args: { command: 'npm run test:unit -- libs/contracts libs/engine --verbose --ci' },
      value: mcpText(read('failing-test-run.log')),
    },
    {
      file: 'git-log-patch-with-lockfile.diff',
      tool: 'workspace__git',
      args: { args: ['log', '-p', '--no-walk', '5a3d0c9', '828655f'] },
      value: mcpText(read('git-log-patch-with-lockfile.diff')),
    },
    {
      file: 'docs-page.html',
      tool: 'http_fetch',
      args: { url: 'https://mikemcl.github.io/bignumber.js/' },
      value: fetched(
        'https://mikemcl.github.io/bignumber.js/',
        'text/html; charset=utf-8',
        read('docs-page.html'),
      ),
    },
    {
      file: 'search-results.txt',
      tool: 'workspace__grep',
      args: { pattern: 'tenantId', path: 'libs/store/src libs/turns/src' },
      value: mcpText(read('search-results.txt')),
    },
    {
      file: 'source-file.ts.txt',
      tool: 'workspace__read_file',
      args: { path: 'libs/subagents/src/tasks.ts' },
      value: mcpText(read('source-file.ts.txt')),
    },
  ];
}

export interface CorpusFigure {
  file: string;
  kind: string;
  lossy: boolean;
  beforeTokens: number;
  afterTokens: number;
  ratio: number;
  /** Time to detect and compact it, in milliseconds (one run, warm). */
  ms: number;
}

export interface CorpusReport {
  mode: 'full' | 'light';
  files: CorpusFigure[];
  beforeTokens: number;
  afterTokens: number;
  ratio: number;
}

/**
 * Tool-result tokens before and after TokenJuice over the corpus, for a benchmark: "before" is the
 * result as history holds it without TokenJuice (`{"ok":true,"result":…}`, before the byte budget),
 * "after" what it holds with it. `countTokens` is the benchmark's tokenizer.
 */
export function tokenjuiceCorpusReport(
  countTokens: (text: string) => number,
  mode: 'full' | 'light' = 'full',
  entries: CorpusEntry[] = tokenjuiceCorpus(),
): CorpusReport {
  const files = entries.map((e): CorpusFigure => {
    const before = JSON.stringify({ ok: true, result: e.value });
    compactToolResult(e.value, { mode, tool: e.tool, args: e.args }); // warm-up
    const t0 = performance.now();
    const c = compactToolResult(e.value, { mode, tool: e.tool, args: e.args });
    const ms = performance.now() - t0;
    const beforeTokens = countTokens(before);
    const afterTokens = c ? countTokens(c.content) : beforeTokens;
    return {
      file: e.file,
      kind: c?.kind ?? 'unchanged',
      lossy: c?.lossy ?? false,
      beforeTokens,
      afterTokens,
      ratio: beforeTokens / afterTokens,
      ms,
    };
  });
  const beforeTokens = files.reduce((n, f) => n + f.beforeTokens, 0);
  const afterTokens = files.reduce((n, f) => n + f.afterTokens, 0);
  return { mode, files, beforeTokens, afterTokens, ratio: beforeTokens / afterTokens };
}
