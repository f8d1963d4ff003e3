import { createTestEnv, waitFor, type TestEnv } from '@switchboard/testing';
import { Api, newTenant } from '../support/api';
import { startGateway, startTriage } from '../support/stack';

/**
 * GET /v1/triggers/:id/deliveries over HTTP: what reached a trigger's URL, newest first, with triage's
 * decision once it is made; paged; the delivered body never shown; another tenant's trigger a 404.
 */
jest.setTimeout(120_000);

describe('trigger deliveries', () => {
  let env: TestEnv;
  let gateway: Awaited<ReturnType<typeof startGateway>>;
  let triage: Awaited<ReturnType<typeof startTriage>>;
  let api: Api;
  let other: Api;
  const ADMIN = 'test-admin-token-0123456789';

  beforeAll(async () => {
    env = await createTestEnv();
    const config = env.config();
    gateway = await startGateway(config);
    triage = await startTriage(config);
    ({ api } = await newTenant(gateway.url, ADMIN, 'deliveries-inc'));
    ({ api: other } = await newTenant(gateway.url, ADMIN, 'someone-else'));
  });

  afterAll(async () => {
    await triage?.close();
    await gateway?.close();
    await env?.cleanup();
  });

  it("lists a trigger's deliveries with their triage decisions, paged, tenant-scoped", async () => {
    const agent = await api.post('/v1/agents', { name: 'watcher' });
    expect(agent.status).toBe(201);
    // Rules only: triage decides without a model.
    const trigger = await api.post('/v1/triggers', {
      agentId: agent.body.id,
      name: 'alerts',
      scheme: 'token',
      rules: [
        { match: { eventType: 'ping' }, action: 'drop', reason: 'health check' },
        { match: {}, action: 'drop', reason: 'not now' },
      ],
    });
    expect(trigger.status).toBe(201);
    const hook = new Api(gateway.url);
    const sent: string[] = [];
    for (const [type, key] of [
      ['ping', 'd-1'],
      ['disk_full', 'd-2'],
    ]) {
      const r = await hook.request('POST', trigger.body.path, {
        raw: JSON.stringify({ type, secret: 'body-only-value' }),
        headers: { 'content-type': 'application/json', 'idempotency-key': key },
      });
      expect(r.status).toBe(202);
      sent.push(r.body.deliveryId);
    }

    const path = `/v1/triggers/${trigger.body.id}/deliveries`;
    const listed = await waitFor(
      async () => {
        const r = await api.get(path);
        return r.body.data?.every((d: { decision: string | null }) => d.decision) ? r : undefined;
      },
      { what: 'triage to decide both deliveries' },
    );
    expect(listed.status).toBe(200);
    expect(listed.body.nextCursor).toBeNull();
    // Newest first.
    expect(listed.body.data).toEqual([
      expect.objectContaining({
        id: sent[1],
        triggerId: trigger.body.id,
        deliveryId: 'd-2',
        source: 'alerts',
        eventType: 'disk_full',
        verified: false,
        decision: 'drop',
        reason: 'not now',
        decisionSource: 'rule',
        decisionCostUsd: expect.stringMatching(/^0(\.0+)?$/),
        messageId: null,
        createdAt: expect.any(String),
        decidedAt: expect.any(String),
      }),
      expect.objectContaining({ id: sent[0], eventType: 'ping', decision: 'drop', reason: 'health check' }),
    ]);
    // The sender's body is not part of the listing.
    expect(JSON.stringify(listed.body)).not.toContain('body-only-value');

    const first = await api.get(`${path}?limit=1`);
    expect(first.body.data.map((d: { id: string }) => d.id)).toEqual([sent[1]]);
    expect(first.body.nextCursor).toEqual(expect.any(String));
    const second = await api.get(`${path}?limit=1&cursor=${first.body.nextCursor}`);
    expect(second.body.data.map((d: { id: string }) => d.id)).toEqual([sent[0]]);
    expect(second.body.nextCursor).toBeNull();

    expect((await api.get(`${path}?cursor=not-a-cursor`)).status).toBe(400);
    expect((await api.get(`${path}?limit=0`)).status).toBe(400);
    expect((await api.get(`${path}?extra=1`)).status).toBe(400);
    const foreign = await other.get(path);
    expect(foreign.status).toBe(404);
    expect(foreign.body.error.code).toBe('not_found');
    expect((await api.get('/v1/triggers/00000000-0000-7000-8000-000000000000/deliveries')).status).toBe(404);
  });
});
