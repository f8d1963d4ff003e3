import {
  ErrorResponse,
  JsonRpcErrorResponse,
  LangGraphErrorResponse,
  newId,
  OpenAiErrorResponse,
} from '@switchboard/contracts';
import { createTestEnv, type TestEnv } from '@switchboard/testing';
import { Api, newTenant, type ApiResponse } from '../support/api';
import { startGateway } from '../support/stack';

/**
 * A generated corpus of malformed requests across every route: wrong types, unknown fields, NUL and
 * lone surrogates, deep and huge JSON, bad ids and cursors, bad content types, invalid UTF-8,
 * missing or wrong credentials, another tenant's ids, bad Idempotency-Keys, malformed URLs. Each
 * must be a 4xx in the one error shape (the contracts' ErrorResponse schema; OpenAI's shape on the
 * OpenAI-compatible route), never a 5xx, and leave the row count of every table in the database as
 * it was.
 */
jest.setTimeout(120_000);

const ADMIN = 'test-admin-token-0123456789';
const UNKNOWN_ID = '01a20360-0000-7000-8000-000000000000';

interface Case {
  name: string;
  run: () => Promise<ApiResponse>;
  /** The status this malformation must get, when it is one status whatever the route. */
  status?: number;
  code?: string;
  /** The OpenAI-compatible route: OpenAI's error shape, `invalid_api_key` for `unauthorized`. */
  openai?: boolean;
  /** The protocol adapters (/mcp, /a2a): a JSON-RPC error response, the gateway's code in `error.data.code`. */
  jsonrpc?: boolean;
  /** The LangGraph adapter (docs/adr/0038): LangGraph's `{detail}` shape, no code. */
  langgraph?: boolean;
}

