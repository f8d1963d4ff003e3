import net from 'node:net';
import { HumanMessage, ToolMessage } from '@langchain/core/messages';
import { ChatOpenAI } from '@langchain/openai';
import OpenAI, { APIError } from 'openai';
import type { ChatCompletionMessageParam, ChatCompletionTool } from 'openai/resources/chat/completions';
import { ChatCompletionChunk, ChatCompletionResponse } from '@switchboard/contracts';
import {
  createTestEnv,
  crossRealmSafeFetch,
  FakeLlmServer,
  scripted,
  spawnApp,
  waitFor,
  type AppProcess,
  type TestEnv,
} from '@switchboard/testing';
import { newTenant, type Api } from '../support/api';

/**
 * Client-side tools through Chat Completions (docs/adr/0047), real processes (a gateway, harness
 * workers) and the stock openai client's own tool loops: a request declares tools the client runs;
 * when the agent's model calls one the turn waits durably and the response hands the call out
 * (`finish_reason: "tool_calls"`); the client's next request, the whole conversation resent with
 * `tool` messages, resumes the same turn exactly once.
 */
jest.setTimeout(120_000);

const ADMIN = 'test-admin-token-0123456789';

const WEATHER: ChatCompletionTool = {
  type: 'function',
  function: {
    name: 'get_weather',
    description: 'The weather in a city',
    parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] },
  },
};

