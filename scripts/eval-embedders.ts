/**
 * Scores the built-in embedders on test/fixtures/embeddings/paraphrases.json (questions that share
 * no word with the record answering them, every other record a distractor): hit@1, hit@3 and mean
 * reciprocal rank, and the word-vector table's load time and memory (docs/adr/0049).
 *
 *   node -r @swc-node/register scripts/eval-embedders.ts [--asset file.bin.gz]
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { gunzipSync } from 'node:zlib';
import { cosine, hashEmbed } from '../libs/providers/src/embeddings';
import {
  WordVectorEmbedder,
  decodeWordTable,
  wordTablePath,
  words,
  type WordEmbedderOptions,
} from '../libs/providers/src/word-vectors';

export interface LabelledSet {
  records: { id: string; text: string }[];
  questions: { q: string; answer: string }[];
}

export function loadLabelledSet(): LabelledSet {
  const file = path.resolve(__dirname, '..', 'test', 'fixtures', 'embeddings', 'paraphrases.json');
  return JSON.parse(readFileSync(file, 'utf8')) as LabelledSet;
}

export interface Score {
  hit1: number;
  hit3: number;
  mrr: number;
  /** Question → the rank (1-based) of its answer. */
  ranks: Record<string, number>;
}

export function score(set: LabelledSet, embed: (text: string) => Float32Array): Score {
  const records = set.records.map((r) => ({ id: r.id, v: embed(r.text) }));
  const ranks: Record<string, number> = {};
  let hit1 = 0;
  let hit3 = 0;
  let mrr = 0;
  for (const { q, answer } of set.questions) {
    const v = embed(q);
    const sorted = records.map((r) => ({ id: r.id, s: cosine(v, r.v) })).sort((x, y) => y.s - x.s);
    const rank = sorted.findIndex((r) => r.id === answer) + 1;
    ranks[q] = rank;
    if (rank === 1) hit1++;
    if (rank <= 3) hit3++;
    mrr += 1 / rank;
  }
  const n = set.questions.length;
  return { hit1: hit1 / n, hit3: hit3 / n, mrr: mrr / n, ranks };
}

function main(): void {
  const at = process.argv.indexOf('--asset');
  const asset = at > 0 ? process.argv[at + 1] : wordTablePath();
  const set = loadLabelledSet();
  for (const { q, answer } of set.questions) {
    const text = set.records.find((r) => r.id === answer)?.text ?? '';
    const shared = words(q).filter((w) => words(text).includes(w));
    if (shared.length) console.warn(`"${q}" shares ${shared.join(', ')} with its answer`);
  }

  const rssBefore = process.memoryUsage().rss;
  const started = performance.now();
  const table = decodeWordTable(gunzipSync(readFileSync(asset)));
  const loadMs = performance.now() - started;
  const rssMb = (process.memoryUsage().rss - rssBefore) / 1e6;
  console.log(
    `${asset}: ${table.ranks.size} words, loaded in ${loadMs.toFixed(0)} ms, +${rssMb.toFixed(1)} MB RSS`,
  );

  const fmt = (name: string, s: Score): string =>
    `${name.padEnd(36)} hit@1 ${s.hit1.toFixed(2)}  hit@3 ${s.hit3.toFixed(2)}  MRR ${s.mrr.toFixed(3)}`;
  console.log(
    fmt(
      'local/hash-256',
      score(set, (t) => hashEmbed(t)),
    ),
  );
  const variants: [string, WordEmbedderOptions][] = [
    ['words-100d (a=1e-3, common removed)', { a: 1e-3, removeCommon: true }],
    ['words-100d (a=1e-3, kept)', { a: 1e-3, removeCommon: false }],
    ['words-100d (a=1e-4, common removed)', { a: 1e-4, removeCommon: true }],
    ['words-100d (a=1e-2, common removed)', { a: 1e-2, removeCommon: true }],
    ['words-100d (a=1, i.e. plain mean)', { a: 1, removeCommon: false }],
  ];
  for (const [name, options] of variants) {
    const e = new WordVectorEmbedder(() => table, options);
    const s = score(set, (t) => e.embed(t));
    console.log(fmt(name, s));
    if (process.argv.includes('--misses')) {
      for (const [q, r] of Object.entries(s.ranks)) if (r > 1) console.log(`   rank ${r}: ${q}`);
    }
  }
  const e = new WordVectorEmbedder(() => table);
  const t0 = performance.now();
  for (let i = 0; i < 1000; i++) e.embed(set.records[i % set.records.length].text);
  console.log(`embed: ${((performance.now() - t0) / 1000).toFixed(3)} ms per record`);
}

if (require.main === module) main();
