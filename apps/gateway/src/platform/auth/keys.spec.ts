import { createHash } from 'node:crypto';
import { bearer, constantTimeEquals, generateApiKey, hashApiKey } from './keys';

const sha256 = (s: string) => createHash('sha256').update(s).digest('hex');

describe('generateApiKey', () => {
  it('returns an sb_ key of 240 random bits in base64url', () => {
    const { key } = generateApiKey();
    expect(key).toMatch(/^sb_[A-Za-z0-9_-]{40}$/);
  });

  it('uses the start of the key as its display prefix', () => {
    const { key, prefix } = generateApiKey();
    expect(prefix).toHaveLength(10);
    expect(key.startsWith(prefix)).toBe(true);
    expect(prefix.startsWith('sb_')).toBe(true);
  });

  it('stores the sha256 hex of the key as its hash', () => {
    const { key, hash } = generateApiKey();
    expect(hash).toMatch(/^[0-9a-f]{64}$/);
    expect(hash).toBe(sha256(key));
    expect(hashApiKey(key)).toBe(hash);
  });

  it('never returns the same key twice', () => {
    const keys = new Set(Array.from({ length: 50 }, () => generateApiKey().key));
    expect(keys.size).toBe(50);
  });
});

describe('hashApiKey', () => {
  it('is the sha256 hex digest', () => {
    expect(hashApiKey('abc')).toBe('ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad');
  });
});

describe('bearer', () => {
  it.each([
    ['Bearer sb_abc', 'sb_abc'],
    ['bearer sb_abc', 'sb_abc'],
    ['BEARER sb_abc', 'sb_abc'],
    ['Bearer   sb_abc  ', 'sb_abc'],
    ['Bearer\tsb_abc', 'sb_abc'],
  ])('reads the token from %p', (header, token) => {
    expect(bearer(header)).toBe(token);
  });

  it.each([
    ['a Basic scheme', 'Basic dXNlcjpwYXNz'],
    ['no token', 'Bearer'],
    ['a blank token', 'Bearer    '],
    ['two tokens', 'Bearer one two'],
    ['no scheme', 'sb_abc'],
    ['leading text', 'x Bearer sb_abc'],
    ['no space after the scheme', 'Bearersb_abc'],
    ['an empty header', ''],
  ])('rejects %s', (_label, header) => {
    expect(bearer(header)).toBeUndefined();
  });

  it('rejects a missing header', () => {
    expect(bearer(undefined)).toBeUndefined();
    expect(bearer([])).toBeUndefined();
  });

  it('reads the first of repeated headers', () => {
    expect(bearer(['Bearer first', 'Bearer second'])).toBe('first');
  });
});

describe('constantTimeEquals', () => {
  it('is true for equal strings', () => {
    expect(constantTimeEquals('secret-token', 'secret-token')).toBe(true);
    expect(constantTimeEquals('', '')).toBe(true);
  });

  it('is false for different strings of the same length', () => {
    expect(constantTimeEquals('secret-token', 'secret-tokeN')).toBe(false);
  });

  it('is false, without throwing, for strings of different lengths', () => {
    expect(constantTimeEquals('short', 'a much longer string')).toBe(false);
    expect(constantTimeEquals('abc', '')).toBe(false);
  });
});
