import { createHash } from 'node:crypto';
import { ProviderError } from './types';
import { WORDS_100D, WORD_DIMENSIONS, WordVectorEmbedder } from './word-vectors';

/**
 * Embedders are providers too (issue 33): referenced like models, `<provider>/<model>`
 * (`local/hash-256`, `openai/text-embedding-3-small`), resolved by {@link EmbedderRegistry}.
 */

export interface EmbeddingRequest {
  /** Model name without the provider prefix. */
  model: string;
  /** Texts to embed, one vector each, in order. Callers batch; a provider may split further. */
  texts: string[];
  signal?: AbortSignal;
}

export interface EmbeddingResponse {
  /** One L2-normalised vector per input text, in order; all of one model's vectors have one length. */
  vectors: Float32Array[];
  /** Tokens the provider billed (0 for the built-in embedders). */
  inputTokens: number;
}

export interface EmbeddingProvider {
  /** The reference prefix: `local`, `openai`. */
  readonly name: string;
  /**
   * The vector length of a model when known without calling it (built-in models, documented
   * OpenAI models); undefined when only a first call can tell (a compatible server's own model).
   */
  dimensionsOf(model: string): number | undefined;
  embed(request: EmbeddingRequest): Promise<EmbeddingResponse>;
}

export interface ResolvedEmbedder {
  provider: EmbeddingProvider;
  /** Model name without the provider prefix. */
  model: string;
  /** `<provider>/<model>` as stored beside every vector. */
  ref: string;
}

/** Resolves `provider/model` embedder references (like {@link ProviderRegistry} for chat models). */
export class EmbedderRegistry {
  private readonly providers = new Map<string, EmbeddingProvider>();

  constructor(providers: EmbeddingProvider[] = [new LocalEmbeddingProvider()]) {
    for (const p of providers) this.register(p);
  }

  register(provider: EmbeddingProvider): void {
    this.providers.set(provider.name, provider);
  }

  /** Throws ProviderError `bad_request` for an unknown provider or model (the API maps it to 400). */
  resolve(ref: string): ResolvedEmbedder {
    const slash = ref.indexOf('/');
    const name = slash > 0 ? ref.slice(0, slash) : '';
    const model = ref.slice(slash + 1);
    const provider = this.providers.get(name);
    if (!provider || !model || (provider instanceof LocalEmbeddingProvider && !provider.knows(model))) {
      throw new ProviderError('bad_request', `no embedder "${ref}"`);
    }
    return { provider, model, ref };
  }
}

/** L2-normalises in place; a zero vector stays zero (it matches nothing). */
export function normalize(v: Float32Array): Float32Array {
  let sum = 0;
  for (const x of v) sum += x * x;
  if (sum === 0) return v;
  const inv = 1 / Math.sqrt(sum);
  for (let i = 0; i < v.length; i++) v[i] *= inv;
  return v;
}

/** Cosine similarity of two normalised vectors of one length (their dot product). */
export function cosine(a: ArrayLike<number>, b: ArrayLike<number>): number {
  if (a.length !== b.length) throw new Error(`vectors of ${a.length} and ${b.length} dimensions`);
  let dot = 0;
  for (let i = 0; i < a.length; i++) dot += a[i] * b[i];
  return dot;
}

const HASH_DIMENSIONS = 256;

/**
 * `local/hash-256`: a lexical embedder with no model. Each word's character trigrams (with word
 * boundaries, NFKC, lower-cased) are hashed into 256 signed buckets, so texts that share words or
 * word parts ("deploy" / "deployment") are close and texts that share none are not. It knows no
 * meaning; it exists so tests and the demo have a deterministic embedder offline.
 */
export function hashEmbed(text: string, dimensions = HASH_DIMENSIONS): Float32Array {
  const v = new Float32Array(dimensions);
  const words =
    text
      .normalize('NFKC')
      .toLowerCase()
      .match(/[\p{L}\p{N}]+/gu) ?? [];
  for (const word of words) {
    const padded = `<${word}>`;
    for (let i = 0; i <= padded.length - 3; i++) {
      const h = createHash('md5')
        .update(padded.slice(i, i + 3))
        .digest();
      v[h.readUInt32LE(0) % dimensions] += h[4] & 1 ? 1 : -1;
    }
  }
  return normalize(v);
}

/**
 * `local/words-100d` (word-vectors.ts), made on first use (word-vectors.ts imports this module);
 * its table loads on the first text it embeds.
 */
let wordEmbedder: WordVectorEmbedder | undefined;

/**
 * The built-in embedders, computed in process: `local/<model>` — `hash-256` (lexical) and
 * `words-100d` (GloVe word vectors, some meaning; the default embedder, docs/adr/0049).
 */
export class LocalEmbeddingProvider implements EmbeddingProvider {
  readonly name = 'local';
  private readonly models = new Map<string, { dimensions: number; embed: (text: string) => Float32Array }>([
    ['hash-256', { dimensions: HASH_DIMENSIONS, embed: (t) => hashEmbed(t) }],
    [
      WORDS_100D,
      { dimensions: WORD_DIMENSIONS, embed: (t) => (wordEmbedder ??= new WordVectorEmbedder()).embed(t) },
    ],
  ]);

  /** Adds a built-in model (the word-vector embedder registers itself here). */
  define(model: string, dimensions: number, embed: (text: string) => Float32Array): void {
    this.models.set(model, { dimensions, embed });
  }

  knows(model: string): boolean {
    return this.models.has(model);
  }

  dimensionsOf(model: string): number | undefined {
    return this.models.get(model)?.dimensions;
  }

  embed(request: EmbeddingRequest): Promise<EmbeddingResponse> {
    const m = this.models.get(request.model);
    if (!m) return Promise.reject(new ProviderError('bad_request', `no embedder "local/${request.model}"`));
    return Promise.resolve({ vectors: request.texts.map((t) => m.embed(t)), inputTokens: 0 });
  }
}
