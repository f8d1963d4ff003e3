import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import {
  Client as ModernClient,
  StreamableHTTPClientTransport as ModernTransport,
  type ElicitRequest,
} from '@modelcontextprotocol/client';
import {
  createTestEnv,
  FakeLlmServer,
  scripted,
  spawnApp,
  spawnGateway,
  waitFor,
  type AppProcess,
  type TestEnv,
} from '@switchboard/testing';
import { newTenant, type Api } from '../support/api';

/**
 * Client-side tools through the MCP server (docs/adr/0036, 0047), real processes (a gateway and a
 * harness worker) and the stock MCP SDK clients: the agent tool's `client_tools` argument declares
 * the MCP client's own tools; when the agent's model calls one, a 2026-07-28 client is asked in-band
 * (`input_required`: a form elicitation per call, a signed requestState naming the turn) and its
 * retried call resumes the turn once; a 2025-11-25 client gets the calls and the REST route.
 */
jest.setTimeout(120_000);

const ADMIN = 'test-admin-token-0123456789';

const WEATHER = {
  name: 'get_weather',
  description: 'The weather in a city',
  inputSchema: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] },
};

const CALL_META = 'switchboard/client_tool_call';

describe('MCP client tools with the official MCP SDK clients', () => {
  let env: TestEnv;
  let llm: FakeLlmServer;
  const processes: AppProcess[] = [];
  const clients: (Client | ModernClient)[] = [];
  let url: string;
  let api: Api;
  let other: Api;

  /** SDK v2's client pinned to 2026-07-28; with `elicit`, it declares form elicitation and answers with it. */
  async function modernMcp(
    key: string,
    o: { elicit?: (r: ElicitRequest) => Promise<unknown>; manual?: boolean } = {},
  ): Promise<ModernClient> {
    const client = new ModernClient(
      { name: 'switchboard-e2e-client-tools', version: '1.0.0' },
      {
        versionNegotiation: { mode: { pin: '2026-07-28' } },
        capabilities: o.elicit || o.manual ? { elicitation: { form: {} } } : {},
        ...(o.manual ? { inputRequired: { autoFulfill: false } } : {}),
      },
    );
    if (o.elicit) {
      const elicit = o.elicit;
      client.setRequestHandler('elicitation/create', async (request) => (await elicit(request)) as never);
    }
    await client.connect(
      new ModernTransport(new URL(`${url}/mcp`), {
        requestInit: { headers: { Authorization: `Bearer ${key}` } },
      }),
    );
    clients.push(client);
    return client;
  }

  /** SDK v1's client (revision 2025-11-25). */
  async function legacyMcp(key: string): Promise<Client> {
    const client = new Client({ name: 'switchboard-e2e-legacy', version: '1.0.0' });
    await client.connect(
      new StreamableHTTPClientTransport(new URL(`${url}/mcp`), {
        requestInit: { headers: { Authorization: `Bearer ${key}` } },
      }),
    );
    clients.push(client);
    return client;
  }

  /** The tool messages the agent's model was sent in request i. */
  const toolMessagesSent = (i: number) =>
    (llm.requests[i].body as { messages: { role: string; content: string }[] }).messages.filter(
      (m) => m.role === 'tool',
    );
  /** The tools the agent's model was offered in request i. */
  const offered = (i: number) =>
    ((llm.requests[i].body as { tools?: { function: { name: string } }[] }).tools ?? []).map(
      (t) => t.function.name,
    );
  /** The turn's client tool waits as stored (approvals of kind client_tool). */
  const waitsOf = (turnId: string) =>
    env.db.approval.findMany({ where: { turnId, kind: 'client_tool' }, orderBy: { createdAt: 'asc' } });

  beforeAll(async () => {
    env = await createTestEnv();
    llm = await FakeLlmServer.start();
    const [gateway, harness] = await Promise.all([
      spawnGateway(env.processEnv(llm.providerEnv)),
      // Expiry is found by the reconcile job: often, for the expiry case.
      spawnApp('harness-worker', env.processEnv({ ...llm.providerEnv, RECONCILE_INTERVAL_MS: '500' })),
    ]);
    processes.push(gateway, harness);
    url = gateway.url;
    ({ api } = await newTenant(url, ADMIN));
    ({ api: other } = await newTenant(url, ADMIN, 'other'));
    const agent = await api.post('/v1/agents', {
      name: 'helper',
      model: 'openai-chat/gpt-4o-mini',
      instructions: 'Be brief.',
      tools: ['word_count'],
    });
    expect(agent.status).toBe(201);
  });

  afterAll(async () => {
    await Promise.all(clients.map((c) => c.close().catch(() => undefined)));
    await Promise.all(processes.map((p) => p.kill('SIGTERM')));
    await llm?.close();
    await env?.cleanup();
  });

  it('2026-07-28: the client answers the elicitations it is sent, round after round, and the call resumes the turn (SDK auto-fulfilment)', async () => {
    // Round 1: two client calls at once; round 2: one more; round 3: the answer.
    llm.enqueue({
      kind: 'message',
      toolCalls: [
        { name: 'get_weather', arguments: JSON.stringify({ city: 'Paris' }) },
        { name: 'get_weather', arguments: JSON.stringify({ city: 'Rome' }) },
      ],
    });
    llm.enqueue(scripted.toolCall('get_weather', { city: 'Berlin' }));
    llm.enqueue(scripted.text('Sunny everywhere.'));
    const before = llm.requests.length;
    const asked: ElicitRequest[] = [];
    const client = await modernMcp(api.key!, {
      elicit: async (request) => {
        asked.push(request);
        const call = request.params._meta?.[CALL_META] as { name: string; arguments: { city: string } };
        // The program runs its tool on the model's arguments and sends the output.
        return {
          action: 'accept',
          content: { output: `${call.name}: sunny, 21C in ${call.arguments.city}` },
        };
      },
    });
    const progress: string[] = [];
    const result = await client.callTool(
      { name: 'helper', arguments: { message: 'Weather in Paris, Rome, Berlin?', client_tools: [WEATHER] } },
      { onprogress: (p) => progress.push(p.message ?? ''), resetTimeoutOnProgress: true },
    );
    expect(result.isError).toBeFalsy();
    expect(result.content).toEqual([{ type: 'text', text: 'Sunny everywhere.' }]);
    const { turn_id: turnId, status } = result.structuredContent as Record<string, string>;
    expect(status).toBe('completed');
    expect(progress).toContain('waiting for the client to run get_weather');

    // One elicitation per call (two in the first round, one in the second): a form asking for the
    // output, the call in _meta, keyed by the call id the wait row has.
    const waits = await waitsOf(turnId);
    expect(waits.map((w) => w.status)).toEqual(['answered', 'answered', 'answered']);
    expect(asked).toHaveLength(3);
    const callIds = waits.map((w) => `call_${w.id.replace(/-/g, '')}`);
    expect(asked.map((a) => (a.params._meta?.[CALL_META] as { call_id: string }).call_id).sort()).toEqual(
      [...callIds].sort(),
    );
    expect(asked[0].params).toMatchObject({
      mode: 'form',
      message: expect.stringContaining('get_weather'),
      requestedSchema: { type: 'object', properties: { output: { type: 'string' } }, required: ['output'] },
      _meta: { [CALL_META]: { name: 'get_weather', arguments: { city: expect.any(String) } } },
    });
    // The model was offered the client's tool beside the agent's own, and got each output.
    expect(offered(before)).toEqual(expect.arrayContaining(['word_count', 'get_weather']));
    expect(llm.requests.length - before).toBe(3);
    const sent = toolMessagesSent(before + 2)
      .map((m) => m.content)
      .join();
    for (const city of ['Paris', 'Rome', 'Berlin']) expect(sent).toContain(`sunny, 21C in ${city}`);
    expect((await api.get(`/v1/turns/${turnId}`)).body).toMatchObject({ status: 'completed' });
  });

  it('2026-07-28, by hand: bad answers are -32602 and store nothing; the same answer twice resumes the turn once', async () => {
    llm.enqueue(scripted.toolCall('get_weather', { city: 'Oslo' }));
    llm.enqueue(scripted.text('Cold in Oslo.'));
    const before = llm.requests.length;
    const client = await modernMcp(api.key!, { manual: true });
    const params = { name: 'helper', arguments: { message: 'Weather in Oslo?', client_tools: [WEATHER] } };
    const first = (await client.callTool(params, { allowInputRequired: true })) as unknown as {
      resultType: string;
      inputRequests: Record<string, { method: string; params: Record<string, unknown> }>;
      requestState: string;
    };
    expect(first.resultType).toBe('input_required');
    const [callId] = Object.keys(first.inputRequests);
    expect(callId).toMatch(/^call_[0-9a-f]{32}$/);
    expect(first.inputRequests[callId]).toMatchObject({ method: 'elicitation/create' });
    expect(typeof first.requestState).toBe('string');
    const turnId = (await env.db.approval.findUniqueOrThrow({ where: { id: uuidOf(callId) } })).turnId;
    expect((await api.get(`/v1/turns/${turnId}`)).body.status).toBe('awaiting_client_tool');

    const retry = (over: Record<string, unknown>, on = client) =>
      on.callTool({ ...params, ...over }, { allowInputRequired: true });
    const accept = (output: unknown) => ({ action: 'accept', content: { output } });
    const refused = async (p: Promise<unknown>, reason: string) => {
      const err = (await p.then(
        () => undefined,
        (e: unknown) => e,
      )) as { code?: number; data?: { reason?: string } } | undefined;
      expect(err).toBeDefined();
      expect(err?.code).toBe(-32602);
      if (reason !== 'invalid_request_state') expect(err?.data?.reason).toBe(reason);
      else expect(err?.data).toMatchObject({ reason: 'invalid_request_state' });
    };

    // A tampered requestState; the state echoed by another tenant's client: the SDK's verify refuses them.
    const [head, body, mac] = first.requestState.split('.');
    const tampered = `${head}.${body}.${mac.slice(0, -2)}${mac.endsWith('AA') ? 'BB' : 'AA'}`;
    await refused(
      retry({ inputResponses: { [callId]: accept('x') }, requestState: tampered }),
      'invalid_request_state',
    );
    const theirs = await modernMcp(other.key!, { manual: true });
    await refused(
      retry({ inputResponses: { [callId]: accept('x') }, requestState: first.requestState }, theirs),
      'invalid_request_state',
    );
    // An id the turn does not wait for; an accepted form without its output; no answer at all.
    await refused(
      retry({
        inputResponses: { [callId]: accept('x'), call_00000000000000000000000000000000: accept('y') },
        requestState: first.requestState,
      }),
      'unknown_call',
    );
    await refused(
      retry({
        inputResponses: { [callId]: { action: 'accept', content: {} } },
        requestState: first.requestState,
      }),
      'invalid_output',
    );
    await refused(retry({ inputResponses: {}, requestState: first.requestState }), 'missing_call');
    // Nothing was stored by any of them: the wait still pends, the model was not asked again.
    expect((await waitsOf(turnId)).map((w) => w.status)).toEqual(['pending']);
    expect((await api.get(`/v1/turns/${turnId}`)).body.status).toBe('awaiting_client_tool');
    expect(llm.requests.length - before).toBe(1);

    const answer = { inputResponses: { [callId]: accept('snow, -3C') }, requestState: first.requestState };
    const done = (await retry(answer)) as CallToolResult;
    expect(done.content).toEqual([{ type: 'text', text: 'Cold in Oslo.' }]);
    expect(done.structuredContent).toMatchObject({ turn_id: turnId, status: 'completed' });
    expect(
      toolMessagesSent(before + 1)
        .map((m) => m.content)
        .join(),
    ).toContain('snow, -3C');
    // The same answer again: the same turn's answer, nothing resumed twice (no third model round).
    const again = (await retry(answer)) as CallToolResult;
    expect(again.content).toEqual([{ type: 'text', text: 'Cold in Oslo.' }]);
    expect(llm.requests.length - before).toBe(2);
    // Another output for the answered call is refused.
    await refused(
      retry({ inputResponses: { [callId]: accept('rain') }, requestState: first.requestState }),
      'answered_otherwise',
    );
    expect((await waitsOf(turnId)).map((w) => w.output)).toEqual(['snow, -3C']);
  });

  it('2026-07-28: an answer after the wait expired is -32602 expired; the turn has failed client_tool_timeout', async () => {
    const impatient = await api.post('/v1/agents', {
      name: 'impatient',
      model: 'openai-chat/gpt-4o-mini',
      instructions: 'Be brief.',
      budgets: { clientToolTimeoutMs: 1000 },
    });
    expect(impatient.status).toBe(201);
    llm.enqueue(scripted.toolCall('get_weather', { city: 'Nuuk' }));
    const client = await modernMcp(api.key!, { manual: true });
    const params = { name: 'impatient', arguments: { message: 'Weather in Nuuk?', client_tools: [WEATHER] } };
    const first = (await client.callTool(params, { allowInputRequired: true })) as unknown as {
      inputRequests: Record<string, unknown>;
      requestState: string;
    };
    const [callId] = Object.keys(first.inputRequests);
    const turnId = (await env.db.approval.findUniqueOrThrow({ where: { id: uuidOf(callId) } })).turnId;
    const ended = await waitFor(
      async () => {
        const t = (await api.get(`/v1/turns/${turnId}`)).body as { status: string; stopReason: string };
        return t.status === 'failed' ? t : undefined;
      },
      { what: 'the wait to expire', timeoutMs: 60_000 },
    );
    expect(ended.stopReason).toBe('client_tool_timeout');
    const requests = llm.requests.length;
    const answer = {
      ...params,
      inputResponses: { [callId]: { action: 'accept', content: { output: 'ice' } } },
      requestState: first.requestState,
    };
    const late = await client.callTool(answer, { allowInputRequired: true }).then(
      () => undefined,
      (e: unknown) => e as { code?: number; data?: { reason?: string; callIds?: string[] } },
    );
    expect(late).toMatchObject({ code: -32602, data: { reason: 'expired', callIds: [callId] } });
    expect((await waitsOf(turnId)).map((w) => w.status)).toEqual(['expired']);
    expect(llm.requests.length).toBe(requests);
  });

  it('2025-11-25, and a 2026-07-28 client without elicitation: the calls and the REST route, which resumes the turn', async () => {
    for (const connect of [() => legacyMcp(api.key!), () => modernMcp(api.key!)]) {
      llm.enqueue(scripted.toolCall('get_weather', { city: 'Rome' }));
      llm.enqueue(scripted.text('Warm in Rome.'));
      const client = await connect();
      const result = (await client.callTool({
        name: 'helper',
        arguments: { message: 'Weather in Rome?', client_tools: [WEATHER] },
      })) as CallToolResult;
      expect(result.isError).toBe(true);
      const structured = result.structuredContent as {
        turn_id: string;
        status: string;
        client_tool_calls: { call_id: string; name: string; arguments: unknown }[];
      };
      expect(structured.status).toBe('awaiting_client_tool');
      expect(structured.client_tool_calls).toEqual([
        { call_id: expect.stringMatching(/^call_/), name: 'get_weather', arguments: { city: 'Rome' } },
      ]);
      const turnId = structured.turn_id;
      expect(JSON.stringify(result.content)).toContain(`/v1/turns/${turnId}/client-tool-results`);
      const answered = await api.post(`/v1/turns/${turnId}/client-tool-results`, {
        results: [{ callId: structured.client_tool_calls[0].call_id, output: 'warm, 25C' }],
      });
      expect(answered.status).toBe(202);
      const ended = await waitFor(
        async () => {
          const turn = (await api.get(`/v1/turns/${turnId}`)).body as { status: string };
          return turn.status === 'completed' || turn.status === 'failed' ? turn : undefined;
        },
        { what: 'the answered turn to end' },
      );
      expect(ended).toMatchObject({ status: 'completed', finalText: 'Warm in Rome.' });
      expect(
        toolMessagesSent(llm.requests.length - 1)
          .map((m) => m.content)
          .join(),
      ).toContain('warm, 25C');
    }
  });

  it('bad client_tools are tool errors and admit nothing', async () => {
    const client = await modernMcp(api.key!, { elicit: async () => ({ action: 'decline' }) });
    const turnsBefore = await env.db.turn.count();
    const requestsBefore = llm.requests.length;
    const cases: [unknown, string][] = [
      ['get_weather', 'client_tools: an array'],
      [[{ description: 'no name' }], 'client_tools[0].name'],
      [[{ ...WEATHER, inputSchema: { type: 'string' } }], 'client_tools[0].inputSchema'],
      [[{ ...WEATHER, name: 'word_count' }], 'the agent has its own tool named "word_count"'],
      [[WEATHER, WEATHER], 'declared twice'],
      [[{ ...WEATHER, name: 'has space' }], 'client_tools[0].name'],
    ];
    for (const [clientTools, message] of cases) {
      const result = await client.callTool({
        name: 'helper',
        arguments: { message: 'hi', client_tools: clientTools },
      });
      expect(result.isError).toBe(true);
      expect((result.content as { type: string; text: string }[])[0].text).toContain(message);
    }
    expect(await env.db.turn.count()).toBe(turnsBefore);
    expect(llm.requests.length).toBe(requestsBefore);
  });

  it('2026-07-28: a declined elicitation tells the model the client did not run the tool', async () => {
    llm.enqueue(scripted.toolCall('get_weather', { city: 'Lima' }));
    llm.enqueue(scripted.text('I could not check the weather.'));
    const before = llm.requests.length;
    const client = await modernMcp(api.key!, { elicit: async () => ({ action: 'decline' }) });
    const result = await client.callTool({
      name: 'helper',
      arguments: { message: 'Weather in Lima?', client_tools: [WEATHER] },
    });
    expect(result.content).toEqual([{ type: 'text', text: 'I could not check the weather.' }]);
    expect(
      toolMessagesSent(before + 1)
        .map((m) => m.content)
        .join(),
    ).toContain('the client did not run the tool (decline)');
  });
});

/** The wait row's id from the call id handed out (`call_<uuid without dashes>`). */
function uuidOf(callId: string): string {
  const h = callId.slice('call_'.length);
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-${h.slice(12, 16)}-${h.slice(16, 20)}-${h.slice(20)}`;
}
