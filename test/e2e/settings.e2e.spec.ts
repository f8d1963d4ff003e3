import { createTestEnv, type TestEnv } from '@switchboard/testing';
import { Api, newTenant } from '../support/api';
import { startGateway } from '../support/stack';

/** GET/PATCH /v1/settings: per-tenant model routes for `hint:<route>` and blocked tools. */
describe('tenant settings', () => {
  let env: TestEnv;
  let gateway: Awaited<ReturnType<typeof startGateway>>;
  let a: Api;
  let b: Api;
  let tenantA: string;
  const ADMIN = 'test-admin-token-0123456789';
  const DEFAULT_MODEL = 'scripted/demo';
  // The archivist's settings in force (docs/adr/0032): the defaults until the tenant sets its own.
  const ARCHIVIST_DEFAULTS = { mode: 'debounced', afterTurns: 10, idleMs: 600_000 };
  const EMPTY = {
    modelRoutes: {},
    blockedTools: [],
    toolSchemaMode: 'relaxed',
    modelPrices: {},
    approvalRequired: [],
    approvalTtlMs: null,
    defaultModel: DEFAULT_MODEL,
    archivist: ARCHIVIST_DEFAULTS,
    notifyUrl: null,
    notifySecretSet: false,
    dailySpendLimitUsd: null,
    operatorDailySpendLimitUsd: null,
    evaluation: { dailyBudgetUsd: 10 },
    transcriptRetentionDays: null,
    encryption: { mode: 'off', available: false },
  };

  beforeAll(async () => {
    env = await createTestEnv();
    // 127.0.0.2 is exempt from the notify endpoint's address rules, as a deployment would exempt a host.
    gateway = await startGateway(env.config({ DEFAULT_MODEL, OUTBOUND_WEBHOOK_ALLOW_HOSTS: '127.0.0.2' }));
    ({ api: a, tenantId: tenantA } = await newTenant(gateway.url, ADMIN, 'a'));
    ({ api: b } = await newTenant(gateway.url, ADMIN, 'b'));
  });

  afterAll(async () => {
    await gateway?.close();
    await env?.cleanup();
  });

  it('a new tenant has no routes, no blocked tools, and sees the deployment default model', async () => {
    const res = await a.get('/v1/settings');
    expect(res.status).toBe(200);
    expect(res.body).toEqual(EMPTY);
  });

  it('needs an API key', async () => {
    const res = await new Api(gateway.url).get('/v1/settings');
    expect(res.status).toBe(401);
    expect(res.body.error.code).toBe('unauthorized');
  });

  it('PATCH merges routes per key, replaces blocked tools, and GET returns the same', async () => {
    const first = await a.patch('/v1/settings', {
      modelRoutes: { coding: 'anthropic/claude-sonnet-5-5', chat: 'openai/gpt-4o-mini' },
      blockedTools: ['current_time'],
    });
    expect(first.status).toBe(200);
    expect(first.body).toEqual({
      modelRoutes: { coding: 'anthropic/claude-sonnet-5-5', chat: 'openai/gpt-4o-mini' },
      blockedTools: ['current_time'],
      toolSchemaMode: 'relaxed',
      modelPrices: {},
      approvalRequired: [],
      approvalTtlMs: null,
      defaultModel: DEFAULT_MODEL,
      archivist: ARCHIVIST_DEFAULTS,
      evaluation: { dailyBudgetUsd: 10 },
      notifyUrl: null,
      notifySecretSet: false,
      dailySpendLimitUsd: null,
      operatorDailySpendLimitUsd: null,
      transcriptRetentionDays: null,
      encryption: { mode: 'off', available: false },
    });

    // Only the named route changes; blockedTools is left alone when absent.
    const second = await a.patch('/v1/settings', { modelRoutes: { burst: 'openai-chat/llama3.1:8b' } });
    expect(second.status).toBe(200);
    const expected = {
      modelRoutes: {
        coding: 'anthropic/claude-sonnet-5-5',
        chat: 'openai/gpt-4o-mini',
        burst: 'openai-chat/llama3.1:8b',
      },
      blockedTools: ['current_time'],
      toolSchemaMode: 'relaxed',
      modelPrices: {},
      approvalRequired: [],
      approvalTtlMs: null,
      defaultModel: DEFAULT_MODEL,
      archivist: ARCHIVIST_DEFAULTS,
      evaluation: { dailyBudgetUsd: 10 },
      notifyUrl: null,
      notifySecretSet: false,
      dailySpendLimitUsd: null,
      operatorDailySpendLimitUsd: null,
      transcriptRetentionDays: null,
      encryption: { mode: 'off', available: false },
    };
    expect(second.body).toEqual(expected);
    expect((await a.get('/v1/settings')).body).toEqual(expected);

    // blockedTools is replaced as a whole, routes untouched.
    const third = await a.patch('/v1/settings', { blockedTools: ['word_count'] });
    expect(third.body).toEqual({ ...expected, blockedTools: ['word_count'] });
    const cleared = await a.patch('/v1/settings', { blockedTools: [] });
    expect(cleared.body).toEqual({ ...expected, blockedTools: [] });
  });

  it('toolSchemaMode switches to strict and back, and rejects anything else', async () => {
    const strict = await a.patch('/v1/settings', { toolSchemaMode: 'strict' });
    expect(strict.status).toBe(200);
    expect(strict.body.toolSchemaMode).toBe('strict');
    expect((await a.get('/v1/settings')).body.toolSchemaMode).toBe('strict');
    const bad = await a.patch('/v1/settings', { toolSchemaMode: 'loose' });
    expect(bad.status).toBe(400);
    expect(bad.body.error.code).toBe('validation_failed');
    expect((await a.get('/v1/settings')).body.toolSchemaMode).toBe('strict');
    expect((await a.patch('/v1/settings', { toolSchemaMode: 'relaxed' })).body.toolSchemaMode).toBe(
      'relaxed',
    );
  });

  it('null removes a route and leaves the others', async () => {
    await a.patch('/v1/settings', {
      modelRoutes: { reasoning: 'openai/o3', summarization: 'openai/gpt-4o-mini' },
    });
    const res = await a.patch('/v1/settings', { modelRoutes: { reasoning: null, agentic: null } });
    expect(res.status).toBe(200);
    expect(res.body.modelRoutes).not.toHaveProperty('reasoning');
    expect(res.body.modelRoutes).not.toHaveProperty('agentic');
    expect(res.body.modelRoutes.summarization).toBe('openai/gpt-4o-mini');
    expect((await a.get('/v1/settings')).body).toEqual(res.body);
    // Stored without the removed route, not as a null.
    const row = await env.db.tenant.findUniqueOrThrow({ where: { id: tenantA } });
    expect((row.settings as any).modelRoutes).not.toHaveProperty('reasoning');
  });

  it('keeps keys other features store in settings', async () => {
    const row = await env.db.tenant.findUniqueOrThrow({ where: { id: tenantA } });
    await env.db.tenant.update({
      where: { id: tenantA },
      data: { settings: { ...(row.settings as object), rateLimits: { perMinute: 60 } } },
    });
    await a.patch('/v1/settings', { modelRoutes: { chat: 'openai/gpt-4o' } });
    const after = await env.db.tenant.findUniqueOrThrow({ where: { id: tenantA } });
    expect(after.settings).toEqual(expect.objectContaining({ rateLimits: { perMinute: 60 } }));
    expect((await a.get('/v1/settings')).body).not.toHaveProperty('rateLimits');
  });

  it('reads invalid stored settings tolerantly', async () => {
    const { tenantId, api } = await newTenant(gateway.url, ADMIN, 'c');
    await env.db.tenant.update({
      where: { id: tenantId },
      data: {
        settings: {
          modelRoutes: { chat: 'hint:coding', coding: 'openai/gpt-4o', poetry: 'x' },
          blockedTools: 'no',
        },
      },
    });
    const res = await api.get('/v1/settings');
    expect(res.status).toBe(200);
    expect(res.body).toEqual({
      modelRoutes: { coding: 'openai/gpt-4o' },
      blockedTools: [],
      toolSchemaMode: 'relaxed',
      modelPrices: {},
      approvalRequired: [],
      approvalTtlMs: null,
      defaultModel: DEFAULT_MODEL,
      archivist: ARCHIVIST_DEFAULTS,
      evaluation: { dailyBudgetUsd: 10 },
      notifyUrl: null,
      notifySecretSet: false,
      dailySpendLimitUsd: null,
      operatorDailySpendLimitUsd: null,
      transcriptRetentionDays: null,
      encryption: { mode: 'off', available: false },
    });
    // And a PATCH writes the cleaned-up value back.
    const patched = await api.patch('/v1/settings', { blockedTools: ['word_count'] });
    expect(patched.body).toEqual({ ...res.body, blockedTools: ['word_count'] });
  });

  it("tenant B does not see or change tenant A's settings", async () => {
    const before = (await a.get('/v1/settings')).body;
    expect(Object.keys(before.modelRoutes).length).toBeGreaterThan(0);
    expect((await b.get('/v1/settings')).body).toEqual(EMPTY);

    const res = await b.patch('/v1/settings', {
      modelRoutes: { coding: 'openai/gpt-4o' },
      blockedTools: ['word_count'],
    });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({
      modelRoutes: { coding: 'openai/gpt-4o' },
      blockedTools: ['word_count'],
      toolSchemaMode: 'relaxed',
      modelPrices: {},
      approvalRequired: [],
      approvalTtlMs: null,
      defaultModel: DEFAULT_MODEL,
      archivist: ARCHIVIST_DEFAULTS,
      evaluation: { dailyBudgetUsd: 10 },
      notifyUrl: null,
      notifySecretSet: false,
      dailySpendLimitUsd: null,
      operatorDailySpendLimitUsd: null,
      transcriptRetentionDays: null,
      encryption: { mode: 'off', available: false },
    });
    expect((await a.get('/v1/settings')).body).toEqual(before);
  });

  it('sets the notify endpoint with a write-only secret; a URL needs a secret; null removes both', async () => {
    const { api } = await newTenant(gateway.url, ADMIN, 'n');
    const secret = `whsec_${Buffer.alloc(32, 7).toString('base64')}`;
    const alone = await api.patch('/v1/settings', { notifyUrl: 'https://hooks.example.com/in' });
    expect(alone.status).toBe(400);
    expect((await api.get('/v1/settings')).body).toEqual(EMPTY);

    for (const bad of [
      { notifyUrl: 'ftp://hooks.example.com/in', notifySecret: secret },
      { notifyUrl: 'https://hooks.example.com/in', notifySecret: 'plain-secret' },
      {
        notifyUrl: 'https://hooks.example.com/in',
        notifySecret: `whsec_${Buffer.alloc(8).toString('base64')}`,
      },
      { notifySecret: null },
    ]) {
      expect((await api.patch('/v1/settings', bad)).status).toBe(400);
    }

    const set = await api.patch('/v1/settings', {
      notifyUrl: 'https://hooks.example.com/in',
      notifySecret: secret,
    });
    expect(set.status).toBe(200);
    expect(set.body).toEqual({ ...EMPTY, notifyUrl: 'https://hooks.example.com/in', notifySecretSet: true });
    expect(JSON.stringify((await api.get('/v1/settings')).body)).not.toContain(secret);

    // A new URL keeps the secret; null removes both.
    const moved = await api.patch('/v1/settings', { notifyUrl: 'https://hooks.example.com/v2' });
    expect(moved.body).toMatchObject({ notifyUrl: 'https://hooks.example.com/v2', notifySecretSet: true });
    const removed = await api.patch('/v1/settings', { notifyUrl: null });
    expect(removed.body).toEqual(EMPTY);
  });

  it('refuses a private, loopback, link-local or metadata notify endpoint up front, naming the field', async () => {
    const { api } = await newTenant(gateway.url, ADMIN, 'private-notify');
    const secret = `whsec_${Buffer.alloc(32, 7).toString('base64')}`;
    for (const notifyUrl of [
      'http://127.0.0.1:8080/in',
      'http://localhost:8080/in',
      'http://10.1.2.3/in',
      'http://192.168.0.10/in',
      'http://169.254.169.254/latest/meta-data',
      'http://metadata.google.internal/computeMetadata/v1',
      'http://[::1]:8080/in',
      'http://[fd00::1]/in',
    ]) {
      const res = await api.patch('/v1/settings', { notifyUrl, notifySecret: secret });
      expect({ notifyUrl, status: res.status, code: res.body.error?.code }).toEqual({
        notifyUrl,
        status: 400,
        code: 'validation_failed',
      });
      expect(res.body.error.details.issues).toEqual([
        { path: 'notifyUrl', message: expect.stringMatching(/^the URL is refused: /) },
      ]);
    }
    // Nothing stored.
    expect((await api.get('/v1/settings')).body).toEqual(EMPTY);
    // A host OUTBOUND_WEBHOOK_ALLOW_HOSTS lists is accepted, as the send path accepts it.
    const allowed = await api.patch('/v1/settings', {
      notifyUrl: 'http://127.0.0.2:8080/in',
      notifySecret: secret,
    });
    expect(allowed.status).toBe(200);
    expect(allowed.body).toMatchObject({ notifyUrl: 'http://127.0.0.2:8080/in', notifySecretSet: true });
    // Moving the URL alone to a private address is refused too, and keeps the one stored.
    const moved = await api.patch('/v1/settings', { notifyUrl: 'http://127.0.0.1/in' });
    expect(moved.status).toBe(400);
    expect((await api.get('/v1/settings')).body.notifyUrl).toBe('http://127.0.0.2:8080/in');
  });

  it('concurrent PATCHes of different routes all land', async () => {
    const { api } = await newTenant(gateway.url, ADMIN, 'd');
    const routes = ['chat', 'reasoning', 'agentic', 'coding', 'burst', 'summarization'];
    const results = await Promise.all(
      routes.map((r) => api.patch('/v1/settings', { modelRoutes: { [r]: `openai/model-${r}` } })),
    );
    expect(results.map((r) => r.status)).toEqual(routes.map(() => 200));
    const res = await api.get('/v1/settings');
    expect(res.body.modelRoutes).toEqual(Object.fromEntries(routes.map((r) => [r, `openai/model-${r}`])));
  });

  it('an agent created with model "hint:coding" is accepted and returned as such', async () => {
    const created = await a.post('/v1/agents', {
      name: 'coder',
      model: 'hint:coding',
      fallbackModels: ['hint:burst', 'openai/gpt-4o'],
    });
    expect(created.status).toBe(201);
    expect(created.body.model).toBe('hint:coding');
    expect(created.body.fallbackModels).toEqual(['hint:burst', 'openai/gpt-4o']);
    const fetched = await a.get(`/v1/agents/${created.body.id}`);
    expect(fetched.body.model).toBe('hint:coding');
    const patched = await a.patch(`/v1/agents/${created.body.id}`, { model: 'hint:reasoning' });
    expect(patched.status).toBe(200);
    expect(patched.body.model).toBe('hint:reasoning');
  });

  it('rejects blocking a tool that does not exist, naming it', async () => {
    const before = (await a.get('/v1/settings')).body;
    const res = await a.patch('/v1/settings', { blockedTools: ['word_count', 'rm_rf'] });
    expect(res.status).toBe(400);
    expect(res.body.error.code).toBe('validation_failed');
    expect(res.body.error.message).toContain('rm_rf');
    expect((await a.get('/v1/settings')).body).toEqual(before);
  });

  it('explains a bad route value with its path', async () => {
    const res = await a.patch('/v1/settings', {
      modelRoutes: { chat: 'hint:coding', poetry: 'openai/gpt-4o' },
    });
    expect(res.status).toBe(400);
    const issues = res.body.error.details.issues.map((i: { path: string; message: string }) => [
      i.path,
      i.message,
    ]);
    expect(issues).toEqual(
      expect.arrayContaining([
        ['modelRoutes.chat', expect.stringContaining('<provider>/<model>')],
        ['modelRoutes', expect.stringContaining('poetry')],
      ]),
    );
  });

  it('is described in the OpenAPI document', async () => {
    const res = await new Api(gateway.url).get('/docs/openapi.json');
    expect(res.status).toBe(200);
    const path = res.body.paths['/v1/settings'];
    expect(Object.keys(path).sort()).toEqual(['get', 'patch']);
    expect(path.patch.requestBody.content['application/json'].schema.$ref).toBe(
      '#/components/schemas/UpdateSettingsDto',
    );
    expect(path.get.responses['200'].content['application/json'].schema.$ref).toBe(
      '#/components/schemas/Settings',
    );
    const routes = res.body.components.schemas.UpdateSettingsDto.properties.modelRoutes.properties;
    expect(Object.keys(routes)).toEqual([
      'chat',
      'reasoning',
      'agentic',
      'coding',
      'burst',
      'summarization',
      'vision',
      'evaluation',
    ]);
    const schemas = res.body.components.schemas;
    expect(schemas.UpdateSettingsDto.properties.toolSchemaMode.enum).toEqual(['relaxed', 'strict']);
    expect(schemas.Settings.properties.archivist.properties.mode.enum).toEqual([
      'debounced',
      'every_turn',
      'off',
    ]);
    expect(Object.keys(schemas.Settings.properties).sort()).toEqual([
      'approvalRequired',
      'approvalTtlMs',
      'archivist',
      'blockedTools',
      'dailySpendLimitUsd',
      'defaultModel',
      'encryption',
      'evaluation',
      'modelPrices',
      'modelRoutes',
      'notifySecretSet',
      'notifyUrl',
      'operatorDailySpendLimitUsd',
      'toolSchemaMode',
      'transcriptRetentionDays',
    ]);
  });

  it('merges prices per key, null removing one, and rejects a malformed price without changing anything', async () => {
    const c = (await newTenant(gateway.url, ADMIN, 'prices')).api;
    const set = await c.patch('/v1/settings', {
      modelPrices: {
        'openai-chat/llama3.1:8b': { input: 0, output: 0 },
        'openai/gpt-5': { input: 1, output: 8 },
      },
    });
    expect(set.status).toBe(200);
    const removed = await c.patch('/v1/settings', { modelPrices: { 'openai/gpt-5': null } });
    expect(removed.body.modelPrices).toEqual({ 'openai-chat/llama3.1:8b': { input: 0, output: 0 } });

    for (const modelPrices of [
      { 'gpt-5': { input: 1, output: 1 } },
      { 'openai/gpt-5': { input: -1, output: 1 } },
      { 'openai/gpt-5': { input: 1 } },
    ]) {
      const bad = await c.patch('/v1/settings', { modelPrices });
      expect(bad.status).toBe(400);
      expect(bad.body.error.code).toBe('validation_failed');
    }
    expect((await c.get('/v1/settings')).body.modelPrices).toEqual({
      'openai-chat/llama3.1:8b': { input: 0, output: 0 },
    });
  });

  it('sets the archivist’s settings, shows them with the defaults filled in, and null restores the defaults', async () => {
    const set = await a.patch('/v1/settings', { archivist: { mode: 'every_turn', idleMs: 5000 } });
    expect(set.status).toBe(200);
    expect(set.body.archivist).toEqual({ mode: 'every_turn', afterTurns: 10, idleMs: 5000 });
    expect((await a.get('/v1/settings')).body.archivist).toEqual(set.body.archivist);
    const bad = await a.patch('/v1/settings', { archivist: { afterTurns: 0 } });
    expect(bad.status).toBe(400);
    expect((await a.get('/v1/settings')).body.archivist).toEqual(set.body.archivist);
    const reset = await a.patch('/v1/settings', { archivist: null });
    expect(reset.body.archivist).toEqual(ARCHIVIST_DEFAULTS);
  });
});
