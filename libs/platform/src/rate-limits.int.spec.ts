import { randomUUID } from 'node:crypto';
import IORedis from 'ioredis';
import { RateLimits } from './rate-limits';

/**
 * The known refusal (docs/adr/0078) against a real Redis: two RateLimits stand for two gateway
 * replicas sharing one count. Once Redis said a quota is spent, the replica that heard it refuses
 * from memory with the headers `consume` sent; the other still counts in Redis, where it learns.
 */
describe('RateLimits.knownRefusal (two replicas, one Redis)', () => {
  let redis: IORedis;
  const prefix = `rl-int-${randomUUID()}`;

  beforeAll(async () => {
    redis = new IORedis(process.env.REDIS_URL ?? 'redis://127.0.0.1:6379', { maxRetriesPerRequest: null });
    // The limiter answers from its per-process fallback while the connection is not ready.
    await redis.ping();
  });

  // The counts expire with their one-minute window.
  afterAll(() => redis.disconnect());

  it('answers a spent quota from memory with the same headers, counting nothing more', async () => {
    const one = new RateLimits(redis, { prefix });
    const two = new RateLimits(redis, { prefix });
    const subjects = [{ policy: 'admission', key: `t:${randomUUID()}`, quota: 3 }];
    const answers = [];
    for (let i = 0; i < 3; i++) {
      expect(one.knownRefusal(subjects)).toBeUndefined();
      answers.push(await one.consume('admission', subjects));
    }
    expect(answers.map((a) => [a?.allowed, a?.degraded])).toEqual([
      [true, false],
      [true, false],
      [true, false],
    ]);
    // The third spent the quota: the next is refused without asking Redis.
    const known = one.knownRefusal(subjects);
    expect(known).toMatchObject({
      allowed: false,
      policy: 'admission',
      headers: {
        'ratelimit-policy': '"admission";q=3;w=60',
        ratelimit: expect.stringMatching(/^"admission";r=0;t=([1-9]|[1-5][0-9]|60)$/),
        'retry-after': expect.stringMatching(/^([1-9]|[1-5][0-9]|60)$/),
      },
    });
    const refused = await one.consume('admission', subjects);
    expect(refused?.allowed).toBe(false);
    expect(Object.keys(refused!.headers).sort()).toEqual(Object.keys(known!.headers).sort());
    const key = `${prefix}:rl:admission:${subjects[0].key}`;
    expect(await redis.get(key)).toBe('3');

    // The other replica has heard nothing: it counts in Redis, is refused there, and then knows.
    expect(two.knownRefusal(subjects)).toBeUndefined();
    expect((await two.consume('admission', subjects))?.allowed).toBe(false);
    expect(two.knownRefusal(subjects)?.allowed).toBe(false);
    expect(await redis.get(key)).toBe('4');

    // Another tenant's count is its own.
    expect(one.knownRefusal([{ ...subjects[0], key: `t:${randomUUID()}` }])).toBeUndefined();
  });
});
