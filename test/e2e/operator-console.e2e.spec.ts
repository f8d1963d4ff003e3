import { Queue } from 'bullmq';
import type IORedis from 'ioredis';
import { QueueName } from '@switchboard/contracts';
import { createRedis } from '@switchboard/queue';
import { createTestEnv, type TestEnv } from '@switchboard/testing';
import { Api, newTenant, type ApiResponse } from '../support/api';
import { FIXTURES, startGateway, type Running } from '../support/stack';

jest.setTimeout(120_000);

const ADMIN = 'test-admin-token-0123456789';
const UNKNOWN_ID = '01a20360-0000-7000-8000-000000000000';

/**
 * What the web console needs of the gateway besides the tenant API, over HTTP against a real
 * gateway: the operator acting as a tenant (ADMIN_TOKEN + X-Switchboard-Tenant), whoami, the
 * console's config, the operator's key management, queue depths, and the sessions list's filters.
 */
describe('console platform endpoints', () => {
  let env: TestEnv;
  let gateway: Running & { url: string };
  let admin: Api;
  let anonymous: Api;
  let redis: IORedis;

  beforeAll(async () => {
    env = await createTestEnv();
    gateway = await startGateway(
      env.config({ SCRIPTED_FIXTURES_DIR: FIXTURES, JAEGER_UI_URL: 'http://jaeger.local:16686/' }),
    );
    admin = new Api(gateway.url, ADMIN);
    anonymous = new Api(gateway.url);
    redis = createRedis(env.redisUrl);
  });

  afterAll(async () => {
    await gateway?.close();
    redis?.disconnect();
    await env?.cleanup();
  });

  const expectError = (res: ApiResponse, status: number, code: string) =>
    expect({ status: res.status, code: res.body?.error?.code }).toEqual({ status, code });
  const acting = (tenantId: string) => ({ 'x-switchboard-tenant': tenantId });

  describe('the operator acting as a tenant', () => {
    it('runs tenant routes as the named tenant and audits its writes as operator', async () => {
      const a = await newTenant(gateway.url, ADMIN, 'acted-on');
      const b = await newTenant(gateway.url, ADMIN, 'other');
      const agent = await a.api.post('/v1/agents', { name: 'mine', model: 'scripted/echo' });
      // The operator sees tenant A's agents, and not B's.
      const list = await admin.get('/v1/agents', acting(a.tenantId));
      expect(list.status).toBe(200);
      expect(list.body.data.map((x: { id: string }) => x.id)).toEqual([agent.body.id]);
      expect((await admin.get('/v1/agents', acting(b.tenantId))).body.data).toEqual([]);
      expectError(await admin.get(`/v1/agents/${agent.body.id}`, acting(b.tenantId)), 404, 'not_found');

      const created = await admin.request('POST', '/v1/api-keys', {
        body: { name: 'made by the operator' },
        headers: acting(a.tenantId),
      });
      expect(created.status).toBe(201);
      const audit = await admin.get(`/v1/admin/audit-events?tenantId=${a.tenantId}&action=api_key.created`);
      const entry = audit.body.data.find((e: { targetId: string }) => e.targetId === created.body.id);
      expect(entry).toMatchObject({ actor: 'operator', tenantId: a.tenantId });
    });

    it('404s an unknown tenant, 400s a malformed one, 401s without the admin token', async () => {
      expectError(await admin.get('/v1/agents', acting(UNKNOWN_ID)), 404, 'not_found');
      expectError(await admin.get('/v1/agents', acting('tenant-1')), 400, 'bad_request');
      // ADMIN_TOKEN alone is no tenant's key.
      expectError(await admin.get('/v1/agents'), 401, 'unauthorized');
      const { api, tenantId } = await newTenant(gateway.url, ADMIN);
      // The header is the operator's: a tenant key (or nothing) with it is refused.
      expectError(await api.get('/v1/agents', acting(tenantId)), 401, 'unauthorized');
      expectError(await anonymous.get('/v1/agents', acting(tenantId)), 401, 'unauthorized');
    });
  });

  describe('GET /v1/whoami', () => {
    it('tells a tenant key, the operator and the operator acting as a tenant apart', async () => {
      const { api, tenantId, keyId } = await newTenant(gateway.url, ADMIN, 'whoami-co');
      const tenant = await api.get('/v1/whoami');
      expect(tenant.status).toBe(200);
      expect(tenant.body).toEqual({
        kind: 'tenant',
        tenantId,
        tenantName: 'whoami-co',
        keyId,
        keyPrefix: expect.any(String),
      });
      expect(api.key!.startsWith(tenant.body.keyPrefix)).toBe(true);
      expect((await admin.get('/v1/whoami')).body).toEqual({ kind: 'operator' });
      expect((await admin.get('/v1/whoami', acting(tenantId))).body).toEqual({
        kind: 'operator',
        actingTenantId: tenantId,
        actingTenantName: 'whoami-co',
      });
      expectError(await admin.get('/v1/whoami', acting(UNKNOWN_ID)), 404, 'not_found');
    });

    it('401s a missing, wrong or revoked credential', async () => {
      expectError(await anonymous.get('/v1/whoami'), 401, 'unauthorized');
      expectError(await anonymous.withKey('sk_nope').get('/v1/whoami'), 401, 'unauthorized');
      const { api, keyId } = await newTenant(gateway.url, ADMIN);
      expect((await api.delete(`/v1/api-keys/${keyId}`)).status).toBe(200);
      expectError(await api.get('/v1/whoami'), 401, 'unauthorized');
    });
  });

  it('GET /v1/console/config needs no credentials and names the Jaeger UI', async () => {
    const res = await anonymous.get('/v1/console/config');
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ jaegerUiUrl: 'http://jaeger.local:16686', version: expect.any(String) });
    expect(res.body.version).not.toBe('unknown');
  });

  describe("the operator's keys of a tenant", () => {
    it('lists, creates (secret once) and revokes them, audited as operator', async () => {
      const { tenantId, keyId } = await newTenant(gateway.url, ADMIN, 'keyed');
      const listed = await admin.get(`/v1/admin/tenants/${tenantId}/api-keys`);
      expect(listed.status).toBe(200);
      expect(listed.body.data.map((k: { id: string }) => k.id)).toEqual([keyId]);
      expect(listed.body.data[0].key).toBeUndefined();

      const created = await admin.post(`/v1/admin/tenants/${tenantId}/api-keys`, { name: 'ops' });
      expect(created.status).toBe(201);
      expect(created.body).toMatchObject({ name: 'ops', key: expect.any(String), revokedAt: null });
      const key = new Api(gateway.url, created.body.key);
      expect((await key.get('/v1/whoami')).body).toMatchObject({ kind: 'tenant', tenantId });
      const again = await admin.get(`/v1/admin/tenants/${tenantId}/api-keys?limit=1`);
      expect(again.body.data).toHaveLength(1);
      expect(again.body.nextCursor).toEqual(expect.any(String));
      expect(JSON.stringify(again.body)).not.toContain(created.body.key);

      const revoked = await admin.delete(`/v1/admin/tenants/${tenantId}/api-keys/${created.body.id}`);
      expect(revoked.status).toBe(200);
      expect(revoked.body.revokedAt).toEqual(expect.any(String));
      expect(revoked.body.key).toBeUndefined();
      expectError(await key.get('/v1/whoami'), 401, 'unauthorized');

      const audit = await admin.get(`/v1/admin/audit-events?tenantId=${tenantId}`);
      const mine = audit.body.data.filter((e: { targetId: string }) => e.targetId === created.body.id);
      expect(mine.map((e: { action: string; actor: string }) => [e.action, e.actor]).sort()).toEqual([
        ['api_key.created', 'operator'],
        ['api_key.revoked', 'operator'],
      ]);
    });

    it('404s an unknown tenant and another tenant’s key, 400s a bad body, 401s without the admin token', async () => {
      const a = await newTenant(gateway.url, ADMIN);
      const b = await newTenant(gateway.url, ADMIN);
      expectError(await admin.get(`/v1/admin/tenants/${UNKNOWN_ID}/api-keys`), 404, 'not_found');
      expectError(await admin.get('/v1/admin/tenants/nope/api-keys'), 404, 'not_found');
      expectError(await admin.post(`/v1/admin/tenants/${UNKNOWN_ID}/api-keys`, {}), 404, 'not_found');
      expectError(
        await admin.delete(`/v1/admin/tenants/${a.tenantId}/api-keys/${b.keyId}`),
        404,
        'not_found',
      );
      expectError(
        await admin.post(`/v1/admin/tenants/${a.tenantId}/api-keys`, { name: 'x', extra: 1 }),
        400,
        'validation_failed',
      );
      expectError(
        await admin.get(`/v1/admin/tenants/${a.tenantId}/api-keys?limit=0`),
        400,
        'validation_failed',
      );
      expectError(await anonymous.get(`/v1/admin/tenants/${a.tenantId}/api-keys`), 401, 'unauthorized');
      expectError(await a.api.get(`/v1/admin/tenants/${a.tenantId}/api-keys`), 401, 'unauthorized');
      expectError(await a.api.post(`/v1/admin/tenants/${a.tenantId}/api-keys`, {}), 401, 'unauthorized');
      // B's key still works: nothing above touched it.
      expect((await b.api.get('/v1/whoami')).status).toBe(200);
    });
  });

  describe('GET /v1/admin/queues', () => {
    it('gives every queue’s counts and its oldest waiting job’s wait, with the board’s address', async () => {
      // No worker runs in this file: a job added to the schedules queue stays waiting.
      const schedules = new Queue(QueueName.Schedules, { connection: redis, prefix: env.queuePrefix });
      await schedules.add('probe', {}, { removeOnComplete: true });
      const res = await admin.get('/v1/admin/queues');
      await schedules.close();
      expect(res.status).toBe(200);
      expect(res.body.boardUrl).toBe('/admin/queues');
      expect(res.body.data.map((q: { name: string }) => q.name).sort()).toEqual(
        Object.values(QueueName).sort(),
      );
      const probed = res.body.data.find((q: { name: string }) => q.name === QueueName.Schedules);
      expect(probed).toEqual({
        name: QueueName.Schedules,
        waiting: 1,
        active: 0,
        delayed: 0,
        failed: 0,
        oldestWaitingMs: expect.any(Number),
      });
      expect(probed.oldestWaitingMs).toBeGreaterThanOrEqual(0);
      const idle = res.body.data.find((q: { name: string }) => q.name === QueueName.PostTurn);
      expect(idle.oldestWaitingMs).toBeNull();
    });

    it('401s without the admin token', async () => {
      expectError(await anonymous.get('/v1/admin/queues'), 401, 'unauthorized');
      const { api } = await newTenant(gateway.url, ADMIN);
      expectError(await api.get('/v1/admin/queues'), 401, 'unauthorized');
      expectError(await api.get('/v1/admin/processes'), 401, 'unauthorized');
    });
  });

  describe('GET /v1/sessions filters', () => {
    it('narrows by agent and status, pages with the filters, and gives each session its last activity', async () => {
      const { api, tenantId } = await newTenant(gateway.url, ADMIN);
      const one = (await api.post('/v1/agents', { name: 'one', model: 'scripted/echo' })).body.id;
      const two = (await api.post('/v1/agents', { name: 'two', model: 'scripted/echo' })).body.id;
      const s1 = (await api.post('/v1/sessions', { agentId: one })).body;
      const s2 = (await api.post('/v1/sessions', { agentId: one })).body;
      const s3 = (await api.post('/v1/sessions', { agentId: two })).body;
      expect((await api.delete(`/v1/sessions/${s2.id}`)).status).toBe(200);

      const ids = (res: ApiResponse) => res.body.data.map((s: { id: string }) => s.id);
      expect(ids(await api.get(`/v1/sessions?agentId=${one}`))).toEqual([s1.id, s2.id]);
      expect(ids(await api.get(`/v1/sessions?agentId=${one}&status=active`))).toEqual([s1.id]);
      expect(ids(await api.get('/v1/sessions?status=closed'))).toEqual([s2.id]);
      expect(ids(await api.get('/v1/sessions?status=active'))).toEqual([s1.id, s3.id]);
      // Paged with the filter: the cursor goes on within it.
      const first = await api.get(`/v1/sessions?status=active&limit=1`);
      expect(ids(first)).toEqual([s1.id]);
      const next = await api.get(`/v1/sessions?status=active&limit=1&cursor=${first.body.nextCursor}`);
      expect(ids(next)).toEqual([s3.id]);
      expect(next.body.nextCursor).toBeNull();

      const all = await api.get('/v1/sessions');
      for (const s of all.body.data) expect(s.lastActivityAt).toEqual(s.updatedAt);
      // The operator acting as the tenant sees the same list.
      expect(ids(await admin.get(`/v1/sessions?agentId=${two}`, acting(tenantId)))).toEqual([s3.id]);
    });

    it('400s a bad filter; another tenant’s agent filters to nothing', async () => {
      const { api } = await newTenant(gateway.url, ADMIN);
      const other = await newTenant(gateway.url, ADMIN);
      const theirs = (await other.api.post('/v1/agents', { name: 'theirs', model: 'scripted/echo' })).body.id;
      await other.api.post('/v1/sessions', { agentId: theirs });
      expectError(await api.get('/v1/sessions?status=sleeping'), 400, 'validation_failed');
      expectError(await api.get('/v1/sessions?agentId=nope'), 400, 'validation_failed');
      expectError(await api.get('/v1/sessions?limit=1&colour=red'), 400, 'validation_failed');
      const res = await api.get(`/v1/sessions?agentId=${theirs}`);
      expect(res.status).toBe(200);
      expect(res.body.data).toEqual([]);
    });
  });
});
