import { createHmac, randomUUID } from 'node:crypto';
import net from 'node:net';
import OpenAI, { RateLimitError } from 'openai';
import { ErrorResponse, OpenAiErrorResponse } from '@switchboard/contracts';
import {
  createTestEnv,
  crossRealmSafeFetch,
  spawnApp,
  waitFor,
  type AppProcess,
  type TestEnv,
} from '@switchboard/testing';
import { Api, newTenant, type ApiResponse } from '../support/api';
import { startGateway } from '../support/stack';

/**
 * Rate limits of the HTTP API (docs/adr/0028) through real processes: two gateway processes that
 * share one Redis enforce one tenant's limit together, answering 429 in the route's error shape with
 * Retry-After and the RateLimit / RateLimit-Policy fields; another tenant is unaffected; health and
 * metrics are never limited; a 429'd webhook retried later is admitted once; with Redis unreachable,
 * admission counts per gateway and reads are not limited.
 */
jest.setTimeout(120_000);

const ADMIN = 'test-admin-token-0123456789';
const LIMITS = {
  RATE_LIMIT_ADMISSION_PER_MIN: '4',
  RATE_LIMIT_READS_PER_MIN: '6',
  RATE_LIMIT_WRITES_PER_MIN: '0',
  RATE_LIMIT_WEBHOOKS_PER_MIN: '2',
};

const expectLimited = (res: ApiResponse, policy: string, quota: number) => {
  expect(res.status).toBe(429);
  expect(ErrorResponse.safeParse(res.body).success).toBe(true);
  expect(res.body.error.code).toBe('rate_limited');
  expect(res.headers.get('ratelimit-policy')).toBe(`"${policy}";q=${quota};w=60`);
  expect(res.headers.get('ratelimit')).toMatch(new RegExp(`^"${policy}";r=0;t=([1-9]|[1-5][0-9]|60)$`));
  const retryAfter = Number(res.headers.get('retry-after'));
  expect(retryAfter).toBeGreaterThanOrEqual(1);
  expect(retryAfter).toBeLessThanOrEqual(60);
};

