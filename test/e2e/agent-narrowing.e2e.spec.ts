import { randomUUID } from 'node:crypto';
import { newId } from '@switchboard/contracts';
import {
  createTestEnv,
  errorShapeProblem,
  listOperations,
  openApiIds,
  sendOperation,
  tableHashes,
  type IdKind as Kind,
  type OpenApiOperation as Operation,
  type TestEnv,
} from '@switchboard/testing';
import { Api, newTenant } from '../support/api';
import { startGateway } from '../support/stack';

/**
 * Keys limited to agents (docs/adr/0066, docs/TENANT-ISOLATION.md), generated from the API as the
 * isolation suite is (test/e2e/isolation.e2e.spec.ts): one tenant, two agents (alpha and beta) with
 * one of everything each, and a key limited to alpha. Every operation of the OpenAPI document has a
 * line in AGENT_NARROWING: a list must show the limited key only alpha's items (while the tenant's
 * admin key sees beta's there too); an operation by id, called with beta's ids, must answer exactly as
 * for ids that do not exist (404 in the family's shape) and change nothing; a tenant-wide operation
 * is refused (403 `insufficient_scope`). A new operation fails the suite until it has a line.
 */
jest.setTimeout(120_000);

const ADMIN = 'test-admin-token-0123456789';
const ALPHA = 'alpha-agent';
const BETA = 'beta-agent';

type Owner = string | undefined;

/**
 * How a key limited to agents is narrowed on each operation.
 * - `'ids'`: another agent's ids (path, query, request example) → the answer for ids nobody has.
 * - `{ list }`: the list shows only the key's agents' items: `items` picks them from the answer,
 *   `owner` gives each one's agent id (`path`/`body` for the call, else the operation's own path).
 * - `{ refused }`: tenant-wide (no one agent's): 403 `insufficient_scope`, with the reason.
 * - `{ exempt }`: not the tenant's agents' data (or not a tenant key's route), with the reason.
 */
type Narrowing =
  | 'ids'
  | { exempt: string }
  | { refused: string }
  | {
      list: {
        path?: (fx: Fixture) => string;
        /** The admin key's call, when it differs (the limited key must filter sessions by agent). */
        adminPath?: (fx: Fixture) => string;
        body?: unknown;
        headers?: Record<string, string>;
        items: (body: any) => any[];
        owner: (item: any, fx: Fixture) => Owner | Promise<Owner>;
      };
    }
  | { body: (id: (k: Kind) => string) => unknown; query?: Record<string, string> }
  | { query: Record<string, string> };

interface Fixture {
  a: Record<Kind, string>;
  b: Record<Kind, string>;
  env: TestEnv;
}

const OPERATOR = { exempt: "the operator's route: a tenant key is refused there" };
const TENANT_WIDE = (what: string) => ({ refused: `${what} belong to the tenant, no one agent` });
const data = (body: any) => body?.data ?? [];
const byField = (field: string) => (item: any) => item?.[field] as Owner;
const byName = (name: unknown, fx: Fixture): Owner =>
  name === ALPHA ? fx.a.agent : name === BETA ? fx.b.agent : undefined;

