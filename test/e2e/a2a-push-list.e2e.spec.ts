import { randomBytes, randomUUID } from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { Role, TaskState, type Message, type Task } from '@a2a-js/sdk';
import {
  ClientFactory,
  DefaultAgentCardResolver,
  JsonRpcTransportFactory,
  type Client,
} from '@a2a-js/sdk/client';
// The v0.3 SDK (npm alias of @a2a-js/sdk@0.3.14): the client v0.3 peers use.
import type { Task as TaskV03 } from 'a2a-js-sdk-v03';
import {
  A2AClient,
  ClientFactory as ClientFactoryV03,
  DefaultAgentCardResolver as DefaultAgentCardResolverV03,
  JsonRpcTransportFactory as JsonRpcTransportFactoryV03,
} from 'a2a-js-sdk-v03/client';
import { Webhook } from 'standardwebhooks';
import {
  createTestEnv,
  FakeLlmServer,
  spawnApp,
  spawnGateway,
  type AppProcess,
  type RecordedRequest,
  type TestEnv,
} from '@switchboard/testing';
import { Api, newTenant } from '../support/api';

/**
 * A2A push notifications and ListTasks (docs/adr/0037, issue 32) through real processes (gateway,
 * harness, hooks and outbound workers) with the stock clients: `@a2a-js/sdk` 1.3 (v1.0) and 0.3.14
 * (v0.3). A push config (set with the message or on its own) gets the ended task POSTed to its URL,
 * signed with the tenant's webhook secret like completion webhooks, with the config's token and
 * authentication, retried after a failure; private addresses are refused when the config is set.
 */
jest.setTimeout(120_000);

const ADMIN = 'test-admin-token-0123456789';

const lastUser = (r: RecordedRequest): string => {
  const messages = (r.body as { messages?: { role: string; content: unknown }[] }).messages ?? [];
  const last = [...messages].reverse().find((m) => m.role === 'user');
  return typeof last?.content === 'string' ? last.content : JSON.stringify(last?.content ?? '');
};

const userMessage = (text: string, contextId = ''): Message => ({
  messageId: randomUUID(),
  contextId,
  taskId: '',
  role: Role.ROLE_USER,
  parts: [
    { content: { $case: 'text', value: text }, metadata: undefined, filename: '', mediaType: 'text/plain' },
  ],
  metadata: undefined,
  extensions: [],
  referenceTaskIds: [],
});

const send = (message: Message, returnImmediately = false) => ({
  tenant: '',
  message,
  configuration: {
    acceptedOutputModes: ['text/plain'],
    taskPushNotificationConfig: undefined,
    returnImmediately,
  },
  metadata: undefined,
});

const v03Message = (text: string, contextId?: string) => ({
  kind: 'message' as const,
  messageId: randomUUID(),
  role: 'user' as const,
  parts: [{ kind: 'text' as const, text }],
  ...(contextId ? { contextId } : {}),
});

interface Delivery {
  path: string;
  headers: Record<string, string>;
  body: string;
  status: number;
}

