import { once } from 'node:events';
import { createServer } from 'node:net';
import { ReadinessResponse } from '@switchboard/contracts';
import {
  createTestEnv,
  spawnApp,
  startTcpProxy,
  waitFor,
  type AppProcess,
  type TcpProxy,
  type TestEnv,
} from '@switchboard/testing';

/**
 * A worker's ops port (METRICS_PORT) through real worker processes: /healthz, /readyz and
 * /metrics, and readiness following Postgres and Redis as they go down and come back (each
 * reached through a TCP proxy this test can take down without disturbing other test files).
 */
jest.setTimeout(90_000);

async function freePort(): Promise<number> {
  const server = createServer().listen(0, '127.0.0.1');
  await once(server, 'listening');
  const { port } = server.address() as { port: number };
  await new Promise((resolve) => server.close(resolve));
  return port;
}

async function get(url: string, init?: RequestInit) {
  const res = await fetch(url, init);
  const text = await res.text();
  return { status: res.status, headers: res.headers, text, json: () => JSON.parse(text) as unknown };
}

describe('worker ops port', () => {
  let env: TestEnv;
  let pgProxy: TcpProxy;
  let redisProxy: TcpProxy;
  let worker: AppProcess;
  let base: string;

  beforeAll(async () => {
    env = await createTestEnv();
    const pg = new URL(env.databaseUrl);
    const redis = new URL(env.redisUrl);
    pgProxy = await startTcpProxy({ host: pg.hostname, port: Number(pg.port || 5432) });
    redisProxy = await startTcpProxy({ host: redis.hostname, port: Number(redis.port || 6379) });
    const port = await freePort();
    base = `http://127.0.0.1:${port}`;
    worker = await spawnApp(
      'hooks-worker',
      env.processEnv({
        HOST: '127.0.0.1',
        METRICS_PORT: String(port),
        DATABASE_URL: pgProxy.rewrite(env.databaseUrl),
        REDIS_URL: redisProxy.rewrite(env.redisUrl),
      }),
    );
  });

  afterAll(async () => {
    await worker?.kill('SIGTERM');
    await pgProxy?.close();
    await redisProxy?.close();
    await env?.cleanup();
  });

  it('answers /healthz with 200 while the process runs', async () => {
    const res = await get(`${base}/healthz`);
    expect(res.status).toBe(200);
    expect(res.json()).toEqual({ status: 'ok' });
  });

  it('is ready when Postgres and Redis answer and its queue worker runs', async () => {
    const res = await get(`${base}/readyz`);
    expect(res.status).toBe(200);
    const body = ReadinessResponse.parse(res.json());
    expect(body).toMatchObject({
      status: 'ok',
      error: {},
      details: { postgres: { status: 'up' }, redis: { status: 'up' }, 'queue:post-turn': { status: 'up' } },
    });
  });

  it('still serves /metrics, with the process label', async () => {
    const res = await get(`${base}/metrics`);
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toMatch(/^text\/plain/);
    expect(res.text).toContain('switchboard_event_loop_delay_seconds');
    expect(res.text).toContain('service="hooks-worker"');
    expect(res.text).not.toContain('# EOF');
  });

  it('serves /metrics in OpenMetrics when the scraper asks for it (where exemplars can be)', async () => {
    const res = await get(`${base}/metrics`, {
      headers: { accept: 'application/openmetrics-text;version=1.0.0;q=0.6,text/plain;version=0.0.4;q=0.5' },
    });
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toBe(
      'application/openmetrics-text; version=1.0.0; charset=utf-8',
    );
    expect(res.text).toMatch(/^# TYPE switchboard_hook_runs counter$/m);
    expect(res.text.endsWith('# EOF\n')).toBe(true);
  });

  it('answers an unknown path 404 and another method 405, in the one error shape', async () => {
    const missing = await get(`${base}/nope`);
    expect(missing.status).toBe(404);
    expect(missing.json()).toEqual({ error: { code: 'not_found', message: 'No route /nope' } });
    const post = await get(`${base}/readyz`, { method: 'POST' });
    expect(post.status).toBe(405);
    expect(post.headers.get('allow')).toBe('GET, HEAD');
    expect(post.json()).toMatchObject({ error: { code: 'bad_request' } });
    const head = await fetch(`${base}/readyz`, { method: 'HEAD' });
    expect(head.status).toBe(200);
  });

  it('is not ready while Postgres is down, and ready again once it is back', async () => {
    await pgProxy.down();
    try {
      const res = await get(`${base}/readyz`);
      expect(res.status).toBe(503);
      const body = ReadinessResponse.parse(res.json());
      expect(body.status).toBe('error');
      expect(Object.keys(body.error ?? {})).toEqual(['postgres']);
      expect(body.details.redis.status).toBe('up');
      // Liveness does not follow a dependency: restarting the worker would not bring Postgres back.
      expect((await get(`${base}/healthz`)).status).toBe(200);
    } finally {
      await pgProxy.up();
    }
    await waitFor(async () => (await get(`${base}/readyz`)).status === 200, {
      what: 'the worker to be ready again',
    });
  });

  it('is not ready while Redis is down, and ready again once it is back', async () => {
    await redisProxy.down();
    try {
      const res = await get(`${base}/readyz`);
      expect(res.status).toBe(503);
      const body = ReadinessResponse.parse(res.json());
      expect(body.error?.redis?.status).toBe('down');
      expect(body.details.postgres.status).toBe('up');
    } finally {
      await redisProxy.up();
    }
    await waitFor(async () => (await get(`${base}/readyz`)).status === 200, {
      what: 'the worker to be ready again',
      timeoutMs: 30_000,
    });
  });
});