describe('client-side tools with the openai client', () => {
  let env: TestEnv;
  let llm: FakeLlmServer;
  const processes: AppProcess[] = [];
  let harness: AppProcess;
  let url: string;
  let api: Api;
  let client: OpenAI;

  const openai = (apiKey: string) =>
    new OpenAI({ baseURL: `${url}/v1`, apiKey, fetch: crossRealmSafeFetch, maxRetries: 0 });

  const spawnHarness = () =>
    spawnApp('harness-worker', env.processEnv({ ...llm.providerEnv, RECONCILE_INTERVAL_MS: '500' }));

  async function agent(name: string, budgets: Record<string, unknown> = {}, on = api) {
    const res = await on.post('/v1/agents', {
      name,
      model: 'openai-chat/gpt-4o-mini',
      instructions: 'Be brief.',
      tools: ['word_count'],
      budgets,
    });
    expect(res.status).toBe(201);
    return name;
  }

  /** The tools the agent's model was offered in request i. */
  const offered = (i: number) =>
    ((llm.requests[i].body as { tools?: { function: { name: string } }[] }).tools ?? []).map(
      (t) => t.function.name,
    );
  /** The tool messages the agent's model was sent in request i. */
  const toolMessagesSent = (i: number) =>
    (llm.requests[i].body as { messages: { role: string; content: string }[] }).messages.filter(
      (m) => m.role === 'tool',
    );

  const turnCount = () => env.db.turn.count();

  beforeAll(async () => {
    env = await createTestEnv();
    llm = await FakeLlmServer.start();
    const server = net.createServer();
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const { port } = server.address() as net.AddressInfo;
    await new Promise((resolve) => server.close(resolve));
    const [gateway, worker] = await Promise.all([
      spawnApp('gateway', env.processEnv({ ...llm.providerEnv, PORT: String(port), HOST: '127.0.0.1' }), {
        readyPattern: /Server listening at|successfully started/,
      }),
      spawnHarness(),
    ]);
    processes.push(gateway);
    harness = worker;
    url = `http://127.0.0.1:${port}`;
    await waitFor(async () => (await fetch(`${url}/healthz`)).ok, { what: 'the gateway to listen' });
    ({ api } = await newTenant(url, ADMIN));
    client = openai(api.key!);
    await agent('helper');
  });

  afterAll(async () => {
    await Promise.all([...processes, harness].map((p) => p?.kill('SIGTERM')));
    await llm?.close();
    await env?.cleanup();
  });

  it('tool_choice required and a named function reach the provider for the first round only; after the result the model is free', async () => {
    for (const [choice, wire] of [
      ['required', 'required'],
      [
        { type: 'function', function: { name: 'get_weather' } },
        { type: 'function', function: { name: 'get_weather' } },
      ],
    ] as const) {
      llm.enqueue(scripted.toolCall('get_weather', { city: 'Oslo' }));
      llm.enqueue(scripted.text('Cold in Oslo.'));
      const before = llm.requests.length;
      const messages: ChatCompletionMessageParam[] = [{ role: 'user', content: 'Weather in Oslo?' }];
      const first = await client.chat.completions.create({
        model: 'helper',
        messages,
        tools: [WEATHER],
        tool_choice: choice,
      });
      expect(first.choices[0].finish_reason).toBe('tool_calls');
      expect((llm.requests[before].body as { tool_choice?: unknown }).tool_choice).toEqual(wire);
      const [call] = first.choices[0].message.tool_calls ?? [];
      const second = await client.chat.completions.create({
        model: 'helper',
        messages: [
          ...messages,
          first.choices[0].message,
          { role: 'tool', tool_call_id: call.id, content: '-3C' },
        ],
        tools: [WEATHER],
        tool_choice: choice,
      });
      expect(second.choices[0].message.content).toBe('Cold in Oslo.');
      // The resumed round is not forced: a forced choice there would loop on tool calls for ever.
      expect(llm.requests).toHaveLength(before + 2);
      expect(llm.requests[before + 1].body).not.toHaveProperty('tool_choice');
    }
  });

  it("a named tool_choice that is not among the request's tools, or required with no tool at all: 400, nothing admitted", async () => {
    const bare = 'bare-choice';
    expect(
      (await api.post('/v1/agents', { name: bare, model: 'openai-chat/gpt-4o-mini', instructions: 'Hi.' }))
        .status,
    ).toBe(201);
    const turns = await turnCount();
    const requests = llm.requests.length;
    for (const [model, body, param] of [
      [
        'helper',
        { tools: [WEATHER], tool_choice: { type: 'function', function: { name: 'word_count' } } },
        /word_count/,
      ],
      ['helper', { tool_choice: { type: 'function', function: { name: 'get_weather' } } }, /get_weather/],
      [bare, { tool_choice: 'required' }, /no tools/],
    ] as const) {
      const err = await client.chat.completions
        .create({ model, messages: [{ role: 'user', content: 'hi' }], ...body } as never)
        .then(
          () => undefined,
          (e: unknown) => e,
        );
      expect(err).toBeInstanceOf(APIError);
      expect(err).toMatchObject({ status: 400, code: 'invalid_tool_choice', param: 'tool_choice' });
      expect((err as APIError).message).toMatch(param);
    }
    expect(await turnCount()).toBe(turns);
    expect(llm.requests).toHaveLength(requests);
  });

  it('hands a client tool call out with finish_reason tool_calls; the tool message resumes the same turn once', async () => {
    llm.enqueue(scripted.toolCall('get_weather', { city: 'Paris' }));
    llm.enqueue(scripted.text('It is sunny in Paris.'));
    const before = llm.requests.length;
    const messages: ChatCompletionMessageParam[] = [{ role: 'user', content: 'Weather in Paris?' }];
    const first = await client.chat.completions.create({
      model: 'helper',
      messages,
      tools: [WEATHER],
      tool_choice: 'auto',
      parallel_tool_calls: true,
    });
    expect(ChatCompletionResponse.parse(first)).toBeTruthy();
    expect(first.choices[0].finish_reason).toBe('tool_calls');
    const calls = first.choices[0].message.tool_calls ?? [];
    expect(calls).toHaveLength(1);
    const [call] = calls;
    expect(call.type).toBe('function');
    expect(call).toMatchObject({ function: { name: 'get_weather', arguments: '{"city":"Paris"}' } });
    expect(call.id).toMatch(/^call_[0-9a-f]{32}$/);
    expect(first.choices[0].message.content).toBeNull();
    // The model was offered the client's tool beside the agent's own.
    expect(offered(before)).toEqual(expect.arrayContaining(['word_count', 'get_weather']));
    const turnId = (first as unknown as { turn_id: string }).turn_id;
    expect((await api.get(`/v1/turns/${turnId}`)).body.status).toBe('awaiting_client_tool');

    const resend: ChatCompletionMessageParam[] = [
      ...messages,
      first.choices[0].message,
      { role: 'tool', tool_call_id: call.id, content: 'sunny, 21C' },
    ];
    const second = await client.chat.completions.create({
      model: 'helper',
      messages: resend,
      tools: [WEATHER],
    });
    expect(second.choices[0]).toMatchObject({
      finish_reason: 'stop',
      message: { role: 'assistant', content: 'It is sunny in Paris.' },
    });
    expect((second as unknown as { turn_id: string }).turn_id).toBe(turnId);
    // Recorded as that call's tool result the normal way: the model saw it.
    expect(toolMessagesSent(before + 1)).toEqual([
      expect.objectContaining({ role: 'tool', content: expect.stringContaining('sunny, 21C') }),
    ]);
    const toolRow = await env.db.toolCall.findFirstOrThrow({ where: { turnId } });
    expect(toolRow).toMatchObject({ name: 'get_weather', status: 'completed' });

    // The same results again: nothing changes, the same (ended) turn answers; no model call.
    const requests = llm.requests.length;
    const again = await client.chat.completions.create({
      model: 'helper',
      messages: resend,
      tools: [WEATHER],
    });
    expect((again as unknown as { turn_id: string }).turn_id).toBe(turnId);
    expect(again.choices[0].message.content).toBe('It is sunny in Paris.');
    expect(llm.requests.length).toBe(requests);
    const events = await env.db.event.findMany({ where: { turnId }, orderBy: { seq: 'asc' } });
    expect(events.filter((e) => e.type === 'client_tool_requested')).toHaveLength(1);
    expect(events.filter((e) => e.type === 'client_tool_answered')).toHaveLength(1);
    expect(events.filter((e) => e.type === 'turn_started')).toHaveLength(2);

    // Different output for the answered call: 409, nothing changes.
    const other = [...resend.slice(0, -1), { role: 'tool' as const, tool_call_id: call.id, content: 'rain' }];
    const conflict = await client.chat.completions
      .create({ model: 'helper', messages: other, tools: [WEATHER] })
      .catch((e: unknown) => e);
    expect(conflict).toBeInstanceOf(APIError);
    expect(conflict).toMatchObject({ status: 409, code: 'answered_otherwise' });
  });

  it('POST /v1/turns/{id}/client-tool-results answers the calls natively, once', async () => {
    llm.enqueue(scripted.toolCall('get_weather', { city: 'Bern' }));
    llm.enqueue(scripted.text('Bern: fog.'));
    const first = await client.chat.completions.create({
      model: 'helper',
      messages: [{ role: 'user', content: 'Weather in Bern?' }],
      tools: [WEATHER],
    });
    const turnId = (first as unknown as { turn_id: string }).turn_id;
    const [call] = first.choices[0].message.tool_calls ?? [];
    const events = await api.get(
      `/v1/sessions/${(first as unknown as { session_id: string }).session_id}/events`,
    );
    const requested = (events.body.data as { type: string; data: { callId: string } }[]).find(
      (e) => e.type === 'client_tool_requested',
    );
    expect(requested?.data.callId).toBe(call.id);
    const path = `/v1/turns/${turnId}/client-tool-results`;
    const unknown = await api.post(path, { results: [{ callId: 'call_0', output: 'x' }] });
    expect(unknown.status).toBe(404);
    expect(unknown.body.error.details).toMatchObject({ reason: 'unknown_call', callIds: ['call_0'] });
    const empty = await api.post(path, { results: [] });
    expect(empty.status).toBe(400);
    const answered = await api.post(path, { results: [{ callId: call.id, output: 'fog' }] });
    expect(answered.status).toBe(202);
    const again = await api.post(path, { results: [{ callId: call.id, output: 'fog' }] });
    expect(again.status).toBe(200);
    const done = await waitFor(
      async () => {
        const t = await api.get(`/v1/turns/${turnId}`);
        return t.body.status === 'completed' ? t.body : undefined;
      },
      { what: 'the turn to complete' },
    );
    expect(done.finalText).toBe('Bern: fog.');
  });

  it("the openai SDK's runTools helper runs the client's function and gets the agent's answer", async () => {
    llm.enqueue(scripted.toolCall('get_weather', { city: 'Oslo' }));
    llm.enqueue(scripted.text('Oslo: snow.'));
    const seen: string[] = [];
    const runner = client.chat.completions.runTools({
      model: 'helper',
      messages: [{ role: 'user', content: 'Weather in Oslo?' }],
      tools: [
        {
          type: 'function',
          function: {
            name: 'get_weather',
            description: 'The weather in a city',
            parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] },
            parse: JSON.parse,
            function: (args: { city: string }) => {
              seen.push(args.city);
              return 'snow, -3C';
            },
          },
        },
      ],
    });
    expect(await runner.finalContent()).toBe('Oslo: snow.');
    expect(seen).toEqual(['Oslo']);
  });

  it("LangChain's ChatOpenAI.bindTools: the tool call comes back, the ToolMessage gets the answer", async () => {
    llm.enqueue(scripted.toolCall('get_weather', { city: 'Kyiv' }));
    llm.enqueue(scripted.text('Kyiv is mild.'));
    const model = new ChatOpenAI({
      model: 'helper',
      apiKey: api.key!,
      maxRetries: 0,
      configuration: { baseURL: `${url}/v1`, fetch: crossRealmSafeFetch },
    }).bindTools([WEATHER]);
    const ask = new HumanMessage('Weather in Kyiv?');
    const ai = await model.invoke([ask]);
    expect(ai.tool_calls).toEqual([expect.objectContaining({ name: 'get_weather', args: { city: 'Kyiv' } })]);
    const answer = await model.invoke([
      ask,
      ai,
      new ToolMessage({ tool_call_id: ai.tool_calls![0].id!, content: 'mild, 12C' }),
    ]);
    expect(answer.content).toBe('Kyiv is mild.');
  });

  it('streams tool_call deltas, finish_reason tool_calls and [DONE]; the streamed resume carries the answer', async () => {
    llm.enqueue(scripted.toolCall('get_weather', { city: 'Rome' }));
    llm.enqueue(scripted.text('Rome is warm.'));
    const messages: ChatCompletionMessageParam[] = [{ role: 'user', content: 'Weather in Rome?' }];
    const stream = await client.chat.completions.create({
      model: 'helper',
      messages,
      tools: [WEATHER],
      stream: true,
    });
    const chunks: ChatCompletionChunk[] = [];
    for await (const chunk of stream) chunks.push(ChatCompletionChunk.parse(chunk));
    const deltas = chunks.flatMap((c) => c.choices.flatMap((ch) => ch.delta.tool_calls ?? []));
    expect(deltas).toEqual([
      expect.objectContaining({
        index: 0,
        type: 'function',
        function: { name: 'get_weather', arguments: '{"city":"Rome"}' },
      }),
    ]);
    expect(chunks.at(-1)?.choices[0].finish_reason).toBe('tool_calls');

    const resumed = await client.chat.completions.create({
      model: 'helper',
      messages: [
        ...messages,
        {
          role: 'assistant',
          content: null,
          tool_calls: [{ id: deltas[0].id, type: 'function', function: deltas[0].function }],
        },
        { role: 'tool', tool_call_id: deltas[0].id, content: 'warm, 28C' },
      ],
      tools: [WEATHER],
      stream: true,
    });
    let text = '';
    let finish: string | null = null;
    for await (const chunk of resumed) {
      text += chunk.choices[0]?.delta.content ?? '';
      finish = chunk.choices[0]?.finish_reason ?? finish;
    }
    expect(text).toBe('Rome is warm.');
    expect(finish).toBe('stop');
  });

  it("a round with both kinds runs the server's tool and waits for the client's", async () => {
    llm.enqueue({
      kind: 'message',
      toolCalls: [
        { name: 'word_count', arguments: JSON.stringify({ text: 'one two three' }) },
        { name: 'get_weather', arguments: JSON.stringify({ city: 'Lima' }) },
      ],
    });
    llm.enqueue(scripted.text('Three words; Lima is cloudy.'));
    const before = llm.requests.length;
    const messages: ChatCompletionMessageParam[] = [{ role: 'user', content: 'Count and weather' }];
    const first = await client.chat.completions.create({ model: 'helper', messages, tools: [WEATHER] });
    const calls = first.choices[0].message.tool_calls ?? [];
    expect(calls.map((c) => c.type === 'function' && c.function.name)).toEqual(['get_weather']);
    const turnId = (first as unknown as { turn_id: string }).turn_id;
    // The server's tool ran already.
    expect(await env.db.toolCall.findMany({ where: { turnId }, select: { name: true } })).toEqual([
      { name: 'word_count' },
    ]);
    const second = await client.chat.completions.create({
      model: 'helper',
      messages: [
        ...messages,
        first.choices[0].message,
        { role: 'tool', tool_call_id: calls[0].id, content: 'cloudy' },
      ],
      tools: [WEATHER],
    });
    expect(second.choices[0].message.content).toBe('Three words; Lima is cloudy.');
    const sent = toolMessagesSent(before + 1);
    expect(sent).toHaveLength(2);
    expect(sent[1].content).toContain('cloudy');
  });

  it('a harness worker killed while the turn waits: another resumes it', async () => {
    llm.enqueue(scripted.toolCall('get_weather', { city: 'Cairo' }));
    llm.enqueue(scripted.text('Cairo is hot.'));
    const messages: ChatCompletionMessageParam[] = [{ role: 'user', content: 'Weather in Cairo?' }];
    const first = await client.chat.completions.create({ model: 'helper', messages, tools: [WEATHER] });
    const [call] = first.choices[0].message.tool_calls ?? [];
    expect(await harness.kill('SIGKILL')).toBeNull();
    harness = await spawnHarness();
    const second = await client.chat.completions.create({
      model: 'helper',
      messages: [
        ...messages,
        first.choices[0].message,
        { role: 'tool', tool_call_id: call.id, content: 'hot' },
      ],
      tools: [WEATHER],
    });
    expect(second.choices[0].message.content).toBe('Cairo is hot.');
  });

  it('an unanswered call expires: the turn fails client_tool_timeout, a late answer is a 409', async () => {
    await agent('impatient', { clientToolTimeoutMs: 1000 });
    llm.enqueue(scripted.toolCall('get_weather', { city: 'Nuuk' }));
    const messages: ChatCompletionMessageParam[] = [{ role: 'user', content: 'Weather in Nuuk?' }];
    const first = await client.chat.completions.create({ model: 'impatient', messages, tools: [WEATHER] });
    const [call] = first.choices[0].message.tool_calls ?? [];
    const turnId = (first as unknown as { turn_id: string }).turn_id;
    const ended = await waitFor(
      async () => {
        const t = await api.get(`/v1/turns/${turnId}`);
        return t.body.status === 'failed' ? t.body : undefined;
      },
      { what: 'the turn to time out', timeoutMs: 60_000 },
    );
    expect(ended.stopReason).toBe('client_tool_timeout');
    const late = await client.chat.completions
      .create({
        model: 'impatient',
        messages: [
          ...messages,
          first.choices[0].message,
          { role: 'tool', tool_call_id: call.id, content: 'ice' },
        ],
        tools: [WEATHER],
      })
      .catch((e: unknown) => e);
    expect(late).toMatchObject({ status: 409, code: 'expired' });
  });

  describe('bad input: an OpenAI-shaped 4xx and nothing admitted', () => {
    const refused = async (body: Parameters<OpenAI['chat']['completions']['create']>[0], on = client) => {
      const turns = await turnCount();
      const err = await on.chat.completions.create(body as never).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(APIError);
      expect(await turnCount()).toBe(turns);
      return err as APIError;
    };
    const ask = [{ role: 'user' as const, content: 'hi' }];

    it('a client tool named like one of the agent’s', async () => {
      const clash = { ...WEATHER, function: { ...WEATHER.function, name: 'word_count' } };
      const err = await refused({ model: 'helper', messages: ask, tools: [clash] });
      expect(err).toMatchObject({ status: 400, code: 'tool_name_clash', param: 'tools[0].function.name' });
      expect(err.message).toContain('word_count');
    });

    it('a malformed parameters schema', async () => {
      const bad = {
        type: 'function' as const,
        function: { name: 'x', parameters: { type: 'object', properties: { a: { type: 'nope' } } } },
      };
      const err = await refused({ model: 'helper', messages: ask, tools: [bad] });
      expect(err).toMatchObject({
        status: 400,
        code: 'invalid_schema',
        param: 'tools[0].function.parameters',
      });
    });

    it('an unknown call id, and another tenant’s call', async () => {
      const unknown = await refused({
        model: 'helper',
        messages: [...ask, { role: 'tool', tool_call_id: 'call_nothing', content: 'x' }],
      });
      expect(unknown).toMatchObject({ status: 404, code: 'unknown_call' });
      expect(unknown.message).toContain('call_nothing');

      llm.enqueue(scripted.toolCall('get_weather', { city: 'Baku' }));
      const first = await client.chat.completions.create({
        model: 'helper',
        messages: ask,
        tools: [WEATHER],
      });
      const [call] = first.choices[0].message.tool_calls ?? [];
      const other = await newTenant(url, ADMIN, 'other');
      await agent('helper', {}, other.api);
      const theirs = await refused(
        {
          model: 'helper',
          messages: [...ask, first.choices[0].message, { role: 'tool', tool_call_id: call.id, content: 'x' }],
        },
        openai(other.api.key!),
      );
      expect(theirs).toMatchObject({ status: 404, code: 'unknown_call' });
      expect(theirs.message).toContain(call.id);
      const turnId = (first as unknown as { turn_id: string }).turn_id;
      expect((await api.get(`/v1/turns/${turnId}`)).body.status).toBe('awaiting_client_tool');
      await api.post(`/v1/turns/${turnId}/cancel`, {});
    });

    it('a pending call left unanswered', async () => {
      llm.enqueue({
        kind: 'message',
        toolCalls: [
          { name: 'get_weather', arguments: '{"city":"A"}' },
          { name: 'get_weather', arguments: '{"city":"B"}' },
        ],
      });
      const first = await client.chat.completions.create({
        model: 'helper',
        messages: ask,
        tools: [WEATHER],
      });
      const calls = first.choices[0].message.tool_calls ?? [];
      expect(calls).toHaveLength(2);
      const err = await refused({
        model: 'helper',
        messages: [
          ...ask,
          first.choices[0].message,
          { role: 'tool', tool_call_id: calls[0].id, content: 'x' },
        ],
        tools: [WEATHER],
      });
      expect(err).toMatchObject({ status: 400, code: 'missing_call' });
      expect(err.message).toContain(calls[1].id);
      const turnId = (first as unknown as { turn_id: string }).turn_id;
      expect((await api.get(`/v1/turns/${turnId}`)).body.status).toBe('awaiting_client_tool');
      await api.post(`/v1/turns/${turnId}/cancel`, {});
    });
  });
});
