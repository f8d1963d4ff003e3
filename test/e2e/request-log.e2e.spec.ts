import { randomBytes } from 'node:crypto';
import { createServer } from 'node:net';
import { createTestEnv, spawnApp, waitFor, type AppProcess, type TestEnv } from '@switchboard/testing';
import { Api, newTenant } from '../support/api';

jest.setTimeout(120_000);

const ADMIN = 'test-admin-token-0123456789';

async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  await new Promise((resolve) => server.close(resolve));
  return typeof address === 'object' && address ? address.port : 0;
}

/**
 * The gateway, as a real process with tracing on, logs one line per request: method,
 * route, status, duration, tenant, trace id and a request id that is echoed in
 * `x-request-id` (the client's when it is safe, else a generated one); never a key.
 */
describe('gateway request logs', () => {
  let env: TestEnv;
  let gateway: AppProcess;
  let url: string;

  beforeAll(async () => {
    env = await createTestEnv();
    const port = await freePort();
    url = `http://127.0.0.1:${port}`;
    gateway = await spawnApp(
      'gateway',
      env.processEnv({
        PORT: String(port),
        HOST: '127.0.0.1',
        LOG_LEVEL: 'info',
        OTEL_SDK_DISABLED: 'false',
        // Trace ids without a collector: an explicit `none` exporter (with none configured, nothing starts).
        OTEL_TRACES_EXPORTER: 'none',
      }),
      { readyPattern: /Server listening at/ },
    );
  });

  afterAll(async () => {
    await gateway?.kill('SIGTERM');
    await env?.cleanup();
  });

  /** The request-completed line for a request id, once the gateway wrote it. */
  const lineFor = (requestId: string) =>
    waitFor(
      () =>
        gateway
          .output()
          .split('\n')
          .filter((l) => l.startsWith('{'))
          .map((l) => JSON.parse(l) as Record<string, unknown>)
          .find((l) => l.msg === 'request completed' && l.requestId === requestId),
      { what: `the log line of request ${requestId}` },
    );

  it('echoes a client request id and logs it with route, status, tenant and trace id, not the key', async () => {
    const { api, tenantId } = await newTenant(url, ADMIN);
    const traceId = randomBytes(16).toString('hex');
    const res = await api.get('/v1/agents', {
      'x-request-id': 'client-req-42',
      traceparent: `00-${traceId}-${randomBytes(8).toString('hex')}-01`,
    });
    expect(res.status).toBe(200);
    expect(res.headers.get('x-request-id')).toBe('client-req-42');

    const line = await lineFor('client-req-42');
    expect(line).toMatchObject({
      method: 'GET',
      route: '/v1/agents',
      status: 200,
      durationMs: expect.any(Number),
      tenantId,
      trace_id: traceId,
    });
    // Nothing the gateway wrote carries the API key or the admin token.
    expect(gateway.output()).not.toContain(api.key!);
    expect(gateway.output()).not.toContain(ADMIN);
  });

  it('logs the operator acting as a tenant (ADMIN_TOKEN + X-Switchboard-Tenant) as actor operator', async () => {
    const { tenantId } = await newTenant(url, ADMIN);
    const res = await new Api(url, ADMIN).get('/v1/agents', {
      'x-request-id': 'operator-req-7',
      'x-switchboard-tenant': tenantId,
    });
    expect(res.status).toBe(200);
    expect(await lineFor('operator-req-7')).toMatchObject({
      route: '/v1/agents',
      status: 200,
      tenantId,
      actor: 'operator',
    });
    expect(gateway.output()).not.toContain(ADMIN);
  });

  it('generates a request id when none is sent, and replaces one that is not safe', async () => {
    const api = new Api(url);
    const none = await api.get('/v1/agents');
    expect(none.status).toBe(401);
    const generated = none.headers.get('x-request-id');
    expect(generated).toMatch(/^[0-9a-f-]{36}$/);
    expect(await lineFor(generated!)).toMatchObject({ method: 'GET', route: '/v1/agents', status: 401 });

    for (const unsafe of ['a'.repeat(65), 'has space', 'semi;colon', '"quoted"']) {
      const res = await api.get('/v1/agents', { 'x-request-id': unsafe });
      const id = res.headers.get('x-request-id');
      expect(id).not.toBe(unsafe);
      expect(id).toMatch(/^[0-9a-f-]{36}$/);
    }
    expect(gateway.output()).not.toContain('semi;colon');
  });
});
