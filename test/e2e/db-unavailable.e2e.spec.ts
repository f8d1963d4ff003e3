import { createTestEnv, startTcpProxy, waitFor, type TcpProxy, type TestEnv } from '@switchboard/testing';
import { Api, newTenant } from '../support/api';
import { startGateway } from '../support/stack';

/**
 * While Postgres cannot be reached the gateway answers 503 `unavailable` with Retry-After, not a
 * 500, and serves again as soon as it is back. Postgres "goes down" for this gateway only: its
 * DATABASE_URL goes through a TCP proxy the test takes down.
 */
describe('gateway while Postgres is down', () => {
  let env: TestEnv;
  let proxy: TcpProxy;
  let gateway: Awaited<ReturnType<typeof startGateway>>;
  let api: Api;
  let sessionId: string;

  beforeAll(async () => {
    env = await createTestEnv();
    const pg = new URL(env.databaseUrl);
    proxy = await startTcpProxy({ host: pg.hostname, port: Number(pg.port || 5432) });
    gateway = await startGateway(env.config({ DATABASE_URL: proxy.rewrite(env.databaseUrl) }));
    ({ api } = await newTenant(gateway.url, 'test-admin-token-0123456789'));
    const agentId = (await api.post('/v1/agents', { name: 'a' })).body.id;
    sessionId = (await api.post('/v1/sessions', { agentId })).body.id;
  });

  afterAll(async () => {
    await gateway?.close();
    await proxy?.close();
    await env?.cleanup();
  });

  it('answers 503 unavailable with Retry-After, then works again when Postgres is back', async () => {
    expect((await api.get('/v1/agents')).status).toBe(200);
    await proxy.down();

    const requests = [
      () => api.get('/v1/agents'),
      () => api.post('/v1/agents', { name: 'b' }),
      () => api.post(`/v1/sessions/${sessionId}/messages`, { content: 'hello' }),
      () => api.get(`/v1/sessions/${sessionId}/messages`),
    ];
    for (const request of requests) {
      const res = await request();
      expect(res.status).toBe(503);
      expect(res.body).toEqual({ error: { code: 'unavailable', message: expect.any(String) } });
      expect(Number(res.headers.get('retry-after'))).toBeGreaterThan(0);
    }

    await proxy.up();
    const back = await waitFor(
      async () => {
        const res = await api.post(`/v1/sessions/${sessionId}/messages`, { content: 'after' });
        return res.status === 202 ? res : undefined;
      },
      { what: 'the gateway to admit again' },
    );
    expect(back.body.status).toBe('queued');
    // Nothing the refused requests carried was stored.
    const texts = (await env.db.message.findMany({ where: { sessionId } })).map(
      (m) => (m.body as { text: string }).text,
    );
    expect(texts).toEqual(['after']);
    expect(await env.db.agent.count()).toBe(1);
  });
});
