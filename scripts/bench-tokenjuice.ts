/**
 * `npm run bench:tokenjuice`: tool-result tokens before and after TokenJuice over the checked-in
 * corpus (libs/tokenjuice/fixtures), per file and overall, in both lossy (`full`) and lossless
 * (`light`) modes. Tokens are counted with gpt-tokenizer's o200k_base encoding.
 */
import { encode } from 'gpt-tokenizer';
import {
  compactToolResult,
  detectKind,
  logFormatCorpus,
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

/**
 * What detection alone costs (`detectKind`, the bytes and the hint), per call: over the file corpus
 * and the log-format corpus (issue 30), each text's detection repeated; µs per call, fastest and
 * median of 7 rounds of 200 calls.
 */
function detection(): void {
  console.log('\ndetection time per call (µs: fastest / median of 7 rounds of 200 calls)');
  const texts: { name: string; text: string; hint: Parameters<typeof detectKind>[1] }[] = [
    ...tokenjuiceCorpus().map((e) => {
      const v = e.value as { text?: string; content?: { text: string }[] };
      return { name: e.file, text: v.text ?? v.content![0].text, hint: { tool: e.tool, args: e.args } };
    }),
    ...logFormatCorpus().map((e) => ({ name: e.name, text: e.text, hint: e.hint ?? {} })),
  ];
  let fastest = 0;
  let medians = 0;
  for (const t of texts) {
    const rounds: number[] = [];
    for (let r = 0; r < 7; r++) {
      const t0 = performance.now();
      for (let i = 0; i < 200; i++) detectKind(t.text, t.hint);
      rounds.push(((performance.now() - t0) * 1000) / 200);
    }
    rounds.sort((a, b) => a - b);
    fastest += rounds[0];
    medians += rounds[3];
    const kind = detectKind(t.text, t.hint);
    console.log(
      `${t.name.slice(0, 60).padEnd(60)} ${kind.padEnd(7)} ${rounds[0].toFixed(1).padStart(7)} / ${rounds[3].toFixed(1).padStart(7)}`,
    );
  }
  console.log(
    `${'all texts (sum)'.padEnd(68)} ${fastest.toFixed(1).padStart(7)} / ${medians.toFixed(1).padStart(7)}`,
  );
}

detection();