describe('rate limits across two gateway processes', () => {
  let env: TestEnv;
  const processes: AppProcess[] = [];
  let urls: [string, string];

  async function gatewayProcess(): Promise<string> {
    const server = net.createServer();
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const { port } = server.address() as net.AddressInfo;
    await new Promise((resolve) => server.close(resolve));
    processes.push(
      await spawnApp('gateway', env.processEnv({ ...LIMITS, PORT: String(port), HOST: '127.0.0.1' }), {
        readyPattern: /Server listening at|successfully started/,
      }),
    );
    const base = `http://127.0.0.1:${port}`;
    await waitFor(async () => (await fetch(`${base}/healthz`)).ok, { what: 'the gateway to listen' });
    return base;
  }

  /** A tenant with an agent and a session, through the first gateway. */
  async function tenant(name: string) {
    const { api, tenantId } = await newTenant(urls[0], ADMIN, name);
    const agent = await api.post('/v1/agents', { name: 'a', model: 'scripted/echo' });
    const session = await api.post('/v1/sessions', { agentId: agent.body.id });
    expect([agent.status, session.status]).toEqual([201, 201]);
    return { api, tenantId, agentId: agent.body.id as string, sessionId: session.body.id as string };
  }

  beforeAll(async () => {
    env = await createTestEnv();
    urls = await Promise.all<[Promise<string>, Promise<string>]>([gatewayProcess(), gatewayProcess()]);
  });

  afterAll(async () => {
    await Promise.all(processes.map((p) => p.kill('SIGTERM')));
    await env?.cleanup();
  });

  it('reads: one count for both gateways, 429 with the headers; another tenant, health and metrics unaffected', async () => {
    const a = await tenant('reads-a');
    const b = await tenant('reads-b');
    // Alternate the gateways: the count lives in Redis, not in either process.
    const answers: ApiResponse[] = [];
    for (let i = 0; i < 7; i++) answers.push(await new Api(urls[i % 2], a.api.key).get('/v1/agents'));
    expect(answers.map((r) => r.status)).toEqual([200, 200, 200, 200, 200, 200, 429]);
    expect(answers.slice(0, 6).map((r) => r.headers.get('ratelimit'))).toEqual(
      [5, 4, 3, 2, 1, 0].map((r) => expect.stringMatching(new RegExp(`^"reads";r=${r};t=\\d+$`))),
    );
    expect(answers[0].headers.get('ratelimit-policy')).toBe('"reads";q=6;w=60');
    expectLimited(answers[6], 'reads', 6);

    // Tenant b's reads have their own count.
    const theirs = await new Api(urls[1], b.api.key).get('/v1/agents');
    expect(theirs.status).toBe(200);
    expect(theirs.headers.get('ratelimit-policy')).toBe('"reads";q=6;w=60');
    expect(theirs.headers.get('ratelimit')).toMatch(/^"reads";r=5;t=\d+$/);

    // Never limited: health, readiness, metrics and the API docs.
    for (const url of urls) {
      for (const path of ['/healthz', '/readyz', '/metrics', '/docs/openapi.json']) {
        const res = await fetch(`${url}${path}`);
        expect([path, res.status]).toEqual([path, 200]);
        expect(res.headers.get('ratelimit')).toBeNull();
      }
    }
    const metrics = await Promise.all(urls.map(async (u) => (await fetch(`${u}/metrics`)).text()));
    const counted = metrics
      .map((m) =>
        Number(/switchboard_rate_limited_total\{[^}]*bucket="reads"[^}]*\} (\d+)/.exec(m)?.[1] ?? 0),
      )
      .reduce((x, y) => x + y, 0);
    expect(counted).toBe(1);
  });

  it('admission: messages and chat completions share one count; the openai client gets a RateLimitError', async () => {
    const a = await tenant('admit-a');
    const b = await tenant('admit-b');
    const admitted = [];
    for (let i = 0; i < 4; i++) {
      admitted.push(
        await new Api(urls[i % 2], a.api.key).post(`/v1/sessions/${a.sessionId}/messages`, {
          content: `m${i}`,
        }),
      );
    }
    expect(admitted.map((r) => r.status)).toEqual([202, 202, 202, 202]);
    expect(admitted[3].headers.get('ratelimit')).toMatch(/^"admission";r=0;t=\d+$/);
    expectLimited(
      await new Api(urls[1], a.api.key).post(`/v1/sessions/${a.sessionId}/messages`, { content: 'one more' }),
      'admission',
      4,
    );

    // The OpenAI-compatible route: OpenAI's error shape, which the stock client maps to RateLimitError.
    const client = new OpenAI({
      baseURL: `${urls[0]}/v1`,
      apiKey: a.api.key!,
      fetch: crossRealmSafeFetch,
      maxRetries: 0,
    });
    const err = await client.chat.completions
      .create({ model: a.agentId, messages: [{ role: 'user', content: 'hi' }] })
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(RateLimitError);
    const limited = err as RateLimitError;
    expect(limited.status).toBe(429);
    expect(limited.headers?.get('retry-after')).toMatch(/^\d+$/);
    expect(limited.headers?.get('ratelimit-policy')).toBe('"admission";q=4;w=60');
    const raw = await fetch(`${urls[1]}/v1/chat/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${a.api.key}`, 'content-type': 'application/json' },
      body: JSON.stringify({ model: a.agentId, messages: [{ role: 'user', content: 'hi' }] }),
    });
    expect(raw.status).toBe(429);
    const body = (await raw.json()) as { error: { type: string; code: string } };
    expect(OpenAiErrorResponse.safeParse(body).success).toBe(true);
    expect(body.error).toMatchObject({ type: 'rate_limit_error', code: 'rate_limited' });

    // Bad input stays a 4xx (never a 5xx) while the bucket is spent.
    for (const bad of ['{"content":', '[]', '{"content": 5}']) {
      const res = await new Api(urls[0], a.api.key).request('POST', `/v1/sessions/${a.sessionId}/messages`, {
        raw: bad,
        headers: { 'content-type': 'application/json' },
      });
      expect(res.status).toBeGreaterThanOrEqual(400);
      expect(res.status).toBeLessThan(500);
    }
    // Nothing past the limit was admitted.
    expect(await env.db.turn.count({ where: { sessionId: a.sessionId } })).toBe(4);

    // Another tenant admits as usual.
    const other = await new Api(urls[1], b.api.key).post(`/v1/sessions/${b.sessionId}/messages`, {
      content: 'mine',
    });
    expect(other.status).toBe(202);
  });

  it('a tenant known over its quota is refused before the pipeline, with the same 429 (ADR 0078)', async () => {
    const a = await tenant('early-a');
    const api = new Api(urls[0], a.api.key);
    const messages = `/v1/sessions/${a.sessionId}/messages`;
    for (let i = 0; i < 4; i++) expect((await api.post(messages, { content: `m${i}` })).status).toBe(202);
    // The first refusal is Redis's, through the guards; this gateway then knows the quota is spent.
    const counted = await api.post(messages, { content: 'over' });
    expectLimited(counted, 'admission', 4);
    // The next is answered from memory, before the body is read: the same status, headers and body.
    const early = await api.post(messages, { content: 'over again' });
    expectLimited(early, 'admission', 4);
    const shape = (body: unknown) => JSON.stringify(body).replace(/\d+/g, 'N');
    expect(shape(early.body)).toBe(shape(counted.body));
    expect(early.body.error.details).toMatchObject({ policy: 'admission' });
    // Not parsed: a body the parser would refuse (400 while the quota lasts) gets the same 429.
    const unparsed = await api.request('POST', messages, {
      raw: '{"content":',
      headers: { 'content-type': 'application/json' },
    });
    expectLimited(unparsed, 'admission', 4);
    // Whatever the early path cannot vouch for goes the usual way: an unknown key is a 401, the
    // operator acting as the tenant is not counted, and the tenant's other buckets are unaffected.
    expect((await new Api(urls[0], 'sk-not-a-key').post(messages, { content: 'x' })).status).toBe(401);
    const operator = await new Api(urls[0], ADMIN).request('POST', messages, {
      body: { content: 'from the console' },
      headers: { 'x-switchboard-tenant': a.tenantId },
    });
    expect(operator.status).toBe(202);
    expect((await api.get(`/v1/sessions/${a.sessionId}`)).status).toBe(200);
    // The other gateway learns of the spent quota from Redis on its first count, then refuses early too.
    const other = new Api(urls[1], a.api.key);
    expectLimited(await other.post(messages, { content: 'elsewhere' }), 'admission', 4);
    expectLimited(
      await other.request('POST', messages, {
        raw: '{"content":',
        headers: { 'content-type': 'application/json' },
      }),
      'admission',
      4,
    );
    // Nothing refused was admitted: the tenant's four and the operator's one.
    expect(await env.db.turn.count({ where: { sessionId: a.sessionId } })).toBe(5);
  });

  it('webhooks count per trigger; a 429 delivery retried later is admitted once', async () => {
    const a = await tenant('hooks-a');
    const create = async (name: string) => {
      const res = await a.api.post('/v1/triggers', { agentId: a.agentId, name, scheme: 'github' });
      expect(res.status).toBe(201);
      return res.body as { id: string; path: string; signingSecret: string };
    };
    const [busy, quiet] = [await create('busy'), await create('quiet')];
    const deliver = (url: string, t: { path: string; signingSecret: string }, delivery: string) => {
      const raw = JSON.stringify({ action: 'opened', issue: { number: 1, title: delivery } });
      return new Api(url).request('POST', t.path, {
        raw,
        headers: {
          'content-type': 'application/json',
          'x-github-event': 'issues',
          'x-github-delivery': delivery,
          'x-hub-signature-256': `sha256=${createHmac('sha256', t.signingSecret).update(raw).digest('hex')}`,
        },
      });
    };
    const ids = [randomUUID(), randomUUID(), randomUUID()];
    const first = [await deliver(urls[0], busy, ids[0]), await deliver(urls[1], busy, ids[1])];
    expect(first.map((r) => r.status)).toEqual([202, 202]);
    const refused = await deliver(urls[0], busy, ids[2]);
    expectLimited(refused, 'webhooks', 2);
    // The sender retries while the window lasts: still refused, nothing stored.
    expectLimited(await deliver(urls[1], busy, ids[2]), 'webhooks', 2);
    expect(await env.db.triggerDelivery.count({ where: { triggerId: busy.id, deliveryId: ids[2] } })).toBe(0);
    // Another trigger of the same tenant has its own count.
    expect((await deliver(urls[1], quiet, randomUUID())).status).toBe(202);

    // The operator raises the tenant's webhook limit (the gateway that took it applies it at once).
    const raised = await new Api(urls[0], ADMIN).patch(`/v1/admin/tenants/${a.tenantId}/limits`, {
      webhooks: 100,
    });
    expect(raised.status).toBe(200);
    expect(raised.body).toMatchObject({ tenantId: a.tenantId, rateLimits: { webhooks: 100 } });
    expect(raised.body.effective).toMatchObject({ webhooks: 100, admission: 4, reads: 6, writes: 0 });
    // The sender's retry is admitted, and a replay of it is a duplicate: one delivery stored.
    const retried = await deliver(urls[0], busy, ids[2]);
    expect(retried.status).toBe(202);
    expect(retried.body.duplicate).toBe(false);
    const replay = await deliver(urls[0], busy, ids[2]);
    expect(replay.body).toEqual({ deliveryId: retried.body.deliveryId, duplicate: true });
    expect(await env.db.triggerDelivery.count({ where: { triggerId: busy.id, deliveryId: ids[2] } })).toBe(1);
    expect(await env.db.triggerDelivery.count({ where: { triggerId: busy.id } })).toBe(3);
  });

  it('the operator sets a per-key limit below the tenant one; the tenant cannot set its own', async () => {
    const a = await tenant('keys-a');
    const second = await a.api.post('/v1/api-keys', { name: 'second' });
    expect(second.status).toBe(201);
    const set = await new Api(urls[1], ADMIN).patch(`/v1/admin/tenants/${a.tenantId}/limits`, {
      reads: 0,
      readsPerKey: 2,
    });
    expect(set.status).toBe(200);
    expect(set.body.effective).toMatchObject({ reads: 0, readsPerKey: 2 });
    const first = new Api(urls[1], a.api.key);
    expect((await first.get('/v1/agents')).status).toBe(200);
    expect((await first.get('/v1/agents')).status).toBe(200);
    expectLimited(await first.get('/v1/agents'), 'reads-key', 2);
    // The tenant's other key has its own count.
    expect((await new Api(urls[1], second.body.key).get('/v1/agents')).status).toBe(200);
    // PATCH /v1/settings does not take rate limits.
    const own = await new Api(urls[1], second.body.key).patch('/v1/settings', { rateLimits: { reads: 0 } });
    expect(own.status).toBe(400);
    // null goes back to the deployment's default.
    const reset = await new Api(urls[1], ADMIN).patch(`/v1/admin/tenants/${a.tenantId}/limits`, {
      reads: null,
      readsPerKey: null,
    });
    expect(reset.body).toMatchObject({ rateLimits: {}, effective: { reads: 6, readsPerKey: 6 } });
  });
});

