import OpenAI, { BadRequestError, NotFoundError } from 'openai';
import WebSocket from 'ws';
import {
  createTestEnv,
  crossRealmSafeFetch,
  FakeLlmServer,
  spawnApp,
  spawnGateway,
  type AppProcess,
  type TestEnv,
} from '@switchboard/testing';
import { Api, newTenant } from '../support/api';
import {
  expectCompactResource,
  expectResponseResource,
  expectStreamingEvent,
} from '../support/open-responses';

/**
 * Open Responses 2026-04-24 on `/v1/responses` (docs/adr/0035): WebSocket mode (a `ws` client, as the
 * compliance suite's), `POST /v1/responses/compact` through the stock openai client, and
 * `store: false`, through real processes. Every message and response is checked against the
 * suite's own schemas.
 */
jest.setTimeout(120_000);

const ADMIN = 'test-admin-token-0123456789';

type Message = { type: string; [k: string]: unknown };

/** A WebSocket on /v1/responses: send a message, read messages until a terminal one. */
class ResponsesSocket {
  private readonly messages: Message[] = [];
  private waiter?: () => void;
  closed = false;

  private constructor(readonly ws: WebSocket) {
    ws.on('message', (data: WebSocket.RawData) => {
      const m = JSON.parse((data as Buffer).toString('utf8')) as Message;
      expectStreamingEvent(m, 'websocket');
      this.messages.push(m);
      this.waiter?.();
    });
    ws.on('close', () => {
      this.closed = true;
      this.waiter?.();
    });
  }

  static open(url: string, key: string): Promise<ResponsesSocket> {
    const ws = new WebSocket(`${url.replace(/^http/, 'ws')}/v1/responses`, {
      headers: { authorization: `Bearer ${key}` },
    });
    return new Promise((resolve, reject) => {
      ws.once('open', () => resolve(new ResponsesSocket(ws)));
      ws.once('error', reject);
    });
  }

  /** Sends `data` (an object as JSON, a string as is) and returns the messages up to a terminal one. */
  async turn(data: unknown): Promise<Message[]> {
    if (Buffer.isBuffer(data)) this.ws.send(data, { binary: true });
    else this.ws.send(typeof data === 'string' ? data : JSON.stringify(data));
    const out: Message[] = [];
    for (;;) {
      const m = await this.next();
      out.push(m);
      if (['response.completed', 'response.failed', 'response.incomplete', 'error'].includes(m.type))
        return out;
    }
  }

  private async next(): Promise<Message> {
    while (this.messages.length === 0) {
      if (this.closed) throw new Error('the socket closed');
      await new Promise<void>((resolve) => (this.waiter = resolve));
    }
    return this.messages.shift()!;
  }

  close(): void {
    this.ws.close();
  }
}

const terminal = (messages: Message[]) => messages.at(-1)!;
const responseOf = (messages: Message[]) => terminal(messages).response as Record<string, unknown>;