describe('A2A push notifications and ListTasks', () => {
  let env: TestEnv;
  let llm: FakeLlmServer;
  const processes: AppProcess[] = [];
  let url: string;
  let api: Api;
  let apiTenantId: string;
  let other: Api;
  let agentId: string;
  let receiver: http.Server;
  let receiverUrl: string;
  let receiverPort: number;
  const secret = `whsec_${randomBytes(32).toString('base64')}`;
  const deliveries: Delivery[] = [];
  /**
   * Paths whose next notification of an ended task is answered 500 (once each); every other request
   * 200. (A task's WORKING and INPUT_REQUIRED pushes come first: test/e2e/a2a-push-states.)
   */
  const failOnce = new Set<string>();
  const waiters: { when: () => boolean; resolve: () => void }[] = [];
  /** Resolves once the receiver holds `count` deliveries carrying this `webhook-id` prefix. */
  const delivered = (count: number, match: (d: Delivery) => boolean): Promise<Delivery[]> =>
    new Promise((resolve) => {
      const mine = () => deliveries.filter(match);
      const when = () => mine().length >= count;
      if (when()) return resolve(mine());
      waiters.push({ when, resolve: () => resolve(mine()) });
    });

  const withKey =
    (key: string): typeof fetch =>
    (input, init) => {
      const headers = new Headers(init?.headers);
      headers.set('authorization', `Bearer ${key}`);
      return fetch(input, { ...init, headers });
    };

  /** The v1.0 client (@a2a-js/sdk 1.3) from the agent's base URL. */
  const a2a = (id: string, key: string): Promise<Client> =>
    new ClientFactory({
      transports: [new JsonRpcTransportFactory({ fetchImpl: withKey(key) })],
      cardResolver: new DefaultAgentCardResolver({ fetchImpl: withKey(key) }),
    }).createFromUrl(`${url}/a2a/${id}/`);

  /** The v0.3 client (@a2a-js/sdk 0.3.14), as a v0.3 peer builds it. */
  const a2aV03 = (id: string, key: string) =>
    new ClientFactoryV03({
      transports: [new JsonRpcTransportFactoryV03({ fetchImpl: withKey(key) })],
      cardResolver: new DefaultAgentCardResolverV03({ fetchImpl: withKey(key) }),
    }).createFromUrl(`${url}/a2a/${id}/`);

  /** A raw JSON-RPC call (v0.3 unless a version is given). */
  const rpc = async (id: string, body: unknown, key: string = api.key!, version?: string) => {
    const res = await fetch(`${url}/a2a/${id}`, {
      method: 'POST',
      headers: {
        authorization: `Bearer ${key}`,
        'content-type': 'application/json',
        ...(version ? { 'a2a-version': version } : {}),
      },
      body: JSON.stringify(body),
    });
    return { status: res.status, body: (await res.json()) as Record<string, any> };
  };

  /** The push configs stored for these tasks (any tenant's). */
  const storedConfigs = async (...taskIds: string[]): Promise<number> => {
    const [row] = await env.db.$queryRaw<{ n: number }[]>`
      SELECT count(*)::int AS n FROM a2a_push_configs WHERE turn_id::text = ANY(${taskIds})`;
    return row.n;
  };

  beforeAll(async () => {
    env = await createTestEnv();
    receiver = http.createServer((req, res) => {
      let body = '';
      req.on('data', (c: Buffer) => (body += c.toString()));
      req.on('end', () => {
        const ended = /"state":"(completed|failed|canceled)"/.test(body);
        const status = ended && failOnce.delete(req.url ?? '') ? 500 : 200;
        deliveries.push({
          headers: req.headers as Record<string, string>,
          body,
          status,
          path: req.url ?? '',
        });
        res.writeHead(status).end();
        for (const w of waiters.splice(0)) (w.when() ? w.resolve : () => waiters.push(w))();
      });
    });
    await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve));
    receiverPort = (receiver.address() as AddressInfo).port;
    // The receiver is on this machine: its name, and only its name, may be private.
    receiverUrl = `http://localhost:${receiverPort}/a2a-hook`;
    llm = await FakeLlmServer.start();
    llm.setDefault((r) => {
      const text = lastUser(r);
      if (text.startsWith('stall')) return { kind: 'message', text: 'thinking', stallAfterFrames: 2 };
      return { kind: 'message', text: `echo: ${text}` };
    });
    const processEnv = env.processEnv({
      ...llm.providerEnv,
      OUTBOUND_WEBHOOK_ALLOW_HOSTS: 'localhost',
      // Retries after 100 ms and 200 ms instead of 5 s and 10 s.
      OUTBOUND_WEBHOOK_BACKOFF_MS: '100',
    });
    const [gateway, ...workers] = await Promise.all([
      spawnGateway(processEnv),
      spawnApp('harness-worker', processEnv),
      spawnApp('hooks-worker', processEnv),
      spawnApp('triage-worker', processEnv),
    ]);
    processes.push(gateway, ...workers);
    url = gateway.url;
    ({ api, tenantId: apiTenantId } = await newTenant(url, ADMIN));
    ({ api: other } = await newTenant(url, ADMIN, 'other'));
    // Deliveries are signed with the tenant's webhook secret (Standard Webhooks).
    const completions = `http://localhost:${receiverPort}/completions`;
    expect((await api.patch('/v1/settings', { notifyUrl: completions, notifySecret: secret })).status).toBe(
      200,
    );
    const agent = await api.post('/v1/agents', { name: 'travel-agent', model: 'openai-chat/gpt-4o-mini' });
    expect(agent.status).toBe(201);
    agentId = agent.body.id;
  });

  afterAll(async () => {
    await Promise.all(processes.map((p) => p.kill('SIGTERM')));
    await llm?.close();
    await new Promise((resolve) => receiver?.close(resolve));
    await env?.cleanup();
  });

  it('a v0.3 client (@a2a-js/sdk 0.3) discovers the card and is answered', async () => {
    // The client that failed before: it reads the card's top-level `url`.
    const legacy = await A2AClient.fromCardUrl(`${url}/a2a/${agentId}/.well-known/agent-card.json`, {
      fetchImpl: withKey(api.key!),
    });
    const card = await legacy.getAgentCard();
    expect(card).toMatchObject({
      url: `${url}/a2a/${agentId}`,
      protocolVersion: '0.3.0',
      preferredTransport: 'JSONRPC',
      capabilities: { streaming: true, pushNotifications: true },
    });
    const sent = await legacy.sendMessage({ message: v03Message('hello from 0.3') });
    if ('error' in sent) throw new Error(JSON.stringify(sent.error));
    expect(sent.result).toMatchObject({ kind: 'task', status: { state: 'completed' } });

    const client = await a2aV03(agentId, api.key!);
    const task = (await client.sendMessage({ message: v03Message('and again') })) as TaskV03;
    expect(task.status.state).toBe('completed');

    // Negotiated by A2A-Version, as the SDK's own card handler does: 1.0 gets the v1.0 proto JSON.
    const cardOf = async (version?: string) =>
      (await (
        await fetch(`${url}/a2a/${agentId}/.well-known/agent-card.json`, {
          headers: { authorization: `Bearer ${api.key}`, ...(version ? { 'a2a-version': version } : {}) },
        })
      ).json()) as Record<string, any>;
    const v1 = await cardOf('1.0');
    expect(v1.url).toBeUndefined();
    expect(v1.securitySchemes.bearer).toEqual({
      httpAuthSecurityScheme: expect.objectContaining({ scheme: 'Bearer' }),
    });
    for (const legacyCard of [await cardOf(), await cardOf('0.3')]) {
      expect(legacyCard).toMatchObject({
        url: `${url}/a2a/${agentId}`,
        protocolVersion: '0.3.0',
        supportedInterfaces: v1.supportedInterfaces,
        securitySchemes: { bearer: { type: 'http', scheme: 'bearer' } },
      });
    }
  });

  it('v0.3: a config sent with the message; the completed task is POSTed signed, with token and Authorization, retried after a 500', async () => {
    const client = await a2aV03(agentId, api.key!);
    const retried = `http://localhost:${receiverPort}/retried`;
    failOnce.add('/retried');
    const task = (await client.sendMessage({
      message: v03Message('push me'),
      configuration: {
        blocking: true,
        pushNotificationConfig: {
          url: retried,
          token: 'tok-v03',
          authentication: { schemes: ['Bearer'], credentials: 'cred-v03' },
        },
      },
    })) as TaskV03;
    expect(task.status.state).toBe('completed');

    const configs = await client.listTaskPushNotificationConfig({ id: task.id });
    expect(configs).toHaveLength(1);
    expect(configs[0]).toMatchObject({ taskId: task.id, pushNotificationConfig: { url: retried } });
    const configId = configs[0].pushNotificationConfig.id!;

    // Its end (the WORKING push before it is test/e2e/a2a-push-states.e2e.spec.ts's subject).
    const mine = (d: Delivery) =>
      d.path === '/retried' && d.body.includes(task.id) && d.body.includes('"state":"completed"');
    const got = await delivered(2, mine);
    expect(got.map((d) => d.status)).toEqual([500, 200]);
    expect(new Set(got.map((d) => d.headers['webhook-id'])).size).toBe(1);
    for (const d of got) {
      expect(d.headers).toMatchObject({
        'x-a2a-notification-token': 'tok-v03',
        authorization: 'Bearer cred-v03',
        'content-type': 'application/json',
      });
      // Signed like a completion webhook: the receiver verifies with the tenant's secret.
      const body = new Webhook(secret).verify(d.body, d.headers) as TaskV03;
      expect(body).toMatchObject({ kind: 'task', id: task.id, status: { state: 'completed' } });
      expect(body.artifacts?.[0].parts[0]).toMatchObject({ kind: 'text', text: 'echo: push me' });
    }
    expect(() =>
      new Webhook(`whsec_${randomBytes(32).toString('base64')}`).verify(got[1].body, got[1].headers),
    ).toThrow();
    const attempts = await env.db.outboundWebhookAttempt.findMany({
      where: { webhookId: got[0].headers['webhook-id'] },
      orderBy: { attempt: 'asc' },
    });
    expect(attempts.map((a) => [a.attempt, a.status, a.url, a.tenantId])).toEqual([
      [1, 500, retried, apiTenantId],
      [2, 200, retried, apiTenantId],
    ]);

    // get and delete by the v0.3 names.
    expect(
      await client.getTaskPushNotificationConfig({
        id: task.id,
        pushNotificationConfigId: configId,
      } as never),
    ).toMatchObject({ pushNotificationConfig: { id: configId, url: retried } });
    await client.deleteTaskPushNotificationConfig({ id: task.id, pushNotificationConfigId: configId });
    expect(await client.listTaskPushNotificationConfig({ id: task.id })).toEqual([]);
  });

  it('v1.0: CreateTaskPushNotificationConfig on a running task; its cancel is POSTed as a v1.0 StreamResponse', async () => {
    const client = await a2a(agentId, api.key!);
    const before = llm.requests.length;
    const submitted = (await client.sendMessage(send(userMessage('stall here'), true))) as Task;
    const config = await client.createTaskPushNotificationConfig({
      tenant: '',
      id: 'cfg-v1',
      taskId: submitted.id,
      url: receiverUrl,
      token: 'tok-v1',
      authentication: undefined,
    });
    expect(config).toMatchObject({ id: 'cfg-v1', taskId: submitted.id, url: receiverUrl, token: 'tok-v1' });
    expect(
      await client.getTaskPushNotificationConfig({ tenant: '', taskId: submitted.id, id: 'cfg-v1' }),
    ).toMatchObject({ id: 'cfg-v1', url: receiverUrl });
    expect(
      (
        await client.listTaskPushNotificationConfig({
          tenant: '',
          taskId: submitted.id,
          pageSize: 0,
          pageToken: '',
        })
      ).configs,
    ).toHaveLength(1);

    await llm.waitForRequests(before + 1);
    const cancelled = await client.cancelTask({ tenant: '', id: submitted.id, metadata: undefined });
    expect(cancelled.status?.state).toBe(TaskState.TASK_STATE_CANCELED);
    const [d] = await delivered(
      1,
      (x) =>
        x.path === '/a2a-hook' && x.body.includes(submitted.id) && x.body.includes('TASK_STATE_CANCELED'),
    );
    expect(d.headers['x-a2a-notification-token']).toBe('tok-v1');
    expect(d.headers['content-type']).toBe('application/a2a+json');
    expect(d.headers.authorization).toBeUndefined();
    const body = new Webhook(secret).verify(d.body, d.headers) as { task: Record<string, any> };
    expect(body.task).toMatchObject({ id: submitted.id, status: { state: 'TASK_STATE_CANCELED' } });
  });

  it('a push URL to a private address or a metadata service is refused (-32602); nothing stored or admitted', async () => {
    const client = await a2a(agentId, api.key!);
    const task = (await client.sendMessage(send(userMessage('ssrf target')))) as Task;
    for (const target of [
      `http://127.0.0.1:${receiverPort}/a2a-hook`,
      'http://169.254.169.254/latest/meta-data',
      'http://[::1]/x',
      'http://10.0.0.8/x',
    ]) {
      const r = await rpc(agentId, {
        jsonrpc: '2.0',
        id: 'ssrf',
        method: 'tasks/pushNotificationConfig/set',
        params: { taskId: task.id, pushNotificationConfig: { url: target } },
      });
      expect(r).toMatchObject({ status: 200, body: { id: 'ssrf', error: { code: -32602 } } });
      expect(r.body.error.message).toMatch(/refused/);
    }
    await expect(
      client.createTaskPushNotificationConfig({
        tenant: '',
        id: 'x',
        taskId: task.id,
        url: 'http://127.0.0.1:9/x',
        token: '',
        authentication: undefined,
      }),
    ).rejects.toThrow(/private address/);
    expect(await storedConfigs(task.id)).toBe(0);

    // Sent with a message: refused before the message is admitted.
    const llmBefore = llm.requests.length;
    const listed = (await client.listTasks(listAll())).totalSize;
    const inline = await rpc(agentId, {
      jsonrpc: '2.0',
      id: 'inline',
      method: 'message/send',
      params: {
        message: v03Message('never admitted'),
        configuration: { pushNotificationConfig: { url: 'http://169.254.169.254/' } },
      },
    });
    expect(inline.body.error.code).toBe(-32602);
    expect((await client.listTasks(listAll())).totalSize).toBe(listed);
    expect(llm.requests.length).toBe(llmBefore);
  });

  const listAll = (over: Record<string, unknown> = {}) => ({
    tenant: '',
    contextId: '',
    status: TaskState.TASK_STATE_UNSPECIFIED,
    pageToken: '',
    statusTimestampAfter: undefined,
    ...over,
  });

  it('bad input is a JSON-RPC error and stores nothing: unknown task, another tenant’s task, malformed configs, no signing secret', async () => {
    const mineTask = (await (await a2a(agentId, api.key!)).sendMessage(send(userMessage('mine')))) as Task;
    const theirAgent = await other.post('/v1/agents', { name: 'theirs', model: 'openai-chat/gpt-4o-mini' });
    const theirs = (await (
      await a2a(theirAgent.body.id, other.key!)
    ).sendMessage(send(userMessage('theirs')))) as Task;
    const set = (taskId: string, config: Record<string, unknown>) =>
      rpc(agentId, {
        jsonrpc: '2.0',
        id: 7,
        method: 'tasks/pushNotificationConfig/set',
        params: { taskId, pushNotificationConfig: config },
      });
    expect((await set(randomUUID(), { url: receiverUrl })).body.error.code).toBe(-32001);
    expect((await set('not-a-task', { url: receiverUrl })).body.error.code).toBe(-32001);
    expect((await set(theirs.id, { url: receiverUrl })).body.error.code).toBe(-32001);
    for (const bad of [
      { url: 'not a url' },
      { url: 'ftp://localhost/x' },
      { url: receiverUrl, authentication: { schemes: ['Bear er'], credentials: 'x' } },
      { url: receiverUrl, authentication: { schemes: ['Bearer'], credentials: 'line\r\nbreak' } },
      { url: receiverUrl, token: 'x'.repeat(1001) },
    ]) {
      const r = await set(mineTask.id, bad);
      expect(r).toMatchObject({ status: 200, body: { jsonrpc: '2.0', id: 7, error: { code: -32602 } } });
    }
    // get / delete of a config that is not there, and a v1.0 method on another tenant's task.
    const get = await rpc(agentId, {
      jsonrpc: '2.0',
      id: 8,
      method: 'tasks/pushNotificationConfig/get',
      params: { id: mineTask.id, pushNotificationConfigId: 'nope' },
    });
    expect(get.body.error.code).toBe(-32001);
    const del = await rpc(agentId, {
      jsonrpc: '2.0',
      id: 9,
      method: 'tasks/pushNotificationConfig/delete',
      params: { id: mineTask.id, pushNotificationConfigId: 'nope' },
    });
    expect(del.body.error.code).toBe(-32001);
    const listTheirs = await rpc(
      agentId,
      { jsonrpc: '2.0', id: 10, method: 'ListTaskPushNotificationConfigs', params: { taskId: theirs.id } },
      api.key,
      '1.0',
    );
    expect(listTheirs.body.error.code).toBe(-32001);
    expect(await storedConfigs(mineTask.id, theirs.id)).toBe(0);

    // A tenant without a webhook secret cannot have deliveries signed: -32003, nothing stored.
    const { api: plain } = await newTenant(url, ADMIN, 'plain');
    const plainAgent = (await plain.post('/v1/agents', { name: 'p', model: 'openai-chat/gpt-4o-mini' })).body
      .id;
    const plainTask = (await (await a2a(plainAgent, plain.key!)).sendMessage(send(userMessage('x')))) as Task;
    const unsigned = await rpc(
      plainAgent,
      {
        jsonrpc: '2.0',
        id: 11,
        method: 'tasks/pushNotificationConfig/set',
        params: { taskId: plainTask.id, pushNotificationConfig: { url: receiverUrl } },
      },
      plain.key,
    );
    expect(unsigned.body.error).toMatchObject({ code: -32003 });
    expect(unsigned.body.error.message).toMatch(/notifySecret/);
    expect(await storedConfigs(plainTask.id)).toBe(0);
  });

  it('ListTasks (v1.0): newest first, paged, filtered by context and state, tenant-scoped; bad paging is -32602', async () => {
    const client = await a2a(agentId, api.key!);
    const first = (await client.sendMessage(send(userMessage('list one')))) as Task;
    const contextId = first.contextId;
    const second = (await client.sendMessage(send(userMessage('list two', contextId)))) as Task;
    const third = (await client.sendMessage(send(userMessage('list three', contextId)))) as Task;

    const page1 = await client.listTasks(listAll({ contextId, pageSize: 2 }));
    expect(page1.tasks.map((t) => t.id)).toEqual([third.id, second.id]);
    expect(page1).toMatchObject({ pageSize: 2, totalSize: 3 });
    expect(page1.nextPageToken).not.toBe('');
    expect(page1.tasks[0].artifacts).toEqual([]);
    const page2 = await client.listTasks(listAll({ contextId, pageSize: 2, pageToken: page1.nextPageToken }));
    expect(page2.tasks.map((t) => t.id)).toEqual([first.id]);
    expect(page2.nextPageToken).toBe('');

    const withArtifacts = await client.listTasks(
      listAll({ contextId, pageSize: 1, includeArtifacts: true, historyLength: 0 }),
    );
    expect(withArtifacts.tasks[0].artifacts[0].parts[0].content).toEqual({
      $case: 'text',
      value: 'echo: list three',
    });
    expect(withArtifacts.tasks[0].history).toEqual([]);
    expect(
      (await client.listTasks(listAll({ contextId, status: TaskState.TASK_STATE_COMPLETED }))).totalSize,
    ).toBe(3);
    expect(
      (await client.listTasks(listAll({ contextId, status: TaskState.TASK_STATE_WORKING }))).tasks,
    ).toEqual([]);
    expect(
      (await client.listTasks(listAll({ contextId, statusTimestampAfter: '2999-01-01T00:00:00Z' }))).tasks,
    ).toEqual([]);

    // Another tenant lists its own agent's tasks: none of ours, and our agent is a 404 to it.
    const theirAgent = await other.post('/v1/agents', { name: 'lister', model: 'openai-chat/gpt-4o-mini' });
    const theirs = await (await a2a(theirAgent.body.id, other.key!)).listTasks(listAll());
    expect(theirs.totalSize).toBe(0);
    expect(
      (await rpc(agentId, { jsonrpc: '2.0', id: 1, method: 'ListTasks', params: {} }, other.key, '1.0'))
        .status,
    ).toBe(404);

    for (const params of [
      { pageSize: 0 },
      { pageSize: 101 },
      { pageToken: 'garbage' },
      { historyLength: -1 },
    ]) {
      const r = await rpc(agentId, { jsonrpc: '2.0', id: 'l', method: 'ListTasks', params }, api.key, '1.0');
      expect(r).toMatchObject({ status: 200, body: { id: 'l', error: { code: -32602 } } });
    }
    // v0.3 has no tasks/list.
    const legacy = await rpc(agentId, { jsonrpc: '2.0', id: 'v', method: 'tasks/list', params: {} });
    expect(legacy.body.error.code).toBe(-32601);
  });

  it('a paused tenant: message/send is -32051 and admits nothing; reads (tasks/get, ListTasks) still work', async () => {
    const { api: paused, tenantId } = await newTenant(url, ADMIN, 'paused');
    const pausedAgent = (await paused.post('/v1/agents', { name: 'p', model: 'openai-chat/gpt-4o-mini' }))
      .body.id;
    const client = await a2a(pausedAgent, paused.key!);
    const task = (await client.sendMessage(send(userMessage('before the pause')))) as Task;
    const admin = new Api(url, ADMIN);
    expect((await admin.post(`/v1/admin/tenants/${tenantId}/pause`, { reason: 'a2a' })).status).toBe(200);

    const llmBefore = llm.requests.length;
    const refused = await rpc(
      pausedAgent,
      { jsonrpc: '2.0', id: 'p', method: 'message/send', params: { message: v03Message('after') } },
      paused.key,
    );
    expect(refused).toMatchObject({ status: 200, body: { id: 'p', error: { code: -32051 } } });
    expect(refused.body.error.message).toMatch(/paused/);
    expect(llm.requests.length).toBe(llmBefore);
    expect((await client.getTask({ tenant: '', id: task.id, historyLength: undefined })).id).toBe(task.id);
    expect((await client.listTasks(listAll())).totalSize).toBe(1);
  });
});