const AGENT_NARROWING: Record<string, Narrowing> = {
  // Not a tenant key's routes, or no tenant data at all.
  listTenants: OPERATOR,
  createTenant: OPERATOR,
  getTenant: OPERATOR,
  updateTenant: OPERATOR,
  updateTenantLimits: OPERATOR,
  pauseTenant: OPERATOR,
  resumeTenant: OPERATOR,
  operatorCancelTurn: OPERATOR,
  listAdminAuditEvents: OPERATOR,
  listTenantApiKeys: OPERATOR,
  createTenantApiKey: OPERATOR,
  revokeTenantApiKey: OPERATOR,
  listQueues: OPERATOR,
  listProcesses: OPERATOR,
  listTenantDataKeys: OPERATOR,
  rotateTenantDataKey: OPERATOR,
  exportTenant: OPERATOR,
  deleteTenant: OPERATOR,
  listTenantDeletions: OPERATOR,
  getTenantDeletion: OPERATOR,
  getHealth: { exempt: 'public' },
  getReadiness: { exempt: 'public' },
  getMetrics: { exempt: 'public' },
  deliverHook: { exempt: 'the URL token is the credential, no key is sent' },
  getWhoami: { exempt: 'the key itself' },
  getConsoleConfig: { exempt: "the console's configuration, no tenant data" },
  getSettings: { exempt: "the tenant's settings are read by every key (changing them is refused)" },
  listArchetypes: { exempt: 'the built-in archetypes, no tenant data' },
  mcpGet: { exempt: 'always 405: the server is stateless' },
  mcpDelete: { exempt: 'always 405: the server is stateless' },

  // Tenant-wide: refused to a key limited to agents.
  createAgent: { refused: 'a key limited to agents cannot create one' },
  listApiKeys: TENANT_WIDE('keys'),
  createApiKey: TENANT_WIDE('keys'),
  revokeApiKey: TENANT_WIDE('keys'),
  updateSettings: TENANT_WIDE('settings'),
  exportOwnTenant: TENANT_WIDE('exports'),
  listDatasets: TENANT_WIDE('datasets'),
  createDataset: TENANT_WIDE('datasets'),
  getDataset: TENANT_WIDE('datasets'),
  deleteDataset: TENANT_WIDE('datasets'),
  listDatasetItems: TENANT_WIDE('datasets'),
  addDatasetItems: TENANT_WIDE('datasets'),
  addDatasetItemFromTurn: TENANT_WIDE('datasets'),
  listMcpServers: TENANT_WIDE('MCP servers'),
  createMcpServer: TENANT_WIDE('MCP servers'),
  getMcpServer: TENANT_WIDE('MCP servers'),
  deleteMcpServer: TENANT_WIDE('MCP servers'),
  updateMcpServer: TENANT_WIDE('MCP servers'),
  refreshMcpServer: TENANT_WIDE('MCP servers'),
  getDailySpend: TENANT_WIDE('the daily spend roll-up'),

  // Lists: only the key's agents' items.
  listAgents: { list: { items: data, owner: byField('id') } },
  listSessions: {
    list: { path: (fx) => `/v1/sessions?agentId=${fx.a.agent}`, items: data, owner: byField('agentId') },
  },
  listActiveTurns: {
    list: { path: (fx) => `/v1/turns?agentId=${fx.a.agent}`, items: data, owner: byField('agentId') },
  },
  listApprovals: { list: { items: data, owner: byField('agentId') } },
  listExperiments: { list: { items: data, owner: byField('agentId') } },
  listTriggers: { list: { items: data, owner: byField('agentId') } },
  listSchedules: { list: { items: data, owner: byField('agentId') } },
  listModels: { list: { items: data, owner: (m, fx) => byName(m.id, fx) } },
  getUsage: {
    list: {
      path: () => '/v1/usage?groupBy=agent',
      items: (body) => body?.groups ?? [],
      owner: byField('agentId'),
    },
  },
  listAuditEvents: {
    list: {
      path: () => '/v1/audit-events?limit=200',
      items: data,
      owner: (e, fx) =>
        Object.values(fx.a).includes(e.targetId)
          ? fx.a.agent
          : Object.values(fx.b).includes(e.targetId)
            ? fx.b.agent
            : `not an agent's: ${e.targetType} ${e.targetId}`,
    },
  },
  langgraphSearchAssistants: {
    list: { body: { limit: 100 }, items: (b) => b, owner: byField('assistant_id') },
  },
  langgraphSearchThreads: {
    list: {
      body: { limit: 100 },
      items: (b) => b,
      owner: async (t, fx) =>
        (await fx.env.db.session.findUnique({ where: { id: t.thread_id }, select: { agentId: true } }))
          ?.agentId,
    },
  },
  mcpPost: {
    list: {
      body: { jsonrpc: '2.0', id: 1, method: 'tools/list' },
      headers: { accept: 'application/json, text/event-stream' },
      items: (b) => b?.result?.tools ?? [],
      owner: (t, fx) => byName(t.name, fx),
    },
  },

  // By id: another agent's object is as absent as one that does not exist.
  createSession: 'ids',
  createSchedule: 'ids',
  createTrigger: 'ids',
  createExperiment: 'ids',
  langgraphCreateThread: 'ids',
  createResponse: {
    body: (id) => ({ model: ALPHA, input: 'continue', previous_response_id: id('response') }),
  },
  compactResponse: {
    body: (id) => ({ model: id('agentName'), input: [{ role: 'user', content: 'hi' }] }),
  },
  createChatCompletion: {
    body: (id) => ({
      model: ALPHA,
      messages: [{ role: 'user', content: 'continue' }],
      metadata: { session_id: id('session') },
    }),
  },
  getAgent: 'ids',
  deleteAgent: 'ids',
  updateAgent: 'ids',
  listAgentVersions: 'ids',
  getAgentScores: 'ids',
  diffAgentVersions: { query: { from: '1', to: '1' } },
  getAgentVersion: 'ids',
  rollbackAgent: 'ids',
  getCanary: 'ids',
  startCanary: 'ids',
  stopCanary: 'ids',
  promoteCanary: 'ids',
  getSession: 'ids',
  closeSession: 'ids',
  updateSession: 'ids',
  listMessages: 'ids',
  admitMessage: 'ids',
  listEvents: 'ids',
  listSessionTurns: 'ids',
  forkSession: 'ids',
  rewindSession: 'ids',
  getSessionLineage: 'ids',
  getExperiment: 'ids',
  getTurn: 'ids',
  getTurnTimeline: 'ids',
  getTurnRoundContext: 'ids',
  cancelTurn: 'ids',
  answerClientTools: 'ids',
  replayTurn: 'ids',
  getTurnComparison: 'ids',
  postTurnFeedback: 'ids',
  getToolResultOriginal: 'ids',
  getTask: 'ids',
  answerTask: 'ids',
  cancelTask: 'ids',
  getApproval: 'ids',
  decideApproval: 'ids',
  retrieveModel: 'ids',
  getResponse: 'ids',
  cancelResponse: 'ids',
  listResponseInputItems: 'ids',
  streamTurn: 'ids',
  streamSession: 'ids',
  getTrigger: 'ids',
  revokeTrigger: 'ids',
  listTriggerDeliveries: 'ids',
  rotateTrigger: 'ids',
  getSchedule: 'ids',
  deleteSchedule: 'ids',
  updateSchedule: 'ids',
  listMemory: 'ids',
  addMemory: 'ids',
  getMemoryEmbeddings: 'ids',
  getMemory: 'ids',
  forgetMemory: 'ids',
  listMemoryBlocks: 'ids',
  getMemoryBlock: 'ids',
  putMemoryBlock: 'ids',
  deleteMemoryBlock: 'ids',
  listMemoryBlockVersions: 'ids',
  listWorkItems: 'ids',
  createWorkItem: 'ids',
  getWorkItem: 'ids',
  completeWorkItem: 'ids',
  cancelWorkItem: 'ids',
  pauseAgent: 'ids',
  stopAgent: 'ids',
  resumeAgent: 'ids',
  getAgentCard: 'ids',
  callAgentJsonRpc: 'ids',
  langgraphGetAssistant: 'ids',
  langgraphGetThread: 'ids',
  langgraphGetThreadState: 'ids',
  langgraphUpdateThreadState: 'ids',
  langgraphGetThreadStateAt: 'ids',
  langgraphGetThreadStateAtCheckpoint: 'ids',
  langgraphCopyThread: 'ids',
  langgraphGetThreadHistory: 'ids',
  langgraphSearchThreadHistory: 'ids',
  langgraphListRuns: 'ids',
  langgraphCreateRun: 'ids',
  langgraphStreamRun: 'ids',
  langgraphWaitRun: 'ids',
  langgraphGetRun: 'ids',
  langgraphJoinRun: 'ids',
  langgraphJoinRunStream: 'ids',
  langgraphCancelRun: 'ids',
};

