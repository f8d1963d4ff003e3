import { createTestEnv, waitFor, type TestEnv } from '@switchboard/testing';
import { newId } from '@switchboard/contracts';
import { hashApiKey } from '../../apps/gateway/src/auth/keys';
import { Api, newTenant } from '../support/api';
import { startGateway } from '../support/stack';

/**
 * A gateway caches the API keys it looked up (API_KEY_CACHE_MS, docs/adr/0017): a revoke through
 * it takes effect on the next request, one made elsewhere (another gateway, `npm run admin`, the
 * database) once the cached lookup expires; with 0 every request looks its key up.
 */
describe('API key cache', () => {
  const ADMIN = 'test-admin-token-0123456789';
  let env: TestEnv;
  let a: Awaited<ReturnType<typeof startGateway>>;
  let b: Awaited<ReturnType<typeof startGateway>>;
  let uncached: Awaited<ReturnType<typeof startGateway>>;
  let owner: Api;
  let tenantId: string;

  beforeAll(async () => {
    env = await createTestEnv();
    // `a` with a TTL no test outlasts; `b` with a short one.
    [a, b, uncached] = await Promise.all([
      startGateway(env.config({ API_KEY_CACHE_MS: '600000' })),
      startGateway(env.config({ API_KEY_CACHE_MS: '300' })),
      startGateway(env.config({ API_KEY_CACHE_MS: '0' })),
    ]);
    ({ api: owner, tenantId } = await newTenant(a.url, ADMIN, 'keys'));
  });

  afterAll(async () => {
    await Promise.all([a?.close(), b?.close(), uncached?.close()]);
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

  it('another gateway refuses a revoked key once its cached lookup expires', async () => {
    const { id, key } = await newKey();
    expect(await status(b.url, key)).toBe(200);
    expect((await owner.delete(`/v1/api-keys/${id}`)).status).toBe(200);
    await waitFor(async () => (await status(b.url, key)) === 401, { what: 'the revoke to reach gateway b' });
  });

  it('caches valid lookups only: a revoke outside the API is seen after the TTL, or at once uncached', async () => {
    const { id, key } = await newKey();
    expect(await status(a.url, key)).toBe(200);
    // As `npm run admin -- revoke-key` does: straight in Postgres, no gateway told.
    await env.db.apiKey.update({ where: { id }, data: { revokedAt: new Date() } });
    // `a` still trusts its lookup (its TTL outlasts the test); the uncached gateway looks it up.
    expect(await status(a.url, key)).toBe(200);
    expect(await status(uncached.url, key)).toBe(401);
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
});
