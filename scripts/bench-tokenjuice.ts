/**
 * `npm run bench:tokenjuice`: tool-result tokens before and after TokenJuice over the checked-in
 * corpus (libs/tokenjuice/fixtures), per file and overall, in both lossy (`full`) and lossless
 * (`light`) modes. Tokens are counted with gpt-tokenizer's o200k_base encoding.
 */
import { encode } from 'gpt-tokenizer';
import {
  compactToolResult,
  tokenjuiceCorpus,
  tokenjuiceCorpusReport,
  type CorpusReport,
} from '@switchboard/tokenjuice';

const count = (text: string) => encode(text).length;

function print(r: CorpusReport): void {
  console.log(`\nmode ${r.mode}`);
  console.log('file                               kind     before   after   ratio    ms');
  for (const f of r.files) {
    console.log(
      `${f.file.padEnd(34)} ${f.kind.padEnd(7)} ${String(f.beforeTokens).padStart(7)} ${String(f.afterTokens).padStart(7)} ${f.ratio.toFixed(1).padStart(6)}× ${f.ms.toFixed(1).padStart(5)}`,
    );
  }
  console.log(
    `${'total'.padEnd(42)} ${String(r.beforeTokens).padStart(7)} ${String(r.afterTokens).padStart(7)} ${r.ratio.toFixed(1).padStart(6)}×`,
  );
}

print(tokenjuiceCorpusReport(count, 'full'));
print(tokenjuiceCorpusReport(count, 'light'));

/**
 * What one compaction costs the event loop, by input size: each corpus text repeated to the size
 * (JSON as a list of its rows). Inputs over TOKENJUICE_MAX_INPUT_CHARS (256 KiB by default) are not
 * parsed (head and tail only): the 1 MiB column shows that bound at work.
 */
function timing(): void {
  console.log('\ncompaction time by input size (ms: fastest / median of 5 runs)');
  console.log('file                                  64 KiB          256 KiB         1 MiB');
  for (const e of tokenjuiceCorpus()) {
    const v = e.value as { text?: string; content?: { text: string }[] };
    const text = v.text ?? v.content![0].text;
    const cells = [64 * 1024, 256 * 1024, 1024 * 1024].map((size) => {
      const big = e.file.endsWith('.json')
        ? bigJson(text, size)
        : text.repeat(Math.ceil(size / text.length)).slice(0, size);
      const value = v.text !== undefined ? { ...v, text: big } : { content: [{ type: 'text', text: big }] };
      const runs: number[] = [];
      for (let i = 0; i < 5; i++) {
        const t0 = performance.now();
        compactToolResult(value, { mode: 'full', tool: e.tool, args: e.args });
        runs.push(performance.now() - t0);
      }
      runs.sort((a, b) => a - b);
      return `${runs[0].toFixed(1)} / ${runs[2].toFixed(1)}`;
    });
    console.log(`${e.file.padEnd(34)} ${cells.map((c) => c.padStart(15)).join(' ')}`);
  }
}

/** The API list with its rows repeated until its JSON is about `size` characters. */
function bigJson(text: string, size: number): string {
  const doc = JSON.parse(text) as { data: unknown[] };
  const rows: unknown[] = [];
  while (JSON.stringify(rows, null, 2).length < size) rows.push(...doc.data);
  return JSON.stringify({ ...doc, data: rows }, null, 2);
}

timing();
