import IORedis from 'ioredis';
import { createTestEnv, waitFor, type TestEnv } from '@switchboard/testing';
import { newId } from '@switchboard/contracts';
import { revocationChannel } from '../../apps/gateway/src/platform/auth/key-revocations';
import { hashApiKey } from '../../apps/gateway/src/platform/auth/keys';
import { Api, newTenant } from '../support/api';
import { startGateway } from '../support/stack';

/**
 * A gateway caches the API keys it looked up (API_KEY_CACHE_MS, docs/adr/0017): a revoke through
 * the API takes effect on the next request through that gateway and, told over Redis, through the
 * others; one made elsewhere (`npm run admin`, the database) once the cached lookup expires; with 0
 * every request looks its key up.
 */
describe('API key cache', () => {
  const ADMIN = 'test-admin-token-0123456789';
  let env: TestEnv;
  let a: Awaited<ReturnType<typeof startGateway>>;
  let b: Awaited<ReturnType<typeof startGateway>>;
  let c: Awaited<ReturnType<typeof startGateway>>;
  let uncached: Awaited<ReturnType<typeof startGateway>>;
  let redis: IORedis;
  let owner: Api;
  let tenantId: string;

  beforeAll(async () => {
    env = await createTestEnv();
    // `a` and `c` with a TTL no test outlasts; `b` with a short one.
    [a, b, c, uncached] = await Promise.all([
      startGateway(env.config({ API_KEY_CACHE_MS: '600000' })),
      startGateway(env.config({ API_KEY_CACHE_MS: '300' })),
      startGateway(env.config({ API_KEY_CACHE_MS: '600000' })),
      startGateway(env.config({ API_KEY_CACHE_MS: '0' })),
    ]);
    ({ api: owner, tenantId } = await newTenant(a.url, ADMIN, 'keys'));
    redis = new IORedis(env.redisUrl);
  });

  afterAll(async () => {
    redis?.disconnect();
    await Promise.all([a?.close(), b?.close(), c?.close(), uncached?.close()]);
    await env?.cleanup();
  });

  const newKey = async (): Promise<{ id: string; key: string }> => {
    const created = await owner.post('/v1/api-keys', { name: 'temp' });
    expect(created.status).toBe(201);
    return created.body;
  };
  const status = async (url: string, key: string) => (await new Api(url, key).get('/v1/agents')).status;

  it('a key revoked through a gateway is refused by it on the next request, cached or not', async () => {
    const { id, key } = await newKey();
    expect(await status(a.url, key)).toBe(200);
    expect(await status(a.url, key)).toBe(200);
    expect((await owner.delete(`/v1/api-keys/${id}`)).status).toBe(200);
    expect(await status(a.url, key)).toBe(401);
    expect(await status(uncached.url, key)).toBe(401);
  });

  const subscribed = async () =>
    Number(((await redis.pubsub('NUMSUB', revocationChannel(env.queuePrefix))) as [string, number])[1]);

  it('another gateway hears of the revoke on Redis and refuses the key long before its TTL', async () => {
    // The three caching gateways subscribed to the revocation channel (the uncached one needs none).
    await waitFor(async () => (await subscribed()) === 3, { what: 'every caching gateway subscribed' });
    const { id, key } = await newKey();
    expect(await status(c.url, key)).toBe(200);
    expect(await status(c.url, key)).toBe(200);
    expect((await owner.delete(`/v1/api-keys/${id}`)).status).toBe(200);
    // `c` cached the key for ten minutes: only the published eviction can refuse it this soon.
    await waitFor(async () => (await status(c.url, key)) === 401, {
      what: 'the revoke to reach gateway c',
      timeoutMs: 3_000,
    });
  });

  it('caches valid lookups only: a revoke outside the API is seen after the TTL, or at once uncached', async () => {
    const { id, key } = await newKey();
    expect(await status(a.url, key)).toBe(200);
    expect(await status(b.url, key)).toBe(200);
    // As `npm run admin -- revoke-key` does: straight in Postgres, no gateway told.
    await env.db.apiKey.update({ where: { id }, data: { revokedAt: new Date() } });
    // `a` still trusts its lookup (its TTL outlasts the test); the uncached gateway looks it up;
    // `b` (300 ms) drops its lookup when it expires.
    expect(await status(a.url, key)).toBe(200);
    expect(await status(uncached.url, key)).toBe(401);
    await waitFor(async () => (await status(b.url, key)) === 401, {
      what: 'gateway b to look the key up again',
    });
    // A refused key is never cached: a key that becomes valid again is accepted on the next request.
    await env.db.apiKey.update({ where: { id }, data: { revokedAt: null } });
    expect(await status(b.url, key)).toBe(200);
  });

  it('an unknown key is refused and not remembered: once it exists it is accepted at once', async () => {
    const guess = 'sb_' + 'g'.repeat(40);
    expect(await status(a.url, guess)).toBe(401);
    expect(await status(a.url, guess)).toBe(401);
    await env.db.apiKey.create({
      data: { id: newId(), tenantId, name: 'late', prefix: guess.slice(0, 10), hash: hashApiKey(guess) },
    });
    expect(await status(a.url, guess)).toBe(200);
  });

  it('a request with a key sets its lastUsedAt (off the request, coarse), shown by GET /v1/api-keys', async () => {
    const used = await newKey();
    const unused = await newKey();
    const listed = async () => {
      const res = await owner.get('/v1/api-keys');
      expect(res.status).toBe(200);
      const byId = new Map<string, { lastUsedAt: string | null }>(
        res.body.data.map((k: { id: string; lastUsedAt: string | null }) => [k.id, k]),
      );
      return { used: byId.get(used.id)?.lastUsedAt, unused: byId.get(unused.id)?.lastUsedAt };
    };
    expect(await listed()).toEqual({ used: null, unused: null });
    const before = Date.now();
    expect(await status(uncached.url, used.key)).toBe(200);
    const seen = await waitFor(async () => (await listed()).used, { what: 'the key to show its last use' });
    expect(new Date(seen).getTime()).toBeGreaterThanOrEqual(before - 1000);
    expect(new Date(seen).getTime()).toBeLessThanOrEqual(Date.now() + 1000);
    expect((await listed()).unused).toBeNull();
    // The row says the same.
    const row = await env.db.apiKey.findUniqueOrThrow({ where: { id: used.id } });
    expect(row.lastUsedAt?.toISOString()).toBe(seen);
  });

  it('a gateway that stops closes its revocation subscription', async () => {
    await waitFor(async () => (await subscribed()) === 3, { what: 'every caching gateway subscribed' });
    await c.close();
    await waitFor(async () => (await subscribed()) === 2, { what: "gateway c's subscription to close" });
  });
});
