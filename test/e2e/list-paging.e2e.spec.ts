import { createTestEnv, type TestEnv } from '@switchboard/testing';
import { newTenant, type Api, type ApiResponse } from '../support/api';
import { startGateway } from '../support/stack';

/**
 * GET /v1/triggers and GET /v1/api-keys page like every other list route (issue 19): `limit`
 * (1..200, default 50) and an opaque `cursor`, `nextCursor` null on the last page. Revoked triggers
 * are listed only with `includeRevoked=true`; revoked keys are listed (they show `revokedAt`).
 */
jest.setTimeout(120_000);

const ADMIN = 'test-admin-token-0123456789';

describe('paging triggers and API keys', () => {
  let env: TestEnv;
  let gateway: Awaited<ReturnType<typeof startGateway>>;
  let api: Api;

  beforeAll(async () => {
    env = await createTestEnv();
    gateway = await startGateway(env.config());
    ({ api } = await newTenant(gateway.url, ADMIN));
  });

  afterAll(async () => {
    await gateway?.close();
    await env?.cleanup();
  });

  /** Every page of a list route, following nextCursor. */
  async function all(path: string, limit: number): Promise<{ pages: number; ids: string[] }> {
    const ids: string[] = [];
    let cursor: string | null = null;
    let pages = 0;
    do {
      const sep = path.includes('?') ? '&' : '?';
      const res: ApiResponse = await api.get(
        `${path}${sep}limit=${limit}${cursor ? `&cursor=${cursor}` : ''}`,
      );
      expect(res.status).toBe(200);
      expect(res.body.data.length).toBeLessThanOrEqual(limit);
      ids.push(...res.body.data.map((r: { id: string }) => r.id));
      cursor = res.body.nextCursor;
      pages++;
    } while (cursor);
    return { pages, ids };
  }

  it('triggers: limit and cursor page them by id; revoked ones only when asked for', async () => {
    const agent = await api.post('/v1/agents', { name: 'a' });
    const created: string[] = [];
    for (let i = 0; i < 5; i++) {
      const t = await api.post('/v1/triggers', { agentId: agent.body.id, name: `t${i}`, scheme: 'token' });
      expect(t.status).toBe(201);
      created.push(t.body.id);
    }
    expect((await api.delete(`/v1/triggers/${created[1]}`)).status).toBe(200);
    const live = created.filter((id) => id !== created[1]);

    const first = await api.get('/v1/triggers?limit=2');
    expect(first.status).toBe(200);
    expect(first.body.data.map((t: { id: string }) => t.id)).toEqual(live.slice(0, 2));
    expect(first.body.nextCursor).toEqual(expect.any(String));
    expect(await all('/v1/triggers', 2)).toEqual({ pages: 2, ids: live });
    expect(await all('/v1/triggers?includeRevoked=true', 2)).toEqual({ pages: 3, ids: created });
    const whole = await api.get('/v1/triggers');
    expect(whole.body).toMatchObject({ nextCursor: null });
    expect(whole.body.data).toHaveLength(4);

    for (const bad of ['limit=-5', 'limit=0', 'limit=201', 'cursor=%25%25%25', 'cursor=nonsense']) {
      const res = await api.get(`/v1/triggers?${bad}`);
      expect([bad, res.status]).toEqual([bad, 400]);
    }
  });

  it('API keys: limit and cursor page them by id, revoked ones included', async () => {
    const keys = [];
    for (let i = 0; i < 4; i++) keys.push((await api.post('/v1/api-keys', { name: `k${i}` })).body.id);
    expect((await api.delete(`/v1/api-keys/${keys[0]}`)).status).toBe(200);
    const listed = await all('/v1/api-keys', 2);
    // The tenant's first key, then the four made here.
    expect(listed.pages).toBe(3);
    expect(listed.ids.slice(1)).toEqual(keys);
    for (const bad of ['limit=-5', 'limit=abc', 'cursor=%25%25%25']) {
      const res = await api.get(`/v1/api-keys?${bad}`);
      expect([bad, res.status]).toEqual([bad, 400]);
    }
  });
});