describe('/v1/responses: WebSocket mode, compact and store: false', () => {
  let env: TestEnv;
  let llm: FakeLlmServer;
  const processes: AppProcess[] = [];
  let url: string;
  let api: Api;
  let other: Api;
  let client: OpenAI;

  /** What the agent's model was sent, as (role, content) pairs after the system prompt. */
  const conversationSent = (i: number) =>
    (llm.requests[i].body as { messages: { role: string; content: string }[] }).messages
      .slice(1)
      .map((m) => [m.role, m.content]);

  beforeAll(async () => {
    env = await createTestEnv();
    llm = await FakeLlmServer.start();
    const [gateway, harness] = await Promise.all([
      spawnGateway(env.processEnv({ ...llm.providerEnv, RESPONSES_WEBSOCKET_MAX_MS: '60000' })),
      spawnApp('harness-worker', env.processEnv(llm.providerEnv)),
    ]);
    processes.push(gateway, harness);
    url = gateway.url;
    ({ api } = await newTenant(url, ADMIN));
    ({ api: other } = await newTenant(url, ADMIN, 'other'));
    client = new OpenAI({
      baseURL: `${url}/v1`,
      apiKey: api.key!,
      fetch: crossRealmSafeFetch,
      maxRetries: 0,
    });
    expect(
      (
        await api.post('/v1/agents', {
          name: 'helper',
          model: 'openai-chat/gpt-4o-mini',
          tools: ['word_count'],
        })
      ).status,
    ).toBe(201);
    expect(
      (await other.post('/v1/agents', { name: 'helper', model: 'openai-chat/gpt-4o-mini' })).status,
    ).toBe(201);
  });

  afterAll(async () => {
    await Promise.all(processes.map((p) => p.kill('SIGTERM')));
    await llm?.close();
    await env?.cleanup();
  });

  it('responses one after another on one socket; store: false continues on it and nowhere else', async () => {
    llm.enqueue(
      { kind: 'message', text: 'OK.', textPieces: 2 },
      { kind: 'message', text: 'cobalt' },
      { kind: 'message', text: 'second' },
    );
    const before = llm.requests.length;
    const socket = await ResponsesSocket.open(url, api.key!);
    const first = await socket.turn({
      type: 'response.create',
      model: 'helper',
      store: false,
      input: 'Remember the code word: cobalt. Reply with OK.',
    });
    expect(first.map((m) => m.type).slice(0, 2)).toEqual(['response.created', 'response.in_progress']);
    expect(terminal(first).type).toBe('response.completed');
    const firstResponse = responseOf(first);
    expect(firstResponse).toMatchObject({ status: 'completed', store: false, output_text: 'OK.' });
    // Numbers grow within a response, as on SSE.
    for (let i = 1; i < first.length; i++) {
      expect(first[i].sequence_number as number).toBeGreaterThan(first[i - 1].sequence_number as number);
    }

    const second = await socket.turn({
      type: 'response.create',
      model: 'helper',
      store: false,
      previous_response_id: firstResponse.id,
      input: 'What is the code word?',
    });
    expect(responseOf(second)).toMatchObject({
      status: 'completed',
      previous_response_id: firstResponse.id,
      output_text: 'cobalt',
      session_id: firstResponse.session_id,
    });
    // The model saw the earlier exchange: the chain went on in the same session.
    expect(conversationSent(before + 1)).toEqual([
      ['user', 'Remember the code word: cobalt. Reply with OK.'],
      ['assistant', 'OK.'],
      ['user', 'What is the code word?'],
    ]);
    const third = await socket.turn({ type: 'response.create', model: 'helper', input: 'say second' });
    expect(responseOf(third)).toMatchObject({
      output_text: 'second',
      store: true,
      previous_response_id: null,
    });
    socket.close();

    // store: false is not kept as a response: not retrievable, not continued over HTTP…
    const got = await client.responses.retrieve(firstResponse.id as string).catch((e: unknown) => e);
    expect(got).toBeInstanceOf(NotFoundError);
    const http = await client.responses
      .create({ model: 'helper', input: 'again', previous_response_id: firstResponse.id as string })
      .catch((e: unknown) => e);
    expect((http as NotFoundError).error).toMatchObject({ code: 'previous_response_not_found' });
    // …nor on another socket; a stored one is, there.
    const again = await ResponsesSocket.open(url, api.key!);
    const missed = await again.turn({
      type: 'response.create',
      model: 'helper',
      store: false,
      previous_response_id: firstResponse.id,
      input: 'continue',
    });
    expect(terminal(missed)).toMatchObject({
      type: 'error',
      status: 404,
      error: { code: 'previous_response_not_found', param: 'previous_response_id' },
    });
    llm.enqueue({ kind: 'message', text: 'stored chain goes on' });
    const stored = await again.turn({
      type: 'response.create',
      model: 'helper',
      previous_response_id: responseOf(third).id,
      input: 'go on',
    });
    expect(responseOf(stored)).toMatchObject({ output_text: 'stored chain goes on' });
    again.close();
    expect(llm.requests.length).toBe(before + 4);
  });

  it('the agent’s own tool call is a reasoning item on the socket, as on SSE', async () => {
    llm.enqueue(
      { kind: 'message', toolCalls: [{ id: 'call_ws', name: 'word_count', arguments: '{"text":"a b"}' }] },
      { kind: 'message', text: 'Two.' },
    );
    const socket = await ResponsesSocket.open(url, api.key!);
    const messages = await socket.turn({ type: 'response.create', model: 'helper', input: 'count a b' });
    socket.close();
    const response = responseOf(messages) as { output: Record<string, unknown>[] };
    expect(response.output.map((i) => i.type)).toEqual(['reasoning', 'message']);
    expect(response.output[0]).toMatchObject({
      status: 'completed',
      summary: [{ type: 'summary_text', text: expect.stringContaining('word_count') }],
      switchboard_tool_call: { call_id: 'call_ws', name: 'word_count', status: 'completed' },
    });
    expect(messages.map((m) => m.type)).toContain('response.reasoning_summary_text.delta');
  });

  it('bad messages: an error message in OpenAI’s shape, the socket stays open, nothing admitted', async () => {
    const turns = await env.db.turn.count();
    const requests = llm.requests.length;
    const socket = await ResponsesSocket.open(url, api.key!);
    const refused = async (data: unknown, status: number, code: string, param?: string | null) => {
      const messages = await socket.turn(data);
      expect(messages).toHaveLength(1);
      expect(messages[0]).toMatchObject({ type: 'error', status, error: { code } });
      if (param !== undefined) expect((messages[0].error as { param: unknown }).param).toBe(param);
    };
    await refused('not json {', 400, 'invalid_json');
    await refused('[1, 2]', 400, 'invalid_value', 'type');
    await refused({ type: 'response.cancel' }, 400, 'invalid_value', 'type');
    await refused(
      { type: 'response.create', model: 'helper', input: 'x', stream: true },
      400,
      'unsupported_parameter',
      'stream',
    );
    await refused(
      { type: 'response.create', model: 'helper', input: 'x', background: false },
      400,
      'unsupported_parameter',
      'background',
    );
    await refused(
      { type: 'response.create', model: 'helper', input: 'x', surprise: 1 },
      400,
      'validation_failed',
    );
    await refused({ type: 'response.create', input: 'x' }, 400, 'validation_failed', 'model');
    await refused({ type: 'response.create', model: 'nobody', input: 'x' }, 404, 'model_not_found');
    await refused(
      {
        type: 'response.create',
        model: 'helper',
        input: [{ type: 'function_call_output', call_id: 'c', output: '1' }],
      },
      404,
      'unknown_call',
    );
    await refused(
      {
        type: 'response.create',
        model: 'helper',
        input: 'x',
        previous_response_id: 'resp_0123456789abcdef0123456789abcdef',
      },
      404,
      'previous_response_not_found',
    );
    // Another tenant's response is not found either.
    llm.enqueue({ kind: 'message', text: 'theirs' });
    const theirs = (await other.post('/v1/responses', { model: 'helper', input: 'private' })).body as {
      id: string;
    };
    await refused(
      { type: 'response.create', model: 'helper', input: 'x', previous_response_id: theirs.id },
      404,
      'previous_response_not_found',
    );
    // A binary frame is not a JSON text message.
    await refused(Buffer.from('{"type":"response.create"}'), 400, 'invalid_json');
    expect(socket.closed).toBe(false);
    socket.close();
    // The other tenant's response is the only turn admitted meanwhile.
    expect(await env.db.turn.count()).toBe(turns + 1);
    expect(llm.requests.length).toBe(requests + 1);
  });

  it('client function tools: function_call items complete the response; function_call_output resumes the turn', async () => {
    llm.enqueue(
      { kind: 'message', toolCalls: [{ name: 'get_weather', arguments: '{"city":"Turin"}' }] },
      { kind: 'message', text: 'Misty in Turin.' },
    );
    const socket = await ResponsesSocket.open(url, api.key!);
    const tools = [
      {
        type: 'function',
        name: 'get_weather',
        description: 'The weather in a city',
        parameters: { type: 'object', properties: { city: { type: 'string' } } },
      },
    ];
    const asked = await socket.turn({
      type: 'response.create',
      model: 'helper',
      store: false,
      input: 'Weather in Turin?',
      tools,
    });
    expect(asked.map((m) => m.type).slice(-5)).toEqual([
      'response.output_item.added',
      'response.function_call_arguments.delta',
      'response.function_call_arguments.done',
      'response.output_item.done',
      'response.completed',
    ]);
    const waiting = responseOf(asked);
    const call = (waiting.output as { type: string; call_id: string; arguments: string }[]).find(
      (i) => i.type === 'function_call',
    )!;
    expect(call.arguments).toBe('{"city":"Turin"}');
    const answered = await socket.turn({
      type: 'response.create',
      model: 'helper',
      store: false,
      previous_response_id: waiting.id,
      input: [{ type: 'function_call_output', call_id: call.call_id, output: 'misty' }],
    });
    expect(responseOf(answered)).toMatchObject({
      status: 'completed',
      output_text: 'Misty in Turin.',
      previous_response_id: waiting.id,
      turn_id: waiting.turn_id,
    });
    expect(responseOf(answered).id).not.toBe(waiting.id);
    socket.close();
  });

  it('a failed continuation forgets the response it named', async () => {
    llm.enqueue({ kind: 'message', text: 'OK.' });
    const socket = await ResponsesSocket.open(url, api.key!);
    const first = responseOf(
      await socket.turn({ type: 'response.create', model: 'helper', store: false, input: 'remember ember' }),
    );
    const failed = await socket.turn({
      type: 'response.create',
      model: 'helper',
      store: false,
      previous_response_id: first.id,
      input: [{ type: 'function_call_output', call_id: 'call_missing', output: 'x' }],
    });
    expect(terminal(failed)).toMatchObject({ type: 'error', status: 404 });
    const retry = await socket.turn({
      type: 'response.create',
      model: 'helper',
      store: false,
      previous_response_id: first.id,
      input: 'stale?',
    });
    expect(terminal(retry)).toMatchObject({ type: 'error', error: { code: 'previous_response_not_found' } });
    socket.close();
  });

  it('each response.create counts in the tenant’s admission rate limit, as on HTTP', async () => {
    const limited = await newTenant(url, ADMIN, 'limited');
    expect(
      (await limited.api.post('/v1/agents', { name: 'helper', model: 'openai-chat/gpt-4o-mini' })).status,
    ).toBe(201);
    const set = await new Api(url, ADMIN).patch(`/v1/admin/tenants/${limited.tenantId}/limits`, {
      admission: 1,
    });
    expect(set.status).toBe(200);
    llm.enqueue({ kind: 'message', text: 'first' });
    const turns = await env.db.turn.count();
    const socket = await ResponsesSocket.open(url, limited.api.key!);
    expect(
      responseOf(await socket.turn({ type: 'response.create', model: 'helper', input: 'one' })),
    ).toMatchObject({
      output_text: 'first',
    });
    const second = await socket.turn({ type: 'response.create', model: 'helper', input: 'two' });
    expect(second).toEqual([
      expect.objectContaining({
        type: 'error',
        status: 429,
        error: expect.objectContaining({ code: 'rate_limited', type: 'rate_limit_error' }),
      }),
    ]);
    socket.close();
    expect(await env.db.turn.count()).toBe(turns + 1);
  });

  it('a socket past RESPONSES_WEBSOCKET_MAX_MS gets websocket_connection_limit_reached and closes', async () => {
    const short = await spawnGateway(
      env.processEnv({ ...llm.providerEnv, RESPONSES_WEBSOCKET_MAX_MS: '1000' }),
    );
    processes.push(short);
    const ws = new WebSocket(`${short.url.replace(/^http/, 'ws')}/v1/responses`, {
      headers: { authorization: `Bearer ${api.key}` },
    });
    const received: Message[] = [];
    ws.on('message', (data: WebSocket.RawData) =>
      received.push(JSON.parse((data as Buffer).toString('utf8')) as Message),
    );
    const code = await new Promise<number>((resolve) => ws.once('close', (c: number) => resolve(c)));
    expect(code).toBe(1000);
    expect(received).toEqual([
      {
        type: 'error',
        status: 400,
        error: expect.objectContaining({ code: 'websocket_connection_limit_reached' }),
      },
    ]);
    for (const m of received) expectStreamingEvent(m, 'websocket');
  });

  it('the upgrade needs a valid API key, on /v1/responses only', async () => {
    const refusal = (path: string, headers: Record<string, string>) =>
      new Promise<{ status: number; body: string }>((resolve, reject) => {
        const ws = new WebSocket(`${url.replace(/^http/, 'ws')}${path}`, { headers });
        ws.once('unexpected-response', (_req, res) => {
          let body = '';
          res.on('data', (d: Buffer) => (body += d.toString()));
          res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
        });
        ws.once('open', () => reject(new Error('the upgrade was accepted')));
      });
    const none = await refusal('/v1/responses', {});
    expect(none.status).toBe(401);
    expect(JSON.parse(none.body).error).toMatchObject({
      type: 'authentication_error',
      code: 'invalid_api_key',
    });
    expect((await refusal('/v1/responses', { authorization: 'Bearer sb_not_a_key' })).status).toBe(401);
    expect((await refusal('/v1/chat/completions', { authorization: `Bearer ${api.key}` })).status).toBe(404);
  });

  it('image input: passed to a model that takes images, refused for one that does not', async () => {
    const png =
      'data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==';
    llm.enqueue({ kind: 'message', text: 'A red dot.' });
    const before = llm.requests.length;
    const r = await client.responses.create({
      model: 'helper',
      input: [
        {
          role: 'user',
          content: [
            { type: 'input_text', text: 'What is this?' },
            { type: 'input_image', image_url: png, detail: 'low' },
          ],
        },
      ],
    });
    expectResponseResource(r);
    expect(r.output_text).toBe('A red dot.');
    const sent = (
      llm.requests[before].body as { messages: { role: string; content: unknown }[] }
    ).messages.at(-1);
    expect(sent).toEqual({
      role: 'user',
      content: [
        { type: 'text', text: 'What is this?' },
        { type: 'image_url', image_url: { url: png, detail: 'low' } },
      ],
    });

    // An agent on a text-only model, a bad URL, a file id: 400 naming why, nothing admitted.
    expect((await api.post('/v1/agents', { name: 'blind', model: 'openai-chat/gpt-3.5-turbo' })).status).toBe(
      201,
    );
    const turns = await env.db.turn.count();
    const image = (part: Record<string, unknown>) => [
      {
        role: 'user',
        content: [
          { type: 'input_text', text: 'see' },
          { type: 'input_image', ...part },
        ],
      },
    ];
    const refused = async (model: string, input: unknown, param: string) => {
      const res = await api.post('/v1/responses', { model, input });
      expect(res.status).toBe(400);
      expect(res.body.error).toMatchObject({ type: 'invalid_request_error', param });
    };
    await refused('blind', image({ image_url: png }), 'input');
    await refused(
      'helper',
      image({ image_url: 'http://insecure.test/a.png' }),
      'input[0].content[1].image_url',
    );
    await refused(
      'helper',
      image({ image_url: 'data:image/svg+xml;base64,PHN2Zz4=' }),
      'input[0].content[1].image_url',
    );
    await refused('helper', image({ file_id: 'file_123' }), 'input[0].content[1].file_id');
    await refused(
      'helper',
      [
        ...image({ image_url: png }),
        { role: 'assistant', content: 'a dot' },
        { role: 'user', content: 'again' },
      ],
      'input[0]',
    );
    expect(await env.db.turn.count()).toBe(turns);
    expect(llm.requests.length).toBe(before + 1);
  });

  it('compact: the conversation packed into one compaction item, the base of a new response', async () => {
    const turns = await env.db.turn.count();
    const compacted = await client.responses.compact({
      model: 'helper',
      input: [
        { role: 'user', content: 'Remember the compaction code word: slate.' },
        { role: 'assistant', content: 'OK.' },
      ],
    });
    expectCompactResource(compacted);
    expect(compacted).toMatchObject({ object: 'response.compaction', usage: { total_tokens: 0 } });
    expect(compacted.output.map((i) => i.type)).toEqual(['compaction']);
    // No turn: compacting runs no model.
    expect(await env.db.turn.count()).toBe(turns);

    llm.enqueue({ kind: 'message', text: 'slate' });
    const before = llm.requests.length;
    const next = await client.responses.create({
      model: 'helper',
      input: [
        ...(compacted.output as OpenAI.Responses.ResponseInputItem[]),
        { role: 'user', content: 'What was the code word?' },
      ],
    });
    expectResponseResource(next);
    expect(next.output_text).toBe('slate');
    expect(conversationSent(before)).toEqual([
      ['user', 'Remember the compaction code word: slate.'],
      ['assistant', 'OK.'],
      ['user', 'What was the code word?'],
    ]);

    // Bad input: OpenAI-shaped 4xx, nothing admitted.
    const admitted = await env.db.turn.count();
    const refused = async (body: Record<string, unknown>, status: number, code: string) => {
      const r = await api.post('/v1/responses/compact', body);
      expect(r.status).toBe(status);
      expect(r.body.error).toMatchObject({ code });
      expect(Object.keys(r.body)).toEqual(['error']);
    };
    await refused({ input: 'x' }, 400, 'validation_failed');
    await refused({ model: 'nobody', input: 'x' }, 404, 'model_not_found');
    await refused(
      { model: 'helper', input: 'x', previous_response_id: next.id },
      400,
      'unsupported_parameter',
    );
    await refused({ model: 'helper', input: [{ role: 'system', content: 'x' }] }, 400, 'invalid_value');
    await refused(
      { model: 'helper', input: [{ type: 'compaction', encrypted_content: 'forged' }] },
      400,
      'invalid_value',
    );
    const forged = await client.responses
      .create({
        model: 'helper',
        input: [
          {
            type: 'compaction',
            encrypted_content: 'sbc1.bm90IGpzb24',
          } as unknown as OpenAI.Responses.ResponseInputItem,
          { role: 'user', content: 'x' },
        ],
      })
      .catch((e: unknown) => e);
    expect(forged).toBeInstanceOf(BadRequestError);
    expect((forged as BadRequestError).error).toMatchObject({ param: 'input[0].encrypted_content' });
    expect(await env.db.turn.count()).toBe(admitted);
    expect(llm.requests.length).toBe(before + 1);
  });
});