/** Which kind of id a `{param}` is, by the path segment before it (as in the isolation suite). */
const KINDS: Record<string, Kind> = {
  agents: 'agent',
  versions: 'agentVersion',
  sessions: 'session',
  turns: 'turn',
  rounds: 'round',
  tasks: 'task',
  approvals: 'approval',
  'tool-results': 'toolResult',
  triggers: 'trigger',
  schedules: 'schedule',
  memory: 'memory',
  blocks: 'block',
  'work-items': 'workItem',
  experiments: 'experiment',
  responses: 'response',
  models: 'agentName',
  a2a: 'agent',
  assistants: 'agent',
  threads: 'session',
  runs: 'turn',
  state: 'checkpoint',
};

/** Request fields that carry an id. A dataset is the tenant's (shared): the real one in both calls. */
const FIELD_KINDS: Record<string, Kind> = {
  agentId: 'agent',
  sessionId: 'session',
  turnId: 'turn',
  taskId: 'task',
  approvalId: 'approval',
  datasetId: 'dataset',
  assistant_id: 'agent',
  thread_id: 'session',
  run_id: 'turn',
  checkpoint_id: 'checkpoint',
  previous_response_id: 'response',
  session_id: 'session',
  graph_id: 'agent',
};
/** Kinds named within their parent: every agent has its own `1`, `0`, `persona`. */
const SHARED: Kind[] = ['agentVersion', 'round', 'block', 'dataset'];

