import IORedis from 'ioredis';
import {
  bucketFor,
  effectiveLimits,
  formatPolicy,
  formatRateLimit,
  RateLimits,
  subjectsFor,
  type RateLimitDefaults,
} from './rate-limits';

const DEFAULTS: RateLimitDefaults = { admission: 60, reads: 600, writes: 120, webhooks: 30 };
const TENANT = '01a20360-0000-7000-8000-000000000001';
const KEY = '01a20360-0000-7000-8000-000000000002';
const TRIGGER = '01a20360-0000-7000-8000-000000000003';

describe('rate limit headers (draft-ietf-httpapi-ratelimit-headers-10)', () => {
  it('RateLimit-Policy: the name as a string, quota q and window w in seconds', () => {
    expect(formatPolicy('admission', 60)).toBe('"admission";q=60;w=60');
    expect(formatPolicy('reads-key', 5, 10)).toBe('"reads-key";q=5;w=10');
  });

  it('RateLimit: remaining r and reset t in whole seconds, rounded up, never negative', () => {
    expect(formatRateLimit('admission', 12, 4_200)).toBe('"admission";r=12;t=5');
    expect(formatRateLimit('admission', 0, 60_000)).toBe('"admission";r=0;t=60');
    expect(formatRateLimit('admission', -3, -5)).toBe('"admission";r=0;t=0');
    expect(formatRateLimit('admission', 2.7, 1)).toBe('"admission";r=2;t=1');
  });
});

describe('bucket choice', () => {
  it('a declared bucket wins; otherwise GET and HEAD are reads and the rest writes', () => {
    expect(bucketFor('POST', 'admission')).toBe('admission');
    expect(bucketFor('GET')).toBe('reads');
    expect(bucketFor('HEAD')).toBe('reads');
    for (const m of ['POST', 'PATCH', 'PUT', 'DELETE']) expect(bucketFor(m)).toBe('writes');
  });

  it('overrides replace defaults per bucket; a key may use its whole tenant quota unless set lower', () => {
    expect(effectiveLimits(DEFAULTS)).toEqual({
      ...DEFAULTS,
      admissionPerKey: 60,
      readsPerKey: 600,
      writesPerKey: 120,
    });
    expect(effectiveLimits(DEFAULTS, { admission: 0, reads: 10, readsPerKey: 4 })).toMatchObject({
      admission: 0,
      admissionPerKey: 0,
      reads: 10,
      readsPerKey: 4,
      webhooks: 30,
    });
  });

  it('counts the tenant, and the key only when its quota is below the tenant one', () => {
    const who = { tenantId: TENANT, apiKeyId: KEY };
    expect(subjectsFor('admission', effectiveLimits(DEFAULTS), who)).toEqual([
      { policy: 'admission', key: `t:${TENANT}`, quota: 60 },
    ]);
    expect(subjectsFor('reads', effectiveLimits(DEFAULTS, { readsPerKey: 5 }), who)).toEqual([
      { policy: 'reads', key: `t:${TENANT}`, quota: 600 },
      { policy: 'reads-key', key: `k:${KEY}`, quota: 5 },
    ]);
    // The tenant's quota off, a key's on: only the key counts.
    expect(subjectsFor('writes', effectiveLimits(DEFAULTS, { writes: 0, writesPerKey: 7 }), who)).toEqual([
      { policy: 'writes-key', key: `k:${KEY}`, quota: 7 },
    ]);
    // Off altogether: nothing to count.
    expect(subjectsFor('admission', effectiveLimits({ ...DEFAULTS, admission: 0 }), who)).toEqual([]);
  });

  it('webhooks count per trigger only', () => {
    const limits = effectiveLimits(DEFAULTS);
    expect(subjectsFor('webhooks', limits, { tenantId: TENANT, triggerId: TRIGGER })).toEqual([
      { policy: 'webhooks', key: `trigger:${TRIGGER}`, quota: 30 },
    ]);
    expect(subjectsFor('webhooks', limits, { tenantId: TENANT })).toEqual([]);
    // Off: nothing to count (a quota of 0 would refuse everything).
    expect(
      subjectsFor('webhooks', effectiveLimits(DEFAULTS, { webhooks: 0 }), {
        tenantId: TENANT,
        triggerId: TRIGGER,
      }),
    ).toEqual([]);
  });
});

describe('while Redis is unreachable', () => {
  let redis: IORedis;
  let limits: RateLimits;
  const errors: string[] = [];

  beforeAll(() => {
    // Nobody listens on port 1: the connection never becomes ready.
    redis = new IORedis('redis://127.0.0.1:1', {
      lazyConnect: true,
      maxRetriesPerRequest: null,
      retryStrategy: () => null,
    });
    limits = new RateLimits(redis, { prefix: 'unit', onRedisError: (_e, bucket) => errors.push(bucket) });
  });

  afterAll(() => redis.disconnect());

  it('admission and writes count per process, with the same quota, and answer at once', async () => {
    const started = Date.now();
    const subjects = [{ policy: 'admission', key: `t:${TENANT}`, quota: 3 }];
    const answers = [];
    for (let i = 0; i < 4; i++) answers.push(await limits.consume('admission', subjects));
    expect(answers.map((a) => a?.allowed)).toEqual([true, true, true, false]);
    expect(answers.every((a) => a?.degraded)).toBe(true);
    expect(answers[3]?.headers).toMatchObject({
      'ratelimit-policy': '"admission";q=3;w=60',
      ratelimit: expect.stringMatching(/^"admission";r=0;t=\d+$/),
      'retry-after': expect.stringMatching(/^\d+$/),
    });
    const writes = await limits.consume('writes', [{ policy: 'writes', key: `t:${TENANT}`, quota: 1 }]);
    expect(writes?.allowed).toBe(true);
    expect(Date.now() - started).toBeLessThan(1_000);
    expect(errors).toContain('admission');
  });

  it('reads and webhooks are not limited', async () => {
    for (let i = 0; i < 5; i++) {
      expect(
        await limits.consume('reads', [{ policy: 'reads', key: `t:${TENANT}`, quota: 1 }]),
      ).toBeUndefined();
      expect(
        await limits.consume('webhooks', [{ policy: 'webhooks', key: `trigger:${TRIGGER}`, quota: 1 }]),
      ).toBeUndefined();
    }
  });
});
