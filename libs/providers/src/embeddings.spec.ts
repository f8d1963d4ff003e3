import { EmbedderRegistry, cosine, hashEmbed } from './embeddings';
import { ProviderError } from './types';

describe('embedders', () => {
  it('resolves local/hash-256 and refuses unknown references', () => {
    const registry = new EmbedderRegistry();
    expect(registry.resolve('local/hash-256').provider.dimensionsOf('hash-256')).toBe(256);
    for (const ref of ['local/nope', 'nope/x', 'hash-256', 'local/']) {
      expect(() => registry.resolve(ref)).toThrow(ProviderError);
    }
  });

  it('hash-256 is deterministic, normalised and lexical', async () => {
    const { provider, model } = new EmbedderRegistry().resolve('local/hash-256');
    const { vectors, inputTokens } = await provider.embed({
      model,
      texts: ['Deploys happen on Thursdays', 'deployment happens thursday', 'the cat sat on the mat'],
    });
    expect(inputTokens).toBe(0);
    expect(vectors.map((v) => v.length)).toEqual([256, 256, 256]);
    expect(cosine(vectors[0], vectors[0])).toBeCloseTo(1, 5);
    expect(Array.from(hashEmbed('Deploys happen on Thursdays'))).toEqual(Array.from(vectors[0]));
    expect(cosine(vectors[0], vectors[1])).toBeGreaterThan(cosine(vectors[0], vectors[2]) + 0.2);
  });

  it('embeds text with no words as a zero vector', () => {
    expect(Array.from(hashEmbed('  !? ')).every((x) => x === 0)).toBe(true);
  });
});
