import { randomUUID } from 'node:crypto';
import { Role, TaskState, type Message, type StreamResponse, type Task } from '@a2a-js/sdk';
import {
  ClientFactory,
  DefaultAgentCardResolver,
  JsonRpcTransportFactory,
  type Client,
} from '@a2a-js/sdk/client';
import {
  createTestEnv,
  FakeLlmServer,
  spawnApp,
  spawnGateway,
  type AppProcess,
  type RecordedRequest,
  type TestEnv,
} from '@switchboard/testing';
import { newTenant, type Api } from '../support/api';

/**
 * A2A with `@a2a-js/sdk`'s client (docs/adr/0037), through real processes (a gateway and a harness
 * worker): the agent card per agent, message/send and message/stream over turns, tasks/get and
 * tasks/cancel; JSON-RPC errors for what a client gets wrong.
 */
jest.setTimeout(120_000);

const ADMIN = 'test-admin-token-0123456789';

const lastUser = (r: RecordedRequest): string => {
  const messages = (r.body as { messages?: { role: string; content: unknown }[] }).messages ?? [];
  const last = [...messages].reverse().find((m) => m.role === 'user');
  return typeof last?.content === 'string' ? last.content : JSON.stringify(last?.content ?? '');
};

/** A user's text message, in the SDK's types. */
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

const textOf = (m: Message | undefined): string =>
  (m?.parts ?? []).map((p) => (p.content?.$case === 'text' ? p.content.value : '')).join('');

