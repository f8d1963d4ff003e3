import { randomUUID } from 'node:crypto';
import { execFile } from 'node:child_process';
import { rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import Ajv2020, { type ValidateFunction } from 'ajv/dist/2020';
import addFormats from 'ajv-formats';
import type { NestFastifyApplication } from '@nestjs/platform-fastify';
import {
  createTestEnv,
  listOperations,
  OPENAI_OPERATIONS,
  startTcpProxy,
  waitFor,
  type TcpProxy,
  type TestEnv,
} from '@switchboard/testing';
import { createGateway } from '../../apps/gateway/src/gateway';
import { Api, type ApiResponse } from '../support/api';
import { startMcpServer } from '../support/mcp-server';
import { FIXTURES, startHarness } from '../support/stack';

// One test walks every operation (success and error cases, streams included): on two busy cores it
// takes well over the default 5 s.
jest.setTimeout(120_000);

/**
 * The OpenAPI document against the running gateway: every operation is called for real (a success
 * and an error), each answer's status must be documented for that operation and its body must
 * match the documented schema; every registered route is documented and every operation documents
 * its success body and its errors. Response schemas are strict, so a presenter field added or
 * dropped without the schema fails here.
 */

interface Operation {
  operationId: string;
  method: string;
  path: string;
  security?: Record<string, string[]>[];
  responses: Record<string, { content?: Record<string, { schema: object }> }>;
}

const ADMIN = 'test-admin-token-0123456789';

/** Open on purpose: JSON the engine or terminus writes that may gain fields (documented by their known fields). */
const OPEN_OBJECTS = [
  'ProviderAttempt',
  'Readiness/properties/details/additionalProperties',
  'Readiness/properties/error/additionalProperties',
  'Readiness/properties/info/additionalProperties',
  'Turn/properties/failure/anyOf/0',
  // The timeline's turn is the Turn body above, failure included.
  'TurnTimeline/properties/turn/properties/failure/anyOf/0',
];
/** Operations a request option gives a second success: `wait` on admission answers 200 with the ended turn. */
const TWO_SUCCESSES: Record<string, string[]> = {
  admitMessage: ['200', '202'],
  cancelTurn: ['200', '202'],
  // docs/adr/0057: a queued or waiting child ends at once (200), a running one at its next safe point (202).
  cancelTask: ['200', '202'],
  operatorCancelTurn: ['200', '202'],
  // docs/adr/0047: answered 202, the same results again 200.
  answerClientTools: ['200', '202'],
  deliverHook: ['200', '202'],
  // MCP (docs/adr/0036): a request answers 200, a notification 202.
  mcpPost: ['200', '202'],
};
/** Operations the protocol has answer only an error: a stateless MCP server's GET and DELETE are 405s. */
const NO_SUCCESS = ['mcpGet', 'mcpDelete'];
/** The protocol adapters (docs/adr/0036, 0037): their errors are JSON-RPC error responses. */
const JSON_RPC_OPERATIONS = ['mcpPost', 'mcpGet', 'mcpDelete', 'getAgentCard', 'callAgentJsonRpc'];
/** Operations that cannot be made to fail from outside. */
const NO_ERROR_CASE = ['getHealth', 'getMetrics', 'getConsoleConfig'];

describe('the OpenAPI document matches what the server answers', () => {
  let env: TestEnv;
  let pgProxy: TcpProxy;
  let app: NestFastifyApplication;
  let harness: Awaited<ReturnType<typeof startHarness>>;
  let url: string;
  let doc: any;
  let operations: Operation[];
  const routes: { method: string; url: string }[] = [];
  // OpenAPI 3.1's schemas are JSON Schema 2020-12.
  const ajv = new Ajv2020({ allErrors: true, strict: false });
  addFormats(ajv);
  const validators = new Map<string, ValidateFunction>();

  beforeAll(async () => {
    env = await createTestEnv();
    // The gateway reaches Postgres through a proxy so /readyz can be shown a database that is down.
    const pg = new URL(env.databaseUrl);
    pgProxy = await startTcpProxy({ host: pg.hostname, port: Number(pg.port || 5432) });
    const config = env.config({ SCRIPTED_FIXTURES_DIR: FIXTURES });
    app = await createGateway(
      env.config({
        SCRIPTED_FIXTURES_DIR: FIXTURES,
        DATABASE_URL: pgProxy.rewrite(env.databaseUrl),
        MCP_ALLOW_HOSTS: '127.0.0.1',
        // A key provider, so the data-key routes (docs/adr/0067) can succeed; every tenant stays `off`.
        ENCRYPTION_KEYS: `k1:${Buffer.alloc(32, 7).toString('base64')}`,
      }),
    );
    app.useLogger(false);
    // Fastify's own view of the routes, independent of what Swagger scanned.
    app
      .getHttpAdapter()
      .getInstance()
      .addHook('onRoute', (r) => {
        for (const method of [r.method].flat()) routes.push({ method: method.toLowerCase(), url: r.url });
      });
    await app.listen({ port: 0, host: '127.0.0.1' });
    const address = app.getHttpServer().address();
    url = `http://127.0.0.1:${typeof address === 'object' && address ? address.port : 0}`;
    harness = await startHarness(config);

    const res = await new Api(url).get('/docs/openapi.json');
    expect(res.status).toBe(200);
    doc = res.body;
    ajv.addSchema({ $id: 'openapi.json', components: structuredClone(doc.components) });
    operations = listOperations<Operation>(doc);
  });

  afterAll(async () => {
    await harness?.close();
    await app?.close();
    await pgProxy?.close();
    await env?.cleanup();
  });

  /** `$ref`s point into the document registered as `openapi.json`. */
  function validatorFor(schema: object): ValidateFunction {
    const json = JSON.stringify(schema);
    let validate = validators.get(json);
    if (!validate) {
      validate = ajv.compile(JSON.parse(json.replaceAll('"$ref":"#/', '"$ref":"openapi.json#/')) as object);
      validators.set(json, validate);
    }
    return validate;
  }

  const op = (id: string) => {
    const found = operations.find((o) => o.operationId === id);
    if (!found) throw new Error(`no operation ${id} in the document`);
    return found;
  };

  /** Problems with one answer: undocumented status, wrong media type, body not matching the schema. */
  function check(o: Operation, res: ApiResponse, raw: string): string[] {
    const where = `${o.operationId} → ${res.status}`;
    const documented = o.responses[String(res.status)];
    if (!documented) return [`${where}: status not documented (${raw.slice(0, 200)})`];
    if (!documented.content) return raw === '' ? [] : [`${where}: documented without a body but got ${raw}`];
    const type = (res.headers.get('content-type') ?? '').split(';')[0].trim();
    const media = documented.content[type];
    if (!media) return [`${where}: content-type ${type} not documented`];
    const validate = validatorFor(media.schema);
    if (type === 'text/event-stream' && '$ref' in media.schema) {
      // An SSE stream of JSON frames (docs/adr/0015): each frame's data is one instance of the schema.
      return [...raw.matchAll(/^data: (.*)$/gm)].flatMap(([, data]) =>
        validate(JSON.parse(data))
          ? []
          : [
              `${where}: frame does not match the schema: ${ajv.errorsText(validate.errors)} in ${data.slice(0, 300)}`,
            ],
      );
    }
    if (validate(type === 'application/json' ? JSON.parse(raw) : raw)) return [];
    return [
      `${where}: body does not match the schema: ${ajv.errorsText(validate.errors)} in ${raw.slice(0, 300)}`,
    ];
  }

  /** Calls an operation by its operationId on its documented method and path. */
  async function call(
    id: string,
    options: {
      params?: Record<string, string>;
      query?: string;
      body?: unknown;
      raw?: { body: string; contentType: string };
      auth?: string | null;
      headers?: Record<string, string>;
    } = {},
  ): Promise<{ op: Operation; res: ApiResponse; raw: string }> {
    const o = op(id);
    const path = o.path.replace(/\{(\w+)\}/g, (_, name: string) => {
      const value = options.params?.[name];
      if (value === undefined) throw new Error(`${id}: no value for {${name}}`);
      return encodeURIComponent(value);
    });
    const headers: Record<string, string> = { ...options.headers };
    if (options.auth) headers.authorization = `Bearer ${options.auth}`;
    let body: string | undefined;
    if (options.raw) {
      body = options.raw.body;
      headers['content-type'] = options.raw.contentType;
    } else if (options.body !== undefined) {
      body = JSON.stringify(options.body);
      headers['content-type'] = 'application/json';
    }
    const response = await fetch(`${url}${path}${options.query ? `?${options.query}` : ''}`, {
      method: o.method.toUpperCase(),
      headers,
      body,
    });
    const raw = await response.text();
    let parsed: unknown = raw;
    try {
      parsed = raw ? JSON.parse(raw) : undefined;
    } catch {
      // not JSON
    }
    return { op: o, res: { status: response.status, body: parsed, headers: response.headers }, raw };
  }

  it('documents every route the server registers, and nothing else', () => {
    const served = new Set(
      routes
        // The queue board (Bull Board) is an operator UI beside the API: test/e2e/queue-board.e2e.spec.ts.
        .filter(
          (r) => r.method !== 'head' && !r.url.startsWith('/docs') && !r.url.startsWith('/admin/queues'),
        )
        .map((r) => `${r.method} ${r.url.replace(/:(\w+)/g, '{$1}')}`),
    );
    const documented = new Set(operations.map((o) => `${o.method} ${o.path}`));
    expect(served.size).toBeGreaterThan(15);
    expect([...served].sort()).toEqual([...documented].sort());
  });

  /** Operations without a description, and JSON request bodies without an example. */
  function undescribed(document: any): string[] {
    return listOperations<any>(document).flatMap((o) => {
      const where = `${o.operationId} (${o.method.toUpperCase()} ${o.path})`;
      const problems: string[] = [];
      if (typeof o.description !== 'string' || o.description.trim().length < 20)
        problems.push(`${where}: no description`);
      const json = o.requestBody?.content?.['application/json'];
      if (json && json.example === undefined && json.examples === undefined)
        problems.push(`${where}: request body without an example`);
      return problems;
    });
  }

  it('describes every operation and gives every JSON request body an example', () => {
    expect(operations.filter((o) => (o as any).requestBody).length).toBeGreaterThan(20);
    expect(undescribed(doc)).toEqual([]);
    // The check fails when one is missing.
    const stripped = structuredClone(doc);
    delete stripped.paths['/v1/agents'].post.description;
    delete stripped.paths['/v1/sessions/{id}/messages'].post.requestBody.content['application/json'].example;
    expect(undescribed(stripped)).toEqual([
      'createAgent (POST /v1/agents): no description',
      'admitMessage (POST /v1/sessions/{id}/messages): request body without an example',
    ]);
  });

  it('gives every operation a readable id, its success body and its error bodies', () => {
    const ids = operations.map((o) => o.operationId);
    expect(new Set(ids).size).toBe(ids.length);
    for (const o of operations) {
      expect(o.operationId).toMatch(/^[a-z]+[A-Z][A-Za-z]*$/);
      const statuses = Object.keys(o.responses);
      const success = statuses.filter((s) => s.startsWith('2'));
      expect({ op: o.operationId, success }).toEqual({
        op: o.operationId,
        success: NO_SUCCESS.includes(o.operationId)
          ? []
          : (TWO_SUCCESSES[o.operationId] ?? [expect.any(String)]),
      });
      for (const s of success) {
        // 204, and MCP's 202 for a notification, have no body.
        if (s === '204' || (o.operationId === 'mcpPost' && s === '202'))
          expect(o.responses[s].content).toBeUndefined();
        else
          expect({ op: o.operationId, content: o.responses[s].content }).toEqual({
            op: o.operationId,
            content: expect.any(Object),
          });
      }
      const errors = statuses.filter((s) => /^[45]/.test(s));
      expect({ op: o.operationId, errors: errors.length > 0 }).toEqual({ op: o.operationId, errors: true });
      for (const s of errors) {
        const schema = o.responses[s].content?.['application/json']?.schema;
        // /readyz answers 503 with the health-check result that probes read; the OpenAI-compatible
        // route answers in OpenAI's error shape; every other error is Error.
        const expected =
          o.operationId === 'getReadiness' && s === '503'
            ? 'Readiness'
            : OPENAI_OPERATIONS.includes(o.operationId)
              ? 'OpenAiError'
              : JSON_RPC_OPERATIONS.includes(o.operationId)
                ? 'JsonRpcError'
                : o.path.startsWith('/langgraph/')
                  ? 'LangGraphError'
                  : 'Error';
        expect({ op: o.operationId, status: s, schema }).toEqual({
          op: o.operationId,
          status: s,
          schema: { $ref: `#/components/schemas/${expected}` },
        });
      }
    }
  });

  it('is a valid OpenAPI 3.1 document (the OpenAPI Initiative’s schema, through a maintained validator)', async () => {
    expect(doc.openapi).toBe('3.1.0');
    expect(doc.servers).toEqual([expect.objectContaining({ url: '/' })]);
    // scripts/validate-openapi.mjs: the validator is an ES module, run as users run it.
    const script = path.resolve(__dirname, '../../scripts/validate-openapi.mjs');
    const valid = await promisify(execFile)(process.execPath, [script, `${url}/docs/openapi.json`]);
    expect(valid.stdout).toContain('valid OpenAPI 3.1.0');
    // The typed client (libs/client) is generated from this document: regenerate it after a change.
    const generated = await promisify(execFile)(process.execPath, [
      path.resolve(__dirname, '../../scripts/generate-client.mjs'),
      `${url}/docs/openapi.json`,
      '--check',
    ]);
    expect(generated.stdout).toContain('libs/client/src/openapi.ts matches');
    // And it can fail: a document without its required `info` is refused.
    const broken = structuredClone(doc);
    delete broken.info;
    const file = path.join(os.tmpdir(), `sb-openapi-${process.pid}.json`);
    writeFileSync(file, JSON.stringify(broken));
    await expect(promisify(execFile)(process.execPath, [script, file])).rejects.toMatchObject({ code: 1 });
    rmSync(file, { force: true });
  });

  it('declares API keys as opaque bearer tokens, and the admin token as its own scheme', () => {
    const schemes = doc.components.securitySchemes;
    expect(schemes).toEqual({
      apiKey: expect.objectContaining({ type: 'http', scheme: 'bearer', bearerFormat: 'API key' }),
      adminToken: expect.objectContaining({ type: 'http', scheme: 'bearer' }),
      // The LangGraph SDK sends the key in `x-api-key` (docs/adr/0038).
      langgraphApiKey: expect.objectContaining({ type: 'apiKey', in: 'header', name: 'x-api-key' }),
    });
    expect(schemes.adminToken.bearerFormat).toBeUndefined();
    for (const o of operations) {
      // The webhook ingress has no API key: its URL token is the credential (docs/adr/0019). The
      // protocol adapters (/mcp, /a2a/…) take the API key as their bearer.
      // whoami takes either credential; the console's config needs none.
      const expected =
        o.path === '/v1/whoami'
          ? [{ apiKey: [] }, { adminToken: [] }]
          : o.path === '/v1/console/config'
            ? undefined
            : o.path.startsWith('/v1/admin/')
              ? [{ adminToken: [] }]
              : o.path.startsWith('/langgraph/')
                ? [{ apiKey: [] }, { langgraphApiKey: [] }]
                : (o.path.startsWith('/v1/') && !o.path.startsWith('/v1/hooks/')) ||
                    o.path === '/mcp' ||
                    o.path.startsWith('/a2a/')
                  ? [{ apiKey: [] }]
                  : undefined;
      expect({ op: o.operationId, security: o.security }).toEqual({ op: o.operationId, security: expected });
    }
  });

  it('response schemas are closed: a field added to or dropped from a presenter fails validation', () => {
    const schemas: Record<string, any> = doc.components.schemas;
    const open: string[] = [];
    const walk = (path: string, s: any): void => {
      if (!s || typeof s !== 'object') return;
      if (s.type === 'object' && s.properties && s.additionalProperties !== false) open.push(path);
      for (const [key, value] of Object.entries(s)) {
        if (Array.isArray(value)) value.forEach((v, i) => walk(`${path}/${key}/${i}`, v));
        else if (value && typeof value === 'object') walk(`${path}/${key}`, value);
      }
    };
    const responseSchemas = new Set(
      operations.flatMap((o) =>
        Object.values(o.responses).flatMap((r) =>
          Object.values(r.content ?? {}).map((m: any) => m.schema.$ref?.split('/').pop()),
        ),
      ),
    );
    responseSchemas.delete(undefined);
    for (const name of Object.keys(schemas)) {
      if (/Dto$/.test(name)) continue; // request bodies
      walk(name, schemas[name]);
    }
    // Event data is what the engine emitted: documented by its known fields, left open (libs/contracts events.ts).
    const EVENT_DATA = /^(Event|StreamFrame)\/.*\/properties\/data(\/|$)/;
    expect(open.filter((p) => !EVENT_DATA.test(p)).sort()).toEqual(OPEN_OBJECTS);
    // Every documented response body is one of the closed components, with its fields required.
    for (const name of responseSchemas) {
      expect(schemas[name as string]).toBeDefined();
    }
    expect(schemas.Agent.required).toEqual(Object.keys(schemas.Agent.properties));
  });

  it('every operation answers as documented, on success and on error', async () => {
    const problems: string[] = [];
    const exercised = new Map<string, Set<number>>();
    const run = async (id: string, expected: number, options: Parameters<typeof call>[1] = {}) => {
      const { op: o, res, raw } = await call(id, options);
      if (res.status !== expected)
        problems.push(`${id}: expected ${expected}, got ${res.status} ${raw.slice(0, 200)}`);
      problems.push(...check(o, res, raw));
      if (!exercised.has(id)) exercised.set(id, new Set());
      exercised.get(id)!.add(res.status);
      return res;
    };
    const unknown = randomUUID();

    // Admin and keys.
    const tenant = await run('createTenant', 201, { auth: ADMIN, body: { name: 'openapi' } });
    const key: string = tenant.body.apiKey.key;
    await run('createTenant', 401, { body: { name: 'no token' } });
    await run('createTenant', 400, { auth: ADMIN, body: { name: 'x', extra: true } });
    await run('createTenant', 415, { auth: ADMIN, raw: { body: 'name=x', contentType: 'text/plain' } });
    // Rate limits (docs/adr/0028): the operator's override, and the 429 it brings, as documented.
    const limited = await run('createTenant', 201, { auth: ADMIN, body: { name: 'limited' } });
    await run('updateTenantLimits', 200, {
      auth: ADMIN,
      params: { id: limited.body.tenant.id },
      body: { reads: 1 },
    });
    await run('updateTenantLimits', 400, {
      auth: ADMIN,
      params: { id: limited.body.tenant.id },
      body: { reads: -1 },
    });
    await run('updateTenantLimits', 404, { auth: ADMIN, params: { id: unknown }, body: { reads: 1 } });
    await run('listAgents', 200, { auth: limited.body.apiKey.key });
    await run('listAgents', 429, { auth: limited.body.apiKey.key });
    // The operator's tenant view, settings and pause (docs/adr/0030).
    const ownTenantId: string = tenant.body.tenant.id;
    await run('listTenants', 200, { auth: ADMIN, query: 'limit=1' });
    await run('listTenants', 400, { auth: ADMIN, query: 'cursor=not-a-cursor' });
    await run('getTenant', 200, { auth: ADMIN, params: { id: ownTenantId } });
    await run('getTenant', 404, { auth: ADMIN, params: { id: unknown } });
    await run('updateTenant', 200, {
      auth: ADMIN,
      params: { id: ownTenantId },
      body: { maxConcurrentTurns: 8, share: 2, dailySpendLimitUsd: 100 },
    });
    await run('updateTenant', 400, { auth: ADMIN, params: { id: ownTenantId }, body: { share: 0 } });
    await run('updateTenant', 404, { auth: ADMIN, params: { id: unknown }, body: { share: 2 } });
    const paused = await run('pauseTenant', 200, {
      auth: ADMIN,
      params: { id: limited.body.tenant.id },
      body: { reason: 'openapi' },
    });
    expect(paused.body.paused).toBe(true);
    await run('pauseTenant', 400, { auth: ADMIN, params: { id: ownTenantId }, body: { reason: '' } });
    await run('pauseTenant', 404, { auth: ADMIN, params: { id: unknown } });
    await run('resumeTenant', 200, { auth: ADMIN, params: { id: limited.body.tenant.id } });
    await run('resumeTenant', 400, { auth: ADMIN, params: { id: ownTenantId }, body: { now: true } });
    await run('resumeTenant', 404, { auth: ADMIN, params: { id: unknown } });
    // Export and deletion of a tenant (docs/adr/0068).
    await run('exportTenant', 200, { auth: ADMIN, params: { id: ownTenantId } });
    await run('exportTenant', 400, { auth: ADMIN, params: { id: ownTenantId }, query: 'after=nope' });
    await run('exportTenant', 404, { auth: ADMIN, params: { id: unknown } });
    await run('exportOwnTenant', 200, { auth: key });
    await run('exportOwnTenant', 400, { auth: key, query: 'after=nope' });
    const doomed = await run('createTenant', 201, { auth: ADMIN, body: { name: 'doomed' } });
    const deletion = await run('deleteTenant', 202, { auth: ADMIN, params: { id: doomed.body.tenant.id } });
    await run('deleteTenant', 404, { auth: ADMIN, params: { id: unknown } });
    await run('getTenantDeletion', 200, { auth: ADMIN, params: { id: deletion.body.deletion.id } });
    await run('getTenantDeletion', 404, { auth: ADMIN, params: { id: unknown } });
    await run('listTenantDeletions', 200, { auth: ADMIN });
    await run('listTenantDeletions', 400, { auth: ADMIN, query: 'cursor=nope' });
    await run('listAdminAuditEvents', 200, { auth: ADMIN, query: `tenantId=${ownTenantId}&limit=2` });
    await run('listAdminAuditEvents', 400, { auth: ADMIN, query: 'tenantId=nope' });
    await run('listAuditEvents', 200, { auth: key, query: 'action=tenant.created' });
    await run('listAuditEvents', 400, { auth: key, query: 'action=nope' });
    const second = await run('createApiKey', 201, { auth: key, body: { name: 'second' } });
    await run('createApiKey', 400, { auth: key, body: { name: '' } });
    await run('listApiKeys', 200, { auth: key });
    await run('listApiKeys', 401, { auth: 'sb_not-a-key' });
    await run('revokeApiKey', 200, { auth: key, params: { id: second.body.id } });
    await run('revokeApiKey', 404, { auth: key, params: { id: unknown } });
    // What the console asks first (whoami, its config), and the operator acting as a tenant.
    await run('getWhoami', 200, { auth: key });
    await run('getWhoami', 200, { auth: ADMIN });
    await run('getWhoami', 200, { auth: ADMIN, headers: { 'x-switchboard-tenant': ownTenantId } });
    await run('getWhoami', 404, { auth: ADMIN, headers: { 'x-switchboard-tenant': unknown } });
    await run('getWhoami', 400, { auth: ADMIN, headers: { 'x-switchboard-tenant': 'nope' } });
    await run('getWhoami', 401, { auth: 'sb_not-a-key' });
    await run('getConsoleConfig', 200);
    await run('listApiKeys', 200, { auth: ADMIN, headers: { 'x-switchboard-tenant': ownTenantId } });
    // The operator's keys of a tenant, queues and processes.
    const opKey = await run('createTenantApiKey', 201, {
      auth: ADMIN,
      params: { id: ownTenantId },
      body: { name: 'ops' },
    });
    await run('createTenantApiKey', 400, { auth: ADMIN, params: { id: ownTenantId }, body: { name: '' } });
    await run('createTenantApiKey', 404, { auth: ADMIN, params: { id: unknown }, body: {} });
    await run('listTenantApiKeys', 200, { auth: ADMIN, params: { id: ownTenantId }, query: 'limit=1' });
    await run('listTenantApiKeys', 400, { auth: ADMIN, params: { id: ownTenantId }, query: 'cursor=x' });
    await run('listTenantApiKeys', 404, { auth: ADMIN, params: { id: unknown } });
    await run('revokeTenantApiKey', 200, {
      auth: ADMIN,
      params: { id: ownTenantId, keyId: opKey.body.id },
    });
    await run('revokeTenantApiKey', 404, { auth: ADMIN, params: { id: ownTenantId, keyId: unknown } });
    await run('rotateTenantDataKey', 200, { auth: ADMIN, params: { id: ownTenantId } });
    await run('rotateTenantDataKey', 404, { auth: ADMIN, params: { id: unknown } });
    await run('listTenantDataKeys', 200, { auth: ADMIN, params: { id: ownTenantId } });
    await run('listTenantDataKeys', 404, { auth: ADMIN, params: { id: unknown } });
    await run('listQueues', 200, { auth: ADMIN });
    await run('listQueues', 401, { auth: key });
    await run('listProcesses', 200, { auth: ADMIN });
    await run('listProcesses', 401, {});

    // Settings.
    await run('getSettings', 200, { auth: key });
    await run('updateSettings', 200, { auth: key, body: { blockedTools: [] } });
    await run('updateSettings', 400, { auth: key, body: { toolSchemaMode: 'loose' } });

    // Agents.
    const agent = await run('createAgent', 201, {
      auth: key,
      body: { name: 'counter', tools: ['word_count'], budgets: { maxIterations: 5 } },
    });
    await run('createAgent', 400, { auth: key, body: { name: 'bad', tools: ['rm_rf'] } });
    const spare = await run('createAgent', 201, { auth: key, body: { name: 'spare' } });
    await run('listAgents', 200, { auth: key, query: 'limit=1' });
    await run('listAgents', 400, { auth: key, query: 'cursor=not-a-cursor' });
    // With a tool status as the learning hook writes it (a documented `status.tools` entry).
    const { tenantId } = await env.db.agent.findUniqueOrThrow({ where: { id: agent.body.id } });
    await env.db.agentToolStat.create({
      data: {
        tenantId,
        agentId: agent.body.id,
        tool: 'word_count',
        calls: 3,
        failures: 1,
        failuresByKind: { timeout: 1 },
        totalLatencyMs: 30,
        maxLatencyMs: 20,
        lastUsedAt: new Date(),
        lastFailedAt: new Date(),
        lastFailureKind: 'timeout',
      },
    });
    await run('getAgent', 200, { auth: key, params: { id: agent.body.id } });
    await run('getAgent', 404, { auth: key, params: { id: unknown } });
    await run('updateAgent', 200, {
      auth: key,
      params: { id: agent.body.id },
      body: { instructions: 'Count.' },
    });
    await run('updateAgent', 400, { auth: key, params: { id: agent.body.id }, body: {} });
    await run('updateAgent', 404, { auth: key, params: { id: unknown }, body: { name: 'x' } });
    // Agent versions (docs/adr/0061); the rollback is to the current version (its configuration unchanged).
    const current = (await run('getAgent', 200, { auth: key, params: { id: agent.body.id } })).body.version;
    await run('listAgentVersions', 200, { auth: key, params: { id: agent.body.id }, query: 'limit=1' });
    await run('listAgentVersions', 404, { auth: key, params: { id: unknown } });
    await run('getAgentVersion', 200, { auth: key, params: { id: agent.body.id, version: '1' } });
    await run('getAgentVersion', 400, { auth: key, params: { id: agent.body.id, version: 'x' } });
    await run('getAgentVersion', 404, { auth: key, params: { id: agent.body.id, version: '99' } });
    await run('diffAgentVersions', 200, { auth: key, params: { id: agent.body.id }, query: 'from=1&to=1' });
    await run('diffAgentVersions', 400, { auth: key, params: { id: agent.body.id }, query: 'from=x&to=1' });
    await run('diffAgentVersions', 404, { auth: key, params: { id: unknown }, query: 'from=1&to=1' });
    await run('getAgentScores', 200, { auth: key, params: { id: agent.body.id }, query: 'scorer=feedback' });
    await run('getAgentScores', 400, { auth: key, params: { id: agent.body.id }, query: 'from=x' });
    await run('getAgentScores', 404, { auth: key, params: { id: unknown } });
    await run('rollbackAgent', 200, { auth: key, params: { id: agent.body.id }, body: { version: current } });
    await run('rollbackAgent', 400, { auth: key, params: { id: agent.body.id }, body: {} });
    await run('rollbackAgent', 404, { auth: key, params: { id: unknown }, body: { version: 1 } });
    // The canary (docs/adr/0064) of its current version against version 1: promoting it changes nothing.
    const canary = { candidateVersion: current + 1, baselineVersion: 1, sharePercent: 10 };
    await run('getCanary', 404, { auth: key, params: { id: agent.body.id } });
    await run('startCanary', 400, { auth: key, params: { id: agent.body.id }, body: { sharePercent: 101 } });
    await run('startCanary', 404, { auth: key, params: { id: unknown }, body: canary });
    await run('startCanary', 200, { auth: key, params: { id: agent.body.id }, body: canary });
    await run('startCanary', 409, { auth: key, params: { id: agent.body.id }, body: canary });
    await run('getCanary', 200, { auth: key, params: { id: agent.body.id } });
    await run('stopCanary', 200, { auth: key, params: { id: agent.body.id } });
    await run('stopCanary', 409, { auth: key, params: { id: agent.body.id } });
    await run('stopCanary', 404, { auth: key, params: { id: unknown } });
    await run('startCanary', 200, { auth: key, params: { id: agent.body.id }, body: canary });
    await run('promoteCanary', 200, { auth: key, params: { id: agent.body.id } });
    await run('promoteCanary', 409, { auth: key, params: { id: agent.body.id } });
    await run('promoteCanary', 404, { auth: key, params: { id: unknown } });
    await run('deleteAgent', 204, { auth: key, params: { id: spare.body.id } });
    await run('deleteAgent', 404, { auth: key, params: { id: spare.body.id } });
    // Built-in archetypes and the tier rules (docs/adr/0025).
    await run('listArchetypes', 200, { auth: key });
    const pawn = await run('createAgent', 201, {
      auth: key,
      body: { name: 'pawn', archetype: 'researcher' },
    });
    await run('createAgent', 201, { auth: key, body: { name: 'lead', allowedSubagents: ['pawn'] } });
    await run('updateAgent', 409, { auth: key, params: { id: pawn.body.id }, body: { tier: 'chat' } });
    await run('deleteAgent', 409, { auth: key, params: { id: pawn.body.id } });

    // Schedules.
    const schedule = await run('createSchedule', 201, {
      auth: key,
      body: {
        agentId: agent.body.id,
        cron: '0 9 * * 1-5',
        timezone: 'Europe/Paris',
        payload: { text: 'standup' },
      },
    });
    await run('createSchedule', 400, { auth: key, body: { agentId: agent.body.id, cron: '61 * * * *' } });
    await run('createSchedule', 404, { auth: key, body: { agentId: unknown, cron: '0 9 * * *' } });
    await run('listSchedules', 200, { auth: key, query: 'limit=1' });
    await run('listSchedules', 400, { auth: key, query: 'cursor=not-a-cursor' });
    await run('getSchedule', 200, { auth: key, params: { id: schedule.body.id } });
    await run('getSchedule', 404, { auth: key, params: { id: unknown } });
    await run('updateSchedule', 200, {
      auth: key,
      params: { id: schedule.body.id },
      body: { enabled: false },
    });
    await run('updateSchedule', 400, {
      auth: key,
      params: { id: schedule.body.id },
      body: { timezone: 'Nowhere' },
    });
    await run('updateSchedule', 404, { auth: key, params: { id: unknown }, body: { enabled: true } });
    await run('deleteSchedule', 204, { auth: key, params: { id: schedule.body.id } });
    await run('deleteSchedule', 404, { auth: key, params: { id: schedule.body.id } });

    // MCP servers (docs/adr/0023): a real MCP server, its tools listed at registration.
    const mcp = await startMcpServer();
    try {
      const server = await run('createMcpServer', 201, { auth: key, body: { name: 'srv', url: mcp.url } });
      expect(server.body.tools.length).toBeGreaterThan(0);
      await run('createMcpServer', 400, { auth: key, body: { name: 'a__b', url: mcp.url } });
      await run('createMcpServer', 409, { auth: key, body: { name: 'srv', url: mcp.url } });
      await run('listMcpServers', 200, { auth: key, query: 'limit=1' });
      await run('listMcpServers', 400, { auth: key, query: 'cursor=not-a-cursor' });
      await run('getMcpServer', 200, { auth: key, params: { id: server.body.id } });
      await run('getMcpServer', 404, { auth: key, params: { id: unknown } });
      await run('updateMcpServer', 200, {
        auth: key,
        params: { id: server.body.id },
        body: { approval: 'none' },
      });
      await run('updateMcpServer', 400, { auth: key, params: { id: server.body.id }, body: {} });
      await run('updateMcpServer', 404, { auth: key, params: { id: unknown }, body: { approval: 'none' } });
      await run('refreshMcpServer', 200, { auth: key, params: { id: server.body.id } });
      await run('refreshMcpServer', 404, { auth: key, params: { id: unknown } });
      await run('deleteMcpServer', 204, { auth: key, params: { id: server.body.id } });
      await run('deleteMcpServer', 404, { auth: key, params: { id: server.body.id } });
    } finally {
      await mcp.close();
    }

    // Triggers and the webhook ingress (a token trigger: the URL is the only credential).
    const trigger = await run('createTrigger', 201, {
      auth: key,
      body: { agentId: agent.body.id, name: 'alerts', scheme: 'token' },
    });
    await run('createTrigger', 400, {
      auth: key,
      body: { agentId: agent.body.id, name: 'x', scheme: 'svn' },
    });
    await run('createTrigger', 404, { auth: key, body: { agentId: unknown, name: 'x', scheme: 'token' } });
    await run('listTriggers', 200, { auth: key });
    await run('listTriggers', 401, {});
    await run('getTrigger', 200, { auth: key, params: { id: trigger.body.id } });
    await run('getTrigger', 404, { auth: key, params: { id: unknown } });
    await run('listTriggerDeliveries', 200, { auth: key, params: { id: trigger.body.id } });
    await run('listTriggerDeliveries', 404, { auth: key, params: { id: unknown } });
    const hookToken = (trigger.body.path as string).split('/').pop()!;
    await run('deliverHook', 202, { params: { token: hookToken }, body: { type: 'disk_full' } });
    await run('deliverHook', 404, { params: { token: 'sbt_unknown' }, body: {} });
    await run('deliverHook', 415, {
      params: { token: hookToken },
      raw: { body: 'a=b', contentType: 'text/plain' },
    });
    const signed = await run('createTrigger', 201, {
      auth: key,
      body: { agentId: agent.body.id, name: 'gh', scheme: 'github' },
    });
    await run('deliverHook', 401, {
      params: { token: (signed.body.path as string).split('/').pop()! },
      body: {},
    });
    await run('deliverHook', 400, {
      params: { token: hookToken },
      raw: { body: '{', contentType: 'application/json' },
    });
    const rotated = await run('rotateTrigger', 200, { auth: key, params: { id: trigger.body.id }, body: {} });
    expect(rotated.body.path).not.toBe(trigger.body.path);
    await run('rotateTrigger', 400, {
      auth: key,
      params: { id: signed.body.id },
      body: { graceSeconds: -1 },
    });
    await run('rotateTrigger', 404, { auth: key, params: { id: unknown }, body: {} });
    await run('revokeTrigger', 200, { auth: key, params: { id: trigger.body.id } });
    await run('revokeTrigger', 404, { auth: key, params: { id: unknown } });
    await run('rotateTrigger', 409, { auth: key, params: { id: trigger.body.id }, body: {} });

    // Sessions, messages, a turn that runs a tool, the journal.
    const session = await run('createSession', 201, {
      auth: key,
      body: { agentId: agent.body.id, title: 't', metadata: { a: 1 } },
    });
    await run('createSession', 404, { auth: key, body: { agentId: unknown } });
    await run('listSessions', 200, { auth: key });
    await run('listSessions', 401, {});
    await run('listSessions', 200, { auth: key, query: 'status=active&limit=1' });
    await run('listSessions', 400, { auth: key, query: 'status=sleeping' });
    await run('getSession', 200, { auth: key, params: { id: session.body.id } });
    await run('getSession', 404, { auth: key, params: { id: 'not-a-uuid' } });
    await run('updateSession', 200, {
      auth: key,
      params: { id: session.body.id },
      body: { agentVersion: 'latest' },
    });
    await run('updateSession', 400, { auth: key, params: { id: session.body.id }, body: {} });
    await run('updateSession', 404, { auth: key, params: { id: unknown }, body: { agentVersion: 1 } });
    const admitted = await run('admitMessage', 202, {
      auth: key,
      params: { id: session.body.id },
      body: { content: 'one two three four', correlationId: 'c-1' },
    });
    await run('admitMessage', 400, { auth: key, params: { id: session.body.id }, body: { content: '' } });
    // `wait`: held until the turn ended, then the turn itself.
    const waited = await run('admitMessage', 200, {
      auth: key,
      params: { id: session.body.id },
      body: { content: 'one two', wait: true },
    });
    expect(waited.body.status).toBe('completed');
    // A session's turns, fork, lineage and rewind (docs/adr/0053), on a fork (the session goes on as it was).
    await run('listSessionTurns', 200, { auth: key, params: { id: session.body.id }, query: 'limit=1' });
    await run('listSessionTurns', 404, { auth: key, params: { id: unknown } });
    const forked = await run('forkSession', 201, {
      auth: key,
      params: { id: session.body.id },
      body: { turnId: waited.body.id, model: 'scripted/counter', instructions: 'Count.' },
    });
    await run('forkSession', 400, { auth: key, params: { id: session.body.id }, body: {} });
    await run('forkSession', 404, { auth: key, params: { id: session.body.id }, body: { turnId: unknown } });
    await run('getSessionLineage', 200, { auth: key, params: { id: forked.body.session.id } });
    await run('getSessionLineage', 404, { auth: key, params: { id: unknown } });
    const copied = await run('listSessionTurns', 200, { auth: key, params: { id: forked.body.session.id } });
    const rewindTo = { turnId: copied.body.data[0].id };
    await run('rewindSession', 200, { auth: key, params: { id: forked.body.session.id }, body: rewindTo });
    await run('rewindSession', 409, { auth: key, params: { id: forked.body.session.id }, body: rewindTo });
    await run('rewindSession', 400, { auth: key, params: { id: forked.body.session.id }, body: {} });
    await run('rewindSession', 404, { auth: key, params: { id: unknown }, body: rewindTo });
    // The OpenAI-compatible facade: the agent by name, a new session, the turn's answer.
    const chat = await run('createChatCompletion', 200, {
      auth: key,
      body: { model: 'counter', messages: [{ role: 'user', content: 'one two' }] },
    });
    expect(chat.body.object).toBe('chat.completion');
    const streamed = await run('createChatCompletion', 200, {
      auth: key,
      body: { model: 'counter', messages: [{ role: 'user', content: 'three four' }], stream: true },
    });
    expect(streamed.body).toMatch(/^data: \{"id":"chatcmpl-[\s\S]*data: \[DONE\]\n\n$/);
    await run('createChatCompletion', 404, {
      auth: key,
      body: { model: 'nobody', messages: [{ role: 'user', content: 'hi' }] },
    });
    await run('createChatCompletion', 400, { auth: key, body: { model: 'counter', messages: [] } });
    await run('createChatCompletion', 415, {
      auth: key,
      raw: { body: 'model=counter', contentType: 'text/plain' },
    });
    // The agents as OpenAI models.
    const models = await run('listModels', 200, { auth: key });
    expect(models.body.data.map((m: { id: string }) => m.id)).toContain('counter');
    await run('listModels', 401, {});
    await run('retrieveModel', 200, { auth: key, params: { model: 'counter' } });
    await run('retrieveModel', 404, { auth: key, params: { model: 'nobody' } });
    // The Responses API (docs/adr/0035): a response is a turn.
    const response = await run('createResponse', 200, {
      auth: key,
      body: { model: 'counter', input: 'one two' },
    });
    expect(response.body).toMatchObject({ object: 'response', status: 'completed' });
    const streamedResponse = await run('createResponse', 200, {
      auth: key,
      body: { model: 'counter', input: 'five', stream: true },
    });
    expect(streamedResponse.body).toMatch(/^event: response\.created\n[\s\S]*event: response\.completed\n/);
    await run('createResponse', 404, { auth: key, body: { model: 'nobody', input: 'hi' } });
    await run('createResponse', 400, { auth: key, body: { model: 'counter', input: [] } });
    await run('createResponse', 415, {
      auth: key,
      raw: { body: 'model=counter', contentType: 'text/plain' },
    });
    const responseId = { id: response.body.id as string };
    await run('getResponse', 200, { auth: key, params: responseId });
    await run('getResponse', 200, { auth: key, params: responseId, query: 'stream=true&starting_after=3' });
    await run('getResponse', 400, { auth: key, params: responseId, query: 'starting_after=x' });
    await run('getResponse', 404, { auth: key, params: { id: 'resp_nothing' } });
    await run('getResponse', 401, { params: responseId });
    await run('listResponseInputItems', 200, { auth: key, params: responseId });
    await run('listResponseInputItems', 400, { auth: key, params: responseId, query: 'limit=0' });
    await run('listResponseInputItems', 404, { auth: key, params: { id: 'resp_nothing' } });
    await run('cancelResponse', 200, { auth: key, params: responseId });
    await run('cancelResponse', 404, { auth: key, params: { id: 'resp_nothing' } });
    const compacted = await run('compactResponse', 200, {
      auth: key,
      body: { model: 'counter', input: [{ role: 'user', content: 'one two' }] },
    });
    expect(compacted.body).toMatchObject({ object: 'response.compaction' });
    await run('compactResponse', 400, { auth: key, body: { input: 'x' } });
    await run('compactResponse', 404, { auth: key, body: { model: 'nobody', input: 'x' } });
    await run('compactResponse', 401, { body: { model: 'counter', input: 'x' } });
    // The LangGraph Agent Server API subset (docs/adr/0038): assistants, threads, runs, in `{detail}` errors.
    await run('langgraphSearchAssistants', 200, { auth: key, body: { graph_id: 'counter' } });
    await run('langgraphSearchAssistants', 422, { auth: key, body: { limit: 'ten' } });
    await run('langgraphGetAssistant', 200, { auth: key, params: { assistant_id: 'counter' } });
    await run('langgraphGetAssistant', 404, { auth: key, params: { assistant_id: 'nobody' } });
    const thread = await run('langgraphCreateThread', 200, {
      auth: key,
      body: { metadata: { graph_id: 'counter', topic: 'openapi' } },
    });
    const threadId: string = thread.body.thread_id;
    await run('langgraphCreateThread', 422, { auth: key, body: { metadata: {} } });
    await run('langgraphSearchThreads', 200, { auth: key, body: { metadata: { topic: 'openapi' } } });
    await run('langgraphSearchThreads', 422, { auth: key, body: { limit: -1 } });
    const lgInput = { assistant_id: 'counter', input: { messages: [{ type: 'human', content: 'one two' }] } };
    const lgWaited = await run('langgraphWaitRun', 200, {
      auth: key,
      params: { thread_id: threadId },
      body: lgInput,
    });
    expect(lgWaited.body.messages.length).toBeGreaterThanOrEqual(2);
    await run('langgraphWaitRun', 404, { auth: key, params: { thread_id: unknown }, body: lgInput });
    const lgStream = await run('langgraphStreamRun', 200, {
      auth: key,
      params: { thread_id: threadId },
      body: { ...lgInput, stream_mode: ['values', 'updates', 'messages-tuple'] },
    });
    expect(lgStream.body).toMatch(/^event: metadata\n[\s\S]*event: end\ndata: /);
    await run('langgraphStreamRun', 422, {
      auth: key,
      params: { thread_id: threadId },
      body: { ...lgInput, multitask_strategy: 'rollback' },
    });
    const lgRun = await run('langgraphCreateRun', 200, {
      auth: key,
      params: { thread_id: threadId },
      body: lgInput,
    });
    await run('langgraphCreateRun', 422, {
      auth: key,
      params: { thread_id: threadId },
      body: { assistant_id: 'counter' },
    });
    const lgRunPath = { thread_id: threadId, run_id: lgRun.body.run_id as string };
    await run('langgraphJoinRun', 200, { auth: key, params: lgRunPath });
    await run('langgraphJoinRun', 404, { auth: key, params: { ...lgRunPath, run_id: unknown } });
    const lgJoined = await run('langgraphJoinRunStream', 200, {
      auth: key,
      params: lgRunPath,
      query: 'stream_mode=values&stream_mode=updates&cancel_on_disconnect=0',
    });
    expect(lgJoined.body).toMatch(/event: end\ndata: /);
    await run('langgraphJoinRunStream', 404, { auth: key, params: { ...lgRunPath, run_id: unknown } });
    await run('langgraphGetRun', 200, { auth: key, params: lgRunPath });
    await run('langgraphGetRun', 404, { auth: key, params: { ...lgRunPath, run_id: unknown } });
    await run('langgraphListRuns', 200, { auth: key, params: { thread_id: threadId }, query: 'limit=2' });
    await run('langgraphListRuns', 404, { auth: key, params: { thread_id: unknown } });
    await run('langgraphCancelRun', 204, { auth: key, params: lgRunPath, query: 'wait=0&action=interrupt' });
    await run('langgraphCancelRun', 422, { auth: key, params: lgRunPath, query: 'action=rollback' });
    await run('langgraphGetThread', 200, { auth: key, params: { thread_id: threadId } });
    await run('langgraphGetThread', 404, { auth: key, params: { thread_id: unknown } });
    await run('langgraphGetThreadState', 200, { auth: key, params: { thread_id: threadId } });
    await run('langgraphGetThreadState', 404, { auth: key, params: { thread_id: unknown } });
    await run('langgraphGetThreadHistory', 200, { auth: key, params: { thread_id: threadId } });
    await run('langgraphGetThreadHistory', 404, { auth: key, params: { thread_id: unknown } });
    await run('langgraphSearchThreadHistory', 200, {
      auth: key,
      params: { thread_id: threadId },
      body: { limit: 1 },
    });
    await run('langgraphSearchThreadHistory', 404, { auth: key, params: { thread_id: unknown } });
    await run('langgraphSearchThreadHistory', 422, {
      auth: key,
      params: { thread_id: threadId },
      body: { before: { checkpoint_id: 'not-a-run' } },
    });
    // A checkpoint is the state at the end of a run: its id is the run's.
    await run('langgraphGetThreadStateAt', 200, {
      auth: key,
      params: { thread_id: threadId, checkpoint_id: lgRunPath.run_id },
    });
    await run('langgraphGetThreadStateAt', 404, {
      auth: key,
      params: { thread_id: threadId, checkpoint_id: unknown },
    });
    await run('langgraphGetThreadStateAtCheckpoint', 200, {
      auth: key,
      params: { thread_id: threadId },
      body: { checkpoint: { thread_id: threadId } },
    });
    await run('langgraphGetThreadStateAtCheckpoint', 422, {
      auth: key,
      params: { thread_id: threadId },
      body: { checkpoint: { checkpoint_id: 'not-a-run' } },
    });
    // Time travel (docs/adr/0038): updateState with no values goes on from the checkpoint (here the
    // current one: nothing changes); values are refused. A copy is a fork of the session.
    await run('langgraphUpdateThreadState', 200, {
      auth: key,
      params: { thread_id: threadId },
      body: { values: null, as_node: '__copy__' },
    });
    await run('langgraphUpdateThreadState', 422, {
      auth: key,
      params: { thread_id: threadId },
      body: { values: { messages: [{ type: 'ai', content: 'written' }] } },
    });
    await run('langgraphUpdateThreadState', 404, { auth: key, params: { thread_id: unknown }, body: {} });
    await run('langgraphCopyThread', 200, { auth: key, params: { thread_id: threadId }, body: {} });
    await run('langgraphCopyThread', 404, { auth: key, params: { thread_id: unknown }, body: {} });
    await run('admitMessage', 404, { auth: key, params: { id: unknown }, body: { content: 'hi' } });
    // The MCP server (docs/adr/0036): JSON-RPC over POST; a stateless server's GET and DELETE are 405s.
    const mcpHeaders = { accept: 'application/json, text/event-stream' };
    await run('mcpPost', 200, {
      auth: key,
      headers: mcpHeaders,
      body: {
        jsonrpc: '2.0',
        id: 1,
        method: 'initialize',
        params: {
          protocolVersion: '2025-11-25',
          capabilities: {},
          clientInfo: { name: 'openapi', version: '1' },
        },
      },
    });
    await run('mcpPost', 202, {
      auth: key,
      headers: mcpHeaders,
      body: { jsonrpc: '2.0', method: 'notifications/initialized' },
    });
    await run('mcpPost', 401, { headers: mcpHeaders, body: { jsonrpc: '2.0', id: 1, method: 'tools/list' } });
    await run('mcpPost', 400, {
      auth: key,
      headers: mcpHeaders,
      raw: { body: '{', contentType: 'application/json' },
    });
    await run('mcpGet', 405, { auth: key });
    await run('mcpDelete', 405, { auth: key });
    // A2A (docs/adr/0037): the agent card and the JSON-RPC endpoint; a JSON-RPC error is a 200.
    await run('getAgentCard', 200, { auth: key, params: { agentId: agent.body.id } });
    await run('getAgentCard', 404, { auth: key, params: { agentId: unknown } });
    const rpcError = await run('callAgentJsonRpc', 200, {
      auth: key,
      params: { agentId: agent.body.id },
      body: { jsonrpc: '2.0', id: 1, method: 'tasks/get', params: { id: unknown } },
    });
    expect(rpcError.body.error.code).toBe(-32001);
    await run('callAgentJsonRpc', 404, {
      auth: key,
      params: { agentId: unknown },
      body: { jsonrpc: '2.0', id: 1, method: 'tasks/get', params: { id: unknown } },
    });
    await run('callAgentJsonRpc', 401, {
      params: { agentId: agent.body.id },
      body: { jsonrpc: '2.0', id: 1, method: 'tasks/get', params: { id: unknown } },
    });
    {
      // Paused by the operator (docs/adr/0030): the documented 403, in the route's error shape.
      const fresh = await new Api(url, key).post('/v1/triggers', {
        agentId: agent.body.id,
        name: 'while paused',
        scheme: 'token',
      });
      await new Api(url, ADMIN).post(`/v1/admin/tenants/${ownTenantId}/pause`, {});
      try {
        await run('admitMessage', 403, {
          auth: key,
          params: { id: session.body.id },
          body: { content: 'hi' },
        });
        await run('createChatCompletion', 403, {
          auth: key,
          body: { model: 'counter', messages: [{ role: 'user', content: 'one' }] },
        });
        await run('deliverHook', 403, {
          params: { token: (fresh.body.path as string).split('/').pop()! },
          body: { type: 'x' },
        });
      } finally {
        await new Api(url, ADMIN).post(`/v1/admin/tenants/${ownTenantId}/resume`);
      }
    }
    await waitFor(
      async () =>
        (await new Api(url, key).get(`/v1/turns/${admitted.body.turnId}`)).body.status === 'completed',
      { what: 'the turn completed' },
    );
    const turn = await run('getTurn', 200, { auth: key, params: { id: admitted.body.turnId } });
    expect(turn.body.toolCalls.length).toBeGreaterThan(0);
    await run('getTurn', 404, { auth: key, params: { id: unknown } });
    await run('getTurnTimeline', 200, { auth: key, params: { id: admitted.body.turnId } });
    await run('getTurnTimeline', 404, { auth: key, params: { id: unknown } });
    const round = { id: admitted.body.turnId, index: '0' };
    await run('getTurnRoundContext', 200, { auth: key, params: round });
    await run('getTurnRoundContext', 400, { auth: key, params: { ...round, index: 'first' } });
    await run('getTurnRoundContext', 404, { auth: key, params: { id: unknown, index: '0' } });
    // An original TokenJuice kept (docs/adr/0033), written as its store writes one: no turn of this
    // file's makes a result large enough to be compacted.
    await env.db.toolResultOriginal.create({
      data: {
        tenantId: ownTenantId,
        id: 'a'.repeat(24),
        turnId: admitted.body.turnId,
        tool: 'word_count',
        kind: 'text',
        content: 'the original',
        bytes: 12,
        expiresAt: new Date(Date.now() + 3_600_000),
      },
    });
    await run('getToolResultOriginal', 200, { auth: key, params: { id: 'a'.repeat(24) } });
    await run('getToolResultOriginal', 404, { auth: key, params: { id: 'b'.repeat(24) } });
    // Cancelling an ended turn answers it as it is (a running one would be 202).
    await run('cancelTurn', 200, {
      auth: key,
      params: { id: admitted.body.turnId },
      body: { reason: 'late' },
    });
    await run('cancelTurn', 400, { auth: key, params: { id: admitted.body.turnId }, body: { why: 'x' } });
    await run('cancelTurn', 404, { auth: key, params: { id: unknown } });
    // Feedback on the ended turn (docs/adr/0062), and the agent's aggregate it shows in.
    await run('postTurnFeedback', 201, {
      auth: key,
      params: { id: admitted.body.turnId },
      body: { rating: 'up', by: 'reviewer' },
    });
    await run('postTurnFeedback', 400, {
      auth: key,
      params: { id: admitted.body.turnId },
      body: { by: 'x' },
    });
    await run('postTurnFeedback', 404, { auth: key, params: { id: unknown }, body: { score: 1, by: 'x' } });
    // The operator's cancel (docs/adr/0055): the ended turn as it is, a bad body, a turn not the tenant's.
    await run('operatorCancelTurn', 200, {
      auth: ADMIN,
      params: { id: ownTenantId, turnId: admitted.body.turnId },
      body: { reason: 'late' },
    });
    await run('operatorCancelTurn', 400, {
      auth: ADMIN,
      params: { id: ownTenantId, turnId: admitted.body.turnId },
      body: { why: 'x' },
    });
    await run('operatorCancelTurn', 404, { auth: ADMIN, params: { id: ownTenantId, turnId: unknown } });
    // Replay (docs/adr/0054): the ended turn again in a fork, then its comparison (diff null until it ends).
    const replayed = await run('replayTurn', 202, {
      auth: key,
      params: { id: admitted.body.turnId },
      body: { instructions: 'Answer briefly.' },
    });
    await run('replayTurn', 400, { auth: key, params: { id: admitted.body.turnId }, body: { model: 1 } });
    await run('replayTurn', 404, { auth: key, params: { id: unknown } });
    await run('getTurnComparison', 200, { auth: key, params: { id: replayed.body.replay.turnId } });
    await run('getTurnComparison', 404, { auth: key, params: { id: admitted.body.turnId } });
    // Client tool results (docs/adr/0047): a turn made to wait on a client call as the wait checkpoint
    // writes it (the ended `wait` turn, its status and row set here), answered, then answered again.
    const waitId = randomUUID();
    await env.db
      .$executeRaw`UPDATE turns SET status = 'awaiting_client_tool' WHERE id = ${waited.body.id}::uuid`;
    await env.db.$executeRaw`
      INSERT INTO approvals (id, tenant_id, session_id, turn_id, call_id, tool_name, arguments, side_effect, policy,
        expires_at, kind)
      SELECT ${waitId}::uuid, tenant_id, session_id, id, 'c1', 'get_weather', '"{}"'::jsonb, 'client', 'client_tool',
        now() + interval '1 hour', 'client_tool'
      FROM turns WHERE id = ${waited.body.id}::uuid`;
    const results = { results: [{ callId: `call_${waitId.replace(/-/g, '')}`, output: 'sunny' }] };
    const answerPath = { id: waited.body.id as string };
    await run('answerClientTools', 400, { auth: key, params: answerPath, body: { results: [] } });
    await run('answerClientTools', 404, {
      auth: key,
      params: answerPath,
      body: { results: [{ callId: 'call_0', output: 'x' }] },
    });
    await run('answerClientTools', 202, { auth: key, params: answerPath, body: results });
    await run('answerClientTools', 200, { auth: key, params: answerPath, body: results });
    // Approvals: an agent that lists its tool as needing one pauses; the decision resumes the turn.
    const gated = await run('createAgent', 201, {
      auth: key,
      body: { name: 'gated', tools: ['word_count'], approvalRequired: ['word_count'] },
    });
    const client = new Api(url, key);
    const gatedSession = (await client.post('/v1/sessions', { agentId: gated.body.id })).body.id as string;
    const gatedTurn = (await client.post(`/v1/sessions/${gatedSession}/messages`, { content: 'one two' }))
      .body.turnId as string;
    await waitFor(
      async () => (await client.get(`/v1/turns/${gatedTurn}`)).body.status === 'awaiting_approval',
      { what: 'the turn waits for approval' },
    );
    const pendingApprovals = await run('listApprovals', 200, { auth: key, query: 'status=pending' });
    const approvalId = pendingApprovals.body.data[0].id as string;
    await run('listApprovals', 400, { auth: key, query: 'status=maybe' });
    await run('getApproval', 200, { auth: key, params: { id: approvalId } });
    await run('getApproval', 404, { auth: key, params: { id: unknown } });
    // Sub-agent tasks (docs/adr/0024): a task row as a spawn writes it, under the gated turn.
    const taskId = randomUUID();
    await env.db.$executeRaw`
      INSERT INTO tasks (id, tenant_id, agent_id, agent_name, parent_turn_id, parent_session_id, session_id,
        call_id, status, depth, input, updated_at)
      SELECT ${taskId}::uuid, tenant_id, agent_id, 'researcher', id, session_id, session_id, 'c1', 'pending', 1,
        '{"task":"x"}'::jsonb, now()
      FROM turns WHERE id = ${gatedTurn}::uuid`;
    await run('getTask', 200, { auth: key, params: { id: taskId } });
    await run('getTask', 404, { auth: key, params: { id: unknown } });
    // Its child asks its user (awaiting_user); the answer resumes it, a second answer is a 409.
    await run('answerTask', 409, { auth: key, params: { id: taskId }, body: { answer: 'Rome' } });
    await env.db.$executeRaw`
      UPDATE tasks SET status = 'running',
        handback = '{"status":"awaiting_user","question":"which city?","callId":"c9"}'::jsonb
      WHERE id = ${taskId}::uuid`;
    await run('answerTask', 400, { auth: key, params: { id: taskId }, body: { answer: '' } });
    await run('answerTask', 404, { auth: key, params: { id: unknown }, body: { answer: 'Rome' } });
    await run('answerTask', 200, { auth: key, params: { id: taskId }, body: { answer: 'Rome' } });
    await run('decideApproval', 400, { auth: key, params: { id: approvalId }, body: { decision: 'maybe' } });
    await run('decideApproval', 404, { auth: key, params: { id: unknown }, body: { decision: 'approve' } });
    await run('decideApproval', 200, {
      auth: key,
      params: { id: approvalId },
      body: { decision: 'approve' },
    });
    await run('decideApproval', 409, { auth: key, params: { id: approvalId }, body: { decision: 'reject' } });
    await waitFor(async () => (await client.get(`/v1/turns/${gatedTurn}`)).body.status === 'completed', {
      what: 'the approved turn completed',
    });
    // An operator's stop for a task (docs/adr/0057): its child turn waits for an approval, so the stop
    // ends it at once; then the task has ended (409).
    const childSession = (await client.post('/v1/sessions', { agentId: gated.body.id })).body.id as string;
    const childTurn = (await client.post(`/v1/sessions/${childSession}/messages`, { content: 'three four' }))
      .body.turnId as string;
    await waitFor(
      async () => (await client.get(`/v1/turns/${childTurn}`)).body.status === 'awaiting_approval',
      { what: 'the child turn waits for approval' },
    );
    const stoppedId = randomUUID();
    await env.db.$executeRaw`
      INSERT INTO tasks (id, tenant_id, agent_id, agent_name, parent_turn_id, parent_session_id, session_id,
        child_turn_id, call_id, status, depth, input, updated_at)
      SELECT ${stoppedId}::uuid, t.tenant_id, t.agent_id, 'researcher', p.id, p.session_id, t.session_id, t.id, 'c2',
        'running', 1, '{"task":"y"}'::jsonb, now()
      FROM turns t, turns p WHERE t.id = ${childTurn}::uuid AND p.id = ${gatedTurn}::uuid`;
    await run('cancelTask', 400, { auth: key, params: { id: stoppedId }, body: { why: 'x' } });
    await run('cancelTask', 404, { auth: key, params: { id: unknown } });
    await run('cancelTask', 200, { auth: key, params: { id: stoppedId }, body: { reason: 'not needed' } });
    await run('cancelTask', 409, { auth: key, params: { id: stoppedId } });
    const transcript = await run('listMessages', 200, {
      auth: key,
      params: { id: session.body.id },
      query: 'limit=3',
    });
    expect(transcript.body.data.map((m: { role: string }) => m.role)).toEqual(['user', 'assistant', 'tool']);
    await run('listMessages', 200, {
      auth: key,
      params: { id: session.body.id },
      query: `cursor=${transcript.body.nextCursor}`,
    });
    await run('listMessages', 400, { auth: key, params: { id: session.body.id }, query: 'cursor=bad' });
    await run('listMessages', 404, { auth: key, params: { id: unknown } });
    const turnList = await run('listSessionTurns', 200, {
      auth: key,
      params: { id: session.body.id },
      query: 'limit=1',
    });
    expect(turnList.body.data).toEqual([expect.objectContaining({ seq: 1, status: expect.any(String) })]);
    const restOfTurns = await run('listSessionTurns', 200, {
      auth: key,
      params: { id: session.body.id },
      query: `cursor=${turnList.body.nextCursor}`,
    });
    expect(restOfTurns.body.data[0].seq).toBeGreaterThan(1);
    await run('listSessionTurns', 400, { auth: key, params: { id: session.body.id }, query: 'limit=0' });
    await run('listSessionTurns', 404, { auth: key, params: { id: unknown } });
    // The tenant's turns that have not ended (docs/adr/0058).
    await run('listActiveTurns', 200, { auth: key, query: 'status=queued,running&limit=5' });
    await run('listActiveTurns', 400, { auth: key, query: 'status=completed' });
    const events = await run('listEvents', 200, { auth: key, params: { id: session.body.id } });
    expect(events.body.data.length).toBeGreaterThan(3);
    await run('listEvents', 400, { auth: key, params: { id: session.body.id }, query: 'after=-1' });
    await run('listEvents', 404, { auth: key, params: { id: unknown } });
    // Usage: the ledger now holds the turn's cost.
    const usage = await run('getUsage', 200, { auth: key, query: 'groupBy=day,agent,session,model' });
    expect(usage.body.totals.entries).toBeGreaterThan(0);
    await run('getUsage', 400, { auth: key, query: 'groupBy=tenant' });
    await run('getDailySpend', 200, { auth: key });
    await run('getDailySpend', 200, { auth: key, query: 'from=2026-01-01&to=2026-01-31' });
    await run('getDailySpend', 400, { auth: key, query: 'from=2026-02-01&to=2026-01-01' });
    // An agent's memory: add, list, search, read, forget.
    const memory = await run('addMemory', 201, {
      auth: key,
      params: { id: agent.body.id },
      body: { content: 'The deploy window is Thursday.', kind: 'fact' },
    });
    await run('addMemory', 400, { auth: key, params: { id: agent.body.id }, body: { content: '' } });
    await run('addMemory', 404, { auth: key, params: { id: unknown }, body: { content: 'x' } });
    await run('listMemory', 200, { auth: key, params: { id: agent.body.id } });
    const found = await run('listMemory', 200, {
      auth: key,
      params: { id: agent.body.id },
      query: 'q=deploy',
    });
    expect(found.body.data.map((m: { sourceRef: string }) => m.sourceRef)).toEqual([memory.body.sourceRef]);
    await run('listMemory', 400, { auth: key, params: { id: agent.body.id }, query: 'kind=secret' });
    await run('listMemory', 404, { auth: key, params: { id: unknown } });
    await run('getMemoryEmbeddings', 200, { auth: key, params: { id: agent.body.id } });
    await run('getMemoryEmbeddings', 404, { auth: key, params: { id: unknown } });
    const ref = { id: agent.body.id, sourceRef: memory.body.sourceRef };
    await run('getMemory', 200, { auth: key, params: ref, query: 'maxChars=5' });
    await run('getMemory', 400, { auth: key, params: ref, query: 'maxChars=50001' });
    await run('getMemory', 404, { auth: key, params: { id: agent.body.id, sourceRef: 'mem_nope' } });
    await run('forgetMemory', 204, { auth: key, params: ref });
    await run('forgetMemory', 404, { auth: key, params: ref });
    // An agent's memory blocks (docs/adr/0051): create, change, list, read, versions, delete.
    const block = { id: agent.body.id, name: 'persona' };
    await run('putMemoryBlock', 200, {
      auth: key,
      params: block,
      body: { content: 'Terse.', readOnly: true },
    });
    await run('putMemoryBlock', 200, {
      auth: key,
      params: block,
      body: { content: 'Kind.', expectedVersion: 1 },
    });
    await run('putMemoryBlock', 400, { auth: key, params: block, body: { content: 'x'.repeat(2001) } });
    await run('putMemoryBlock', 400, {
      auth: key,
      params: { ...block, name: 'Bad-Name' },
      body: { content: 'x' },
    });
    await run('putMemoryBlock', 404, {
      auth: key,
      params: { ...block, id: unknown },
      body: { content: 'x' },
    });
    await run('putMemoryBlock', 409, {
      auth: key,
      params: block,
      body: { content: 'Late.', expectedVersion: 1 },
    });
    await run('listMemoryBlocks', 200, { auth: key, params: { id: agent.body.id } });
    await run('listMemoryBlocks', 404, { auth: key, params: { id: unknown } });
    await run('getMemoryBlock', 200, { auth: key, params: block });
    await run('getMemoryBlock', 404, { auth: key, params: { ...block, name: 'nope' } });
    const versions = await run('listMemoryBlockVersions', 200, {
      auth: key,
      params: block,
      query: 'limit=1',
    });
    expect(versions.body.nextCursor).not.toBeNull();
    await run('listMemoryBlockVersions', 400, { auth: key, params: block, query: 'limit=0' });
    await run('listMemoryBlockVersions', 404, { auth: key, params: { ...block, name: 'nope' } });
    await run('deleteMemoryBlock', 204, { auth: key, params: block });
    await run('deleteMemoryBlock', 404, { auth: key, params: block });
    // Datasets and experiments (docs/adr/0063): create, add items (JSON, NDJSON, from a turn), list, run, results, delete.
    const dataset = await run('createDataset', 201, { auth: key, body: { name: 'openapi-set' } });
    await run('createDataset', 400, { auth: key, body: { name: '' } });
    await run('createDataset', 409, { auth: key, body: { name: 'openapi-set' } });
    const setRef = { id: dataset.body.id };
    await run('addDatasetItems', 201, { auth: key, params: setRef, body: { input: 'q', expected: 'a' } });
    await run('addDatasetItems', 201, {
      auth: key,
      params: setRef,
      raw: { body: '{"input": "r"}\n', contentType: 'application/x-ndjson' },
    });
    await run('addDatasetItems', 400, {
      auth: key,
      params: setRef,
      body: { input: 'q', expected: 'x'.repeat(33 * 1024) },
    });
    await run('addDatasetItems', 404, { auth: key, params: { id: unknown }, body: { input: 'q' } });
    await run('addDatasetItems', 413, {
      auth: key,
      params: setRef,
      raw: { body: JSON.stringify({ input: 'x'.repeat(2 * 1024 * 1024) }), contentType: 'application/json' },
    });
    await run('addDatasetItems', 415, {
      auth: key,
      params: setRef,
      raw: { body: 'q', contentType: 'text/plain' },
    });
    await run('addDatasetItemFromTurn', 201, { auth: key, params: setRef, body: { turnId: turn.body.id } });
    await run('addDatasetItemFromTurn', 404, { auth: key, params: setRef, body: { turnId: unknown } });
    await run('listDatasetItems', 200, { auth: key, params: setRef, query: 'limit=1' });
    await run('listDatasetItems', 404, { auth: key, params: { id: unknown } });
    await run('listDatasets', 200, { auth: key });
    await run('listDatasets', 400, { auth: key, query: 'limit=0' });
    await run('getDataset', 200, { auth: key, params: setRef });
    await run('getDataset', 404, { auth: key, params: { id: unknown } });
    const experimentRun = await run('createExperiment', 201, {
      auth: key,
      body: { datasetId: dataset.body.id, agentId: agent.body.id, versions: [1] },
    });
    await run('createExperiment', 400, {
      auth: key,
      body: { datasetId: dataset.body.id, agentId: agent.body.id, versions: [99] },
    });
    await run('createExperiment', 404, {
      auth: key,
      body: { datasetId: unknown, agentId: agent.body.id, versions: [1] },
    });
    await run('getExperiment', 200, { auth: key, params: { id: experimentRun.body.id } });
    await run('getExperiment', 404, { auth: key, params: { id: unknown } });
    await run('listExperiments', 200, { auth: key, query: `datasetId=${dataset.body.id}` });
    await run('listExperiments', 400, { auth: key, query: 'datasetId=nope' });
    await run('deleteDataset', 204, { auth: key, params: setRef });
    await run('deleteDataset', 404, { auth: key, params: setRef });
    // An agent's work items (docs/adr/0031): enqueue, list, read, complete, cancel.
    const item = await run('createWorkItem', 201, {
      auth: key,
      params: { id: agent.body.id },
      body: { objective: 'Ship it', todoList: [{ text: 'tag', state: 'pending' }] },
    });
    await run('createWorkItem', 400, { auth: key, params: { id: agent.body.id }, body: { objective: '' } });
    await run('createWorkItem', 404, { auth: key, params: { id: unknown }, body: { objective: 'x' } });
    await run('listWorkItems', 200, { auth: key, params: { id: agent.body.id }, query: 'view=queued' });
    await run('listWorkItems', 400, { auth: key, params: { id: agent.body.id }, query: 'view=doing' });
    await run('listWorkItems', 404, { auth: key, params: { id: unknown } });
    const itemRef = { id: agent.body.id, itemId: item.body.id };
    await run('getWorkItem', 200, { auth: key, params: itemRef });
    await run('getWorkItem', 404, { auth: key, params: { id: agent.body.id, itemId: unknown } });
    const dropped = await run('createWorkItem', 201, {
      auth: key,
      params: { id: agent.body.id },
      body: { objective: 'Drop it' },
    });
    await run('completeWorkItem', 200, { auth: key, params: itemRef, body: { summary: 'Shipped.' } });
    await run('completeWorkItem', 409, { auth: key, params: itemRef });
    await run('completeWorkItem', 400, { auth: key, params: itemRef, body: { summary: 1 } });
    await run('completeWorkItem', 404, { auth: key, params: { id: agent.body.id, itemId: unknown } });
    await run('cancelWorkItem', 200, { auth: key, params: { id: agent.body.id, itemId: dropped.body.id } });
    await run('cancelWorkItem', 409, { auth: key, params: itemRef, body: { reason: 'late' } });
    await run('cancelWorkItem', 400, { auth: key, params: itemRef, body: { reason: '' } });
    await run('cancelWorkItem', 404, { auth: key, params: { id: unknown, itemId: unknown } });
    // The agent's lifecycle (docs/adr/0031): pause, stop, resume.
    await run('pauseAgent', 200, {
      auth: key,
      params: { id: agent.body.id },
      body: { reason: 'maintenance' },
    });
    await run('pauseAgent', 400, { auth: key, params: { id: agent.body.id }, body: { reason: '' } });
    await run('pauseAgent', 404, { auth: key, params: { id: unknown } });
    await run('stopAgent', 200, { auth: key, params: { id: agent.body.id } });
    await run('stopAgent', 400, { auth: key, params: { id: agent.body.id }, body: { colour: 'red' } });
    await run('stopAgent', 404, { auth: key, params: { id: unknown } });
    await run('admitMessage', 409, { auth: key, params: { id: session.body.id }, body: { content: 'hi' } });
    await run('getAgent', 200, { auth: key, params: { id: agent.body.id } });
    await run('resumeAgent', 200, { auth: key, params: { id: agent.body.id } });
    await run('resumeAgent', 404, { auth: key, params: { id: unknown } });
    // The SSE streams: an ended turn's stream replays its history and ends.
    const turnStream = await run('streamTurn', 200, { auth: key, params: { id: admitted.body.turnId } });
    expect(turnStream.body).toMatch(/event: turn_completed\ndata: /);
    await run('streamTurn', 404, { auth: key, params: { id: unknown } });
    await run('streamTurn', 400, { auth: key, params: { id: admitted.body.turnId }, query: 'after=x' });
    await run('streamSession', 404, { auth: key, params: { id: unknown } });
    await run('streamSession', 400, { auth: key, params: { id: session.body.id }, query: 'after=-1' });
    {
      // A session's stream stays open: read until its history is in, then leave.
      const leave = new AbortController();
      const res = await fetch(`${url}/v1/sessions/${session.body.id}/stream`, {
        headers: { authorization: `Bearer ${key}` },
        signal: leave.signal,
      });
      let raw = '';
      const decoder = new TextDecoder();
      for await (const chunk of res.body as unknown as AsyncIterable<Uint8Array>) {
        raw += decoder.decode(chunk, { stream: true });
        if ((raw.match(/^id: /gm) ?? []).length >= events.body.data.length && raw.endsWith('\n\n')) break;
      }
      leave.abort();
      problems.push(
        ...check(op('streamSession'), { status: res.status, body: raw, headers: res.headers }, raw),
      );
      exercised.set('streamSession', new Set([...(exercised.get('streamSession') ?? []), res.status]));
    }
    await run('closeSession', 200, { auth: key, params: { id: session.body.id } });
    await run('closeSession', 404, { auth: key, params: { id: unknown } });
    await run('admitMessage', 409, { auth: key, params: { id: session.body.id }, body: { content: 'late' } });

    // Every operation that needs credentials refuses a request without them.
    for (const o of operations.filter((x) => x.security)) {
      const params = Object.fromEntries([...o.path.matchAll(/\{(\w+)\}/g)].map((m) => [m[1], unknown]));
      await run(o.operationId, 401, {
        params,
        ...(['post', 'patch'].includes(o.method) ? { body: {} } : {}),
      });
    }

    // Operations without credentials.
    await run('getHealth', 200);
    await run('getMetrics', 200);
    await run('getReadiness', 200);
    await pgProxy.down();
    try {
      await run('getReadiness', 503);
      // Whatever a tenant route answers while Postgres is down is documented and in the error shape.
      const { op: o, res, raw } = await call('getSettings', { auth: key });
      expect(res.status).toBeGreaterThanOrEqual(500);
      problems.push(...check(o, res, raw));
    } finally {
      await pgProxy.up();
    }

    expect(problems).toEqual([]);
    // Every documented operation was exercised, with a success and (where one exists) an error.
    for (const o of operations) {
      const statuses = [...(exercised.get(o.operationId) ?? [])];
      expect({ op: o.operationId, success: statuses.some((s) => s < 300) }).toEqual({
        op: o.operationId,
        success: !NO_SUCCESS.includes(o.operationId),
      });
      if (!NO_ERROR_CASE.includes(o.operationId)) {
        expect({ op: o.operationId, error: statuses.some((s) => s >= 400) }).toEqual({
          op: o.operationId,
          error: true,
        });
      }
    }
  });
});
