import { ApiKeyCache } from './key-cache';

const key = (n: number) => ({
  keyId: `key-${n}`,
  tenantId: `tenant-${n}`,
  role: 'admin',
  agentIds: null,
  expiresAt: null,
});

describe('ApiKeyCache', () => {
  let now = 0;
  const clock = () => now;
  beforeEach(() => {
    now = 1_000;
  });

  it('answers a key it was given until its TTL has passed', () => {
    const cache = new ApiKeyCache({ ttlMs: 5_000, now: clock });
    cache.set('h1', key(1));
    now += 4_999;
    expect(cache.get('h1')).toEqual(key(1));
    now += 2;
    expect(cache.get('h1')).toBeUndefined();
  });

  it('forgets an evicted key at once', () => {
    const cache = new ApiKeyCache({ ttlMs: 5_000, now: clock });
    cache.set('h1', key(1));
    cache.set('h2', key(2));
    cache.evict('h1');
    expect(cache.get('h1')).toBeUndefined();
    expect(cache.get('h2')).toEqual(key(2));
    cache.evict('unknown');
  });

  it('forgets every key when cleared (revocations may have gone unheard)', () => {
    const cache = new ApiKeyCache({ ttlMs: 5_000, now: clock });
    cache.set('h1', key(1));
    cache.set('h2', key(2));
    cache.clear();
    expect([cache.get('h1'), cache.get('h2'), cache.size]).toEqual([undefined, undefined, 0]);
  });

  it('holds at most max keys, the least recently used leaving first', () => {
    const cache = new ApiKeyCache({ ttlMs: 5_000, max: 3, now: clock });
    for (let i = 1; i <= 3; i++) cache.set(`h${i}`, key(i));
    expect(cache.get('h1')).toEqual(key(1));
    for (let i = 4; i <= 1_000; i++) cache.set(`h${i}`, key(i));
    expect(cache.size).toBe(3);
    expect(cache.get('h1')).toBeUndefined();
    expect(cache.get('h1000')).toEqual(key(1000));
  });

  it('keeps nothing when the TTL is 0', () => {
    const cache = new ApiKeyCache({ ttlMs: 0, now: clock });
    cache.set('h1', key(1));
    expect(cache.get('h1')).toBeUndefined();
    expect(cache.size).toBe(0);
  });
});