describe('bad input corpus', () => {
  let env: TestEnv;
  let gateway: Awaited<ReturnType<typeof startGateway>>;
  let api: Api;
  let admin: Api;
  let anonymous: Api;
  let pausedApi: Api;
  const ids: Record<string, string> = {};
  const cases: Case[] = [];

  beforeAll(async () => {
    env = await createTestEnv();
    gateway = await startGateway(
      env.config({ BODY_LIMIT_BYTES: String(512 * 1024), MCP_ALLOW_HOSTS: '127.0.0.1' }),
    );
    ({ api, tenantId: ids.tenant } = await newTenant(gateway.url, ADMIN, 'mine'));
    const other = await newTenant(gateway.url, ADMIN, 'theirs');
    admin = new Api(gateway.url, ADMIN);
    anonymous = new Api(gateway.url);
    ids.agent = (await api.post('/v1/agents', { name: 'mine' })).body.id;
    ids.session = (await api.post('/v1/sessions', { agentId: ids.agent })).body.id;
    // An admitted message with a key (its turn stays queued: no worker runs here).
    const admitted = await api.post(
      `/v1/sessions/${ids.session}/messages`,
      { content: 'first' },
      { 'idempotency-key': 'corpus-key' },
    );
    if (admitted.status !== 202) throw new Error(`admit: ${admitted.status}`);
    ids.turn = admitted.body.turnId;
    ids.closedSession = (await api.post('/v1/sessions', { agentId: ids.agent })).body.id;
    await api.delete(`/v1/sessions/${ids.closedSession}`);
    ids.otherKey = other.keyId;
    ids.otherAgent = (await other.api.post('/v1/agents', { name: 'theirs' })).body.id;
    ids.otherSession = (await other.api.post('/v1/sessions', { agentId: ids.otherAgent })).body.id;
    ids.memory = (await api.post(`/v1/agents/${ids.agent}/memory`, { content: 'mine' })).body.sourceRef;
    ids.otherMemory = (
      await other.api.post(`/v1/agents/${ids.otherAgent}/memory`, { content: 'theirs' })
    ).body.sourceRef;
    ids.schedule = (await api.post('/v1/schedules', { agentId: ids.agent, cron: '0 9 * * *' })).body.id;
    ids.workItem = (await api.post(`/v1/agents/${ids.agent}/work-items`, { objective: 'mine' })).body.id;
    ids.otherWorkItem = (
      await other.api.post(`/v1/agents/${ids.otherAgent}/work-items`, { objective: 'theirs' })
    ).body.id;
    // MCP servers nobody listens for (registered `unreachable`): ids to aim bad input at.
    ids.mcpServer = (
      await api.post('/v1/mcp-servers', { name: 'mine', url: 'http://127.0.0.1:9/mcp' })
    ).body.id;
    ids.otherMcpServer = (
      await other.api.post('/v1/mcp-servers', { name: 'theirs', url: 'http://127.0.0.1:9/mcp' })
    ).body.id;
    ids.otherSchedule = (
      await other.api.post('/v1/schedules', { agentId: ids.otherAgent, cron: '0 9 * * *' })
    ).body.id;
    const trigger = await api.post('/v1/triggers', { agentId: ids.agent, name: 'gh', scheme: 'github' });
    ids.trigger = trigger.body.id;
    ids.signedHook = trigger.body.path;
    ids.tokenHook = (
      await api.post('/v1/triggers', { agentId: ids.agent, name: 'alerts', scheme: 'token' })
    ).body.path;
    ids.otherTrigger = (
      await other.api.post('/v1/triggers', { agentId: ids.otherAgent, name: 'theirs', scheme: 'token' })
    ).body.id;
    ids.otherTurn = (
      await other.api.post(`/v1/sessions/${ids.otherSession}/messages`, { content: 'x' })
    ).body.turnId;
    // Approvals as a paused turn writes them (no worker runs here): one of each tenant.
    const approval = async (turnId: string, sessionId: string) => {
      const turn = await env.db.turn.findUniqueOrThrow({ where: { id: turnId } });
      const row = await env.db.approval.create({
        data: {
          id: newId(),
          tenantId: turn.tenantId,
          sessionId,
          turnId,
          callId: 'c1',
          toolName: 'word_count',
          arguments: {},
          sideEffect: 'read_only',
          policy: 'tenant',
          expiresAt: new Date(Date.now() + 3_600_000),
        },
      });
      return row.id;
    };
    ids.approval = await approval(ids.turn, ids.session);
    ids.otherApproval = await approval(ids.otherTurn, ids.otherSession);
    // A sub-agent task of the other tenant (docs/adr/0024), as a spawn writes it.
    ids.otherTask = newId();
    await env.db.$executeRaw`
      INSERT INTO tasks (id, tenant_id, agent_id, agent_name, parent_turn_id, parent_session_id, call_id, status,
        depth, updated_at)
      SELECT ${ids.otherTask}::uuid, tenant_id, agent_id, 'researcher', id, session_id, 'c1', 'pending', 1, now()
      FROM turns WHERE id = ${ids.otherTurn}::uuid`;
    // A tenant the operator paused (docs/adr/0030): every admission of its input is a 403.
    const paused = await newTenant(gateway.url, ADMIN, 'paused');
    pausedApi = paused.api;
    ids.pausedTenant = paused.tenantId;
    ids.pausedAgent = (await paused.api.post('/v1/agents', { name: 'paused' })).body.id;
    ids.pausedSession = (await paused.api.post('/v1/sessions', { agentId: ids.pausedAgent })).body.id;
    ids.pausedHook = (
      await paused.api.post('/v1/triggers', { agentId: ids.pausedAgent, name: 'p', scheme: 'token' })
    ).body.path;
    const pausing = await admin.post(`/v1/admin/tenants/${paused.tenantId}/pause`, { reason: 'corpus' });
    if (pausing.status !== 200) throw new Error(`pause: ${pausing.status}`);
  });

  afterAll(async () => {
    await gateway?.close();
    await env?.cleanup();
  });

  /** Row counts of every table in the test database's public schema. */
  async function rowCounts(): Promise<Record<string, number>> {
    const tables = await env.db.$queryRaw<{ name: string }[]>`
      SELECT table_name::text AS name FROM information_schema.tables
      WHERE table_schema = 'public' AND table_type = 'BASE TABLE' ORDER BY table_name`;
    const rows = await env.db.$queryRawUnsafe<{ name: string; n: number }[]>(
      tables
        .map(({ name }) => `SELECT '${name}' AS name, count(*)::int AS n FROM "${name}"`)
        .join(' UNION ALL '),
    );
    return Object.fromEntries(rows.map((r) => [r.name, r.n]));
  }

  // ---- the corpus ---------------------------------------------------------------------------

  const json = { 'content-type': 'application/json' };
  const send = (client: () => Api, method: string, path: () => string, body: unknown, headers = {}) =>
    client().request(method, path(), { raw: JSON.stringify(body), headers: { ...json, ...headers } });
  const sendRaw = (
    method: string,
    path: () => string,
    raw: string | Uint8Array,
    headers: Record<string, string>,
  ) => api.request(method, path(), { raw, headers });

  /** Routes that take a JSON body, with a valid body to break. */
  const bodyRoutes: {
    name: string;
    method: string;
    path: () => string;
    client: () => Api;
    valid: () => Record<string, unknown>;
    openai?: boolean;
  }[] = [
    {
      name: 'create tenant',
      method: 'POST',
      path: () => '/v1/admin/tenants',
      client: () => admin,
      valid: () => ({ name: 't' }),
    },
    {
      name: 'pause tenant',
      method: 'POST',
      path: () => `/v1/admin/tenants/${ids.tenant}/pause`,
      client: () => admin,
      valid: () => ({ reason: 'abuse report' }),
    },
    {
      name: 'create api key',
      method: 'POST',
      path: () => '/v1/api-keys',
      client: () => api,
      valid: () => ({ name: 'k' }),
    },
    {
      name: 'create agent',
      method: 'POST',
      path: () => '/v1/agents',
      client: () => api,
      valid: () => ({
        name: 'a',
        instructions: 'be brief',
        archetype: 'helper',
        toolResultCompression: 'light',
      }),
    },
    {
      name: 'patch agent',
      method: 'PATCH',
      path: () => `/v1/agents/${ids.agent}`,
      client: () => api,
      valid: () => ({
        name: 'renamed',
        instructions: 'x',
        toolResultCompression: 'off',
        archivist: { mode: 'every_turn', afterTurns: 3 },
      }),
    },
    {
      name: 'create session',
      method: 'POST',
      path: () => '/v1/sessions',
      client: () => api,
      valid: () => ({ agentId: ids.agent, title: 'hello', metadata: { k: 'v' } }),
    },
    {
      name: 'create schedule',
      method: 'POST',
      path: () => '/v1/schedules',
      client: () => api,
      valid: () => ({
        agentId: ids.agent,
        cron: '0 9 * * 1-5',
        timezone: 'Europe/Paris',
        payload: { text: 'standup' },
        enabled: false,
      }),
    },
    {
      name: 'create MCP server',
      method: 'POST',
      path: () => '/v1/mcp-servers',
      client: () => api,
      valid: () => ({
        name: 'corpus',
        url: 'http://127.0.0.1:9/mcp',
        auth: { header: 'Authorization', value: 'Bearer x' },
        timeoutMs: 500,
        idempotencyKeys: true,
        approval: 'destructive_only',
      }),
    },
    {
      name: 'patch MCP server',
      method: 'PATCH',
      path: () => `/v1/mcp-servers/${ids.mcpServer}`,
      client: () => api,
      valid: () => ({ timeoutMs: 800, idempotencyKeys: false, approval: 'none' }),
    },
    {
      name: 'patch schedule',
      method: 'PATCH',
      path: () => `/v1/schedules/${ids.schedule}`,
      client: () => api,
      valid: () => ({ cron: '0 10 * * *', timezone: 'UTC', payload: { text: 'later' }, enabled: true }),
    },
    {
      name: 'admit message',
      method: 'POST',
      path: () => `/v1/sessions/${ids.session}/messages`,
      client: () => api,
      valid: () => ({ content: 'hi', metadata: { k: 'v' }, correlationId: 'c-1' }),
    },
    {
      name: 'cancel turn',
      method: 'POST',
      path: () => `/v1/turns/${ids.turn}/cancel`,
      client: () => api,
      valid: () => ({ reason: 'no longer needed' }),
    },
    {
      name: 'operator cancel turn',
      method: 'POST',
      path: () => `/v1/admin/tenants/${ids.tenant}/turns/${ids.turn}/cancel`,
      client: () => admin,
      valid: () => ({ reason: 'runaway loop' }),
    },
    {
      name: 'replay turn',
      method: 'POST',
      path: () => `/v1/turns/${ids.turn}/replay`,
      client: () => api,
      valid: () => ({ model: 'openai/gpt-4.1-mini', instructions: 'be brief' }),
    },
    {
      name: 'fork session',
      method: 'POST',
      path: () => `/v1/sessions/${ids.session}/fork`,
      client: () => api,
      valid: () => ({
        turnId: ids.turn,
        position: 'before',
        model: 'openai/gpt-4.1-mini',
        instructions: 'be brief',
        title: 'branch',
      }),
    },
    {
      name: 'rewind session',
      method: 'POST',
      path: () => `/v1/sessions/${ids.session}/rewind`,
      client: () => api,
      valid: () => ({ turnId: ids.turn }),
    },
    {
      name: 'patch settings',
      method: 'PATCH',
      path: () => '/v1/settings',
      client: () => api,
      valid: () => ({ blockedTools: ['word_count'], toolSchemaMode: 'strict' }),
    },
    {
      name: 'decide approval',
      method: 'POST',
      path: () => `/v1/approvals/${ids.approval}`,
      client: () => api,
      valid: () => ({ decision: 'approve', reason: 'looks right' }),
    },
    {
      name: 'create trigger',
      method: 'POST',
      path: () => '/v1/triggers',
      client: () => api,
      valid: () => ({
        agentId: ids.agent,
        name: 'hooks',
        scheme: 'token',
        deliveryMode: 'wake_hint',
        sessionId: ids.session,
        rules: [],
      }),
    },
    {
      name: 'rotate trigger',
      method: 'POST',
      path: () => `/v1/triggers/${ids.trigger}/rotate`,
      client: () => api,
      valid: () => ({ graceSeconds: 60 }),
    },
    {
      name: 'add memory',
      method: 'POST',
      path: () => `/v1/agents/${ids.agent}/memory`,
      client: () => api,
      valid: () => ({ content: 'the deploy window is Thursday', title: 'deploys', kind: 'fact' }),
    },
    {
      name: 'put memory block',
      method: 'PUT',
      path: () => `/v1/agents/${ids.agent}/blocks/persona`,
      client: () => api,
      valid: () => ({
        content: 'Terse.',
        description: 'who',
        limitChars: 100,
        readOnly: false,
        expectedVersion: 0,
      }),
    },
    {
      name: 'enqueue work item',
      method: 'POST',
      path: () => `/v1/agents/${ids.agent}/work-items`,
      client: () => api,
      valid: () => ({
        objective: 'ship the release',
        planStatus: 'ready',
        plan: 'tag, build, announce',
        todoList: [{ text: 'tag', state: 'pending' }],
      }),
    },
    {
      name: 'complete work item',
      method: 'POST',
      path: () => `/v1/agents/${ids.agent}/work-items/${ids.workItem}/complete`,
      client: () => api,
      valid: () => ({ summary: 'done by hand' }),
    },
    {
      name: 'cancel work item',
      method: 'POST',
      path: () => `/v1/agents/${ids.agent}/work-items/${ids.workItem}/cancel`,
      client: () => api,
      valid: () => ({ reason: 'not needed' }),
    },
    {
      name: 'pause agent',
      method: 'POST',
      path: () => `/v1/agents/${ids.agent}/pause`,
      client: () => api,
      valid: () => ({ reason: 'maintenance' }),
    },
    {
      name: 'stop agent',
      method: 'POST',
      path: () => `/v1/agents/${ids.agent}/stop`,
      client: () => api,
      valid: () => ({ reason: 'incident' }),
    },
    {
      name: 'chat completion',
      method: 'POST',
      path: () => '/v1/chat/completions',
      client: () => api,
      valid: () => ({ model: 'mine', messages: [{ role: 'user', content: 'hi' }], user: 'u-1' }),
      openai: true,
    },
    {
      name: 'response',
      method: 'POST',
      path: () => '/v1/responses',
      client: () => api,
      valid: () => ({ model: 'mine', input: 'hi', user: 'u-1' }),
      openai: true,
    },
  ];

  const WRONG_VALUES: [string, unknown][] = [
    ['a number', 42],
    ['an object', { nested: true }],
    ['an array', [1]],
    ['null', null],
  ];

  const deep = (levels: number): unknown => JSON.parse('['.repeat(levels) + ']'.repeat(levels));
  const deepText = (levels: number) => '{"a":' + '['.repeat(levels) + ']'.repeat(levels) + '}';

  for (const r of bodyRoutes) {
    const breaks: [string, () => unknown, number?, string?][] = [
      ['an unknown field', () => ({ ...r.valid(), colour: 'red' }), 400, 'validation_failed'],
      ['a JSON array', () => [r.valid()], 400, 'validation_failed'],
      ['a JSON string', () => 'hello', 400, 'validation_failed'],
      ['JSON null', () => null, 400],
      ['a __proto__ key', () => JSON.parse(`{"__proto__":{"admin":true},"name":"x"}`), 400],
    ];
    for (const field of Object.keys(r.valid())) {
      const kind = (v: unknown) => (Array.isArray(v) ? 'array' : v === null ? 'null' : typeof v);
      for (const [what, value] of WRONG_VALUES.filter(([, v]) => kind(v) !== kind(r.valid()[field]))) {
        breaks.push([
          `${field} as ${what}`,
          () => ({ ...r.valid(), [field]: value }),
          400,
          'validation_failed',
        ]);
      }
      const valid = r.valid()[field];
      if (typeof valid === 'string' && field !== 'agentId') {
        breaks.push([
          `${field} with NUL`,
          () => ({ ...r.valid(), [field]: 'a\u0000b' }),
          400,
          'validation_failed',
        ]);
        breaks.push([
          `${field} with a lone surrogate`,
          () => ({ ...r.valid(), [field]: 'a\ud800b' }),
          400,
          'validation_failed',
        ]);
        breaks.push([`${field} 300,000 long`, () => ({ ...r.valid(), [field]: 'x'.repeat(300_000) }), 400]);
      }
      if (field === 'metadata') {
        breaks.push(
          [
            'a metadata key with NUL',
            () => ({ ...r.valid(), metadata: { 'k\u0000': 1 } }),
            400,
            'validation_failed',
          ],
          [
            'a metadata value with a lone surrogate',
            () => ({ ...r.valid(), metadata: { k: ['ok', { v: '\udc00' }] } }),
            400,
            'validation_failed',
          ],
          [
            'metadata nested 40 levels',
            () => ({ ...r.valid(), metadata: { d: deep(40) } }),
            400,
            'validation_failed',
          ],
          [
            'metadata of 20,000 bytes',
            () => ({ ...r.valid(), metadata: { big: 'x'.repeat(20_000) } }),
            400,
            'validation_failed',
          ],
        );
      }
    }
    for (const [what, body, status, code] of breaks) {
      cases.push({
        name: `${r.name}: ${what}`,
        run: () => send(r.client, r.method, r.path, body()),
        status,
        code,
        openai: r.openai,
      });
    }

    const rawBodies: [string, string | Uint8Array, Record<string, string>, number, string][] = [
      ['invalid JSON', '{"name":', json, 400, 'invalid_json'],
      ['an empty JSON body', '', json, 400, 'invalid_json'],
      [
        'invalid UTF-8',
        Buffer.concat([Buffer.from('{"name":"a'), Buffer.from([0xc3, 0x28, 0xff]), Buffer.from('"}')]),
        json,
        400,
        'invalid_json',
      ],
      ['JSON nested 5,000 levels', deepText(5000), json, 400, 'validation_failed'],
      [
        'a field nested 5,000 levels',
        `${JSON.stringify(r.valid()).slice(0, -1)},"deep":${'['.repeat(5000)}${']'.repeat(5000)}}`,
        json,
        400,
        'validation_failed',
      ],
      [
        'a form body',
        'name=x&content=hi',
        { 'content-type': 'application/x-www-form-urlencoded' },
        415,
        'unsupported_media_type',
      ],
      ['text/plain', '{"name":"x"}', { 'content-type': 'text/plain' }, 415, 'unsupported_media_type'],
      [
        'multipart',
        '--b\r\n\r\nx\r\n--b--',
        { 'content-type': 'multipart/form-data; boundary=b' },
        415,
        'unsupported_media_type',
      ],
      ['XML', '<name>x</name>', { 'content-type': 'application/xml' }, 415, 'unsupported_media_type'],
      [
        'JSON in latin1',
        '{"name":"x"}',
        { 'content-type': 'application/json; charset=latin1' },
        415,
        'unsupported_media_type',
      ],
      ['no content type', '{"name":"x"}', {}, 415, 'unsupported_media_type'],
    ];
    for (const [what, raw, headers, status, code] of rawBodies) {
      cases.push({
        name: `${r.name}: ${what}`,
        run: () => r.client().request(r.method, r.path(), { raw, headers }),
        status,
        code,
        openai: r.openai,
      });
    }
    cases.push(
      {
        name: `${r.name}: no credentials`,
        run: () => send(() => anonymous, r.method, r.path, r.valid()),
        status: 401,
        code: 'unauthorized',
      },
      {
        name: `${r.name}: a Basic authorization`,
        run: () => send(() => anonymous, r.method, r.path, r.valid(), { authorization: 'Basic YTpi' }),
        status: 401,
        code: 'unauthorized',
      },
      {
        name: `${r.name}: an unknown key`,
        run: () => send(() => new Api(gateway.url, 'sb_not-a-key'), r.method, r.path, r.valid()),
        status: 401,
        code: 'unauthorized',
      },
    );
    if (r.openai) for (const c of cases.slice(-3)) c.openai = true;
  }

  // Ids in paths: malformed, unknown, another tenant's.
  const idRoutes: {
    name: string;
    method: string;
    path: (id: string) => string;
    body?: unknown;
    other: () => string;
  }[] = [
    { name: 'get agent', method: 'GET', path: (id) => `/v1/agents/${id}`, other: () => ids.otherAgent },
    {
      name: 'patch agent',
      method: 'PATCH',
      path: (id) => `/v1/agents/${id}`,
      body: { name: 'stolen' },
      other: () => ids.otherAgent,
    },
    { name: 'delete agent', method: 'DELETE', path: (id) => `/v1/agents/${id}`, other: () => ids.otherAgent },
    {
      name: 'list memory',
      method: 'GET',
      path: (id) => `/v1/agents/${id}/memory`,
      other: () => ids.otherAgent,
    },
    {
      name: 'search memory',
      method: 'GET',
      path: (id) => `/v1/agents/${id}/memory?q=theirs`,
      other: () => ids.otherAgent,
    },
    {
      name: 'add memory',
      method: 'POST',
      path: (id) => `/v1/agents/${id}/memory`,
      body: { content: 'planted' },
      other: () => ids.otherAgent,
    },
    {
      name: 'get memory',
      method: 'GET',
      path: (id) => `/v1/agents/${id}/memory/${ids.otherMemory}`,
      other: () => ids.otherAgent,
    },
    {
      name: "get another tenant's memory record through my agent",
      method: 'GET',
      path: (ref) => `/v1/agents/${ids.agent}/memory/${ref}`,
      other: () => ids.otherMemory,
    },
    {
      name: "forget another tenant's memory record through my agent",
      method: 'DELETE',
      path: (ref) => `/v1/agents/${ids.agent}/memory/${ref}`,
      other: () => ids.otherMemory,
    },
    {
      name: 'forget memory',
      method: 'DELETE',
      path: (id) => `/v1/agents/${id}/memory/${ids.otherMemory}`,
      other: () => ids.otherAgent,
    },
    ...(['', '/persona', '/persona/versions'] as const).map((tail) => ({
      name: `read memory blocks${tail}`,
      method: 'GET',
      path: (id: string) => `/v1/agents/${id}/blocks${tail}`,
      other: () => ids.otherAgent,
    })),
    {
      name: 'put memory block',
      method: 'PUT',
      path: (id) => `/v1/agents/${id}/blocks/persona`,
      body: { content: 'planted' },
      other: () => ids.otherAgent,
    },
    {
      name: 'delete memory block',
      method: 'DELETE',
      path: (id) => `/v1/agents/${id}/blocks/persona`,
      other: () => ids.otherAgent,
    },
    ...(['pause', 'stop', 'resume'] as const).map((op) => ({
      name: `${op} agent`,
      method: 'POST',
      path: (id: string) => `/v1/agents/${id}/${op}`,
      other: () => ids.otherAgent,
    })),
    {
      name: 'list work items',
      method: 'GET',
      path: (id) => `/v1/agents/${id}/work-items`,
      other: () => ids.otherAgent,
    },
    {
      name: 'enqueue work item',
      method: 'POST',
      path: (id) => `/v1/agents/${id}/work-items`,
      body: { objective: 'planted' },
      other: () => ids.otherAgent,
    },
    {
      name: 'get work item',
      method: 'GET',
      path: (id) => `/v1/agents/${id}/work-items/${ids.otherWorkItem}`,
      other: () => ids.otherAgent,
    },
    {
      name: "get another tenant's work item through my agent",
      method: 'GET',
      path: (item) => `/v1/agents/${ids.agent}/work-items/${item}`,
      other: () => ids.otherWorkItem,
    },
    {
      name: "complete another tenant's work item through my agent",
      method: 'POST',
      path: (item) => `/v1/agents/${ids.agent}/work-items/${item}/complete`,
      other: () => ids.otherWorkItem,
    },
    {
      name: "cancel another tenant's work item through my agent",
      method: 'POST',
      path: (item) => `/v1/agents/${ids.agent}/work-items/${item}/cancel`,
      other: () => ids.otherWorkItem,
    },
    {
      name: 'cancel work item',
      method: 'POST',
      path: (id) => `/v1/agents/${id}/work-items/${ids.otherWorkItem}/cancel`,
      other: () => ids.otherAgent,
    },
    {
      name: 'get schedule',
      method: 'GET',
      path: (id) => `/v1/schedules/${id}`,
      other: () => ids.otherSchedule,
    },
    {
      name: 'patch schedule',
      method: 'PATCH',
      path: (id) => `/v1/schedules/${id}`,
      body: { enabled: false },
      other: () => ids.otherSchedule,
    },
    {
      name: 'delete schedule',
      method: 'DELETE',
      path: (id) => `/v1/schedules/${id}`,
      other: () => ids.otherSchedule,
    },
    {
      name: 'get MCP server',
      method: 'GET',
      path: (id) => `/v1/mcp-servers/${id}`,
      other: () => ids.otherMcpServer,
    },
    {
      name: 'patch MCP server',
      method: 'PATCH',
      path: (id) => `/v1/mcp-servers/${id}`,
      body: { approval: 'none' },
      other: () => ids.otherMcpServer,
    },
    {
      name: 'refresh MCP server',
      method: 'POST',
      path: (id) => `/v1/mcp-servers/${id}/refresh`,
      other: () => ids.otherMcpServer,
    },
    {
      name: 'delete MCP server',
      method: 'DELETE',
      path: (id) => `/v1/mcp-servers/${id}`,
      other: () => ids.otherMcpServer,
    },
    {
      name: 'revoke api key',
      method: 'DELETE',
      path: (id) => `/v1/api-keys/${id}`,
      other: () => ids.otherKey,
    },
    { name: 'get trigger', method: 'GET', path: (id) => `/v1/triggers/${id}`, other: () => ids.otherTrigger },
    {
      name: 'revoke trigger',
      method: 'DELETE',
      path: (id) => `/v1/triggers/${id}`,
      other: () => ids.otherTrigger,
    },
    {
      name: 'rotate trigger',
      method: 'POST',
      path: (id) => `/v1/triggers/${id}/rotate`,
      body: {},
      other: () => ids.otherTrigger,
    },
    { name: 'get session', method: 'GET', path: (id) => `/v1/sessions/${id}`, other: () => ids.otherSession },
    {
      name: 'close session',
      method: 'DELETE',
      path: (id) => `/v1/sessions/${id}`,
      other: () => ids.otherSession,
    },
    {
      name: 'transcript',
      method: 'GET',
      path: (id) => `/v1/sessions/${id}/messages`,
      other: () => ids.otherSession,
    },
    {
      name: 'admit message',
      method: 'POST',
      path: (id) => `/v1/sessions/${id}/messages`,
      body: { content: 'x' },
      other: () => ids.otherSession,
    },
    {
      name: 'events',
      method: 'GET',
      path: (id) => `/v1/sessions/${id}/events`,
      other: () => ids.otherSession,
    },
    {
      name: 'session turns',
      method: 'GET',
      path: (id) => `/v1/sessions/${id}/turns`,
      other: () => ids.otherSession,
    },
    {
      name: 'session lineage',
      method: 'GET',
      path: (id) => `/v1/sessions/${id}/lineage`,
      other: () => ids.otherSession,
    },
    {
      name: 'fork session',
      method: 'POST',
      path: (id) => `/v1/sessions/${id}/fork`,
      body: { turnId: UNKNOWN_ID },
      other: () => ids.otherSession,
    },
    {
      name: 'rewind session',
      method: 'POST',
      path: (id) => `/v1/sessions/${id}/rewind`,
      body: { turnId: UNKNOWN_ID },
      other: () => ids.otherSession,
    },
    { name: 'get turn', method: 'GET', path: (id) => `/v1/turns/${id}`, other: () => ids.otherTurn },
    {
      name: 'cancel turn',
      method: 'POST',
      path: (id) => `/v1/turns/${id}/cancel`,
      body: {},
      other: () => ids.otherTurn,
    },
    {
      name: 'turn stream',
      method: 'GET',
      path: (id) => `/v1/turns/${id}/stream`,
      other: () => ids.otherTurn,
    },
    {
      name: 'replay turn',
      method: 'POST',
      path: (id) => `/v1/turns/${id}/replay`,
      body: {},
      other: () => ids.otherTurn,
    },
    {
      name: 'turn comparison',
      method: 'GET',
      path: (id) => `/v1/turns/${id}/comparison`,
      other: () => ids.otherTurn,
    },
    {
      name: 'get approval',
      method: 'GET',
      path: (id) => `/v1/approvals/${id}`,
      other: () => ids.otherApproval,
    },
    {
      name: 'decide approval',
      method: 'POST',
      path: (id) => `/v1/approvals/${id}`,
      body: { decision: 'approve' },
      other: () => ids.otherApproval,
    },
    {
      name: 'session stream',
      method: 'GET',
      path: (id) => `/v1/sessions/${id}/stream`,
      other: () => ids.otherSession,
    },
    { name: 'get task', method: 'GET', path: (id) => `/v1/tasks/${id}`, other: () => ids.otherTask },
    {
      name: 'answer task',
      method: 'POST',
      path: (id) => `/v1/tasks/${id}/answer`,
      body: { answer: 'x' },
      other: () => ids.otherTask,
    },
  ];
  for (const r of idRoutes) {
    const call = (id: () => string) => () =>
      r.body === undefined
        ? api.request(r.method, r.path(id()))
        : api.request(r.method, r.path(id()), { body: r.body });
    cases.push(
      { name: `${r.name}: another tenant's id`, run: call(r.other), status: 404, code: 'not_found' },
      { name: `${r.name}: an unknown id`, run: call(() => UNKNOWN_ID), status: 404, code: 'not_found' },
      { name: `${r.name}: not a UUID`, run: call(() => 'not-a-uuid'), status: 404, code: 'not_found' },
      { name: `${r.name}: SQL in the id`, run: call(() => "1'%20or%201=1"), status: 404, code: 'not_found' },
      {
        name: `${r.name}: NUL in the id`,
        run: call(() => `${UNKNOWN_ID}%00`),
        status: 400,
        code: 'validation_failed',
      },
      { name: `${r.name}: a bad percent-escape`, run: call(() => '%zz'), status: 400, code: 'bad_request' },
      {
        name: `${r.name}: an id of 500 characters`,
        run: call(() => 'a'.repeat(500)),
        status: 414,
        code: 'uri_too_long',
      },
    );
  }

  // Queries and cursors.
  const cursor = (text: string) => Buffer.from(text).toString('base64url');
  const badQueries: [string, string, number, string][] = [
    ['a nonsense cursor', 'cursor=nonsense', 400, 'bad_request'],
    ['a cursor of 300 characters', `cursor=${'a'.repeat(300)}`, 400, 'validation_failed'],
    ['a NUL cursor', 'cursor=%00', 400, 'validation_failed'],
    ['limit 0', 'limit=0', 400, 'validation_failed'],
    ['limit -1', 'limit=-1', 400, 'validation_failed'],
    ['limit 1.5', 'limit=1.5', 400, 'validation_failed'],
    ['limit abc', 'limit=abc', 400, 'validation_failed'],
    ['limit 10000', 'limit=10000', 400, 'validation_failed'],
    ['limit twice', 'limit=1&limit=2', 400, 'validation_failed'],
    ['an unknown parameter', 'colour=red', 400, 'validation_failed'],
  ];
  cases.push(
    ...(
      [
        ['an unknown groupBy', 'groupBy=tenant'],
        ['groupBy with SQL', 'groupBy=day;DROP%20TABLE%20ledger_entries'],
        ['a quoted groupBy', 'groupBy=%22day%22'],
        ['groupBy of 500 characters', `groupBy=${'day,'.repeat(125)}`],
        ['a NUL in groupBy', 'groupBy=day%00'],
        ['a nonsense from', 'from=nonsense'],
        ['an epoch number as to', 'to=1767225600000'],
        ['from after to', 'from=2026-02-01T00:00:00Z&to=2026-01-01T00:00:00Z'],
        ['a window of ten years', 'from=2016-01-01T00:00:00Z&to=2026-01-01T00:00:00Z'],
        ['from twice', 'from=2026-01-01T00:00:00Z&from=2026-01-02T00:00:00Z'],
        ['an unknown parameter', 'colour=red'],
      ] as const
    ).map(([what, query]) => ({
      name: `usage: ${what}`,
      run: () => api.get(`/v1/usage?${query}`),
      status: 400,
      code: 'validation_failed',
    })),
    ...(
      [
        ['a timestamp as from', 'from=2026-01-01T00:00:00Z'],
        ['a nonsense to', 'to=yesterday'],
        ['February 30th', 'from=2026-02-30'],
        ['from after to', 'from=2026-02-01&to=2026-01-01'],
        ['a window of 367 days', 'from=2025-01-01&to=2026-01-02'],
        ['to twice', 'to=2026-01-01&to=2026-01-02'],
        ['an unknown parameter', 'groupBy=day'],
      ] as const
    ).map(([what, query]) => ({
      name: `daily spend: ${what}`,
      run: () => api.get(`/v1/usage/daily?${query}`),
      status: 400,
      code: 'validation_failed',
    })),
    {
      name: 'list approvals: an unknown status',
      run: () => api.get('/v1/approvals?status=maybe'),
      status: 400,
      code: 'validation_failed',
    },
    {
      name: 'decide approval: an unknown decision',
      run: () => api.post(`/v1/approvals/${ids.approval}`, { decision: 'maybe' }),
      status: 400,
      code: 'validation_failed',
    },
    {
      name: 'decide approval: no decision',
      run: () => api.post(`/v1/approvals/${ids.approval}`, { reason: 'why not' }),
      status: 400,
      code: 'validation_failed',
    },
  );
  for (const [path, what] of [
    [() => '/v1/agents', 'agents'],
    [() => '/v1/schedules', 'schedules'],
    [() => '/v1/mcp-servers', 'MCP servers'],
    [() => '/v1/sessions', 'sessions'],
    [() => `/v1/sessions/${ids.session}/messages`, 'transcript'],
    [() => '/v1/approvals', 'approvals'],
    [() => `/v1/agents/${ids.agent}/memory`, 'memory'],
    [() => `/v1/agents/${ids.agent}/work-items`, 'work items'],
    [() => '/v1/triggers', 'triggers'],
    [() => '/v1/api-keys', 'API keys'],
  ] as const) {
    for (const [q, query, status, code] of badQueries) {
      cases.push({ name: `list ${what}: ${q}`, run: () => api.get(`${path()}?${query}`), status, code });
    }
  }
  const forgedTranscriptCursors = [
    '[99999999999,0]',
    '[1e309,0]',
    '[-1,0]',
    '[1.5,0]',
    '[0]',
    '[0,0,0]',
    '["1",0]',
    '[null,0]',
    '{}',
    '[0,2147483648]',
  ];
  for (const [what, query] of [
    ['an unknown view', 'view=doing'],
    ['a view twice', 'view=queued&view=blocked'],
    ['a NUL view', 'view=queued%00'],
  ] as const) {
    cases.push({
      name: `list work items: ${what}`,
      run: () => api.get(`/v1/agents/${ids.agent}/work-items?${query}`),
      status: 400,
      code: 'validation_failed',
    });
  }
  for (const c of ['[-1]', '[1.5]', '["x"]', '[2147483648]', '[1,2]']) {
    cases.push({
      name: `work items: forged cursor ${c}`,
      run: () => api.get(`/v1/agents/${ids.agent}/work-items?cursor=${cursor(c)}`),
      status: 400,
      code: 'bad_request',
    });
  }
  for (const c of forgedTranscriptCursors) {
    cases.push({
      name: `transcript: forged cursor ${c}`,
      run: () => api.get(`/v1/sessions/${ids.session}/messages?cursor=${cursor(c)}`),
      status: 400,
      code: 'bad_request',
    });
  }
  for (const c of ['[1]', '["not-a-uuid"]', `["${UNKNOWN_ID}","x"]`]) {
    cases.push({
      name: `agents: forged cursor ${c}`,
      run: () => api.get(`/v1/agents?cursor=${cursor(c)}`),
      status: 400,
      code: 'bad_request',
    });
    cases.push({
      name: `schedules: forged cursor ${c}`,
      run: () => api.get(`/v1/schedules?cursor=${cursor(c)}`),
      status: 400,
      code: 'bad_request',
    });
    for (const [what, path] of [
      ['triggers', '/v1/triggers'],
      ['API keys', '/v1/api-keys'],
    ]) {
      cases.push({
        name: `${what}: forged cursor ${c}`,
        run: () => api.get(`${path}?cursor=${cursor(c)}`),
        status: 400,
        code: 'bad_request',
      });
    }
    cases.push({
      name: `memory: forged cursor ${c}`,
      run: () => api.get(`/v1/agents/${ids.agent}/memory?cursor=${cursor(c)}`),
      status: 400,
      code: 'bad_request',
    });
  }
  cases.push({
    name: 'list triggers: includeRevoked not a boolean',
    run: () => api.get('/v1/triggers?includeRevoked=maybe'),
    status: 400,
    code: 'validation_failed',
  });
  // Rate limits (docs/adr/0028): the operator sets them; the tenant cannot.
  for (const [what, body] of [
    ['a negative limit', { reads: -1 }],
    ['a fractional limit', { admission: 1.5 }],
    ['a limit over a million', { webhooks: 1_000_001 }],
    ['a string limit', { writes: '100' }],
    ['an unknown bucket', { uploads: 10 }],
    ['no field', {}],
  ] as const) {
    cases.push({
      name: `tenant limits: ${what}`,
      run: () => admin.patch(`/v1/admin/tenants/${ids.tenant}/limits`, body),
      status: 400,
      code: 'validation_failed',
    });
  }
  cases.push(
    {
      name: 'tenant limits: an unknown tenant',
      run: () => admin.patch(`/v1/admin/tenants/${UNKNOWN_ID}/limits`, { reads: 10 }),
      status: 404,
      code: 'not_found',
    },
    {
      name: 'tenant limits: not a tenant id',
      run: () => admin.patch('/v1/admin/tenants/nope/limits', { reads: 10 }),
      status: 404,
      code: 'not_found',
    },
    {
      name: 'tenant limits with an API key',
      run: () => api.patch(`/v1/admin/tenants/${ids.tenant}/limits`, { reads: 10 }),
      status: 401,
      code: 'unauthorized',
    },
    // The archivist's settings (docs/adr/0032): null restores the defaults, so checked by explicit cases.
    ...(
      [
        ['an unknown mode', { mode: 'always' }],
        ['afterTurns 0', { afterTurns: 0 }],
        ['afterTurns over 50', { afterTurns: 51 }],
        ['afterTurns fractional', { afterTurns: 2.5 }],
        ['idleMs under a second', { idleMs: 999 }],
        ['idleMs over a day', { idleMs: 86_400_001 }],
        ['idleMs a string', { idleMs: '60000' }],
        ['an unknown field', { every: 3 }],
        ['an array', [{ mode: 'off' }]],
        ['a string', 'off'],
      ] as const
    ).map(([what, archivist]) => ({
      name: `patch settings: archivist ${what}`,
      run: () => api.patch('/v1/settings', { archivist }),
      status: 400,
      code: 'validation_failed',
    })),
    {
      name: 'patch settings: a tenant cannot set its own rate limits',
      run: () => api.patch('/v1/settings', { rateLimits: { admission: 1_000_000 } }),
      status: 400,
      code: 'validation_failed',
    },
  );
  // The operator's tenant settings (docs/adr/0030): every field nullable, so checked by explicit cases.
  for (const [what, body] of [
    ['no field', {}],
    ['an unknown field', { maxTurns: 3 }],
    ['rate limits (their own route)', { rateLimits: { admission: 1 } }],
    ['maxConcurrentTurns 0', { maxConcurrentTurns: 0 }],
    ['maxConcurrentTurns fractional', { maxConcurrentTurns: 1.5 }],
    ['maxConcurrentTurns a string', { maxConcurrentTurns: '4' }],
    ['maxConcurrentTurns an object', { maxConcurrentTurns: { n: 4 } }],
    ['share 0', { share: 0 }],
    ['share below 0.1', { share: 0.05 }],
    ['share over 100', { share: 100.5 }],
    ['share an array', { share: [2] }],
    ['share true', { share: true }],
    ['a negative spend cap', { dailySpendLimitUsd: -0.01 }],
    ['a spend cap over a million', { dailySpendLimitUsd: 1_000_001 }],
    ['a spend cap as a string', { dailySpendLimitUsd: '10' }],
    ['one valid field and one bad', { share: 2, maxConcurrentTurns: -1 }],
    ['a JSON array', [{ share: 2 }]],
    ['JSON null', null],
    ['a string with NUL as a key', { 'share\u0000': 2 }],
  ] as const) {
    cases.push({
      name: `patch tenant: ${what}`,
      run: () =>
        admin.request('PATCH', `/v1/admin/tenants/${ids.tenant}`, {
          raw: JSON.stringify(body),
          headers: json,
        }),
      status: 400,
      code: 'validation_failed',
    });
  }
  for (const [what, run, status, code] of [
    [
      'patch tenant: invalid JSON',
      () => admin.request('PATCH', `/v1/admin/tenants/${ids.tenant}`, { raw: '{"share":', headers: json }),
      400,
      'invalid_json',
    ],
    [
      'patch tenant: text/plain',
      () =>
        admin.request('PATCH', `/v1/admin/tenants/${ids.tenant}`, {
          raw: '{"share":2}',
          headers: { 'content-type': 'text/plain' },
        }),
      415,
      'unsupported_media_type',
    ],
    [
      'patch tenant: an unknown tenant',
      () => admin.patch(`/v1/admin/tenants/${UNKNOWN_ID}`, { share: 2 }),
      404,
      'not_found',
    ],
    [
      'patch tenant: not a tenant id',
      () => admin.patch('/v1/admin/tenants/nope', { share: 2 }),
      404,
      'not_found',
    ],
    [
      'patch tenant: SQL in the id',
      () => admin.patch("/v1/admin/tenants/1'%20or%201=1", { share: 2 }),
      404,
      'not_found',
    ],
    [
      'patch tenant with an API key',
      () => api.patch(`/v1/admin/tenants/${ids.tenant}`, { share: 2 }),
      401,
      'unauthorized',
    ],
    [
      'patch tenant without credentials',
      () => anonymous.patch(`/v1/admin/tenants/${ids.tenant}`, { share: 2 }),
      401,
      'unauthorized',
    ],
    ['get tenant: an unknown tenant', () => admin.get(`/v1/admin/tenants/${UNKNOWN_ID}`), 404, 'not_found'],
    ['get tenant: not a tenant id', () => admin.get('/v1/admin/tenants/nope'), 404, 'not_found'],
    [
      'get tenant: NUL in the id',
      () => admin.get(`/v1/admin/tenants/${UNKNOWN_ID}%00`),
      400,
      'validation_failed',
    ],
    ['get tenant with an API key', () => api.get(`/v1/admin/tenants/${ids.tenant}`), 401, 'unauthorized'],
    ['list tenants with an API key', () => api.get('/v1/admin/tenants'), 401, 'unauthorized'],
    [
      'pause tenant: an unknown tenant',
      () => admin.post(`/v1/admin/tenants/${UNKNOWN_ID}/pause`, {}),
      404,
      'not_found',
    ],
    [
      'pause tenant: no body, an unknown tenant',
      () => admin.post(`/v1/admin/tenants/${UNKNOWN_ID}/pause`),
      404,
      'not_found',
    ],
    ['pause tenant: not a tenant id', () => admin.post('/v1/admin/tenants/nope/pause', {}), 404, 'not_found'],
    [
      'pause tenant: a reason of 501 characters',
      () => admin.post(`/v1/admin/tenants/${ids.tenant}/pause`, { reason: 'x'.repeat(501) }),
      400,
      'validation_failed',
    ],
    [
      'pause tenant: a blank reason',
      () => admin.post(`/v1/admin/tenants/${ids.tenant}/pause`, { reason: '   ' }),
      400,
      'validation_failed',
    ],
    [
      'resume tenant: an unknown tenant',
      () => admin.post(`/v1/admin/tenants/${UNKNOWN_ID}/resume`),
      404,
      'not_found',
    ],
    ['resume tenant: not a tenant id', () => admin.post('/v1/admin/tenants/nope/resume'), 404, 'not_found'],
    [
      'resume tenant: an unknown field',
      () => admin.post(`/v1/admin/tenants/${ids.pausedTenant}/resume`, { force: true }),
      400,
      'validation_failed',
    ],
    [
      'resume tenant: a JSON array',
      () => admin.post(`/v1/admin/tenants/${ids.pausedTenant}/resume`, []),
      400,
      'validation_failed',
    ],
    [
      'resume tenant: invalid JSON',
      () =>
        admin.request('POST', `/v1/admin/tenants/${ids.pausedTenant}/resume`, { raw: '{', headers: json }),
      400,
      'invalid_json',
    ],
    [
      'resume tenant with an API key',
      () => pausedApi.post(`/v1/admin/tenants/${ids.pausedTenant}/resume`),
      401,
      'unauthorized',
    ],
    ['admin audit events with an API key', () => api.get('/v1/admin/audit-events'), 401, 'unauthorized'],
    ['audit events with the admin token', () => admin.get('/v1/audit-events'), 401, 'unauthorized'],
    ['audit events without a key', () => anonymous.get('/v1/audit-events'), 401, 'unauthorized'],
    // A paused tenant's input: 403 tenant_paused, nothing written (docs/adr/0030).
    [
      'a paused tenant’s message',
      () => pausedApi.post(`/v1/sessions/${ids.pausedSession}/messages`, { content: 'x' }),
      403,
      'tenant_paused',
    ],
    [
      'a paused tenant’s message with an Idempotency-Key',
      () =>
        pausedApi.post(
          `/v1/sessions/${ids.pausedSession}/messages`,
          { content: 'x' },
          { 'idempotency-key': 'k-paused' },
        ),
      403,
      'tenant_paused',
    ],
    [
      'a paused tenant’s message with multitask reject',
      () =>
        pausedApi.post(`/v1/sessions/${ids.pausedSession}/messages`, { content: 'x', multitask: 'reject' }),
      403,
      'tenant_paused',
    ],
    [
      'a paused tenant’s webhook delivery',
      () => anonymous.post(ids.pausedHook, { type: 'x' }, { 'idempotency-key': 'd-paused' }),
      403,
      'tenant_paused',
    ],
  ] as [string, () => Promise<ApiResponse>, number, string][]) {
    cases.push({ name: what, run, status, code });
  }
  cases.push(
    ...(
      [
        ['a new session', {}],
        ['its session', { 'x-session-id': '' }],
      ] as const
    ).map(([what, headers]) => ({
      name: `chat completion of a paused tenant: ${what}`,
      run: () =>
        pausedApi.post(
          '/v1/chat/completions',
          {
            model: 'paused',
            messages: [
              { role: 'user', content: 'a' },
              { role: 'assistant', content: 'b' },
              { role: 'user', content: 'c' },
            ],
          },
          'x-session-id' in headers ? { 'x-session-id': ids.pausedSession } : {},
        ),
      status: 403,
      code: 'tenant_paused',
      openai: true,
    })),
  );
  // Operator and audit lists: limit and cursor as every list; filters by known values only.
  for (const [q, query, status, code] of badQueries) {
    cases.push(
      { name: `list tenants: ${q}`, run: () => admin.get(`/v1/admin/tenants?${query}`), status, code },
      { name: `audit events: ${q}`, run: () => api.get(`/v1/audit-events?${query}`), status, code },
      {
        name: `admin audit events: ${q}`,
        run: () => admin.get(`/v1/admin/audit-events?${query}`),
        status,
        code,
      },
    );
  }
  for (const c of ['[1]', '["not-a-uuid"]', `["${UNKNOWN_ID}","x"]`]) {
    cases.push(
      {
        name: `list tenants: forged cursor ${c}`,
        run: () => admin.get(`/v1/admin/tenants?cursor=${cursor(c)}`),
        status: 400,
        code: 'bad_request',
      },
      {
        name: `audit events: forged cursor ${c}`,
        run: () => api.get(`/v1/audit-events?cursor=${cursor(c)}`),
        status: 400,
        code: 'bad_request',
      },
      {
        name: `admin audit events: forged cursor ${c}`,
        run: () => admin.get(`/v1/admin/audit-events?cursor=${cursor(c)}`),
        status: 400,
        code: 'bad_request',
      },
    );
  }
  for (const [what, client, query] of [
    ['audit events: an unknown action', () => api, '/v1/audit-events?action=tenant.gone'],
    ['audit events: an action with SQL', () => api, "/v1/audit-events?action=tenant.paused'%20OR%201=1"],
    ['audit events: two actions', () => api, '/v1/audit-events?action=tenant.paused&action=tenant.resumed'],
    ['audit events: a tenant filter', () => api, `/v1/audit-events?tenantId=${ids.tenant}`],
    [
      'admin audit events: a tenant id that is not a UUID',
      () => admin,
      '/v1/admin/audit-events?tenantId=nope',
    ],
    ['admin audit events: a NUL tenant id', () => admin, '/v1/admin/audit-events?tenantId=%00'],
    ['admin audit events: an unknown action', () => admin, '/v1/admin/audit-events?action=everything'],
  ] as [string, () => Api, string][]) {
    cases.push({ name: what, run: () => client().get(query), status: 400, code: 'validation_failed' });
  }
  // The tenant's daily spend cap (docs/adr/0026): a positive number of USD up to a million, or null.
  for (const [what, value] of [
    ['zero', 0],
    ['negative', -5],
    ['a string', '10.00'],
    ['over a million', 1_000_001],
    ['an object', { usd: 5 }],
    ['true', true],
  ] as const) {
    cases.push({
      name: `settings: dailySpendLimitUsd ${what}`,
      run: () => api.patch('/v1/settings', { dailySpendLimitUsd: value }),
      status: 400,
      code: 'validation_failed',
    });
  }
  // A notify endpoint on a private, loopback, link-local or metadata address: refused when set, as at send time.
  for (const url of [
    'http://127.0.0.1/in',
    'http://localhost:9/in',
    'http://10.0.0.1/in',
    'http://169.254.169.254/',
    'http://[::1]/in',
  ]) {
    cases.push({
      name: `settings: notifyUrl ${url}`,
      run: () =>
        api.patch('/v1/settings', {
          notifyUrl: url,
          notifySecret: `whsec_${Buffer.alloc(32, 1).toString('base64')}`,
        }),
      status: 400,
      code: 'validation_failed',
    });
  }
  for (const [what, query] of [
    ['q of 1001 characters', `q=${'a'.repeat(1001)}`],
    ['a blank q', 'q=%20%20'],
    ['q with a cursor', `q=x&cursor=${cursor(`["${UNKNOWN_ID}"]`)}`],
    ['an unknown kind', 'kind=secret'],
    ['kind twice', 'kind=fact&kind=note'],
    ['limit 51', 'limit=51'],
    ['q twice', 'q=a&q=b'],
  ]) {
    cases.push({
      name: `memory: ${what}`,
      run: () => api.get(`/v1/agents/${ids.agent}/memory?${query}`),
      status: 400,
      code: 'validation_failed',
    });
  }
  for (const [what, query] of [
    ['maxChars 0', 'maxChars=0'],
    ['maxChars 50001', 'maxChars=50001'],
    ['maxChars abc', 'maxChars=abc'],
    ['maxChars 1.5', 'maxChars=1.5'],
    ['an unknown parameter', 'max_chars=5'],
  ]) {
    cases.push({
      name: `memory record: ${what}`,
      run: () => api.get(`/v1/agents/${ids.agent}/memory/${ids.memory}?${query}`),
      status: 400,
      code: 'validation_failed',
    });
  }
  for (const ref of [
    'mem_nope',
    `mem_${'A'.repeat(22)}`,
    "mem_'%3B%20DROP%20TABLE%20memory_records",
    UNKNOWN_ID,
  ]) {
    for (const method of ['GET', 'DELETE'] as const) {
      cases.push({
        name: `memory record: ${method} an unknown ref ${ref}`,
        run: () =>
          method === 'GET'
            ? api.get(`/v1/agents/${ids.agent}/memory/${ref}`)
            : api.delete(`/v1/agents/${ids.agent}/memory/${ref}`),
        status: 404,
        code: 'not_found',
      });
    }
  }
  for (const [q, query] of [
    ['after -1', 'after=-1'],
    ['after abc', 'after=abc'],
    ['after 1e400', 'after=1e400'],
    ['after beyond a Postgres integer', 'after=99999999999'],
    ['limit 501', 'limit=501'],
    ['an unknown parameter', 'cursor=x'],
  ]) {
    cases.push({
      name: `events: ${q}`,
      run: () => api.get(`/v1/sessions/${ids.session}/events?${query}`),
      status: 400,
      code: 'validation_failed',
    });
  }
  // SSE streams: a bad cursor is refused before any stream starts (docs/adr/0015).
  for (const [what, path] of [
    ['turn stream', () => `/v1/turns/${ids.turn}/stream`],
    ['session stream', () => `/v1/sessions/${ids.session}/stream`],
  ] as const) {
    for (const [q, query] of [
      ['after -1', 'after=-1'],
      ['after abc', 'after=abc'],
      ['after 1.5', 'after=1.5'],
      ['after 1e400', 'after=1e400'],
      ['after beyond a Postgres integer', 'after=99999999999'],
      ['after twice', 'after=1&after=2'],
      ['an unknown parameter', 'limit=1'],
    ]) {
      cases.push({
        name: `${what}: ${q}`,
        run: () => api.get(`${path()}?${query}`),
        status: 400,
        code: 'validation_failed',
      });
    }
    for (const [q, header] of [
      ['Last-Event-ID abc', 'abc'],
      ['Last-Event-ID -1', '-1'],
      ['Last-Event-ID 1.5', '1.5'],
      ['Last-Event-ID beyond a Postgres integer', '99999999999'],
    ]) {
      cases.push({
        name: `${what}: ${q}`,
        run: () => api.request('GET', path(), { headers: { 'last-event-id': header } }),
        status: 400,
        code: 'bad_request',
      });
    }
  }

  // Idempotency-Key and admission conflicts.
  const admit =
    (body: unknown, headers: Record<string, string> = {}) =>
    () =>
      api.post(`/v1/sessions/${ids.session}/messages`, body, headers);
  cases.push(
    {
      name: 'Idempotency-Key of 201 characters',
      run: admit({ content: 'x' }, { 'idempotency-key': 'k'.repeat(201) }),
      status: 400,
      code: 'bad_request',
    },
    {
      name: 'Idempotency-Key empty when unquoted',
      run: admit({ content: 'x' }, { 'idempotency-key': '""' }),
      status: 400,
      code: 'bad_request',
    },
    {
      name: 'Idempotency-Key not ASCII',
      run: admit({ content: 'x' }, { 'idempotency-key': 'cl\u00e9' }),
      status: 400,
      code: 'bad_request',
    },
    {
      name: 'Idempotency-Key reused with another body',
      run: admit({ content: 'second' }, { 'idempotency-key': 'corpus-key' }),
      status: 422,
      code: 'idempotency_key_reused',
    },
    {
      name: 'Idempotency-Key reused with another priority',
      run: admit({ content: 'first', priority: 'interject' }, { 'idempotency-key': 'corpus-key' }),
      status: 422,
      code: 'idempotency_key_reused',
    },
    {
      name: 'multitask reject while a turn is queued',
      run: admit({ content: 'x', multitask: 'reject' }),
      status: 409,
      code: 'conflict',
    },
    {
      name: 'a message into a closed session',
      run: () => api.post(`/v1/sessions/${ids.closedSession}/messages`, { content: 'x' }),
      status: 409,
      code: 'conflict',
    },
    { name: 'content blocks empty', run: admit({ content: [] }), status: 400, code: 'validation_failed' },
    {
      name: 'content block of another type',
      run: admit({ content: [{ type: 'image', url: 'x' }] }),
      status: 400,
      code: 'validation_failed',
    },
    {
      name: 'content block text with NUL',
      run: admit({ content: [{ type: 'text', text: 'a\u0000' }] }),
      status: 400,
      code: 'validation_failed',
    },
  );

  // The queue board (ADR 0040): only the admin token opens it, as Bearer or as Basic's password.
  const basic = (credentials: string) => `Basic ${Buffer.from(credentials).toString('base64')}`;
  for (const [what, authorization] of [
    ['a tenant API key as Bearer', () => `Bearer ${api.key}`],
    ['a tenant API key as the Basic password', () => basic(`ops:${api.key}`)],
    ['Basic with the admin token as the user name', () => basic(`${ADMIN}:`)],
    ['Basic without a colon', () => basic(ADMIN)],
    ['Basic that is not base64', () => 'Basic !!not-base64!!'],
    ['an empty Bearer', () => 'Bearer '],
    ['the admin token with a trailing character', () => `Bearer ${ADMIN}x`],
  ] as const) {
    for (const [method, path] of [
      ['GET', '/admin/queues'],
      ['GET', '/admin/queues/api/queues'],
      ['PUT', '/admin/queues/api/queues/turns/pause'],
    ] as const) {
      cases.push({
        name: `queue board ${method} ${path}: ${what}`,
        run: () => anonymous.request(method, path, { headers: { authorization: authorization() } }),
        status: 401,
        code: 'unauthorized',
      });
    }
  }

  // TokenJuice's setting (docs/adr/0033): one of four words, nothing else.
  for (const value of ['maximum', 'FULL', 'auto ', '', 'lossless']) {
    cases.push(
      {
        name: `create agent: toolResultCompression ${JSON.stringify(value)}`,
        run: () => api.post('/v1/agents', { name: 'tj', toolResultCompression: value }),
        status: 400,
        code: 'validation_failed',
      },
      {
        name: `patch agent: toolResultCompression ${JSON.stringify(value)}`,
        run: () => api.patch(`/v1/agents/${ids.agent}`, { toolResultCompression: value }),
        status: 400,
        code: 'validation_failed',
      },
    );
  }

  // Semantic tool selection and the agent's embedder (docs/adr/0049): an embedder the registry does
  // not know, a bound out of range or a pinned tool that does not exist is refused.
  for (const [what, body] of [
    ['an unknown local embedder', { embedder: 'local/nope' }],
    ['an unknown embedder provider', { embedder: 'cohere/embed-v3' }],
    ['an embedder without a model', { embedder: 'openai/' }],
    ['maxPerTurn 0', { toolSelection: { maxPerTurn: 0 } }],
    ['maxPerTurn not an integer', { toolSelection: { maxPerTurn: 2.5 } }],
    ['an unknown pinned tool', { toolSelection: { maxPerTurn: 2, pinned: ['no_such_tool'] } }],
    ['an unknown toolSelection field', { toolSelection: { maxPerTurn: 2, top: 3 } }],
  ] as const) {
    cases.push(
      {
        name: `create agent: ${what}`,
        run: () => api.post('/v1/agents', { name: 'emb', ...body }),
        status: 400,
        code: 'validation_failed',
      },
      {
        name: `patch agent: ${what}`,
        run: () => api.patch(`/v1/agents/${ids.agent}`, body),
        status: 400,
        code: 'validation_failed',
      },
    );
  }

  // Tier rules on agent definitions (docs/adr/0025): refused inside the save's transaction, nothing written.
  const newAgent = (body: Record<string, unknown>) => () =>
    api.post('/v1/agents', { name: 'tiers', ...body });
  cases.push(
    ...(
      [
        [
          'a chat agent listing a chat archetype',
          newAgent({ tier: 'chat', allowedSubagents: ['orchestrator'] }),
        ],
        [
          'a reasoning agent listing a reasoning archetype',
          newAgent({ tier: 'reasoning', allowedSubagents: ['planner'] }),
        ],
        ['a worker listing a sub-agent', newAgent({ tier: 'worker', allowedSubagents: ['researcher'] })],
        [
          'a worker archetype listing a sub-agent',
          newAgent({ archetype: 'critic', allowedSubagents: ['summarizer'] }),
        ],
        ['an unknown sub-agent', newAgent({ allowedSubagents: ['no_such_agent'] })],
        ['another tenant’s agent as sub-agent', newAgent({ allowedSubagents: ['theirs'] })],
        ['a duplicated sub-agent', newAgent({ allowedSubagents: ['researcher', 'researcher'] })],
        ['a chat agent listing itself by name', newAgent({ name: 'mine', allowedSubagents: ['mine'] })],
        [
          'a patch to a tier that may not spawn what the agent lists',
          () => api.patch(`/v1/agents/${ids.agent}`, { tier: 'worker', allowedSubagents: ['researcher'] }),
        ],
      ] as [string, () => Promise<ApiResponse>][]
    ).map(([name, run]) => ({ name: `tier rules: ${name}`, run, status: 400, code: 'validation_failed' })),
  );

  // The OpenAI-compatible route: what it refuses before anything is written.
  const chat =
    (change: Record<string, unknown>, headers: Record<string, string> = {}) =>
    () =>
      api.post(
        '/v1/chat/completions',
        { model: 'mine', messages: [{ role: 'user', content: 'hi' }], ...change },
        headers,
      );
  cases.push(
    ...(
      [
        [
          'a client tool with a malformed schema',
          chat({ tools: [{ type: 'function', function: { name: 'f', parameters: { type: 'nope' } } }] }),
          400,
          'invalid_schema',
        ],
        ['n: 3', chat({ n: 3 }), 400, 'unsupported_value'],
        ['logprobs', chat({ logprobs: true }), 400, 'unsupported_parameter'],
        [
          'a JSON schema response format without its json_schema',
          chat({ response_format: { type: 'json_schema' } }),
          400,
          'validation_failed',
        ],
        [
          'a response format whose schema is no JSON Schema',
          chat({
            response_format: {
              type: 'json_schema',
              json_schema: { name: 'x', schema: { type: 'object', properties: { a: { type: 'strang' } } } },
            },
          }),
          400,
          'invalid_response_format',
        ],
        [
          // A tool result answers a call a waiting turn handed out (docs/adr/0047): `c` is none.
          'a tool message for no call',
          chat({ messages: [{ role: 'tool', content: 'x', tool_call_id: 'c' }] }),
          404,
          'unknown_call',
        ],
        [
          'an image part',
          chat({ messages: [{ role: 'user', content: [{ type: 'image_url', image_url: { url: 'x' } }] }] }),
          400,
          'unsupported_value',
        ],
        [
          'an assistant message last',
          chat({ messages: [{ role: 'assistant', content: 'x' }] }),
          400,
          'invalid_value',
        ],
        ['a blank user message', chat({ messages: [{ role: 'user', content: '  ' }] }), 400, 'invalid_value'],
        ['an unknown role', chat({ messages: [{ role: 'robot', content: 'x' }] }), 400, 'validation_failed'],
        [
          '1,001 messages',
          chat({ messages: Array.from({ length: 1001 }, () => ({ role: 'user', content: 'x' })) }),
          400,
          'validation_failed',
        ],
        [
          '17 metadata pairs',
          chat({ metadata: Object.fromEntries(Array.from({ length: 17 }, (_, i) => [`k${i}`, 'v'])) }),
          400,
          'validation_failed',
        ],
        ['a metadata number', chat({ metadata: { k: 1 } }), 400, 'validation_failed'],
        ['temperature 3', chat({ temperature: 3 }), 400, 'validation_failed'],
        ['an unknown model', chat({ model: 'gpt-4o' }), 404, 'model_not_found'],
        ['another tenant’s agent id', chat({ model: UNKNOWN_ID }), 404, 'model_not_found'],
        [
          'another tenant’s session',
          () => chat({}, { 'x-session-id': ids.otherSession })(),
          404,
          'session_not_found',
        ],
        ['an unknown session', chat({}, { 'x-session-id': UNKNOWN_ID }), 404, 'session_not_found'],
        [
          'a session id that is not a UUID',
          chat({ metadata: { session_id: "1' or 1=1" } }),
          404,
          'session_not_found',
        ],
        [
          'two different session ids',
          () => chat({ metadata: { session_id: ids.session } }, { 'x-session-id': UNKNOWN_ID })(),
          400,
          'invalid_value',
        ],
        ['a closed session', () => chat({}, { 'x-session-id': ids.closedSession })(), 409, 'session_closed'],
        [
          'an Idempotency-Key of 201 characters',
          chat({}, { 'idempotency-key': 'k'.repeat(201) }),
          400,
          'bad_request',
        ],
      ] as [string, () => Promise<ApiResponse>, number, string][]
    ).map(([name, run, status, code]) => ({
      name: `chat completion: ${name}`,
      run,
      status,
      code,
      openai: true,
    })),
  );

  // The protocol adapters (docs/adr/0036, 0037): refused before a JSON-RPC method is read, in JSON-RPC's shape.
  const mcpHeaders = { ...json, accept: 'application/json, text/event-stream' };
  const rpcBody = JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list' });
  const a2aBody = JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tasks/get', params: { id: UNKNOWN_ID } });
  cases.push(
    ...(
      [
        [
          'MCP without a key',
          () => anonymous.request('POST', '/mcp', { raw: rpcBody, headers: mcpHeaders }),
          401,
          'unauthorized',
        ],
        [
          'MCP with a key that does not exist',
          () =>
            new Api(gateway.url, 'sb_' + 'x'.repeat(40)).request('POST', '/mcp', {
              raw: rpcBody,
              headers: mcpHeaders,
            }),
          401,
          'unauthorized',
        ],
        [
          'MCP with invalid JSON',
          () => api.request('POST', '/mcp', { raw: '{"jsonrpc":', headers: mcpHeaders }),
          400,
          'invalid_json',
        ],
        [
          'MCP with a form body',
          () =>
            api.request('POST', '/mcp', {
              raw: 'a=1',
              headers: { 'content-type': 'application/x-www-form-urlencoded' },
            }),
          415,
          'unsupported_media_type',
        ],
        [
          'MCP with a body over the limit',
          () => api.request('POST', '/mcp', { raw: `{"a":"${'x'.repeat(600_000)}"}`, headers: mcpHeaders }),
          413,
          'payload_too_large',
        ],
        ['MCP GET (stateless: no stream)', () => api.request('GET', '/mcp'), 405, undefined],
        ['MCP DELETE (stateless: no session)', () => api.request('DELETE', '/mcp'), 405, undefined],
        [
          'an agent card without a key',
          () => anonymous.get(`/a2a/${ids.agent}/.well-known/agent-card.json`),
          401,
          'unauthorized',
        ],
        [
          'another tenant’s agent card',
          () => api.get(`/a2a/${ids.otherAgent}/.well-known/agent-card.json`),
          404,
          'not_found',
        ],
        [
          'an agent card of a non-UUID id',
          () => api.get(`/a2a/not-an-id/.well-known/agent-card.json`),
          404,
          'not_found',
        ],
        [
          'A2A without a key',
          () => anonymous.request('POST', `/a2a/${ids.agent}`, { raw: a2aBody, headers: json }),
          401,
          'unauthorized',
        ],
        [
          'A2A to another tenant’s agent',
          () => api.request('POST', `/a2a/${ids.otherAgent}`, { raw: a2aBody, headers: json }),
          404,
          'not_found',
        ],
        [
          'A2A with invalid JSON',
          () => api.request('POST', `/a2a/${ids.agent}`, { raw: '{"jsonrpc":', headers: json }),
          400,
          'invalid_json',
        ],
        [
          'A2A with no content type',
          () => api.request('POST', `/a2a/${ids.agent}`, { raw: a2aBody, headers: {} }),
          415,
          'unsupported_media_type',
        ],
        [
          'A2A with a body over the limit',
          () =>
            api.request('POST', `/a2a/${ids.agent}`, {
              raw: `{"a":"${'x'.repeat(600_000)}"}`,
              headers: json,
            }),
          413,
          'payload_too_large',
        ],
      ] as [string, () => Promise<ApiResponse>, number, string | undefined][]
    ).map(([name, run, status, code]) => ({
      name: `protocol adapters: ${name}`,
      run,
      status,
      code,
      jsonrpc: true,
    })),
  );

  // The Responses route (docs/adr/0035): what it refuses before anything is written.
  const respond =
    (change: Record<string, unknown>, headers: Record<string, string> = {}) =>
    () =>
      api.post('/v1/responses', { model: 'mine', input: 'hi', ...change }, headers);
  const responseId = (turnId: string) => `resp_${turnId.replace(/-/g, '')}`;
  const compact = (body: Record<string, unknown>) => () => api.post('/v1/responses/compact', body);
  cases.push(
    ...(
      [
        [
          'a client tool whose parameters are not a JSON Schema',
          respond({ tools: [{ type: 'function', name: 'f', parameters: { type: 'nope' } }] }),
          400,
          'invalid_schema',
        ],
        [
          'a function tool choice naming a tool the request does not declare',
          respond({ tool_choice: { type: 'function', name: 'f' } }),
          400,
          'invalid_tool_choice',
        ],
        [
          'an allowed_tools tool choice (only auto, none, required or a named function)',
          respond({ tool_choice: { type: 'allowed_tools', mode: 'auto', tools: [] } }),
          400,
          'unsupported_value',
        ],
        [
          'a previous response made with store: false',
          respond({ previous_response_id: 'resp_0123456789abcdef0123456789abcdef', store: false }),
          404,
          'previous_response_not_found',
        ],
        [
          'an image for an agent on a model that takes none',
          respond({
            input: [
              {
                role: 'user',
                content: [{ type: 'input_image', image_url: 'https://img.test/a.png' }],
              },
            ],
          }),
          400,
          'unsupported_value',
        ],
        [
          'a compaction item this server did not make',
          respond({
            input: [
              { type: 'compaction', encrypted_content: 'x' },
              { role: 'user', content: 'hi' },
            ],
          }),
          400,
          'invalid_value',
        ],
        [
          'a JSON schema text format without name and schema',
          respond({ text: { format: { type: 'json_schema' } } }),
          400,
          'validation_failed',
        ],
        [
          'a text format whose schema has an unknown keyword',
          respond({
            text: { format: { type: 'json_schema', name: 'x', schema: { type: 'object', propertys: {} } } },
          }),
          400,
          'invalid_response_format',
        ],
        ['a conversation', respond({ conversation: 'conv_1' }), 400, 'unsupported_parameter'],
        [
          'a function call output for a call nobody made',
          respond({ input: [{ type: 'function_call_output', call_id: 'c', output: '1' }] }),
          404,
          'unknown_call',
        ],
        [
          'an image part',
          respond({ input: [{ role: 'user', content: [{ type: 'input_image', image_url: 'x' }] }] }),
          400,
          'unsupported_value',
        ],
        ['compact without a model', compact({ input: 'x' }), 400, 'validation_failed'],
        ['compact for no agent', compact({ model: 'nobody', input: 'x' }), 404, 'model_not_found'],
        [
          'compact with a previous response',
          compact({ model: 'mine', input: 'x', previous_response_id: 'resp_x' }),
          400,
          'unsupported_parameter',
        ],
        [
          'compact with no message',
          compact({ model: 'mine', input: [{ role: 'system', content: 'x' }] }),
          400,
          'invalid_value',
        ],
        [
          'an unknown item type',
          respond({ input: [{ type: 'telepathy', text: 'x' }] }),
          400,
          'validation_failed',
        ],
        [
          'a part of the wrong shape',
          respond({ input: [{ role: 'user', content: [{ type: 'text', text: 'x' }] }] }),
          400,
          'validation_failed',
        ],
        ['an unknown role', respond({ input: [{ role: 'robot', content: 'x' }] }), 400, 'validation_failed'],
        ['an empty input', respond({ input: [] }), 400, 'validation_failed'],
        [
          'an assistant message last',
          respond({ input: [{ role: 'assistant', content: 'x' }] }),
          400,
          'invalid_value',
        ],
        ['a blank user message', respond({ input: '   ' }), 400, 'invalid_value'],
        [
          'only a system message',
          respond({ input: [{ role: 'system', content: 'x' }] }),
          400,
          'invalid_value',
        ],
        [
          '17 metadata pairs',
          respond({ metadata: Object.fromEntries(Array.from({ length: 17 }, (_, i) => [`k${i}`, 'v'])) }),
          400,
          'validation_failed',
        ],
        ['temperature 3', respond({ temperature: 3 }), 400, 'validation_failed'],
        ['an unknown model', respond({ model: 'gpt-4o' }), 404, 'model_not_found'],
        ['another tenant’s agent id', () => respond({ model: ids.otherAgent })(), 404, 'model_not_found'],
        [
          'an unknown previous response',
          respond({ previous_response_id: responseId(UNKNOWN_ID) }),
          404,
          'previous_response_not_found',
        ],
        [
          'a previous response id that is not one',
          respond({ previous_response_id: "resp_1' or 1=1" }),
          404,
          'previous_response_not_found',
        ],
        [
          'an Idempotency-Key of 201 characters',
          respond({}, { 'idempotency-key': 'k'.repeat(201) }),
          400,
          'bad_request',
        ],
        [
          'an unknown response',
          () => api.get(`/v1/responses/${responseId(UNKNOWN_ID)}`),
          404,
          'response_not_found',
        ],
        [
          'a response id that is no id',
          () => api.get('/v1/responses/resp_%27%20or%201%3D1'),
          404,
          'response_not_found',
        ],
        ['a turn id as a response id', () => api.get(`/v1/responses/${ids.turn}`), 404, 'response_not_found'],
        [
          'an unknown response cancelled',
          () => api.post(`/v1/responses/${responseId(UNKNOWN_ID)}/cancel`),
          404,
          'response_not_found',
        ],
        [
          'input items of an unknown response',
          () => api.get(`/v1/responses/${responseId(UNKNOWN_ID)}/input_items`),
          404,
          'response_not_found',
        ],
        [
          'starting_after not a number',
          () => api.get(`/v1/responses/${responseId(ids.turn)}?stream=true&starting_after=x`),
          400,
          'validation_failed',
        ],
        [
          'starting_after below -1',
          () => api.get(`/v1/responses/${responseId(ids.turn)}?stream=true&starting_after=-2`),
          400,
          'validation_failed',
        ],
        [
          'starting_after without stream',
          () => api.get(`/v1/responses/${responseId(ids.turn)}?starting_after=3`),
          400,
          'invalid_value',
        ],
        [
          'an unknown query parameter',
          () => api.get(`/v1/responses/${responseId(ids.turn)}?colour=red`),
          400,
          'validation_failed',
        ],
        [
          'input items limit 0',
          () => api.get(`/v1/responses/${responseId(ids.turn)}/input_items?limit=0`),
          400,
          'validation_failed',
        ],
        [
          'input items limit 101',
          () => api.get(`/v1/responses/${responseId(ids.turn)}/input_items?limit=101`),
          400,
          'validation_failed',
        ],
        [
          'input items order sideways',
          () => api.get(`/v1/responses/${responseId(ids.turn)}/input_items?order=sideways`),
          400,
          'validation_failed',
        ],
        [
          'input items after an unknown item',
          () => api.get(`/v1/responses/${responseId(ids.turn)}/input_items?after=msg_x`),
          400,
          'invalid_value',
        ],
        [
          'a paused tenant',
          () => pausedApi.post('/v1/responses', { model: 'paused', input: 'x' }),
          403,
          'tenant_paused',
        ],
        [
          'a paused tenant, with history',
          () =>
            pausedApi.post('/v1/responses', {
              model: 'paused',
              input: [
                { role: 'user', content: 'a' },
                { role: 'assistant', content: 'b' },
                { role: 'user', content: 'c' },
              ],
            }),
          403,
          'tenant_paused',
        ],
      ] as [string, () => Promise<ApiResponse>, number, string][]
    ).map(([name, run, status, code]) => ({ name: `response: ${name}`, run, status, code, openai: true })),
  );

  // The LangGraph adapter (docs/adr/0038): refused before anything is written, in `{detail}`.
  const lg =
    (method: string, path: () => string, body?: unknown, headers: Record<string, string> = {}) =>
    () =>
      api.request(method, `/langgraph${path()}`, { body, headers });
  const lgRun = (change: Record<string, unknown>, thread = () => ids.session) =>
    lg('POST', () => `/threads/${thread()}/runs`, {
      assistant_id: 'mine',
      input: { messages: [{ type: 'human', content: 'hi' }] },
      ...change,
    });
  cases.push(
    ...(
      [
        ['rollback', lgRun({ multitask_strategy: 'rollback' }), 422],
        ['a checkpoint id', lgRun({ checkpoint_id: 'c1' }), 422],
        ['interrupt_before', lgRun({ interrupt_before: ['agent'] }), 422],
        ['an unknown field', lgRun({ colour: 'red' }), 422],
        ['no message', lgRun({ input: { messages: [] } }), 422],
        ['two messages', lgRun({ input: { messages: ['a', 'b'] } }), 422],
        ['an ai message', lgRun({ input: { messages: [{ type: 'ai', content: 'x' }] } }), 422],
        [
          'an image part',
          lgRun({ input: { messages: [{ type: 'human', content: [{ type: 'image_url' }] }] } }),
          422,
        ],
        ['a NUL in the message', lgRun({ input: { messages: ['a\u0000b'] } }), 422],
        ['command goto', lgRun({ input: undefined, command: { goto: 'agent' } }), 422],
        ['a resume with nothing pending', lgRun({ input: undefined, command: { resume: 'approve' } }), 409],
        ['an unknown assistant', lgRun({ assistant_id: 'nobody' }), 404],
        ['another tenant’s thread', lgRun({}, () => ids.otherSession), 404],
        ['an unknown thread', lgRun({}, () => UNKNOWN_ID), 404],
        ['a thread id that is not a UUID', lgRun({ if_not_exists: 'create' }, () => 'not-a-uuid'), 404],
        ['a closed thread', lgRun({}, () => ids.closedSession), 409],
        ['multitask reject on a busy thread', lgRun({ multitask_strategy: 'reject' }), 409],
        [
          'wait without an assistant',
          lg('POST', () => `/threads/${ids.session}/runs/wait`, { input: null }),
          422,
        ],
        ['a thread without an assistant', lg('POST', () => '/threads', { metadata: {} }), 422],
        [
          'a thread of an unknown assistant',
          lg('POST', () => '/threads', { metadata: { graph_id: 'nobody' } }),
          404,
        ],
        [
          'a thread id taken',
          () => api.post('/langgraph/threads', { thread_id: ids.session, metadata: { graph_id: 'mine' } }),
          409,
        ],
        [
          'supersteps',
          lg('POST', () => '/threads', { metadata: { graph_id: 'mine' }, supersteps: [{}] }),
          422,
        ],
        ['a negative search limit', lg('POST', () => '/threads/search', { limit: -1 }), 422],
        ['a thread search by values', lg('POST', () => '/threads/search', { values: { x: 1 } }), 422],
        [
          'a history from a checkpoint',
          lg('POST', () => `/threads/${ids.session}/history`, { checkpoint: { checkpoint_id: 'c' } }),
          422,
        ],
        ['an assistant search by a number', lg('POST', () => '/assistants/search', { name: 7 }), 422],
        // Checkpoints are the states of a thread's runs (issue 32, 34): a malformed one is 422, one
        // that is not the thread's 404; writes that do not map are 422.
        [
          'a state at a malformed checkpoint',
          lg('POST', () => `/threads/${ids.session}/state/checkpoint`, {
            checkpoint: { checkpoint_id: 'c' },
          }),
          422,
        ],
        [
          'a state at a subgraph checkpoint',
          lg('POST', () => `/threads/${ids.session}/state/checkpoint`, {
            checkpoint: { checkpoint_ns: 'a:1' },
          }),
          422,
        ],
        [
          'a state at another tenant’s checkpoint',
          lg('GET', () => `/threads/${ids.session}/state/${ids.otherTurn}`),
          404,
        ],
        [
          'another tenant’s thread state at a checkpoint',
          lg('POST', () => `/threads/${ids.otherSession}/state/checkpoint`, { checkpoint: {} }),
          404,
        ],
        [
          'a history before another tenant’s checkpoint',
          // ids are known only when the cases run: the body is made then.
          () => lg('POST', () => `/threads/${ids.session}/history`, { before: ids.otherTurn })(),
          404,
        ],
        ['a run from another tenant’s checkpoint', () => lgRun({ checkpoint_id: ids.otherTurn })(), 404],
        [
          'an updateState with values',
          lg('POST', () => `/threads/${ids.session}/state`, {
            values: { messages: [{ type: 'human', content: 'x' }] },
          }),
          422,
        ],
        [
          'an updateState at another tenant’s checkpoint',
          () => lg('POST', () => `/threads/${ids.session}/state`, { checkpoint_id: ids.otherTurn })(),
          404,
        ],
        [
          'another tenant’s updateState',
          lg('POST', () => `/threads/${ids.otherSession}/state`, { values: {} }),
          404,
        ],
        [
          'another tenant’s thread copy (fork)',
          lg('POST', () => `/threads/${ids.otherSession}/copy`, {}),
          404,
        ],
        ['another tenant’s thread state', lg('GET', () => `/threads/${ids.otherSession}/state`), 404],
        ['another tenant’s run', lg('GET', () => `/threads/${ids.otherSession}/runs/${ids.otherTurn}`), 404],
        [
          'another tenant’s run joined',
          lg('GET', () => `/threads/${ids.otherSession}/runs/${ids.otherTurn}/join`),
          404,
        ],
        [
          'another tenant’s run cancelled',
          lg('POST', () => `/threads/${ids.otherSession}/runs/${ids.otherTurn}/cancel`),
          404,
        ],
        ['a run of another thread', lg('GET', () => `/threads/${ids.closedSession}/runs/${ids.turn}`), 404],
        [
          'a rollback cancel',
          lg('POST', () => `/threads/${ids.session}/runs/${ids.turn}/cancel?action=rollback`),
          422,
        ],
        ['a run list limit of 0', lg('GET', () => `/threads/${ids.session}/runs?limit=0`), 422],
        [
          'a joined stream in an unknown mode',
          lg('GET', () => `/threads/${ids.session}/runs/${ids.turn}/stream?stream_mode=everything`),
          422,
        ],
        [
          'another tenant’s run joined as a stream',
          lg('GET', () => `/threads/${ids.otherSession}/runs/${ids.otherTurn}/stream`),
          404,
        ],
        [
          'a wrong x-api-key',
          () =>
            anonymous.request('POST', '/langgraph/assistants/search', {
              body: {},
              headers: { 'x-api-key': 'sb_nope' },
            }),
          401,
        ],
        ['no key', () => anonymous.request('POST', '/langgraph/threads/search', { body: {} }), 401],
        ['invalid JSON', () => sendRaw('POST', () => '/langgraph/threads', '{"metadata":', json), 400],
        [
          'a text/plain body',
          () => sendRaw('POST', () => '/langgraph/threads', 'x', { 'content-type': 'text/plain' }),
          415,
        ],
      ] as [string, () => Promise<ApiResponse>, number][]
    ).map(([name, run, status]) => ({ name: `langgraph: ${name}`, run, status, langgraph: true })),
  );

  // Other routes and URLs.
  cases.push(
    {
      name: 'settings read without a key',
      run: () => anonymous.get('/v1/settings'),
      status: 401,
      code: 'unauthorized',
    },
    {
      name: 'api keys listed without a key',
      run: () => anonymous.get('/v1/api-keys'),
      status: 401,
      code: 'unauthorized',
    },
    {
      name: 'admin route with an API key',
      run: () => api.post('/v1/admin/tenants', { name: 'x' }),
      status: 401,
      code: 'unauthorized',
    },
    {
      name: 'tenant route with the admin token',
      run: () => admin.get('/v1/agents'),
      status: 401,
      code: 'unauthorized',
    },
    // The webhook ingress: no API key, any JSON body, but only bytes it can verify and store (docs/adr/0019).
    ...(
      [
        ['invalid JSON', () => ids.tokenHook, '{"a":', json, 400, 'invalid_json'],
        ['an empty JSON body', () => ids.tokenHook, '', json, 400, 'invalid_json'],
        [
          'invalid UTF-8',
          () => ids.tokenHook,
          Buffer.from([0x7b, 0x22, 0xc3, 0x28, 0x22, 0x7d]),
          json,
          400,
          'invalid_json',
        ],
        ['JSON nested 5,000 levels', () => ids.tokenHook, deepText(5000), json, 400, 'validation_failed'],
        ['a string with NUL', () => ids.tokenHook, '{"a":"x\\u0000"}', json, 400, 'validation_failed'],
        ['a key with a lone surrogate', () => ids.tokenHook, '{"\\ud800":1}', json, 400, 'validation_failed'],
        [
          'a form body',
          () => ids.signedHook,
          'payload=%7B%7D',
          { 'content-type': 'application/x-www-form-urlencoded' },
          415,
          'unsupported_media_type',
        ],
        ['no content type', () => ids.tokenHook, '{}', {}, 415, 'unsupported_media_type'],
        ['an unknown token', () => `/v1/hooks/sbt_${'A'.repeat(32)}`, '{}', json, 404, 'not_found'],
        ['a 2,000-character token', () => `/v1/hooks/${'a'.repeat(2000)}`, '{}', json, 414, 'uri_too_long'],
        [
          'no signature',
          () => ids.signedHook,
          '{}',
          { ...json, 'x-github-delivery': 'd-1' },
          401,
          'unauthorized',
        ],
        [
          'a wrong signature',
          () => ids.signedHook,
          '{}',
          { ...json, 'x-github-delivery': 'd-2', 'x-hub-signature-256': `sha256=${'0'.repeat(64)}` },
          401,
          'unauthorized',
        ],
        [
          'a body over the limit',
          () => ids.tokenHook,
          `{"a":"${'x'.repeat(600_000)}"}`,
          json,
          413,
          'payload_too_large',
        ],
      ] as [string, () => string, string | Uint8Array, Record<string, string>, number, string][]
    ).map(([what, path, raw, headers, status, code]) => ({
      name: `deliver hook: ${what}`,
      run: () => anonymous.request('POST', path(), { raw, headers }),
      status,
      code,
    })),
    {
      name: 'deliver hook: an API key instead of a signature',
      run: () =>
        api.request('POST', ids.signedHook, { raw: '{}', headers: { ...json, 'x-github-delivery': 'd-3' } }),
      status: 401,
      code: 'unauthorized',
    },
    { name: 'an unknown route', run: () => api.get('/v1/nothing'), status: 404, code: 'not_found' },
    {
      name: 'a method no route has',
      run: () => api.request('PUT', '/v1/agents'),
      status: 404,
      code: 'not_found',
    },
    { name: 'POST to healthz', run: () => api.post('/healthz', {}), status: 404, code: 'not_found' },
    { name: 'a bad percent-escape in a query', run: () => api.get('/v1/agents?limit=%zz'), status: 400 },
    {
      name: 'a 100 KB URL',
      run: () => api.get(`/v1/agents?x=${'a'.repeat(100_000)}`),
      status: 431,
      code: 'headers_too_large',
    },
    {
      name: 'a body over the limit',
      run: () => sendRaw('POST', () => '/v1/agents', `{"name":"${'x'.repeat(600_000)}"}`, json),
      status: 413,
      code: 'payload_too_large',
    },
  );

  it('has at least 150 cases', () => {
    expect(cases.length).toBeGreaterThanOrEqual(150);
  });

  it('answers every malformed request with a 4xx in the one error shape and changes no table', async () => {
    const before = await rowCounts();
    expect(Object.keys(before).length).toBeGreaterThan(10);
    const failures: string[] = [];
    for (const c of cases) {
      let res: ApiResponse;
      try {
        res = await c.run();
      } catch (err) {
        failures.push(`${c.name}: request failed: ${(err as Error).message}`);
        continue;
      }
      if (c.langgraph) {
        if (!LangGraphErrorResponse.safeParse(res.body).success)
          failures.push(`${c.name}: body ${JSON.stringify(res.body)?.slice(0, 200)}`);
        else if (res.status !== c.status) failures.push(`${c.name}: ${res.status}, expected ${c.status}`);
      }
      const shape = c.langgraph
        ? { success: true as const, data: { error: { code: c.code } } }
        : c.jsonrpc
          ? JsonRpcErrorResponse.safeParse(res.body)
          : c.openai
            ? OpenAiErrorResponse.safeParse(res.body)
            : ErrorResponse.safeParse(res.body);
      const expectedCode = c.openai && c.code === 'unauthorized' ? 'invalid_api_key' : c.code;
      // A JSON-RPC error carries the gateway's code in `error.data.code`.
      const codeOf = (error: { code: unknown; data?: { code: string } }) =>
        c.jsonrpc ? error.data?.code : error.code;
      if (res.status < 400 || res.status >= 500) failures.push(`${c.name}: status ${res.status}`);
      else if (!shape.success) failures.push(`${c.name}: body ${JSON.stringify(res.body)?.slice(0, 200)}`);
      else if (c.status !== undefined && res.status !== c.status)
        failures.push(`${c.name}: ${res.status} ${String(codeOf(shape.data.error))}, expected ${c.status}`);
      else if (expectedCode !== undefined && codeOf(shape.data.error) !== expectedCode)
        failures.push(`${c.name}: code ${String(codeOf(shape.data.error))}, expected ${expectedCode}`);
      else if (res.status === 503 || res.status >= 500) failures.push(`${c.name}: 5xx`);
      const after = await rowCounts();
      if (JSON.stringify(after) !== JSON.stringify(before)) {
        failures.push(`${c.name}: row counts changed ${JSON.stringify(before)} → ${JSON.stringify(after)}`);
        Object.assign(before, after);
      }
    }
    expect(failures).toEqual([]);
  });
});
