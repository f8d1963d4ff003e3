/**
 * `npm run bench:tokenjuice`: tool-result tokens before and after TokenJuice over the checked-in
 * corpus (libs/tokenjuice/fixtures), per file and overall, in both lossy (`full`) and lossless
 * (`light`) modes. Tokens are counted with gpt-tokenizer's o200k_base encoding.
 */
import { encode } from 'gpt-tokenizer';
import { tokenjuiceCorpusReport, type CorpusReport } from '@switchboard/tokenjuice';

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
