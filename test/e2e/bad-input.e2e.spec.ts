import { createTestEnv, type TestEnv } from '@switchboard/testing';
import { Api, newTenant } from '../support/api';
import { startGateway } from '../support/stack';

/**
 * Bad input gets a clear 4xx in the one error shape and changes nothing.
 * Every case snapshots every table before and after.
 */
describe('bad input', () => {
  let env: TestEnv;
  let gateway: Awaited<ReturnType<typeof startGateway>>;
  let api: Api;
  let other: Api;
  let agentId: string;
  let sessionId: string;
  let turnId: string;
  let otherAgentId: string;
  let otherSessionId: string;
  let otherKeyId: string;
  const ADMIN = 'test-admin-token-0123456789';

  const counts = async () => {
    const db = env.db;
    return Promise.all([
      db.tenant.count(),
      db.apiKey.count({ where: { revokedAt: null } }),
      db.agent.count({ where: { deletedAt: null } }),
      db.agent.findMany({
        select: { id: true, model: true, fallbackModels: true, updatedAt: true },
        orderBy: { id: 'asc' },
      }),
      db.session.count({ where: { status: 'active' } }),
      db.message.count(),
      db.turn.count(),
      db.event.count(),
      db.tenant.findMany({ select: { id: true, settings: true }, orderBy: { id: 'asc' } }),
    ]);
  };

  beforeAll(async () => {
    env = await createTestEnv();
    // A small body limit so the over-limit case is cheap.
    gateway = await startGateway(env.config({ BODY_LIMIT_BYTES: '4096' }));
    ({ api } = await newTenant(gateway.url, ADMIN, 'a'));
    const o = await newTenant(gateway.url, ADMIN, 'b');
    other = o.api;
    otherKeyId = o.keyId;
    agentId = (await api.post('/v1/agents', { name: 'mine' })).body.id;
    sessionId = (await api.post('/v1/sessions', { agentId })).body.id;
    turnId = (await api.post(`/v1/sessions/${sessionId}/messages`, { content: 'hi' })).body.turnId;
    otherAgentId = (await other.post('/v1/agents', { name: 'theirs' })).body.id;
    otherSessionId = (await other.post('/v1/sessions', { agentId: otherAgentId })).body.id;
    // Settings to leave untouched: a bad PATCH must not clear or partly apply anything.
    const settings = await api.patch('/v1/settings', {
      modelRoutes: { chat: 'openai/gpt-4o-mini', coding: 'anthropic/claude-sonnet-5-5' },
      blockedTools: ['current_time'],
    });
    if (settings.status !== 200)
      throw new Error(`settings: ${settings.status} ${JSON.stringify(settings.body)}`);
  });

  afterAll(async () => {
    await gateway?.close();
    await env?.cleanup();
  });

  type Case = [name: string, run: () => Promise<{ status: number; body: any }>, status: number, code: string];
  const cases: Case[] = [
    [
      'invalid JSON',
      () =>
        api.request('POST', '/v1/agents', {
          raw: '{"name":',
          headers: { 'content-type': 'application/json' },
        }),
      400,
      'invalid_json',
    ],
    [
      'empty JSON body',
      () => api.request('POST', '/v1/agents', { raw: '', headers: { 'content-type': 'application/json' } }),
      400,
      'invalid_json',
    ],
    ['no body at all', () => api.request('POST', '/v1/agents'), 400, 'validation_failed'],
    ['unknown field', () => api.post('/v1/agents', { name: 'x', colour: 'red' }), 400, 'validation_failed'],
    ['missing field', () => api.post('/v1/agents', { instructions: 'x' }), 400, 'validation_failed'],
    ['wrong type', () => api.post('/v1/agents', { name: 42 }), 400, 'validation_failed'],
    ['array instead of object', () => api.post('/v1/agents', [{ name: 'x' }]), 400, 'validation_failed'],
    ['unknown tool', () => api.post('/v1/agents', { name: 'x', tools: ['rm_rf'] }), 400, 'validation_failed'],
    [
      'bad model reference',
      () => api.post('/v1/agents', { name: 'x', model: 'gpt-4o' }),
      400,
      'validation_failed',
    ],
    [
      'agent model hint with an unknown route',
      () => api.post('/v1/agents', { name: 'x', model: 'hint:nope' }),
      400,
      'validation_failed',
    ],
    [
      'agent fallback hint with an unknown route',
      () => api.post('/v1/agents', { name: 'x', fallbackModels: ['hint:nope'] }),
      400,
      'validation_failed',
    ],
    [
      'agent patched to an unknown route hint',
      () => api.patch(`/v1/agents/${agentId}`, { model: 'hint:nope' }),
      400,
      'validation_failed',
    ],
    [
      'settings: unknown route name',
      () => api.patch('/v1/settings', { modelRoutes: { poetry: 'openai/gpt-4o' } }),
      400,
      'validation_failed',
    ],
    [
      'settings: route value not a model reference',
      () => api.patch('/v1/settings', { modelRoutes: { chat: 'gpt-4o' } }),
      400,
      'validation_failed',
    ],
    [
      'settings: route value a hint',
      () => api.patch('/v1/settings', { modelRoutes: { chat: 'hint:coding' } }),
      400,
      'validation_failed',
    ],
    [
      'settings: blockedTools not an array',
      () => api.patch('/v1/settings', { blockedTools: 'word_count' }),
      400,
      'validation_failed',
    ],
    [
      'settings: duplicate blocked tools',
      () => api.patch('/v1/settings', { blockedTools: ['word_count', 'word_count'] }),
      400,
      'validation_failed',
    ],
    [
      'settings: unknown blocked tool',
      () => api.patch('/v1/settings', { blockedTools: ['rm_rf'] }),
      400,
      'validation_failed',
    ],
    [
      'settings: unknown top-level field',
      () => api.patch('/v1/settings', { blockedTools: [], colour: 'red' }),
      400,
      'validation_failed',
    ],
    ['settings: empty body', () => api.patch('/v1/settings', {}), 400, 'validation_failed'],
    [
      'settings: no key',
      () => new Api(gateway.url).patch('/v1/settings', { blockedTools: [] }),
      401,
      'unauthorized',
    ],
    [
      'budget out of range',
      () => api.post('/v1/agents', { name: 'x', budgets: { maxIterations: 0 } }),
      400,
      'validation_failed',
    ],
    ['empty agent patch', () => api.patch(`/v1/agents/${agentId}`, {}), 400, 'validation_failed'],
    [
      'body over the limit',
      () => api.post('/v1/agents', { name: 'x', instructions: 'y'.repeat(10_000) }),
      413,
      'payload_too_large',
    ],
    [
      'unsupported content type',
      () => api.request('POST', '/v1/agents', { raw: 'name=x', headers: { 'content-type': 'text/plain' } }),
      415,
      'unsupported_media_type',
    ],
    [
      'empty message',
      () => api.post(`/v1/sessions/${sessionId}/messages`, { content: '' }),
      400,
      'validation_failed',
    ],
    [
      'unknown priority',
      () => api.post(`/v1/sessions/${sessionId}/messages`, { content: 'x', priority: 'urgent' }),
      400,
      'validation_failed',
    ],
    [
      'unknown multitask',
      () => api.post(`/v1/sessions/${sessionId}/messages`, { content: 'x', multitask: 'fork' }),
      400,
      'validation_failed',
    ],
    [
      'idempotency key too long',
      () =>
        api.post(
          `/v1/sessions/${sessionId}/messages`,
          { content: 'x' },
          { 'idempotency-key': 'k'.repeat(201) },
        ),
      400,
      'bad_request',
    ],
    ['bad cursor', () => api.get(`/v1/sessions/${sessionId}/messages?cursor=nonsense`), 400, 'bad_request'],
    ...['[99999999999,0]', '[1e309,0]', '[-1,0]', '[1.5,0]'].map((c): Case => [
      `forged cursor ${c}`,
      () => api.get(`/v1/sessions/${sessionId}/messages?cursor=${Buffer.from(c).toString('base64url')}`),
      400,
      'bad_request',
    ]),
    [
      'NUL in message content',
      () => api.post(`/v1/sessions/${sessionId}/messages`, { content: 'a\u0000b' }),
      400,
      'validation_failed',
    ],
    [
      'lone surrogate in an agent name',
      () => api.post('/v1/agents', { name: 'a\ud800' }),
      400,
      'validation_failed',
    ],
    [
      'NUL in a metadata key',
      () => api.post(`/v1/sessions/${sessionId}/messages`, { content: 'x', metadata: { 'k\u0000': 1 } }),
      400,
      'validation_failed',
    ],
    [
      'lone surrogate in a correlationId',
      () => api.post(`/v1/sessions/${sessionId}/messages`, { content: 'x', correlationId: '\udc00' }),
      400,
      'validation_failed',
    ],
    [
      'NUL in a tenant name',
      () => new Api(gateway.url, ADMIN).post('/v1/admin/tenants', { name: 'x\u0000' }),
      400,
      'validation_failed',
    ],
    [
      'NUL in a session title',
      () => api.post('/v1/sessions', { agentId, title: '\u0000' }),
      400,
      'validation_failed',
    ],
    [
      'metadata nested 1,500 levels',
      () =>
        api.request('POST', `/v1/sessions/${sessionId}/messages`, {
          raw: `{"content":"x","metadata":{"a":${'['.repeat(1500)}${']'.repeat(1500)}}}`,
          headers: { 'content-type': 'application/json' },
        }),
      400,
      'validation_failed',
    ],
    [
      'a form body',
      () =>
        api.request('POST', `/v1/sessions/${sessionId}/messages`, {
          raw: 'content=hi',
          headers: { 'content-type': 'application/x-www-form-urlencoded' },
        }),
      415,
      'unsupported_media_type',
    ],
    [
      'invalid UTF-8',
      () =>
        api.request('POST', `/v1/sessions/${sessionId}/messages`, {
          raw: Buffer.concat([Buffer.from('{"content":"a'), Buffer.from([0xff, 0xfe]), Buffer.from('"}')]),
          headers: { 'content-type': 'application/json' },
        }),
      400,
      'invalid_json',
    ],
    ['a malformed URL', () => api.get('/v1/agents/%zz'), 400, 'bad_request'],
    ['a path segment too long', () => api.get(`/v1/agents/${'a'.repeat(10_000)}`), 414, 'uri_too_long'],
    ['a 100 KB URL', () => api.get(`/v1/agents/${'a'.repeat(100_000)}`), 431, 'headers_too_large'],
    ['bad limit', () => api.get('/v1/agents?limit=0'), 400, 'validation_failed'],
    ['unknown query parameter', () => api.get('/v1/agents?colour=red'), 400, 'validation_failed'],
    ['no key', () => new Api(gateway.url).get('/v1/agents'), 401, 'unauthorized'],
    [
      'malformed authorization',
      () => new Api(gateway.url).get('/v1/agents', { authorization: 'Basic abc' }),
      401,
      'unauthorized',
    ],
    ['unknown key', () => new Api(gateway.url, 'sb_not-a-real-key').get('/v1/agents'), 401, 'unauthorized'],
    [
      'admin without token',
      () => new Api(gateway.url).post('/v1/admin/tenants', { name: 'x' }),
      401,
      'unauthorized',
    ],
    ['admin with an API key', () => api.post('/v1/admin/tenants', { name: 'x' }), 401, 'unauthorized'],
    ["another tenant's agent", () => api.get(`/v1/agents/${otherAgentId}`), 404, 'not_found'],
    [
      "another tenant's agent, patched",
      () => api.patch(`/v1/agents/${otherAgentId}`, { name: 'stolen' }),
      404,
      'not_found',
    ],
    ["another tenant's agent, deleted", () => api.delete(`/v1/agents/${otherAgentId}`), 404, 'not_found'],
    [
      "a session on another tenant's agent",
      () => api.post('/v1/sessions', { agentId: otherAgentId }),
      404,
      'not_found',
    ],
    ["another tenant's session", () => api.get(`/v1/sessions/${otherSessionId}`), 404, 'not_found'],
    [
      "another tenant's transcript",
      () => api.get(`/v1/sessions/${otherSessionId}/messages`),
      404,
      'not_found',
    ],
    [
      "a message into another tenant's session",
      () => api.post(`/v1/sessions/${otherSessionId}/messages`, { content: 'x' }),
      404,
      'not_found',
    ],
    ["another tenant's turn", () => other.get(`/v1/turns/${turnId}`), 404, 'not_found'],
    ["another tenant's api key", () => api.delete(`/v1/api-keys/${otherKeyId}`), 404, 'not_found'],
    [
      'unknown agent',
      () => api.post('/v1/sessions', { agentId: '01a20360-0000-7000-8000-000000000000' }),
      404,
      'not_found',
    ],
    ['malformed agent id in body', () => api.post('/v1/sessions', { agentId: 'abc' }), 404, 'not_found'],
    [
      'unknown session',
      () => api.post('/v1/sessions/01a20360-0000-7000-8000-000000000000/messages', { content: 'x' }),
      404,
      'not_found',
    ],
    ['malformed session id', () => api.get('/v1/sessions/not-a-uuid'), 404, 'not_found'],
    ['malformed turn id', () => api.get("/v1/turns/1'%20or%201=1"), 404, 'not_found'],
    ['unknown route', () => api.get('/v1/nothing-here'), 404, 'not_found'],
  ];

  it.each(
    cases.map(([name, run, status, code]) => [`${name} → ${status} ${code}`, run, status, code] as Case),
  )('%s, nothing written', async (_name, run, status, code) => {
    const before = await counts();
    const res = await run();
    expect(res.status).toBe(status);
    expect(res.body).toEqual({ error: expect.objectContaining({ code, message: expect.any(String) }) });
    expect(res.body.error.message.length).toBeGreaterThan(0);
    expect(await counts()).toEqual(before);
  });

  it('validation errors list each issue with its path', async () => {
    const res = await api.post('/v1/agents', { name: 7, tier: 'god' });
    expect(res.status).toBe(400);
    const paths = res.body.error.details.issues.map((i: { path: string }) => i.path).sort();
    expect(paths).toEqual(['name', 'tier']);
  });

  it('a revoked key stops working at once, and revoking is idempotent', async () => {
    const created = await api.post('/v1/api-keys', { name: 'temp' });
    expect(created.status).toBe(201);
    const temp = new Api(gateway.url, created.body.key);
    expect((await temp.get('/v1/agents')).status).toBe(200);
    const revoked = await api.delete(`/v1/api-keys/${created.body.id}`);
    expect(revoked.status).toBe(200);
    expect(revoked.body.revokedAt).toEqual(expect.any(String));
    const after = await temp.get('/v1/agents');
    expect(after.status).toBe(401);
    expect(after.body.error.code).toBe('unauthorized');
    expect((await api.delete(`/v1/api-keys/${created.body.id}`)).status).toBe(200);
    // Keys are stored only as hashes.
    const row = await env.db.apiKey.findUniqueOrThrow({ where: { id: created.body.id } });
    expect(JSON.stringify(row)).not.toContain(created.body.key);
    expect(created.body.key.startsWith(row.prefix)).toBe(true);
  });

  it('a closed session refuses new messages with 409 and keeps its history', async () => {
    const s = (await api.post('/v1/sessions', { agentId })).body.id;
    expect((await api.delete(`/v1/sessions/${s}`)).body.status).toBe('closed');
    const before = await counts();
    const res = await api.post(`/v1/sessions/${s}/messages`, { content: 'late' });
    expect(res.status).toBe(409);
    expect(res.body.error.code).toBe('conflict');
    expect(await counts()).toEqual(before);
    expect((await api.get(`/v1/sessions/${s}`)).status).toBe(200);
  });

  it('a deleted agent cannot start new sessions', async () => {
    const a = (await api.post('/v1/agents', { name: 'short-lived' })).body.id;
    expect((await api.delete(`/v1/agents/${a}`)).status).toBe(204);
    expect((await api.get(`/v1/agents/${a}`)).status).toBe(404);
    expect((await api.post('/v1/sessions', { agentId: a })).status).toBe(404);
  });

  it('lists only the caller’s own objects', async () => {
    const mine = await api.get('/v1/agents');
    expect(mine.body.data.map((a: { id: string }) => a.id)).not.toContain(otherAgentId);
    const sessions = await other.get('/v1/sessions');
    expect(sessions.body.data.map((s: { id: string }) => s.id)).toEqual([otherSessionId]);
  });
});
