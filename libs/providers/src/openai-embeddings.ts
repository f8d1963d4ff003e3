import type OpenAI from 'openai';
import {
  LocalEmbeddingProvider,
  normalize,
  type EmbeddingProvider,
  type EmbeddingRequest,
  type EmbeddingResponse,
} from './embeddings';
import { EmbedderRegistry } from './embeddings';
import { abortableSleep, classifyHttpError, withRetries, type RetryPolicy } from './errors';
import { createOpenAIClient, type OpenAIClientOptions } from './openai-client';
import { ProviderError } from './types';

/** Vector lengths of OpenAI's embedding models (their `dimensions` parameter can shorten the v3 ones). */
export const OPENAI_EMBEDDING_DIMENSIONS: Readonly<Record<string, number>> = {
  'text-embedding-3-small': 1536,
  'text-embedding-3-large': 3072,
  'text-embedding-ada-002': 1536,
};

/** OpenAI's limit of inputs per embeddings request. */
export const OPENAI_MAX_EMBEDDING_INPUTS = 2048;
/**
 * Characters per request, a stand-in for OpenAI's 300,000 tokens per request (about 4 characters a
 * token, with room to spare for texts that tokenise worse).
 */
const MAX_BATCH_CHARS = 600_000;

export interface OpenAIEmbeddingOptions extends OpenAIClientOptions {
  /** Inputs per request (default 2048, OpenAI's limit; compatible servers often take fewer). */
  maxBatch?: number;
  /** The provider layer's retry policy (defaults: 2 retries, 30 s largest backoff, as the engine's). */
  retry?: Partial<RetryPolicy>;
  /**
   * Ask for shorter vectors, by model (the v3 models' `dimensions` parameter); the model's vectors
   * are then this long, and `dimensionsOf` says so.
   */
  dimensions?: Record<string, number>;
}

/**
 * `openai/<model>`: the embeddings API of OpenAI and of compatible servers (Ollama, vLLM,
 * text-embeddings-inference) at `baseURL`, through the official SDK (docs/adr/0049). Requests are
 * batched, retried with the provider layer's policy, and their vectors L2-normalised (compatible
 * servers do not all normalise); usage is the billed `prompt_tokens`, priced by
 * {@link embeddingCostUsd}.
 */
export class OpenAIEmbeddingProvider implements EmbeddingProvider {
  readonly name = 'openai';
  private readonly client: OpenAI;
  private readonly maxBatch: number;
  private readonly retry: RetryPolicy;

  constructor(private readonly options: OpenAIEmbeddingOptions = {}) {
    this.client = createOpenAIClient(options);
    this.maxBatch = Math.max(
      1,
      Math.min(options.maxBatch ?? OPENAI_MAX_EMBEDDING_INPUTS, OPENAI_MAX_EMBEDDING_INPUTS),
    );
    this.retry = { maxRetries: 2, maxBackoffMs: 30_000, sleep: abortableSleep, ...options.retry };
  }

  dimensionsOf(model: string): number | undefined {
    return this.options.dimensions?.[model] ?? OPENAI_EMBEDDING_DIMENSIONS[model];
  }

  async embed(request: EmbeddingRequest): Promise<EmbeddingResponse> {
    const vectors: Float32Array[] = [];
    let inputTokens = 0;
    for (const batch of batches(request.texts, this.maxBatch)) {
      const response = await withRetries(() => this.call(request, batch), this.retry, request.signal);
      vectors.push(...response.vectors);
      inputTokens += response.inputTokens;
    }
    const lengths = new Set(vectors.map((v) => v.length));
    if (lengths.size > 1) {
      throw new ProviderError(
        'invalid_response',
        `openai/${request.model} answered vectors of ${[...lengths].join(', ')} dimensions`,
      );
    }
    return { vectors, inputTokens };
  }

  private async call(request: EmbeddingRequest, input: string[]): Promise<EmbeddingResponse> {
    const dimensions = this.options.dimensions?.[request.model];
    let response: OpenAI.CreateEmbeddingResponse;
    try {
      // The SDK asks for base64 and decodes it to Float32Array itself.
      response = await this.client.embeddings.create(
        { model: request.model, input, ...(dimensions ? { dimensions } : {}) },
        { signal: request.signal },
      );
    } catch (err) {
      throw classifyHttpError(err, this.name, request.signal);
    }
    const data = [...(response.data ?? [])].sort((a, b) => a.index - b.index);
    if (data.length !== input.length || data.some((d, i) => d.index !== i)) {
      throw new ProviderError(
        'invalid_response',
        `asked for ${input.length} embeddings, got ${data.length}`,
        {
          provider: this.name,
        },
      );
    }
    return {
      vectors: data.map((d) => normalize(Float32Array.from(d.embedding))),
      inputTokens: response.usage?.prompt_tokens ?? 0,
    };
  }
}

/** Consecutive runs of at most `max` texts and about MAX_BATCH_CHARS characters (one text at least). */
function* batches(texts: string[], max: number): Generator<string[]> {
  let batch: string[] = [];
  let chars = 0;
  for (const text of texts) {
    if (batch.length > 0 && (batch.length >= max || chars + text.length > MAX_BATCH_CHARS)) {
      yield batch;
      batch = [];
      chars = 0;
    }
    batch.push(text);
    chars += text.length;
  }
  if (batch.length > 0) yield batch;
}

/** The embedders every process uses: the built-in ones and `openai/<model>` with these options. */
export function createEmbedderRegistry(openai: OpenAIEmbeddingOptions = {}): EmbedderRegistry {
  return new EmbedderRegistry([new LocalEmbeddingProvider(), new OpenAIEmbeddingProvider(openai)]);
}
