import OpenAI from 'openai';
import { crossRealmSafeFetch, FakeLlmServer, scripted } from '@switchboard/testing';
import { cosine, hashEmbed } from './embeddings';
import { OpenAIEmbeddingProvider, createEmbedderRegistry } from './openai-embeddings';
import { embeddingCost, embeddingCostUsd } from './pricing';
import { ProviderError } from './types';

/**
 * `openai/<model>` embedders through the real `openai` SDK against the fake model server's
 * `/v1/embeddings` (its base64 default, batching, the provider layer's retries, failures).
 */
describe('openai embedder', () => {
  let server: FakeLlmServer;
  const sleeps: number[] = [];
  const make = (extra: Partial<ConstructorParameters<typeof OpenAIEmbeddingProvider>[0]> = {}) =>
    new OpenAIEmbeddingProvider({
      apiKey: 'k',
      baseURL: server.openaiBaseUrl,
      fetch: crossRealmSafeFetch,
      retry: { sleep: (ms) => (sleeps.push(ms), Promise.resolve()) },
      ...extra,
    });

  beforeEach(async () => {
    server = await FakeLlmServer.start();
    sleeps.length = 0;
  });
  afterEach(() => server.close());

  it('embeds through the SDK (base64 on the wire), normalised, in order, with billed tokens', async () => {
    const provider = make();
    const texts = ['Deploys happen on Thursdays', 'the cat sat on the mat', 'deployment on thursday'];
    const { vectors, inputTokens } = await provider.embed({ model: 'text-embedding-3-small', texts });
    expect(vectors.map((v) => v.length)).toEqual([1536, 1536, 1536]);
    expect(provider.dimensionsOf('text-embedding-3-small')).toBe(1536);
    expect(provider.dimensionsOf('text-embedding-3-large')).toBe(3072);
    expect(provider.dimensionsOf('nomic-embed-text')).toBeUndefined();
    // The fake's vectors are hashEmbed's: the order and the values came through base64 intact.
    vectors.forEach((v, i) => expect(cosine(v, hashEmbed(texts[i], 1536))).toBeCloseTo(1, 5));
    expect(inputTokens).toBe(texts.reduce((n, t) => n + Math.ceil(t.length / 4), 0));
    const [request] = server.requests;
    expect(request.path).toBe('/v1/embeddings');
    expect(request.body).toMatchObject({
      model: 'text-embedding-3-small',
      input: texts,
      encoding_format: 'base64',
    });
  });

  it('the fake answers floats when asked, and shortens v3 vectors by `dimensions`', async () => {
    const client = new OpenAI({
      apiKey: 'k',
      baseURL: server.openaiBaseUrl,
      fetch: crossRealmSafeFetch,
      maxRetries: 0,
    });
    const floats = await client.embeddings.create({
      model: 'text-embedding-3-large',
      input: 'hi',
      encoding_format: 'float',
    });
    expect(Array.isArray(floats.data[0].embedding)).toBe(true);
    expect(floats.data[0].embedding).toHaveLength(3072);

    const provider = make({ dimensions: { 'text-embedding-3-small': 256 } });
    expect(provider.dimensionsOf('text-embedding-3-small')).toBe(256);
    const { vectors } = await provider.embed({ model: 'text-embedding-3-small', texts: ['a'] });
    expect(vectors[0]).toHaveLength(256);
    expect(server.requests.at(-1)?.body).toMatchObject({ dimensions: 256 });

    const ada = make({ dimensions: { 'text-embedding-ada-002': 256 } });
    await expect(ada.embed({ model: 'text-embedding-ada-002', texts: ['a'] })).rejects.toMatchObject({
      kind: 'bad_request',
      details: { status: 400 },
    });
  });

  it('splits a long list into batches of the largest request', async () => {
    const provider = make({ maxBatch: 2 });
    const texts = ['one', 'two', 'three', 'four', 'five'];
    const { vectors, inputTokens } = await provider.embed({ model: 'text-embedding-3-small', texts });
    expect(server.requests.map((r) => (r.body as { input: string[] }).input)).toEqual([
      ['one', 'two'],
      ['three', 'four'],
      ['five'],
    ]);
    vectors.forEach((v, i) => expect(cosine(v, hashEmbed(texts[i], 1536))).toBeCloseTo(1, 5));
    expect(inputTokens).toBe(6); // ceil(chars / 4) each: "three" is 2
    expect((await provider.embed({ model: 'text-embedding-3-small', texts: [] })).vectors).toEqual([]);
    expect(server.requests).toHaveLength(3);
  });

  it('retries a server error with the provider policy, then answers', async () => {
    server.enqueueEmbeddings(scripted.error(500), scripted.rateLimited(2));
    const { vectors } = await make().embed({ model: 'text-embedding-3-small', texts: ['x'] });
    expect(vectors).toHaveLength(1);
    expect(server.requests).toHaveLength(3);
    // 500 ms after the first attempt; the 429's Retry-After (2 s) after the second.
    expect(sleeps).toEqual([500, 2000]);
  });

  it('gives up after the policy retries, with a classified error', async () => {
    server.enqueueEmbeddings(scripted.error(503), scripted.error(503), scripted.error(503));
    const err = await make()
      .embed({ model: 'text-embedding-3-small', texts: ['x'] })
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ProviderError);
    expect(err).toMatchObject({
      kind: 'server',
      retryable: true,
      details: { status: 503, provider: 'openai' },
    });
    expect(server.requests).toHaveLength(3);
  });

  it('fails fast on an unknown model (404) or a bad key (401), without retrying', async () => {
    await expect(make().embed({ model: 'no-such-model', texts: ['x'] })).rejects.toMatchObject({
      kind: 'bad_request',
      details: { status: 404 },
    });
    server.enqueueEmbeddings(scripted.error(401));
    await expect(make().embed({ model: 'text-embedding-3-small', texts: ['x'] })).rejects.toMatchObject({
      kind: 'auth',
    });
    expect(server.requests).toHaveLength(2);
    expect(sleeps).toEqual([]);
  });

  it("a compatible server's own model works through the same provider; vectors of two lengths are refused", async () => {
    server.embeddingModels.set('nomic-embed-text', { dimensions: 768, shortenable: false });
    const registry = createEmbedderRegistry({
      apiKey: 'k',
      baseURL: server.openaiBaseUrl,
      fetch: crossRealmSafeFetch,
    });
    const { provider, model } = registry.resolve('openai/nomic-embed-text');
    const { vectors } = await provider.embed({ model, texts: ['a', 'b'] });
    expect(vectors.map((v) => v.length)).toEqual([768, 768]);
    expect(registry.resolve('local/words-100d').provider.name).toBe('local');
    expect(() => registry.resolve('cohere/embed-v3')).toThrow(ProviderError);

    // A server whose model changes between two batches of one call: refused, never mixed.
    const changing = make({
      maxBatch: 1,
      fetch: async (input, init) => {
        const response = await crossRealmSafeFetch(input, init);
        server.embeddingModels.set('nomic-embed-text', { dimensions: 384, shortenable: false });
        return response;
      },
    });
    await expect(changing.embed({ model: 'nomic-embed-text', texts: ['a', 'b'] })).rejects.toMatchObject({
      kind: 'invalid_response',
      message: 'openai/nomic-embed-text answered vectors of 768, 384 dimensions',
    });
  });

  it('prices embedding tokens', () => {
    expect(embeddingCostUsd('openai/text-embedding-3-small', 1_000_000)).toBeCloseTo(0.02, 6);
    expect(embeddingCostUsd('openai/text-embedding-3-large', 1_000_000)).toBeCloseTo(0.13, 6);
    expect(embeddingCostUsd('openai/text-embedding-ada-002', 1_000_000)).toBeCloseTo(0.1, 6);
    expect(embeddingCost('local/words-100d', 1000)).toEqual({ usd: 0, source: 'rate_table' });
    expect(embeddingCost('openai/nomic-embed-text', 1000)).toEqual({ usd: 0, source: 'unpriced' });
    expect(
      embeddingCost('openai/nomic-embed-text', 1_000_000, { 'openai/*': { input: 0.01, output: 0 } }),
    ).toEqual({
      usd: 0.01,
      source: 'override',
    });
  });
});