describe('rate limits while Redis is unreachable', () => {
  let env: TestEnv;
  let gateway: Awaited<ReturnType<typeof startGateway>>;

  beforeAll(async () => {
    env = await createTestEnv();
    gateway = await startGateway(
      env.config({ ...LIMITS, RATE_LIMIT_ADMISSION_PER_MIN: '2', REDIS_URL: 'redis://127.0.0.1:1' }),
    );
  });

  afterAll(async () => {
    await gateway?.close();
    await env?.cleanup();
  });

  it('admission counts in this gateway alone (still bounded); reads are not limited', async () => {
    const { api } = await newTenant(gateway.url, ADMIN, 'cut');
    const agent = await api.post('/v1/agents', { name: 'a', model: 'scripted/echo' });
    const session = await api.post('/v1/sessions', { agentId: agent.body.id });
    const answers = [];
    for (let i = 0; i < 3; i++) {
      answers.push(await api.post(`/v1/sessions/${session.body.id}/messages`, { content: `m${i}` }));
    }
    expect(answers.map((r) => r.status)).toEqual([202, 202, 429]);
    expectLimited(answers[2], 'admission', 2);
    // Reads: 6 a minute normally; with Redis away they are not counted.
    for (let i = 0; i < 10; i++) expect((await api.get('/v1/agents')).status).toBe(200);
  });
});