describe('A2A with the @a2a-js/sdk client', () => {
  let env: TestEnv;
  let llm: FakeLlmServer;
  const processes: AppProcess[] = [];
  let url: string;
  let api: Api;
  let other: Api;
  let agentId: string;

  /** A fetch that sends this bearer (the card and the JSON-RPC calls). */
  const withKey =
    (key: string): typeof fetch =>
    (input, init) => {
      const headers = new Headers(init?.headers);
      headers.set('authorization', `Bearer ${key}`);
      return fetch(input, { ...init, headers });
    };

  /** A client from the agent's card URL, as ClientFactory resolves it. */
  const a2a = (id: string, key: string): Promise<Client> =>
    new ClientFactory({
      transports: [new JsonRpcTransportFactory({ fetchImpl: withKey(key) })],
      cardResolver: new DefaultAgentCardResolver({ fetchImpl: withKey(key) }),
    }).createFromUrl(`${url}/a2a/${id}/`);

  /** A raw JSON-RPC call to an agent's endpoint. */
  const rpc = async (id: string, body: unknown, key: string = api.key!, version?: string) => {
    const res = await fetch(`${url}/a2a/${id}`, {
      method: 'POST',
      headers: {
        authorization: `Bearer ${key}`,
        'content-type': 'application/json',
        ...(version ? { 'a2a-version': version } : {}),
      },
      body: typeof body === 'string' ? body : JSON.stringify(body),
    });
    return { status: res.status, body: (await res.json()) as Record<string, any> };
  };

  beforeAll(async () => {
    env = await createTestEnv();
    llm = await FakeLlmServer.start();
    llm.setDefault((r) => {
      const text = lastUser(r);
      if (text.startsWith('stall'))
        return { kind: 'message', text: 'thinking about it', stallAfterFrames: 2 };
      if (text.startsWith('slow')) {
        return { kind: 'message', text: 'a slow and careful answer', textPieces: 4, frameIntervalMs: 100 };
      }
      // `count …`: a word_count call first (an agent that needs approval for it pauses there).
      const toolResult = ((r.body as { messages?: { role: string }[] }).messages ?? []).some(
        (m) => m.role === 'tool',
      );
      if (text.startsWith('count') && !toolResult) {
        return { kind: 'message', toolCalls: [{ name: 'word_count', arguments: JSON.stringify({ text }) }] };
      }
      return { kind: 'message', text: `echo: ${text}` };
    });
    const [gateway, harness] = await Promise.all([
      spawnGateway(env.processEnv(llm.providerEnv)),
      spawnApp('harness-worker', env.processEnv(llm.providerEnv)),
    ]);
    processes.push(gateway, harness);
    url = gateway.url;
    ({ api } = await newTenant(url, ADMIN));
    ({ api: other } = await newTenant(url, ADMIN, 'other'));
    const agent = await api.post('/v1/agents', {
      name: 'travel-agent',
      model: 'openai-chat/gpt-4o-mini',
      instructions: 'Plan trips.',
    });
    expect(agent.status).toBe(201);
    agentId = agent.body.id;
  });

  afterAll(async () => {
    await Promise.all(processes.map((p) => p.kill('SIGTERM')));
    await llm?.close();
    await env?.cleanup();
  });

  it('serves the agent card with the bearer scheme; another tenant gets 404, no key 401', async () => {
    const client = await a2a(agentId, api.key!);
    const card = await client.getAgentCard();
    expect(card).toMatchObject({
      name: 'travel-agent',
      description: 'Plan trips.',
      capabilities: { streaming: true },
      supportedInterfaces: expect.arrayContaining([
        expect.objectContaining({
          url: `${url}/a2a/${agentId}`,
          protocolBinding: 'JSONRPC',
          protocolVersion: '1.0',
        }),
      ]),
    });
    expect(card.securitySchemes.bearer.scheme).toMatchObject({
      $case: 'httpAuthSecurityScheme',
      value: { scheme: 'Bearer' },
    });
    const raw = await fetch(`${url}/a2a/${agentId}/.well-known/agent-card.json`, {
      headers: { authorization: `Bearer ${other.key}` },
    });
    expect(raw.status).toBe(404);
    expect((await fetch(`${url}/a2a/${agentId}/.well-known/agent-card.json`)).status).toBe(401);
    await expect(a2a(agentId, other.key!)).rejects.toThrow(/404/);
  });

  it('message/send: a completed task with the answer; the same contextId continues the session', async () => {
    const client = await a2a(agentId, api.key!);
    const task = (await client.sendMessage(send(userMessage('plan Lisbon')))) as Task;
    expect(task.status?.state).toBe(TaskState.TASK_STATE_COMPLETED);
    expect(textOf(task.status?.message)).toBe('echo: plan Lisbon');
    expect(task.artifacts[0].parts[0].content).toEqual({ $case: 'text', value: 'echo: plan Lisbon' });
    const turn = (await api.get(`/v1/turns/${task.id}`)).body;
    expect(turn).toMatchObject({ status: 'completed', sessionId: task.contextId, agentId });

    const before = llm.requests.length;
    const next = (await client.sendMessage(send(userMessage('and Porto?', task.contextId)))) as Task;
    expect(next.contextId).toBe(task.contextId);
    expect(textOf(next.status?.message)).toBe('echo: and Porto?');
    expect(JSON.stringify(llm.requests[before].body)).toContain('echo: plan Lisbon');

    // tasks/get reads it again.
    const got = await client.getTask({ tenant: '', id: task.id, historyLength: undefined });
    expect(got).toMatchObject({ id: task.id, contextId: task.contextId });
    expect(got.status?.state).toBe(TaskState.TASK_STATE_COMPLETED);
  });

  it('message/stream: the task, working, the answer as artifact chunks, the final completed status', async () => {
    const client = await a2a(agentId, api.key!);
    const events: StreamResponse['payload'][] = [];
    for await (const e of client.sendMessageStream(send(userMessage('slow: a long plan'))))
      events.push(e.payload);
    expect(events[0]?.$case).toBe('task');
    const cases = events.map((e) => e?.$case);
    expect(cases).toContain('statusUpdate');
    expect(cases).toContain('artifactUpdate');
    const text = events
      .filter((e) => e?.$case === 'artifactUpdate')
      .map((e) => (e?.$case === 'artifactUpdate' ? textOf(e.value.artifact as unknown as Message) : ''))
      .join('');
    expect(text).toBe('a slow and careful answer');
    const last = events[events.length - 1];
    expect(last?.$case).toBe('statusUpdate');
    if (last?.$case !== 'statusUpdate') throw new Error('no final status');
    expect(last.value.status?.state).toBe(TaskState.TASK_STATE_COMPLETED);
    expect(textOf(last.value.status?.message)).toBe('a slow and careful answer');
  });

  it('tasks/cancel cancels a running task: the turn ends cancelled; a second cancel is not cancelable', async () => {
    const client = await a2a(agentId, api.key!);
    const before = llm.requests.length;
    const submitted = (await client.sendMessage(send(userMessage('stall for a while'), true))) as Task;
    expect(submitted.status?.state).toBe(TaskState.TASK_STATE_SUBMITTED);
    await llm.waitForRequests(before + 1);
    const cancelled = await client.cancelTask({ tenant: '', id: submitted.id, metadata: undefined });
    expect(cancelled.status?.state).toBe(TaskState.TASK_STATE_CANCELED);
    // The status message says why (docs/adr/0055): in its text and, as data, in its metadata.
    expect(cancelled.status?.message?.metadata).toEqual({
      cancelReason: 'api_cancel',
      cancelNote: 'A2A tasks/cancel',
    });
    const part = cancelled.status?.message?.parts[0]?.content;
    expect(part?.$case === 'text' ? part.value : '').toBe(
      `turn ${submitted.id} was cancelled (api_cancel: A2A tasks/cancel)`,
    );
    expect((await api.get(`/v1/turns/${submitted.id}`)).body).toMatchObject({
      status: 'cancelled',
      stopReason: 'cancelled',
      cancelReason: 'api_cancel',
    });
    await expect(client.cancelTask({ tenant: '', id: submitted.id, metadata: undefined })).rejects.toThrow();
    const again = await rpc(agentId, {
      jsonrpc: '2.0',
      id: 9,
      method: 'tasks/cancel',
      params: { id: submitted.id },
    });
    expect(again).toMatchObject({ status: 200, body: { id: 9, error: { code: -32002 } } });
  });

  it('a turn paused for an approval is INPUT_REQUIRED: sendMessage answers, a stream ends there', async () => {
    const gated = await api.post('/v1/agents', {
      name: 'gated',
      model: 'openai-chat/gpt-4o-mini',
      tools: ['word_count'],
      approvalRequired: ['word_count'],
    });
    const client = await a2a(gated.body.id, api.key!);
    const task = (await client.sendMessage(send(userMessage('count these words')))) as Task;
    expect(task.status?.state).toBe(TaskState.TASK_STATE_INPUT_REQUIRED);
    expect((await api.get(`/v1/turns/${task.id}`)).body.status).toBe('awaiting_approval');
    const events: StreamResponse['payload'][] = [];
    for await (const e of client.sendMessageStream(send(userMessage('count more words'))))
      events.push(e.payload);
    const last = events[events.length - 1];
    if (last?.$case !== 'statusUpdate') throw new Error(`last event: ${last?.$case}`);
    expect(last.value.status?.state).toBe(TaskState.TASK_STATE_INPUT_REQUIRED);
  });

  it('v0.3 clients: message/send and tasks/get by their JSON-RPC names', async () => {
    const sent = await rpc(agentId, {
      jsonrpc: '2.0',
      id: 'a',
      method: 'message/send',
      params: {
        message: {
          kind: 'message',
          messageId: randomUUID(),
          role: 'user',
          parts: [{ kind: 'text', text: 'hola' }],
        },
      },
    });
    expect(sent.status).toBe(200);
    expect(sent.body.result).toMatchObject({ kind: 'task', status: { state: 'completed' } });
    const got = await rpc(agentId, {
      jsonrpc: '2.0',
      id: 'b',
      method: 'tasks/get',
      params: { id: sent.body.result.id },
    });
    expect(got.body.result).toMatchObject({ id: sent.body.result.id, status: { state: 'completed' } });
  });

  it('v0.3 clients: message/stream as SSE, ending with the final completed status', async () => {
    const res = await fetch(`${url}/a2a/${agentId}`, {
      method: 'POST',
      headers: { authorization: `Bearer ${api.key}`, 'content-type': 'application/json' },
      body: JSON.stringify({
        jsonrpc: '2.0',
        id: 's',
        method: 'message/stream',
        params: {
          message: {
            kind: 'message',
            messageId: randomUUID(),
            role: 'user',
            parts: [{ kind: 'text', text: 'slow: stream it' }],
          },
        },
      }),
    });
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toContain('text/event-stream');
    const frames = [...(await res.text()).matchAll(/^data: (.*)$/gm)].map(
      ([, data]) => JSON.parse(data) as { id: string; result: Record<string, any> },
    );
    expect(frames.every((f) => f.id === 's')).toBe(true);
    expect(frames[0].result.kind).toBe('task');
    const artifactText = frames
      .filter((f) => f.result.kind === 'artifact-update')
      .map((f) => f.result.artifact.parts.map((p: { text: string }) => p.text).join(''))
      .join('');
    expect(artifactText).toBe('a slow and careful answer');
    expect(frames[frames.length - 1].result).toMatchObject({
      kind: 'status-update',
      status: { state: 'completed' },
      final: true,
    });
  });

  it('errors are JSON-RPC errors, never 5xx: bad JSON, unknown method, bad params, another tenant’s task', async () => {
    const badJson = await rpc(agentId, '{"jsonrpc":');
    expect(badJson.status).toBe(400);
    expect(badJson.body).toMatchObject({ jsonrpc: '2.0', id: null, error: { code: -32700 } });

    const unknown = await rpc(agentId, { jsonrpc: '2.0', id: 1, method: 'tasks/explode', params: {} });
    expect(unknown).toMatchObject({ status: 200, body: { id: 1, error: { code: -32601 } } });
    const unknownV1 = await rpc(
      agentId,
      { jsonrpc: '2.0', id: 2, method: 'Explode', params: {} },
      api.key,
      '1.0',
    );
    expect(unknownV1).toMatchObject({ status: 200, body: { id: 2, error: { code: -32601 } } });

    const notRpc = await rpc(agentId, { hello: 'world' });
    expect(notRpc.status).toBe(200);
    expect(notRpc.body.error.code).toBe(-32600);

    const noText = await rpc(agentId, {
      jsonrpc: '2.0',
      id: 3,
      method: 'message/send',
      params: { message: { kind: 'message', messageId: 'm', role: 'user', parts: [] } },
    });
    expect(noText.status).toBe(200);
    expect(noText.body.error.code).toBeLessThan(0);

    // Their task: created by the other tenant on their own agent.
    const theirAgent = await other.post('/v1/agents', { name: 'theirs', model: 'openai-chat/gpt-4o-mini' });
    const theirs = (await (
      await a2a(theirAgent.body.id, other.key!)
    ).sendMessage(send(userMessage('secret')))) as Task;
    for (const method of ['tasks/get', 'tasks/cancel']) {
      const r = await rpc(agentId, { jsonrpc: '2.0', id: 4, method, params: { id: theirs.id } });
      expect(r).toMatchObject({ status: 200, body: { id: 4, error: { code: -32001 } } });
    }
    // Their agent's endpoint is a 404 to us; their contextId is refused and admits nothing.
    expect(
      (
        await rpc(theirAgent.body.id, {
          jsonrpc: '2.0',
          id: 5,
          method: 'tasks/get',
          params: { id: theirs.id },
        })
      ).status,
    ).toBe(404);
    const before = llm.requests.length;
    const intoTheirs = await rpc(agentId, {
      jsonrpc: '2.0',
      id: 6,
      method: 'message/send',
      params: {
        message: {
          kind: 'message',
          messageId: randomUUID(),
          role: 'user',
          contextId: theirs.contextId,
          parts: [{ kind: 'text', text: 'sneak in' }],
        },
      },
    });
    expect(intoTheirs.status).toBe(200);
    expect(intoTheirs.body.error.code).toBeLessThan(0);
    expect(llm.requests.length).toBe(before);
    expect(
      (await other.get(`/v1/sessions/${theirs.contextId}/events`)).body.data.filter(
        (e: { type: string }) => e.type === 'message_admitted',
      ),
    ).toHaveLength(1);

    // No key: 401 with a JSON-RPC body.
    const noKey = await fetch(`${url}/a2a/${agentId}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ jsonrpc: '2.0', id: 7, method: 'tasks/get', params: { id: theirs.id } }),
    });
    expect(noKey.status).toBe(401);
    expect(await noKey.json()).toMatchObject({ jsonrpc: '2.0', error: { code: -32600 } });
  });
});
