import { randomUUID } from 'node:crypto';
import { LangGraphErrorResponse, newId } from '@switchboard/contracts';
import WebSocket from 'ws';
import {
  createTestEnv,
  errorShapeProblem as errorProblem,
  listOperations,
  openApiIds,
  pathParams,
  requestExample as example,
  sendOperation,
  tableHashes,
  type IdKind as Kind,
  type OpenApiOperation as Operation,
  type TestEnv,
} from '@switchboard/testing';
import { Api, newTenant } from '../support/api';
import { startGateway } from '../support/stack';

/**
 * The published isolation suite (docs/TENANT-ISOLATION.md, docs/adr/0065), generated from the API:
 * it reads the gateway's own OpenAPI document and, for every operation that takes an id (in its path,
 * query or JSON body), calls it with tenant B's key and tenant A's real ids, and with ids that do not
 * exist. Each answer must be a 404 in the route family's error shape, indistinguishable from the
 * answer for an unknown id, and tenant A's rows (a hash per table) must be exactly as they were.
 *
 * A new operation that takes an id fails the suite until it has a line in COVERAGE below; a new kind
 * of id (a new path segment before a `{param}`) fails until it has a line in KINDS.
 */
jest.setTimeout(120_000);

const ADMIN = 'test-admin-token-0123456789';

/**
 * Which kind of id a `{param}` is, from the path segment in front of it (`/v1/agents/{id}` → agent).
 * A route whose segment is not here fails the suite with the segment named: add one line.
 */
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
  'mcp-servers': 'mcpServer',
  memory: 'memory',
  blocks: 'block',
  'work-items': 'workItem',
  'api-keys': 'apiKey',
  datasets: 'dataset',
  experiments: 'experiment',
  responses: 'response',
  // The OpenAI-compatible model is an agent (docs/adr/0022); the protocol adapters' ids are ours too:
  // an A2A agent, a LangGraph assistant (agent), thread (session), run (turn) and checkpoint.
  models: 'agent',
  a2a: 'agent',
  assistants: 'agent',
  threads: 'session',
  runs: 'turn',
  state: 'checkpoint',
  // The webhook ingress's URL token (unknown-only: the token is the credential); the operator's
  // routes' tenant (exempt: a tenant key is refused there).
  hooks: 'hookToken',
  tenants: 'tenant',
  // The operator's record of a tenant's deletion (docs/adr/0068): exempt, a tenant key is refused.
  'tenant-deletions': 'tenantDeletion',
};

/** JSON body and query fields that carry an id, by name. */
const FIELD_KINDS: Record<string, Kind> = {
  agentId: 'agent',
  sessionId: 'session',
  turnId: 'turn',
  taskId: 'task',
  approvalId: 'approval',
  triggerId: 'trigger',
  scheduleId: 'schedule',
  workItemId: 'workItem',
  datasetId: 'dataset',
  assistant_id: 'agent',
  thread_id: 'session',
  run_id: 'turn',
  checkpoint_id: 'checkpoint',
  previous_response_id: 'response',
  session_id: 'session',
  graph_id: 'agent',
};

/**
 * How each operation that takes an id is covered. `'ids'`: the generic filler (path params by KINDS,
 * the document's request example with its id fields replaced, id fields of the query). `{ exempt }`:
 * not a tenant's id, with the reason (still called with tenant B's key: it must be refused).
 * `{ unknownOnly }`: only the unknown-id half applies. `query` / `body` override what the filler sends.
 */
type Coverage =
  | 'ids'
  | { exempt: string; status?: number }
  | { unknownOnly: string }
  | {
      query?: Record<string, string>;
      /** The request body: `id` gives the id under test (A's or unknown), `own` tenant B's own. */
      body?: (id: (k: Kind) => string, own: (k: Kind) => string) => unknown;
      /** A filter of a list: another tenant's id matches nothing (200, no rows), as an unknown id does. */
      filter?: true;
    };

/** Kinds named within their parent (a version number, a round index, a block name): every tenant has its own `1`. */
const NAMED: Kind[] = ['agentVersion', 'round', 'block'];

const OPERATOR = {
  exempt: 'operator route: the operator token names the tenant; a tenant key is refused',
  status: 401,
};