describe('keys limited to agents, generated from the OpenAPI document', () => {
  let env: TestEnv;
  let gateway: Awaited<ReturnType<typeof startGateway>>;
  let admin: Api;
  let limited: Api;
  let tenantId: string;
  let operations: Operation[];
  const fx = { a: {}, b: {} } as Fixture;
  const unknownIds = new Map<Kind, string>();
  const UNKNOWN_FORMAT: Record<Kind, string> = {
    agentVersion: '1',
    round: '0',
    block: 'persona',
    toolResult: 'f'.repeat(24),
    memory: `mem_${randomUUID()}`,
    response: `resp_${randomUUID().replaceAll('-', '')}`,
    agentName: 'nobody-agent-at-all',
  };
  const unknownId = (k: Kind): string => {
    if (!unknownIds.has(k)) unknownIds.set(k, UNKNOWN_FORMAT[k] ?? randomUUID());
    return unknownIds.get(k)!;
  };

  beforeAll(async () => {
    env = await createTestEnv();
    fx.env = env;
    gateway = await startGateway(env.config({ MCP_ALLOW_HOSTS: '127.0.0.1' }));
    const t = await newTenant(gateway.url, ADMIN, 'narrowed');
    admin = t.api;
    tenantId = t.tenantId;
    const ok = (what: string, res: { status: number; body: any }) => {
      if (res.status >= 300) throw new Error(`fixture ${what}: ${res.status} ${JSON.stringify(res.body)}`);
      return res.body;
    };
    const dataset = ok('dataset', await admin.post('/v1/datasets', { name: 'shared-set' })).id;
    ok('dataset item', await admin.post(`/v1/datasets/${dataset}/items`, { input: 'q', expected: 'x' }));
    // One of everything for each agent (no worker runs: turns stay queued, nothing moves).
    for (const [own, name, hex] of [
      [fx.a, ALPHA, 'a'],
      [fx.b, BETA, 'b'],
    ] as const) {
      own.agentName = name;
      own.dataset = dataset;
      own.agentVersion = '1';
      own.round = '0';
      own.block = 'persona';
      own.agent = ok(name, await admin.post('/v1/agents', { name, model: 'scripted/steady' })).id;
      ok('version', await admin.patch(`/v1/agents/${own.agent}`, { instructions: `${name}, v2` }));
      own.session = ok('session', await admin.post('/v1/sessions', { agentId: own.agent })).id;
      own.turn = ok(
        'message',
        await admin.post(`/v1/sessions/${own.session}/messages`, { content: `private to ${name}` }),
      ).turnId;
      own.response = `resp_${own.turn.replaceAll('-', '')}`;
      own.memory = ok(
        'memory',
        await admin.post(`/v1/agents/${own.agent}/memory`, { content: `${name} remembers` }),
      ).sourceRef;
      ok(
        'block',
        await admin.request('PUT', `/v1/agents/${own.agent}/blocks/persona`, { body: { content: name } }),
      );
      own.workItem = ok(
        'work item',
        await admin.post(`/v1/agents/${own.agent}/work-items`, { objective: `${name}'s objective` }),
      ).id;
      own.schedule = ok(
        'schedule',
        await admin.post('/v1/schedules', { agentId: own.agent, cron: '0 9 * * *' }),
      ).id;
      own.trigger = ok(
        'trigger',
        await admin.post('/v1/triggers', { agentId: own.agent, name: `${name}-alerts`, scheme: 'token' }),
      ).id;
      ok('rotation', await admin.post(`/v1/triggers/${own.trigger}/rotate`, {}));
      own.experiment = ok(
        'experiment',
        await admin.post('/v1/experiments', { datasetId: dataset, agentId: own.agent, versions: [1] }),
      ).id;
      own.approval = newId();
      await env.db.approval.create({
        data: {
          id: own.approval,
          tenantId,
          sessionId: own.session,
          turnId: own.turn,
          callId: 'c1',
          toolName: 'word_count',
          arguments: {},
          sideEffect: 'read_only',
          policy: 'tenant',
          expiresAt: new Date(Date.now() + 3_600_000),
        },
      });
      own.task = newId();
      await env.db.$executeRaw`
        INSERT INTO tasks (id, tenant_id, agent_id, agent_name, parent_turn_id, parent_session_id, call_id,
          status, depth, updated_at)
        SELECT ${own.task}::uuid, tenant_id, agent_id, 'researcher', id, session_id, 'c1', 'pending', 1, now()
        FROM turns WHERE id = ${own.turn}::uuid`;
      own.toolResult = hex.repeat(24);
      await env.db.toolResultOriginal.create({
        data: {
          tenantId,
          id: own.toolResult,
          sessionId: own.session,
          turnId: own.turn,
          callId: 'c1',
          tool: 'word_count',
          kind: 'text',
          content: `${name}'s original`,
          bytes: 12,
          expiresAt: new Date(Date.now() + 3_600_000),
        },
      });
      await env.db.turnRoundContext.create({
        data: { tenantId, turnId: own.turn, roundIndex: 0, parts: [] },
      });
      await env.db.$executeRaw`
        INSERT INTO ledger_entries (id, tenant_id, agent_id, session_id, turn_id, turn_at, key, provider, model,
          input_tokens, output_tokens, cost_usd, cost_source)
        SELECT ${newId()}::uuid, tenant_id, agent_id, session_id, id, sb_uuid7_time(id), ${`${own.turn}:0:0`},
          'scripted', 'steady', 10, 5, 0.001, 'rate_table'
        FROM turns WHERE id = ${own.turn}::uuid`;
      const state = await admin.get(`/langgraph/threads/${own.session}/state`);
      own.checkpoint = state.body?.checkpoint?.checkpoint_id ?? own.turn;
    }
    const key = ok(
      'limited key',
      await admin.post('/v1/api-keys', { name: 'alpha-only', role: 'developer', agentIds: [fx.a.agent] }),
    );
    limited = admin.withKey(key.key);

    operations = listOperations((await new Api(gateway.url).get('/docs/openapi.json')).body);
  });

  afterAll(async () => {
    await gateway?.close();
    await env?.cleanup();
  });

  const { request } = openApiIds(KINDS, FIELD_KINDS);

  /** The request for `o` with beta's (or unknown) ids; the limited key's. */
  function build(o: Operation, id: (k: Kind) => string) {
    const cover = AGENT_NARROWING[o.operationId];
    const custom = typeof cover === 'object' && 'body' in cover ? cover.body : undefined;
    return {
      o,
      ...request(o, id, {
        query: typeof cover === 'object' && 'query' in cover ? cover.query : undefined,
        body: typeof custom === 'function' ? () => custom(id) : undefined,
      }),
    };
  }

  /** The call with the limited key (or the `headers`' own authorization). */
  const send = (c: { o: Operation; path: string; body?: unknown }, headers: Record<string, string> = {}) =>
    sendOperation(gateway.url, c, { authorization: `Bearer ${limited.key}`, ...headers });

  /** A hash of the tenant's rows per table (api_keys left out: a key's use is noted there). */
  async function snapshot(): Promise<Record<string, string>> {
    const tables = await env.db.$queryRaw<{ name: string }[]>`
      SELECT t.table_name::text AS name FROM information_schema.tables t
      WHERE t.table_schema = 'public' AND t.table_type = 'BASE TABLE' AND t.table_name <> 'api_keys'
        AND EXISTS (SELECT 1 FROM information_schema.columns c WHERE c.table_schema = 'public'
          AND c.table_name = t.table_name AND c.column_name = 'tenant_id')
      ORDER BY t.table_name`;
    return tableHashes(
      env.db,
      tables.map((t) => ({ name: t.name, where: `WHERE tenant_id = '${tenantId}'` })),
    );
  }

  /** Operations without a line, and lines naming no operation. */
  function uncovered(ops: Operation[], table: Record<string, Narrowing>): string[] {
    const known = new Set(ops.map((o) => o.operationId));
    return [
      ...ops
        .filter((o) => !table[o.operationId])
        .map(
          (o) =>
            `${o.operationId} (${o.method.toUpperCase()} ${o.path}) has no line in AGENT_NARROWING in test/e2e/agent-narrowing.e2e.spec.ts: say how a key limited to agents is narrowed there`,
        ),
      ...Object.keys(table)
        .filter((k) => !known.has(k))
        .map((k) => `${k} is in AGENT_NARROWING but not in the OpenAPI document: remove it`),
    ];
  }

  it('covers every operation: a new one fails here until it has a line in AGENT_NARROWING', () => {
    expect(uncovered(operations, AGENT_NARROWING)).toEqual([]);
    expect(operations.length).toBeGreaterThan(140);
    // And it fails: a list added without a line, a line left behind.
    const added = { operationId: 'listWidgets', method: 'get', path: '/v1/widgets' };
    expect(
      uncovered([...operations.filter((o) => o.operationId !== 'getSession'), added], AGENT_NARROWING),
    ).toEqual([
      expect.stringContaining('listWidgets (GET /v1/widgets) has no line'),
      'getSession is in AGENT_NARROWING but not in the OpenAPI document: remove it',
    ]);
  });

  it("every list shows a key limited to agents only its agents' items, where the admin key sees the other's", async () => {
    const lists = operations.filter((o) => {
      const c = AGENT_NARROWING[o.operationId];
      return typeof c === 'object' && 'list' in c;
    });
    expect(lists.length).toBeGreaterThanOrEqual(13);
    const problems: string[] = [];
    for (const o of lists) {
      const l = (AGENT_NARROWING[o.operationId] as Extract<Narrowing, { list: unknown }>).list;
      const path = l.path?.(fx) ?? o.path;
      const call = { o, path, body: l.body };
      const mine = await send(call, l.headers);
      const all = await send(
        { ...call, path: l.adminPath?.(fx) ?? path.replace(/agentId=[^&]*/, '') },
        { ...l.headers, authorization: `Bearer ${admin.key}` },
      );
      if (mine.status !== 200 || all.status !== 200) {
        problems.push(`${o.operationId}: ${mine.status} (admin ${all.status}) ${JSON.stringify(mine.body)}`);
        continue;
      }
      const ownersOf = (items: any[]) => Promise.all(items.map(async (i) => await l.owner(i, fx)));
      const owners = await ownersOf(l.items(mine.body));
      const allOwners = await ownersOf(l.items(all.body));
      const foreign = owners.filter((w) => w !== fx.a.agent);
      if (foreign.length > 0)
        problems.push(`${o.operationId} shows another agent's items: ${foreign.join(', ')}`);
      if (!owners.includes(fx.a.agent)) problems.push(`${o.operationId} shows none of alpha's items`);
      // The fixture makes the narrowing visible: the tenant's admin key sees beta's there too.
      if (!allOwners.includes(fx.b.agent))
        problems.push(`${o.operationId}: the admin key sees none of beta's`);
    }
    expect(problems).toEqual([]);
    // Sessions and turns are listed by agent: without one, 400; beta's, 404 as an unknown agent.
    expect((await limited.get('/v1/sessions')).status).toBe(400);
    const theirs = await limited.get(`/v1/turns?agentId=${fx.b.agent}`);
    const nobody = await limited.get(`/v1/turns?agentId=${unknownId('agent')}`);
    expect([theirs.status, theirs.body]).toEqual([nobody.status, nobody.body]);
    expect(theirs.status).toBe(404);
  });

  it("every operation by id answers beta's ids exactly as ids that do not exist, and changes nothing", async () => {
    const targets = operations.filter((o) => {
      const c = AGENT_NARROWING[o.operationId];
      return c === 'ids' || (typeof c === 'object' && ('body' in c || 'query' in c) && !('list' in c));
    });
    expect(targets.length).toBeGreaterThan(80);
    const theirs = (k: Kind) => fx.b[k] ?? unknownId(k);
    const unknown = (k: Kind) => (SHARED.includes(k) ? theirs(k) : unknownId(k));
    const before = await snapshot();
    const answers: { o: Operation; path: string; status: number; body: unknown }[] = [];
    for (const o of targets) {
      const c = build(o, theirs);
      answers.push({ o, path: c.path, ...(await send(c)) });
    }
    const after = await snapshot();
    // Ids and names in an answer are blanked: beta's answer must be the unknown one's but for them.
    const blank = (v: unknown) => {
      const blanked = [...Object.values(fx.b), ...unknownIds.values()]
        .filter((x) => x.length >= 8)
        .sort((x, y) => y.length - x.length);
      let text = JSON.stringify(v ?? null);
      for (const id of blanked) text = text.split(id).join('<id>');
      return text.replace(/[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}/g, '<id>');
    };
    const problems: string[] = [];
    for (const a of answers) {
      const u = await send(build(a.o, unknown));
      const where = `${a.o.operationId} (${a.o.method.toUpperCase()} ${a.path})`;
      // A reference in a call (a previous response, a session in metadata) may be refused as a 4xx other than 404.
      const reference = typeof AGENT_NARROWING[a.o.operationId] === 'object';
      const shape = errorShapeProblem(a.o, a.body, reference);
      if (reference ? a.status < 400 || a.status >= 500 : a.status !== 404)
        problems.push(`${where} → ${a.status} ${JSON.stringify(a.body).slice(0, 200)}`);
      else if (shape) problems.push(`${where}: ${shape} ${JSON.stringify(a.body).slice(0, 200)}`);
      if (u.status !== a.status || blank(u.body) !== blank(a.body))
        problems.push(
          `${where}: ${a.status} ${JSON.stringify(a.body).slice(0, 160)} differs from an unknown id's ${u.status} ${JSON.stringify(u.body).slice(0, 160)}`,
        );
    }
    expect(problems).toEqual([]);
    expect(Object.keys(after).filter((t) => before[t] !== after[t])).toEqual([]);
  });

  it('tenant-wide operations are refused (403 insufficient_scope, before any lookup)', async () => {
    const refused = operations.filter((o) => {
      const c = AGENT_NARROWING[o.operationId];
      return typeof c === 'object' && 'refused' in c;
    });
    expect(refused.length).toBeGreaterThan(15);
    const before = await snapshot();
    const problems: string[] = [];
    for (const o of refused) {
      const r = await send(build(o, (k) => fx.a[k] ?? unknownId(k)));
      const body = r.body as { error?: { code?: string; details?: { scope?: string } } };
      if (r.status !== 403 || body?.error?.code !== 'insufficient_scope' || !body.error.details?.scope)
        problems.push(`${o.operationId} → ${r.status} ${JSON.stringify(r.body).slice(0, 200)}`);
    }
    expect(problems).toEqual([]);
    const after = await snapshot();
    expect(Object.keys(after).filter((t) => before[t] !== after[t])).toEqual([]);
  });

  it("MCP tools/call of another agent's tool, and into another agent's session, is refused as an unknown one", async () => {
    const call = async (name: string, args: Record<string, unknown>) =>
      send(
        {
          o: { operationId: 'mcpPost', method: 'post', path: '/mcp' },
          path: '/mcp',
          body: { jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name, arguments: args } },
        },
        {},
      );
    const before = await snapshot();
    const beta = await call(BETA, { message: 'hi' });
    const nobody = await call('nobody-agent-at-all', { message: 'hi' });
    expect(beta.body).toMatchObject({ result: { isError: true } });
    expect(JSON.stringify(beta.body).replace(BETA, '<n>')).toBe(
      JSON.stringify(nobody.body).replace('nobody-agent-at-all', '<n>'),
    );
    const intoBeta = await call(ALPHA, { message: 'hi', session_id: fx.b.session });
    const intoNobody = await call(ALPHA, { message: 'hi', session_id: unknownId('session') });
    expect(intoBeta.body).toMatchObject({ result: { isError: true } });
    expect(JSON.stringify(intoBeta.body).replace(fx.b.session, '<id>')).toBe(
      JSON.stringify(intoNobody.body).replace(unknownId('session'), '<id>'),
    );
    const after = await snapshot();
    expect(Object.keys(after).filter((t) => before[t] !== after[t])).toEqual([]);
  });
});