const COVERAGE: Record<string, Coverage> = {
  // The operator's routes (docs/adr/0030): not reachable with a tenant's key at all.
  getTenant: OPERATOR,
  updateTenant: OPERATOR,
  updateTenantLimits: OPERATOR,
  pauseTenant: OPERATOR,
  resumeTenant: OPERATOR,
  operatorCancelTurn: OPERATOR,
  listTenantApiKeys: OPERATOR,
  createTenantApiKey: OPERATOR,
  revokeTenantApiKey: OPERATOR,
  listTenantDataKeys: OPERATOR,
  rotateTenantDataKey: OPERATOR,
  // Export and deletion of a tenant (docs/adr/0068).
  exportTenant: OPERATOR,
  deleteTenant: OPERATOR,
  getTenantDeletion: OPERATOR,
  // The webhook ingress (docs/adr/0019): the URL token is the credential, no key is sent; an
  // unknown token is a 404 and writes nothing.
  deliverHook: { unknownOnly: 'the URL token is the credential: whoever holds it delivers to its trigger' },
  revokeApiKey: 'ids',
  // An id in the body or the query: A's agent named in B's request.
  createSession: 'ids',
  listSessions: { filter: true },
  listActiveTurns: { filter: true },
  // `model` names the agent here (a provider's model elsewhere): B's own agent, A's ids in the rest.
  createResponse: {
    body: (id, own) => ({ model: own('agent'), input: 'continue', previous_response_id: id('response') }),
  },
  createChatCompletion: {
    body: (id, own) => ({
      model: own('agent'),
      messages: [{ role: 'user', content: 'continue' }],
      metadata: { session_id: id('session') },
    }),
  },
  langgraphCreateThread: 'ids',
  langgraphSearchAssistants: { filter: true },
  createTrigger: 'ids',
  createSchedule: 'ids',
  getAgent: 'ids',
  deleteAgent: 'ids',
  updateAgent: 'ids',
  listAgentVersions: 'ids',
  diffAgentVersions: { query: { from: '1', to: '1' } },
  getAgentVersion: 'ids',
  startCanary: 'ids',
  getCanary: 'ids',
  stopCanary: 'ids',
  promoteCanary: 'ids',
  getDataset: 'ids',
  deleteDataset: 'ids',
  addDatasetItems: 'ids',
  listDatasetItems: 'ids',
  addDatasetItemFromTurn: 'ids',
  createExperiment: 'ids',
  listExperiments: { filter: true },
  getExperiment: 'ids',
  getAgentScores: 'ids',
  postTurnFeedback: 'ids',
  rollbackAgent: 'ids',
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
  getTurn: 'ids',
  getTurnTimeline: 'ids',
  getTurnRoundContext: 'ids',
  cancelTurn: 'ids',
  answerClientTools: 'ids',
  replayTurn: 'ids',
  getTurnComparison: 'ids',
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
  getMcpServer: 'ids',
  deleteMcpServer: 'ids',
  updateMcpServer: 'ids',
  refreshMcpServer: 'ids',
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

/** A list answer with no rows: `{data: []}`, or a bare `[]` (LangGraph's lists). */
const emptyList = (body: any) =>
  (Array.isArray(body) ? body : body?.data)?.length === 0 ? undefined : 'not an empty list';

/** What an answer looks like once the ids in it are blanked: B's answer must equal the unknown id's. */
const blank = (value: unknown, ids: string[]) => {
  let text = JSON.stringify(value ?? null);
  for (const id of ids.filter((i) => i.length >= 8)) text = text.split(id).join('<id>');
  return text
    .replace(/[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}/g, '<id>')
    .replace(/resp_[0-9a-f]{32}/g, '<id>');
};

describe('tenant isolation, generated from the OpenAPI document', () => {
  let env: TestEnv;
  let gateway: Awaited<ReturnType<typeof startGateway>>;
  let a: Api;
  let b: Api;
  let tenantA: string;
  let operations: Operation[];
  /** Tenant A's real id of each kind, tenant B's own where it has one, and an id nobody has. */
  const mine: Partial<Record<Kind, string>> = {};
  const theirs: Partial<Record<Kind, string>> = {};
  /** Ids nobody has: a fresh UUID per kind, or the kind's own format where it is not a UUID. */
  const UNKNOWN_FORMAT: Record<Kind, string> = {
    agentVersion: '999',
    round: '99',
    toolResult: 'f'.repeat(24),
    memory: `mem_${randomUUID()}`,
    block: 'no_such_block',
    response: `resp_${randomUUID().replaceAll('-', '')}`,
    hookToken: `whk_${randomUUID().replaceAll('-', '')}`,
  };
  const unknownIds = new Map<Kind, string>();
  const unknownId = (k: Kind): string => {
    if (!unknownIds.has(k)) unknownIds.set(k, UNKNOWN_FORMAT[k] ?? randomUUID());
    return unknownIds.get(k)!;
  };

  beforeAll(async () => {
    env = await createTestEnv();
    gateway = await startGateway(env.config({ MCP_ALLOW_HOSTS: '127.0.0.1' }));
    const ta = await newTenant(gateway.url, ADMIN, 'tenant-a');
    const tb = await newTenant(gateway.url, ADMIN, 'tenant-b');
    a = ta.api;
    b = tb.api;
    tenantA = ta.tenantId;
    mine.tenant = tenantA;
    const ok = <T>(what: string, res: { status: number; body: T }) => {
      if (res.status >= 300) throw new Error(`fixture ${what}: ${res.status} ${JSON.stringify(res.body)}`);
      return res.body as any;
    };

    // Tenant A: one of everything (no worker runs here, so turns stay queued and nothing moves).
    mine.agent = ok('agent', await a.post('/v1/agents', { name: 'alpha', model: 'scripted/steady' })).id;
    mine.agentVersion = '1';
    mine.session = ok('session', await a.post('/v1/sessions', { agentId: mine.agent })).id;
    mine.turn = ok(
      'message',
      await a.post(`/v1/sessions/${mine.session}/messages`, { content: 'private to tenant A' }),
    ).turnId;
    mine.response = `resp_${mine.turn!.replaceAll('-', '')}`;
    mine.round = '0';
    mine.apiKey = ok('api key', await a.post('/v1/api-keys', { name: 'second' })).id;
    mine.memory = ok(
      'memory',
      await a.post(`/v1/agents/${mine.agent}/memory`, { content: 'A remembers this' }),
    ).sourceRef;
    mine.block = 'persona';
    ok(
      'block',
      await a.request('PUT', `/v1/agents/${mine.agent}/blocks/persona`, { body: { content: 'A' } }),
    );
    mine.workItem = ok(
      'work item',
      await a.post(`/v1/agents/${mine.agent}/work-items`, { objective: 'A’s objective' }),
    ).id;
    mine.schedule = ok(
      'schedule',
      await a.post('/v1/schedules', { agentId: mine.agent, cron: '0 9 * * *' }),
    ).id;
    mine.trigger = ok(
      'trigger',
      await a.post('/v1/triggers', { agentId: mine.agent, name: 'alerts', scheme: 'token' }),
    ).id;
    mine.mcpServer = ok(
      'mcp server',
      await a.post('/v1/mcp-servers', { name: 'a-tools', url: 'http://127.0.0.1:9/mcp' }),
    ).id;
    // What a running turn writes, as it writes it: an approval, a sub-agent task, a stored original
    // and a round's context.
    mine.approval = newId();
    await env.db.approval.create({
      data: {
        id: mine.approval,
        tenantId: tenantA,
        sessionId: mine.session!,
        turnId: mine.turn!,
        callId: 'c1',
        toolName: 'word_count',
        arguments: {},
        sideEffect: 'read_only',
        policy: 'tenant',
        expiresAt: new Date(Date.now() + 3_600_000),
      },
    });
    mine.task = newId();
    await env.db.$executeRaw`
      INSERT INTO tasks (id, tenant_id, agent_id, agent_name, parent_turn_id, parent_session_id, call_id, status,
        depth, updated_at)
      SELECT ${mine.task}::uuid, tenant_id, agent_id, 'researcher', id, session_id, 'c1', 'pending', 1, now()
      FROM turns WHERE id = ${mine.turn}::uuid`;
    mine.toolResult = 'a'.repeat(24);
    await env.db.toolResultOriginal.create({
      data: {
        tenantId: tenantA,
        id: mine.toolResult,
        sessionId: mine.session,
        turnId: mine.turn,
        callId: 'c1',
        tool: 'word_count',
        kind: 'text',
        content: 'A’s original',
        bytes: 12,
        expiresAt: new Date(Date.now() + 3_600_000),
      },
    });
    await env.db.turnRoundContext.create({
      data: { tenantId: tenantA, turnId: mine.turn!, roundIndex: 0, parts: [] },
    });
    mine.dataset = ok('dataset', await a.post('/v1/datasets', { name: 'alpha-set' })).id;
    ok(
      'dataset item',
      await a.post(`/v1/datasets/${mine.dataset}/items`, { input: 'A’s item', expected: 'x' }),
    );
    mine.experiment = ok(
      'experiment',
      await a.post('/v1/experiments', { datasetId: mine.dataset, agentId: mine.agent, versions: [1] }),
    ).id;
    const state = await a.get(`/langgraph/threads/${mine.session}/state`);
    mine.checkpoint = state.body?.checkpoint?.checkpoint_id ?? mine.turn;

    // Tenant B's own parents, for "A's child through my own parent".
    theirs.agent = ok('b agent', await b.post('/v1/agents', { name: 'beta', model: 'scripted/steady' })).id;
    theirs.session = ok('b session', await b.post('/v1/sessions', { agentId: theirs.agent })).id;
    theirs.dataset = ok('b dataset', await b.post('/v1/datasets', { name: 'beta-set' })).id;
    theirs.turn = ok(
      'b message',
      await b.post(`/v1/sessions/${theirs.session}/messages`, { content: 'B' }),
    ).turnId;

    operations = listOperations((await new Api(gateway.url).get('/docs/openapi.json')).body);
  });

  afterAll(async () => {
    await gateway?.close();
    await env?.cleanup();
  });

  const { kindOf, idQuery, idFields, takesId, request } = openApiIds(KINDS, FIELD_KINDS);

  interface Call {
    o: Operation;
    label: string;
    client: Api;
    path: string;
    body?: unknown;
    /**
     * A's ids referenced from a call on B's own object: the route may refuse the reference before
     * looking it up (a 400 or 422 for a thread mismatch), so the answer must be a 4xx in the shape and
     * the same as for an unknown id, not necessarily a 404.
     */
    reference?: true;
  }

  /** The request for `o` with each id taken from `id`; undefined when the filler cannot make one. */
  function build(
    o: Operation,
    client: Api,
    label: string,
    id: (k: Kind) => string,
    /** The ids of the path, when they differ from those of the query and body. */
    pathId: (k: Kind, param: string) => string = id,
  ): Call {
    const cover = COVERAGE[o.operationId];
    const custom = typeof cover === 'object' && 'body' in cover ? cover.body : undefined;
    const { path, body } = request(o, id, {
      pathId,
      query: typeof cover === 'object' && 'query' in cover ? cover.query : undefined,
      body: custom && (() => custom(id, (k) => theirs[k] ?? id(k))),
    });
    return { o, label, client, path, body };
  }

  const send = (c: Call) =>
    sendOperation(gateway.url, c, c.client.key ? { authorization: `Bearer ${c.client.key}` } : {});

  /** Runs calls a few at a time (each is independent; every one is a refusal). */
  async function run(calls: Call[]) {
    const results: { c: Call; status: number; body: unknown }[] = [];
    let next = 0;
    await Promise.all(
      Array.from({ length: 12 }, async () => {
        while (next < calls.length) {
          const c = calls[next++];
          results.push({ c, ...(await send(c)) });
        }
      }),
    );
    return results;
  }

  /** A hash of tenant A's rows in every table (its own row of `tenants`; whole tables without tenant_id). */
  async function snapshot(): Promise<Record<string, string>> {
    const tables = await env.db.$queryRaw<{ name: string; scoped: boolean }[]>`
      SELECT t.table_name::text AS name,
        EXISTS (SELECT 1 FROM information_schema.columns c WHERE c.table_schema = 'public'
          AND c.table_name = t.table_name AND c.column_name = 'tenant_id') AS scoped
      FROM information_schema.tables t
      WHERE t.table_schema = 'public' AND t.table_type = 'BASE TABLE' ORDER BY t.table_name`;
    const where = (t: { name: string; scoped: boolean }) =>
      t.scoped ? `WHERE tenant_id = '${tenantA}'` : t.name === 'tenants' ? `WHERE id = '${tenantA}'` : '';
    return tableHashes(
      env.db,
      tables.map((t) => ({ name: t.name, where: where(t) })),
    );
  }

  /** What keeps operations from being covered: no line in COVERAGE, a `{param}` of an unknown kind, stale lines. */
  function uncovered(
    ops: Operation[],
    coverage: Record<string, Coverage>,
    fixture: Partial<Record<Kind, string>> = mine,
  ): string[] {
    const problems: string[] = [];
    for (const o of ops.filter(takesId)) {
      const cover = coverage[o.operationId];
      if (!cover) {
        problems.push(
          `${o.operationId} (${o.method.toUpperCase()} ${o.path}) takes an id and is not covered: add \`${o.operationId}: 'ids',\` to COVERAGE in test/e2e/isolation.e2e.spec.ts (or an exemption with its reason)`,
        );
        continue;
      }
      if (typeof cover === 'object' && 'exempt' in cover) continue;
      const kinds = [
        ...pathParams(o).map((p) => kindOf(o, p)),
        ...idQuery(o).map((q) => FIELD_KINDS[q]),
        ...idFields(example(o)).map((f) => FIELD_KINDS[f]),
      ];
      if (!(typeof cover === 'object' && 'unknownOnly' in cover))
        for (const k of new Set(kinds))
          if (k && !fixture[k])
            problems.push(`${o.operationId}: tenant A has no ${k} in the fixture: create one in beforeAll`);
      for (const p of pathParams(o))
        if (!kindOf(o, p))
          problems.push(
            `${o.operationId}: the filler does not know what {${p}} of ${o.path} is: add its segment to KINDS`,
          );
    }
    const known = new Set(ops.map((o) => o.operationId));
    for (const id of Object.keys(coverage))
      if (!known.has(id)) problems.push(`${id} is in COVERAGE but not in the OpenAPI document: remove it`);
    return problems;
  }

  it('covers every operation that takes an id: a new one fails here until it has a line in COVERAGE', () => {
    expect(uncovered(operations, COVERAGE)).toEqual([]);
    expect(operations.filter(takesId).length).toBeGreaterThan(80);
    // And it fails: a route added to the document without a line, one with a line whose id is of a
    // kind the filler does not know, an id in a request body, and a line left behind.
    const added: Operation[] = [
      { operationId: 'getWidget', method: 'get', path: '/v1/widgets/{id}' },
      { operationId: 'getGadget', method: 'get', path: '/v1/gadgets/{id}' },
      {
        operationId: 'createScore',
        method: 'post',
        path: '/v1/scores',
        requestBody: { content: { 'application/json': { example: { turnId: 'x', value: 1 } } } },
      },
    ];
    const withoutTurn = Object.fromEntries(Object.entries(COVERAGE).filter(([k]) => k !== 'getTurn'));
    expect(
      uncovered([...operations.filter((o) => o.operationId !== 'getSession'), ...added], {
        ...withoutTurn,
        getGadget: 'ids',
      }),
    ).toEqual([
      expect.stringContaining('getTurn (GET /v1/turns/{id}) takes an id and is not covered'),
      expect.stringContaining('getWidget (GET /v1/widgets/{id}) takes an id and is not covered'),
      'getGadget: the filler does not know what {id} of /v1/gadgets/{id} is: add its segment to KINDS',
      expect.stringContaining('createScore (POST /v1/scores) takes an id and is not covered'),
      'getSession is in COVERAGE but not in the OpenAPI document: remove it',
    ]);
  });

  it('tenant B gets 404 for every one of tenant A’s ids, exactly as for an id that does not exist, and nothing of A changes', async () => {
    const covered = operations.filter(
      (o) => takesId(o) && COVERAGE[o.operationId] && typeof COVERAGE[o.operationId] === 'string',
    );
    const overridden = operations.filter((o) => {
      const cover = COVERAGE[o.operationId];
      return takesId(o) && typeof cover === 'object' && !('exempt' in cover) && !('unknownOnly' in cover);
    });
    const targets = [...covered, ...overridden];
    const real = (k: Kind) => mine[k] ?? unknownId(k);
    // Each call with A's ids is paired with the same call with ids nobody has (its twin): B's answer
    // for A's id must be the answer for an id that does not exist.
    const calls: Call[] = [];
    const twins: Call[] = [];
    for (const o of targets) {
      calls.push(build(o, b, 'A’s ids', real));
      twins.push(build(o, b, 'unknown ids', (k) => unknownId(k)));
      // A's child through B's own parent (B's agent, A's work item): the child is looked up in B's
      // tenant. Only for children with ids of their own (a version number or a block name is B's too).
      const params = pathParams(o);
      const last = params[params.length - 1];
      const child = kindOf(o, last);
      const b_ = (k: Kind, other: (k: Kind) => string) => theirs[k] ?? other(k);
      const unk = (k: Kind) => unknownId(k);
      if (params.length > 1 && child && !NAMED.includes(child)) {
        const parent = (other: (k: Kind) => string) => (k: Kind, p: string) =>
          p === last ? other(k) : b_(k, other);
        calls.push(build(o, b, 'A’s id under B’s parent', real, parent(real)));
        twins.push(build(o, b, 'unknown id under B’s parent', unk, parent(unk)));
      }
      // A's ids in the query or body of a call on B's own object (fork B's session at A's turn).
      const fields = idQuery(o).length > 0 || idFields(example(o)).length > 0;
      if (params.length > 0 && fields && params.every((p) => theirs[kindOf(o, p)!])) {
        calls.push({ ...build(o, b, 'A’s ids in B’s call', real, (k) => b_(k, real)), reference: true });
        twins.push({ ...build(o, b, 'unknown ids in B’s call', unk, (k) => b_(k, unk)), reference: true });
      }
    }
    const before = await snapshot();
    const results = await run(calls);
    const after = await snapshot();
    const strangers = await run(twins);
    const unknownAnswer = new Map(strangers.map((r) => [twins.indexOf(r.c), r]));
    const leaks: string[] = [];
    for (const r of results) {
      const i = calls.indexOf(r.c);
      const where = `${r.c.o.operationId} (${r.c.label}: ${r.c.o.method.toUpperCase()} ${r.c.path})`;
      const isFilter = (COVERAGE[r.c.o.operationId] as { filter?: true }).filter;
      const shape = isFilter ? emptyList(r.body) : errorProblem(r.c.o, r.body, r.c.reference);
      const status = r.c.reference ? r.status >= 400 && r.status < 500 : r.status === (isFilter ? 200 : 404);
      if (!status || shape)
        leaks.push(`${where} → ${r.status} ${shape ?? ''} ${JSON.stringify(r.body).slice(0, 200)}`);
      const u = unknownAnswer.get(i)!;
      const idsInPlay = [...Object.values(mine), ...unknownIds.values(), ...Object.values(theirs)].filter(
        (x): x is string => x !== undefined,
      );
      if (u.status !== r.status || blank(u.body, idsInPlay) !== blank(r.body, idsInPlay))
        leaks.push(
          `${where}: differs from an unknown id's answer (${u.status} ${JSON.stringify(u.body).slice(0, 200)})`,
        );
    }
    for (const u of strangers)
      if (
        (COVERAGE[u.c.o.operationId] as { filter?: true }).filter
          ? u.status !== 200 || emptyList(u.body)
          : u.c.reference
            ? u.status < 400 || u.status >= 500 || errorProblem(u.c.o, u.body, true)
            : u.status !== 404 || errorProblem(u.c.o, u.body)
      )
        leaks.push(
          `${u.c.o.operationId} (${u.c.label}: ${u.c.path}) → ${u.status} ${JSON.stringify(u.body).slice(0, 200)}`,
        );
    expect(leaks).toEqual([]);
    expect(
      Object.entries(after)
        .filter(([t, h]) => before[t] !== h)
        .map(([t]) => t),
    ).toEqual([]);
    expect(results.length).toBeGreaterThan(80);
  });

  it('exempt operations refuse tenant B’s key; the webhook ingress answers an unknown token 404 and writes nothing', async () => {
    const exempt = operations.filter((o) => {
      const cover = COVERAGE[o.operationId];
      return typeof cover === 'object' && 'exempt' in cover;
    });
    const unknownOnly = operations.filter((o) => {
      const cover = COVERAGE[o.operationId];
      return typeof cover === 'object' && 'unknownOnly' in cover;
    });
    expect(exempt.length).toBeGreaterThan(5);
    const real = (k: Kind) => mine[k] ?? unknownId(k);
    const before = await snapshot();
    const refused = await run(exempt.map((o) => build(o, b, 'A’s ids', real)));
    const strangers = await run(
      unknownOnly.map((o) => build(o, new Api(gateway.url), 'unknown', (k) => unknownId(k))),
    );
    const after = await snapshot();
    const problems = [
      ...refused
        .filter((r) => r.status !== (COVERAGE[r.c.o.operationId] as { status: number }).status)
        .map((r) => `${r.c.o.operationId} with B's key → ${r.status}`),
      ...strangers
        .filter((r) => r.status !== 404 || errorProblem(r.c.o, r.body))
        .map((r) => `${r.c.o.operationId} with an unknown id → ${r.status} ${JSON.stringify(r.body)}`),
    ];
    expect(problems).toEqual([]);
    expect(
      Object.entries(after)
        .filter(([t, h]) => before[t] !== h)
        .map(([t]) => t),
    ).toEqual([]);
  });

  it('the snapshot sees a change: tenant A’s own write moves its table’s hash', async () => {
    const before = await snapshot();
    expect((await a.post(`/v1/agents/${mine.agent}/work-items`, { objective: 'another' })).status).toBe(201);
    const after = await snapshot();
    expect(Object.keys(after).filter((t) => before[t] !== after[t])).toContain('work_items');
  });

  it('an id the client chooses (LangGraph thread_id) that is tenant A’s: refused, A’s object neither returned nor touched', async () => {
    const lg = (path: string, body: unknown) => b.post(`/langgraph${path}`, body);
    const cases: [string, () => Promise<{ status: number; body: unknown }>][] = [
      // LangGraph's own GHSA-747p-c922-m55f: conditional creation returned the existing thread.
      [
        'threads.create with A’s thread_id, if_exists do_nothing',
        () =>
          lg('/threads', {
            thread_id: mine.session,
            if_exists: 'do_nothing',
            metadata: { assistant_id: theirs.agent },
          }),
      ],
      [
        'threads.create with A’s thread_id',
        () => lg('/threads', { thread_id: mine.session, metadata: { assistant_id: theirs.agent } }),
      ],
      [
        'runs.create on A’s thread_id with if_not_exists create',
        () =>
          lg(`/threads/${mine.session}/runs`, {
            assistant_id: theirs.agent,
            input: { messages: [{ type: 'human', content: 'x' }] },
            if_not_exists: 'create',
          }),
      ],
      [
        'runs.wait on A’s thread_id with if_not_exists create',
        () =>
          lg(`/threads/${mine.session}/runs/wait`, {
            assistant_id: theirs.agent,
            input: { messages: [{ type: 'human', content: 'x' }] },
            if_not_exists: 'create',
          }),
      ],
    ];
    const before = await snapshot();
    const answers = await Promise.all(cases.map(async ([name, call]) => ({ name, res: await call() })));
    const after = await snapshot();
    const problems = answers.flatMap(({ name, res }) => {
      const text = JSON.stringify(res.body);
      return [
        ...(res.status >= 400 && res.status < 500 && LangGraphErrorResponse.safeParse(res.body).success
          ? []
          : [`${name}: ${res.status} ${text}`]),
        ...(text.includes(mine.agent!) || text.includes('alpha') || text.includes('private to tenant A')
          ? [`${name}: A's data in the answer ${text}`]
          : []),
      ];
    });
    expect(problems).toEqual([]);
    expect(
      Object.entries(after)
        .filter(([t, h]) => before[t] !== h)
        .map(([t]) => t),
    ).toEqual([]);
  });

  /** One message on the Responses WebSocket (docs/adr/0035) with B's key: the first answer it gets. */
  const socketCall = (data: unknown) =>
    new Promise<{ status: number; body: any }>((resolve, reject) => {
      const ws = new WebSocket(`${gateway.url.replace(/^http/, 'ws')}/v1/responses`, {
        headers: { authorization: `Bearer ${b.key}` },
      });
      const timer = setTimeout(() => {
        ws.terminate();
        reject(new Error('no answer on the Responses WebSocket'));
      }, 10_000);
      ws.once('open', () => ws.send(JSON.stringify(data)));
      ws.once('message', (raw: Buffer) => {
        clearTimeout(timer);
        ws.close();
        const body = JSON.parse(raw.toString()) as { type: string };
        // An `error` event is the refusal; anything else means the request was admitted.
        resolve({ status: body.type === 'error' ? 404 : 200, body });
      });
      ws.once('error', (err) => {
        clearTimeout(timer);
        reject(err);
      });
    });

  /** A JSON-RPC call on an adapter's endpoint with B's key. */
  const rpc = async (path: string, method: string, params: unknown, headers: Record<string, string> = {}) => {
    const res = await fetch(`${gateway.url}${path}`, {
      method: 'POST',
      headers: {
        authorization: `Bearer ${b.key}`,
        'content-type': 'application/json',
        accept: 'application/json, text/event-stream',
        ...headers,
      },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method, params }),
      // A refusal is immediate; a call that was let through would wait for a turn no worker runs.
      signal: AbortSignal.timeout(10_000),
    });
    const text = await res.text();
    const data = text.match(/^data: (.*)$/m)?.[1] ?? text;
    return { status: res.status, body: JSON.parse(data) };
  };

  it('the protocol adapters’ own ids: A2A tasks and contexts, MCP tool calls into a session, Responses chains', async () => {
    const a2aMessage = (extra: Record<string, unknown>) => ({
      message: {
        kind: 'message',
        messageId: randomUUID(),
        role: 'user',
        parts: [{ kind: 'text', text: 'into A’s conversation' }],
        ...extra,
      },
    });
    // Each case is called with A's id and with an unknown id: the answers must be the same refusal.
    const cases: {
      name: string;
      /** A filter: an answer with nothing in it is right, when it equals the unknown id's. */
      filter?: true;
      call: (id: (k: Kind) => string) => Promise<{ status: number; body: any }>;
    }[] = [
      { name: 'A2A tasks/get', call: (id) => rpc(`/a2a/${theirs.agent}`, 'tasks/get', { id: id('turn') }) },
      {
        name: 'A2A tasks/cancel',
        call: (id) => rpc(`/a2a/${theirs.agent}`, 'tasks/cancel', { id: id('turn') }),
      },
      {
        name: 'A2A tasks/pushNotificationConfig/get',
        call: (id) => rpc(`/a2a/${theirs.agent}`, 'tasks/pushNotificationConfig/get', { id: id('turn') }),
      },
      {
        name: 'A2A message/send into A’s context',
        call: (id) => rpc(`/a2a/${theirs.agent}`, 'message/send', a2aMessage({ contextId: id('session') })),
      },
      {
        name: 'A2A message/send continuing A’s task',
        call: (id) => rpc(`/a2a/${theirs.agent}`, 'message/send', a2aMessage({ taskId: id('turn') })),
      },
      {
        name: 'MCP tools/call into A’s session',
        call: (id) =>
          rpc('/mcp', 'tools/call', {
            name: 'beta',
            arguments: { message: 'hi', session_id: id('session') },
          }),
      },
      {
        name: 'Responses chained on A’s response',
        call: async (id) => {
          const r = await b.post('/v1/responses', {
            model: theirs.agent,
            input: 'continue A’s conversation',
            previous_response_id: id('response'),
          });
          return r;
        },
      },
      {
        name: 'Responses stream of A’s response',
        call: async (id) => {
          const res = await fetch(`${gateway.url}/v1/responses/${id('response')}?stream=true`, {
            headers: { authorization: `Bearer ${b.key}` },
            signal: AbortSignal.timeout(10_000),
          });
          return { status: res.status, body: await res.json() };
        },
      },
      {
        name: 'A2A ListTasks (v1.0) filtered by A’s context',
        // A filter: no tasks, as for a context nobody has.
        filter: true,
        call: (id) =>
          rpc(`/a2a/${theirs.agent}`, 'ListTasks', { contextId: id('session') }, { 'a2a-version': '1.0' }),
      },
      {
        name: 'A2A GetTask (v1.0) of A’s task',
        call: (id) => rpc(`/a2a/${theirs.agent}`, 'GetTask', { id: id('turn') }, { 'a2a-version': '1.0' }),
      },
      {
        name: 'Responses WebSocket chained on A’s response',
        call: (id) =>
          socketCall({
            type: 'response.create',
            model: theirs.agent,
            input: 'continue',
            previous_response_id: id('response'),
          }),
      },
      {
        name: 'Chat Completions continuing A’s session (X-Session-Id)',
        call: (id) =>
          b.post(
            '/v1/chat/completions',
            { model: theirs.agent, messages: [{ role: 'user', content: 'continue' }] },
            { 'x-session-id': id('session') },
          ),
      },
    ];
    const real = (k: Kind) => mine[k] ?? unknownId(k);
    const before = await snapshot();
    const answers = await Promise.all(
      cases.map(async (c) => ({ c, mine: await c.call(real), unknown: await c.call((k) => unknownId(k)) })),
    );
    const after = await snapshot();
    const ids = [...Object.values(mine), ...[...unknownIds.values()]] as string[];
    const problems = answers.flatMap(({ c, mine: m, unknown: u }) => [
      ...(m.status >= 500 || m.status < 400
        ? m.body?.error || m.body?.result?.isError || (c.filter && m.status < 500)
          ? []
          : [`${c.name}: ${m.status} ${JSON.stringify(m.body)}`]
        : []),
      ...(m.status !== u.status || blank(m.body, ids) !== blank(u.body, ids)
        ? [
            `${c.name}: ${m.status} ${JSON.stringify(m.body)} differs from an unknown id's ${u.status} ${JSON.stringify(u.body)}`,
          ]
        : []),
    ]);
    expect(problems).toEqual([]);
    expect(
      Object.entries(after)
        .filter(([t, h]) => before[t] !== h)
        .map(([t]) => t),
    ).toEqual([]);
  });
});
