import OpenAI, { BadRequestError, NotFoundError } from 'openai';
import path from 'node:path';
import { Agent, OpenAIResponsesModel, run, setTracingDisabled } from '@openai/agents';
import { ResponseObject, ResponseInputItemList } from '@switchboard/contracts';
import {
  createTestEnv,
  crossRealmSafeFetch,
  FakeLlmServer,
  runProcess,
  spawnApp,
  spawnGateway,
  waitFor,
  type AppProcess,
  type TestEnv,
} from '@switchboard/testing';
import { newTenant, type Api } from '../support/api';
import { expectResponseResource, expectStreamingEvent } from '../support/open-responses';

/**
 * `/v1/responses` (docs/adr/0035) with the stock clients from npm, through real processes (a gateway
 * and a harness worker): the `openai` client's `responses.*`, the AI SDK's default `openai(model)`
 * provider and the OpenAI Agents SDK, each with a Switchboard agent as the model. The agent runs
 * against the fake LLM server in this process.
 */
jest.setTimeout(120_000);

const ADMIN = 'test-admin-token-0123456789';

describe('/v1/responses with the stock clients', () => {
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
    setTracingDisabled(true);
    env = await createTestEnv();
    llm = await FakeLlmServer.start();
    const [gateway, harness] = await Promise.all([
      spawnGateway(env.processEnv(llm.providerEnv)),
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
    const agent = await api.post('/v1/agents', {
      name: 'helper',
      model: 'openai-chat/gpt-4o-mini',
      instructions: 'Be brief.',
      tools: ['word_count'],
    });
    expect(agent.status).toBe(201);
  });

  afterAll(async () => {
    await Promise.all(processes.map((p) => p.kill('SIGTERM')));
    await llm?.close();
    await env?.cleanup();
  });

  it('responses.create: the turn’s answer, usage in the Responses shape, the id derived from the turn', async () => {
    llm.enqueue({
      kind: 'message',
      text: 'Hello from the agent.',
      usage: { input: 50, output: 7, cached: 10 },
    });
    const before = llm.requests.length;
    const r = await client.responses.create({
      model: 'helper',
      input: 'hi',
      instructions: 'You are a pirate.',
      metadata: { topic: 'greeting' },
      temperature: 0.3,
    });
    expect(ResponseObject.parse(r)).toBeTruthy();
    expectResponseResource(r);
    expect(r).toMatchObject({
      object: 'response',
      status: 'completed',
      model: 'helper',
      output_text: 'Hello from the agent.',
      error: null,
      incomplete_details: null,
      metadata: { topic: 'greeting' },
      background: false,
      previous_response_id: null,
      usage: {
        input_tokens: 50,
        input_tokens_details: { cached_tokens: 10 },
        output_tokens: 7,
        output_tokens_details: { reasoning_tokens: 0 },
        total_tokens: 57,
      },
    });
    expect(r.output).toEqual([
      {
        type: 'message',
        id: expect.stringMatching(/^msg_/),
        role: 'assistant',
        status: 'completed',
        content: [{ type: 'output_text', text: 'Hello from the agent.', annotations: [], logprobs: [] }],
      },
    ]);
    const { turn_id: turnId } = r as unknown as { turn_id: string };
    expect(r.id).toBe(`resp_${turnId.replace(/-/g, '')}`);
    const turn = (await api.get(`/v1/turns/${turnId}`)).body;
    expect(turn).toMatchObject({ status: 'completed', finalText: 'Hello from the agent.' });
    expect(r.created_at).toBe(Math.floor(Date.parse(turn.createdAt) / 1000));
    expect(r.completed_at).toBe(Math.floor(Date.parse(turn.completedAt) / 1000));
    // `instructions` is left out: the agent's own instructions are the system prompt.
    const sent = JSON.stringify(llm.requests[before].body);
    expect(sent).toContain('Be brief.');
    expect(sent).not.toContain('pirate');
    expect(conversationSent(before)).toEqual([['user', 'hi']]);

    // Retrieved later, the same response.
    expect(await client.responses.retrieve(r.id)).toEqual(r);
  });

  it('the agent’s own tool calls are reasoning output items; previous_response_id continues the session', async () => {
    llm.enqueue(
      { kind: 'message', toolCalls: [{ id: 'call_wc', name: 'word_count', arguments: '{"text":"a b c"}' }] },
      { kind: 'message', text: 'Three words.' },
      { kind: 'message', text: 'You asked about a b c.' },
    );
    const before = llm.requests.length;
    const first = await client.responses.create({
      model: 'helper',
      input: [{ role: 'user', content: 'count a b c' }],
    });
    expect(first.status).toBe('completed');
    expectResponseResource(first);
    expect(first.output.map((i) => i.type)).toEqual(['reasoning', 'message']);
    expect(first.output[0]).toMatchObject({
      type: 'reasoning',
      status: 'completed',
      summary: [{ type: 'summary_text', text: expect.stringMatching(/^Called word_count with /) }],
      switchboard_tool_call: { call_id: 'call_wc', name: 'word_count', status: 'completed', error: null },
    });
    const call = (
      first.output[0] as unknown as { switchboard_tool_call: { arguments: string; output: string } }
    ).switchboard_tool_call;
    expect(JSON.parse(call.arguments)).toEqual({ text: 'a b c' });
    expect(JSON.parse(call.output)).toMatchObject({ words: 3 });
    expect(first.output_text).toBe('Three words.');

    const second = await client.responses.create({
      model: 'helper',
      previous_response_id: first.id,
      input: [{ type: 'message', role: 'user', content: [{ type: 'input_text', text: 'what did I ask?' }] }],
    });
    expect(second.output_text).toBe('You asked about a b c.');
    expect(second.previous_response_id).toBe(first.id);
    const ids = [first, second].map((r) => (r as unknown as { session_id: string }).session_id);
    expect(ids[1]).toBe(ids[0]);
    // The model saw the earlier exchange, its tool round included.
    const conversation = conversationSent(before + 2);
    expect(conversation[0]).toEqual(['user', 'count a b c']);
    expect(conversation.at(-2)).toEqual(['assistant', 'Three words.']);
    expect(conversation.at(-1)).toEqual(['user', 'what did I ask?']);

    // Input items: the message the turn admitted.
    const items = await client.responses.inputItems.list(second.id);
    expect(
      ResponseInputItemList.parse((await api.get(`/v1/responses/${second.id}/input_items`)).body),
    ).toBeTruthy();
    expect(items.data).toEqual([
      {
        type: 'message',
        id: expect.stringMatching(/^msg_/),
        role: 'user',
        status: 'completed',
        content: [{ type: 'input_text', text: 'what did I ask?' }],
      },
    ]);
  });

  it('a new session is seeded with the input’s earlier messages; input_items lists them, paged', async () => {
    llm.enqueue({ kind: 'message', text: 'Blue, as you said.' });
    const before = llm.requests.length;
    const r = await client.responses.create({
      model: 'helper',
      input: [
        { role: 'system', content: 'ignored' },
        { role: 'user', content: 'my colour is blue' },
        { role: 'assistant', content: 'noted' },
        { role: 'user', content: 'what is my colour?' },
      ],
    });
    expect(r.output_text).toBe('Blue, as you said.');
    expect(conversationSent(before)).toEqual([
      ['user', 'my colour is blue'],
      ['assistant', 'noted'],
      ['user', 'what is my colour?'],
    ]);
    const texts = (page: { data: unknown[] }) =>
      page.data.map((i) => (i as { content: { text: string }[] }).content[0].text);
    const all = await client.responses.inputItems.list(r.id, { order: 'asc' });
    expect(texts(all)).toEqual(['my colour is blue', 'noted', 'what is my colour?']);
    expect(all.data.map((i) => (i as { role: string }).role)).toEqual(['user', 'assistant', 'user']);
    // Newest first by default; paged by `after`, and the SDK's auto-pagination follows has_more.
    const firstPage = await client.responses.inputItems.list(r.id, { limit: 2 });
    expect(texts(firstPage)).toEqual(['what is my colour?', 'noted']);
    expect(firstPage.has_more).toBe(true);
    const seen: string[] = [];
    for await (const item of client.responses.inputItems.list(r.id, { limit: 1 })) {
      seen.push((item as { content: { text: string }[] }).content[0].text);
    }
    expect(seen).toEqual(['what is my colour?', 'noted', 'my colour is blue']);
  });

  it('stream: true carries the semantic events in order, built from the turn’s live stream', async () => {
    llm.enqueue(
      {
        kind: 'message',
        text: 'Let me count.',
        toolCalls: [{ id: 'call_s', name: 'word_count', arguments: '{"text":"x y"}' }],
      },
      { kind: 'message', text: 'Two words, streamed.', textPieces: 4, frameIntervalMs: 150 },
    );
    const stream = await client.responses.create({ model: 'helper', input: 'count x y', stream: true });
    const events: { type: string; sequence_number: number; [k: string]: unknown }[] = [];
    for await (const e of stream) events.push(e as never);
    for (const e of events) expectStreamingEvent(e);
    const types = events.map((e) => e.type);
    expect(types.slice(0, 2)).toEqual(['response.created', 'response.in_progress']);
    expect(types.at(-1)).toBe('response.completed');
    // Numbers only grow.
    for (let i = 1; i < events.length; i++) {
      expect(events[i].sequence_number).toBeGreaterThan(events[i - 1].sequence_number);
    }
    // Three items: the first round's text, the tool call, the final answer.
    const compact = types.filter((t) => t !== 'response.output_text.delta');
    expect(compact).toEqual([
      'response.created',
      'response.in_progress',
      'response.output_item.added',
      'response.content_part.added',
      'response.output_text.done',
      'response.content_part.done',
      'response.output_item.done',
      'response.output_item.added',
      'response.reasoning_summary_part.added',
      'response.reasoning_summary_text.delta',
      'response.reasoning_summary_text.done',
      'response.reasoning_summary_part.done',
      'response.output_item.done',
      'response.output_item.added',
      'response.content_part.added',
      'response.output_text.done',
      'response.content_part.done',
      'response.output_item.done',
      'response.completed',
    ]);
    const deltas = (index: number) =>
      events
        .filter((e) => e.type === 'response.output_text.delta' && e.output_index === index)
        .map((e) => e.delta)
        .join('');
    expect(deltas(0)).toBe('Let me count.');
    expect(deltas(2)).toBe('Two words, streamed.');
    // Live: the final answer came in several deltas, as the provider streamed it.
    expect(
      events.filter((e) => e.type === 'response.output_text.delta' && e.output_index === 2).length,
    ).toBeGreaterThan(1);
    const toolDone = events.filter((e) => e.type === 'response.output_item.done')[1].item as Record<
      string,
      unknown
    >;
    expect(toolDone).toMatchObject({
      type: 'reasoning',
      status: 'completed',
      switchboard_tool_call: { name: 'word_count', status: 'completed' },
    });
    const completed = events.at(-1)!.response as OpenAI.Responses.Response;
    expect(completed.status).toBe('completed');
    expect(completed.output.map((i) => i.type)).toEqual(['message', 'reasoning', 'message']);

    // The same response retrieved: the same output; streamed again: the same events but the deltas
    // (one per round from the journal), numbered alike.
    const retrieved = await client.responses.retrieve(completed.id);
    expect(retrieved.output).toEqual(completed.output);
    const replay: typeof events = [];
    for await (const e of await client.responses.retrieve(completed.id, { stream: true }))
      replay.push(e as never);
    const structural = (list: typeof events) =>
      list.filter((e) => e.type !== 'response.output_text.delta').map((e) => [e.type, e.sequence_number]);
    expect(structural(replay)).toEqual(structural(events));

    // Resumed after any number a client saw: exactly what came after it.
    const cut = events.findIndex((e) => e.type === 'response.output_text.delta' && e.output_index === 2);
    const after = events[cut].sequence_number;
    const resumed: typeof events = [];
    for await (const e of await client.responses.retrieve(completed.id, {
      stream: true,
      starting_after: after,
    })) {
      resumed.push(e as never);
    }
    expect(resumed[0].sequence_number).toBeGreaterThan(after);
    const textAfter = (list: typeof events) =>
      list
        .filter((e) => e.type === 'response.output_text.delta' && e.output_index === 2)
        .map((e) => e.delta)
        .join('');
    expect((events[cut].delta as string) + textAfter(resumed)).toBe(textAfter(events.slice(cut)));
    expect(structural(resumed)).toEqual(structural(events).filter(([, n]) => (n as number) > after));
  });

  it('background: true answers at once; retrieve follows it to the end; cancel stops a long one', async () => {
    // The model takes its time, so the answer comes before the turn can end, however loaded the machine.
    llm.enqueue({ kind: 'message', text: 'Done in the background.', delayMs: 3000 });
    const queued = await client.responses.create({
      model: 'helper',
      input: 'take your time',
      background: true,
    });
    expect(['queued', 'in_progress']).toContain(queued.status);
    expect(queued.background).toBe(true);
    expect(queued.usage).toBeNull();
    const done = await waitFor(
      async () => {
        const r = await client.responses.retrieve(queued.id);
        return r.status === 'completed' ? r : undefined;
      },
      { what: 'the background response to complete' },
    );
    expect(done.output_text).toBe('Done in the background.');
    expect(done.background).toBe(true);

    // A long one: the model's stream stalls; cancel stops the turn.
    llm.enqueue({ kind: 'message', text: 'never finished', stallAfterFrames: 2 });
    const long = await client.responses.create({ model: 'helper', input: 'stall', background: true });
    await waitFor(async () => (await client.responses.retrieve(long.id)).status === 'in_progress', {
      what: 'the long response to start',
    });
    const cancelling = await client.responses.cancel(long.id);
    expect(['in_progress', 'cancelled']).toContain(cancelling.status);
    const cancelled = await waitFor(
      async () => {
        const r = await client.responses.retrieve(long.id);
        return r.status === 'cancelled' ? r : undefined;
      },
      { what: 'the long response to be cancelled' },
    );
    expect(cancelled.error).toMatchObject({ code: 'turn_cancelled' });
    const turn = (await api.get(`/v1/turns/${(cancelled as unknown as { turn_id: string }).turn_id}`)).body;
    expect(turn.status).toBe('cancelled');
    // Cancelling again answers it as it ended.
    expect((await client.responses.cancel(long.id)).status).toBe('cancelled');
  });

  it('Idempotency-Key: a retry answers with the same response and admits nothing new', async () => {
    llm.enqueue({ kind: 'message', text: 'once' });
    const before = llm.requests.length;
    const key = `resp-key-${Date.now()}`;
    // The openai client sends no Idempotency-Key of its own (its `idempotencyKey` option is a no-op here).
    const headers = { 'Idempotency-Key': key };
    const a = await client.responses.create({ model: 'helper', input: 'only once' }, { headers });
    const b = await client.responses.create({ model: 'helper', input: 'only once' }, { headers });
    expect(b.id).toBe(a.id);
    expect(b.output_text).toBe('once');
    expect(llm.requests.length).toBe(before + 1);
  });

  it('the AI SDK’s default openai(model) provider: generateText and streamText', async () => {
    // `ai` is ESM-only: the client runs in its own Node process (test/fixtures/clients).
    llm.enqueue(
      { kind: 'message', text: 'Generated by the agent.', usage: { input: 30, output: 5 } },
      { kind: 'message', text: 'Streamed by the agent.', textPieces: 3, frameIntervalMs: 150 },
    );
    const before = llm.requests.length;
    const out = await runProcess('node', [path.join(__dirname, '../fixtures/clients/ai-sdk-responses.mjs')], {
      env: { ...process.env, BASE_URL: `${url}/v1`, API_KEY: api.key!, MODEL: 'helper' },
      timeoutMs: 60_000,
    });
    expect(out.stderr).toBe('');
    expect(out.code).toBe(0);
    const result = JSON.parse(out.stdout.trim().split('\n').at(-1)!);
    expect(result.generate).toMatchObject({
      text: 'Generated by the agent.',
      finishReason: 'stop',
      usage: { inputTokens: 30, outputTokens: 5, totalTokens: 35 },
      responseId: expect.stringMatching(/^resp_/),
    });
    expect(result.stream.chunks.join('')).toBe('Streamed by the agent.');
    expect(result.stream.chunks.length).toBeGreaterThan(1);
    expect(result.stream.finishReason).toBe('stop');
    expect(conversationSent(before)).toEqual([['user', 'say something']]);
    expect(conversationSent(before + 1)).toEqual([['user', 'stream something']]);
  });

  it('the OpenAI Agents SDK runs an Agent whose model is a Switchboard agent', async () => {
    llm.enqueue({ kind: 'message', text: 'Hello from a Switchboard agent.' });
    const before = llm.requests.length;
    const agent = new Agent({
      name: 'front',
      instructions: 'Relay.',
      // The SDK depends on openai 7, this repository on 6: the same wire, different declared types.
      model: new OpenAIResponsesModel(
        client as unknown as ConstructorParameters<typeof OpenAIResponsesModel>[0],
        'helper',
      ),
    });
    const result = await run(agent, 'hello there');
    expect(result.finalOutput).toBe('Hello from a Switchboard agent.');
    expect(conversationSent(before)).toEqual([['user', 'hello there']]);

    // The agent's own tool call comes back as a reasoning item: the SDK shows it, runs nothing.
    llm.enqueue(
      {
        kind: 'message',
        toolCalls: [{ id: 'call_ag', name: 'word_count', arguments: '{"text":"p q r s"}' }],
      },
      { kind: 'message', text: 'Four words.' },
    );
    const withTool = await run(agent, 'count p q r s');
    expect(withTool.finalOutput).toBe('Four words.');
    const kinds = withTool.newItems.map((i) => i.type);
    expect(kinds).toEqual(['reasoning_item', 'message_output_item']);
    expect(withTool.newItems[0].rawItem).toMatchObject({ type: 'reasoning' });

    // Streamed through the SDK (stream: true on /v1/responses).
    llm.enqueue({
      kind: 'message',
      text: 'Streamed to the Agents SDK.',
      textPieces: 3,
      frameIntervalMs: 100,
    });
    const streamed = await run(agent, 'stream it', { stream: true });
    const text: string[] = [];
    for await (const chunk of streamed.toTextStream()) text.push(chunk);
    await streamed.completed;
    expect(text.join('')).toBe('Streamed to the Agents SDK.');
    expect(streamed.finalOutput).toBe('Streamed to the Agents SDK.');
  });

  it('a failed turn is the response with status failed, and response.failed on a stream', async () => {
    llm.enqueue({ kind: 'error', status: 400 });
    const failed = await client.responses.create({ model: 'helper', input: 'fail please' });
    expect(failed.status).toBe('failed');
    expect(failed.error).toMatchObject({ code: 'server_error', message: expect.stringContaining('failed') });
    expect(failed.usage).not.toBeNull();

    llm.enqueue({ kind: 'error', status: 400 });
    const events: { type: string; response?: { status: string } }[] = [];
    for await (const e of await client.responses.create({
      model: 'helper',
      input: 'fail again',
      stream: true,
    })) {
      events.push(e as never);
    }
    expect(events.map((e) => e.type)).toEqual([
      'response.created',
      'response.in_progress',
      'response.failed',
    ]);
    expect(events.at(-1)!.response!.status).toBe('failed');
  });

  it('the Open Responses compliance cases it supports: every field ResponseResource requires, every event numbered', async () => {
    // Derived from the Open Responses specification's OpenAPI document (ResponseResource's `required`)
    // and its compliance suite's request shapes (basic, streaming, system prompt, multi-turn); its
    // tool-calling and image cases are covered by the suite itself (test/e2e/open-responses-compliance).
    const REQUIRED = [
      'id',
      'object',
      'created_at',
      'completed_at',
      'status',
      'incomplete_details',
      'model',
      'previous_response_id',
      'instructions',
      'output',
      'error',
      'tools',
      'tool_choice',
      'truncation',
      'parallel_tool_calls',
      'text',
      'top_p',
      'presence_penalty',
      'frequency_penalty',
      'top_logprobs',
      'temperature',
      'reasoning',
      'user',
      'usage',
      'max_output_tokens',
      'max_tool_calls',
      'store',
      'background',
      'service_tier',
      'metadata',
      'safety_identifier',
      'prompt_cache_key',
    ];
    const cases = [
      [{ type: 'message', role: 'user', content: 'Say hello in exactly 3 words.' }],
      [
        { type: 'message', role: 'system', content: 'You are a pirate. Always respond in pirate speak.' },
        { type: 'message', role: 'user', content: 'Say hello.' },
      ],
      [
        { type: 'message', role: 'user', content: 'My name is Alice.' },
        {
          type: 'message',
          role: 'assistant',
          content: 'Hello Alice! Nice to meet you. How can I help you today?',
        },
        { type: 'message', role: 'user', content: 'What is my name?' },
      ],
    ];
    for (const input of cases) {
      llm.enqueue({ kind: 'message', text: 'Ahoy there, matey.' });
      const r = await api.post('/v1/responses', { model: 'helper', input });
      expect(r.status).toBe(200);
      expect(REQUIRED.filter((k) => !(k in r.body))).toEqual([]);
      expectResponseResource(r.body);
      expect(r.body.status).toBe('completed');
      expect(r.body.output.length).toBeGreaterThan(0);
    }
    llm.enqueue({ kind: 'message', text: '1, 2, 3, 4, 5.' });
    const res = await fetch(`${url}/v1/responses`, {
      method: 'POST',
      headers: { authorization: `Bearer ${api.key}`, 'content-type': 'application/json' },
      body: JSON.stringify({
        model: 'helper',
        input: [{ type: 'message', role: 'user', content: 'Count from 1 to 5.' }],
        stream: true,
      }),
    });
    expect(res.headers.get('content-type')).toMatch(/^text\/event-stream/);
    const frames = (await res.text()).split('\n\n').filter((f) => f.startsWith('event: '));
    const events = frames.map((f) => {
      const [eventLine, dataLine] = f.split('\n');
      const data = JSON.parse(dataLine.slice('data: '.length)) as { type: string; sequence_number: number };
      expect(eventLine).toBe(`event: ${data.type}`);
      return data;
    });
    expect(events.every((e) => Number.isInteger(e.sequence_number))).toBe(true);
    for (const e of events) expectStreamingEvent(e);
    const final = events.at(-1) as unknown as { type: string; response: Record<string, unknown> };
    expect(final.type).toBe('response.completed');
    expect(REQUIRED.filter((k) => !(k in final.response))).toEqual([]);
  });

  it('bad input: OpenAI-shaped 4xx, nothing admitted', async () => {
    const before = llm.requests.length;
    const turnsBefore = await env.db.turn.count();
    const missing = await client.responses.create({ model: 'nobody', input: 'hi' }).catch((e: unknown) => e);
    expect(missing).toBeInstanceOf(NotFoundError);
    expect((missing as NotFoundError).error).toMatchObject({ code: 'model_not_found', param: 'model' });

    const refuse = async (body: Record<string, unknown>, param: string | null) => {
      const r = await api.post('/v1/responses', { model: 'helper', ...body });
      expect(r.status).toBe(400);
      expect(r.body.error).toMatchObject({ type: 'invalid_request_error', param });
      expect(Object.keys(r.body)).toEqual(['error']);
    };
    await refuse({ input: [{ role: 'user', content: [{ type: 'text', text: 'x' }] }] }, 'input');
    await refuse({ input: [{ role: 'robot', content: 'x' }] }, 'input');
    await refuse({ input: [] }, 'input');
    await refuse({ input: [{ role: 'assistant', content: 'only me' }] }, 'input');
    // Client function tools (docs/adr/0047): a schema ajv cannot compile, another tool type.
    await refuse(
      {
        input: 'x',
        tools: [
          {
            type: 'function',
            name: 'f',
            parameters: { type: 'object', properties: { a: { type: 'nope' } } },
          },
        ],
      },
      'tools[0].parameters',
    );
    await refuse({ input: 'x', tools: [{ type: 'web_search' }] }, 'tools[0].type');
    await refuse({ input: [{ type: 'item_reference', id: 'msg_1' }] }, 'input[0].type');
    await refuse({ input: 'x', surprise: true }, null);

    const sdkRefused = await client.responses
      .create({
        model: 'helper',
        input: 'x',
        tools: [{ type: 'function', name: 'f', parameters: { type: 'object' }, strict: true }],
        // A named tool the request did not declare (forced choice itself is accepted, ADR 0047).
        tool_choice: { type: 'function', name: 'g' },
      })
      .catch((e: unknown) => e);
    expect(sdkRefused).toBeInstanceOf(BadRequestError);
    expect((sdkRefused as BadRequestError).error).toMatchObject({
      code: 'invalid_tool_choice',
      param: 'tool_choice',
    });

    const unknownPrevious = await client.responses
      .create({ model: 'helper', input: 'x', previous_response_id: 'resp_0123456789abcdef0123456789abcdef' })
      .catch((e: unknown) => e);
    expect(unknownPrevious).toBeInstanceOf(NotFoundError);
    expect((unknownPrevious as NotFoundError).error).toMatchObject({
      code: 'previous_response_not_found',
      param: 'previous_response_id',
    });
    const garbledPrevious = await api.post('/v1/responses', {
      model: 'helper',
      input: 'x',
      previous_response_id: 'nope',
    });
    expect(garbledPrevious.status).toBe(404);

    expect(llm.requests.length).toBe(before);
    expect(await env.db.turn.count()).toBe(turnsBefore);
  });

  it('another tenant’s response is 404 on every route; bad ids and starting_after are refused', async () => {
    llm.enqueue({ kind: 'message', text: 'mine' });
    const mine = await client.responses.create({ model: 'helper', input: 'private' });
    const theirs = new OpenAI({
      baseURL: `${url}/v1`,
      apiKey: other.key!,
      fetch: crossRealmSafeFetch,
      maxRetries: 0,
    });
    for (const attempt of [
      () => theirs.responses.retrieve(mine.id),
      () => theirs.responses.cancel(mine.id),
      () => theirs.responses.inputItems.list(mine.id),
    ]) {
      const e = await attempt().catch((err: unknown) => err);
      expect(e).toBeInstanceOf(NotFoundError);
      expect((e as NotFoundError).error).toMatchObject({ code: 'response_not_found' });
    }
    // Continuing it from the other tenant: its agent does not exist there, nor the response.
    await (
      await other.post('/v1/agents', { name: 'helper', model: 'openai-chat/gpt-4o-mini' })
    ).body;
    const cont = await other.post('/v1/responses', {
      model: 'helper',
      input: 'x',
      previous_response_id: mine.id,
    });
    expect(cont.status).toBe(404);
    expect(cont.body.error.code).toBe('previous_response_not_found');

    expect((await api.get('/v1/responses/resp_nothex')).status).toBe(404);
    expect((await api.get('/v1/responses/00000000-0000-4000-8000-000000000000')).status).toBe(404);
    for (const q of [
      'stream=true&starting_after=abc',
      'stream=true&starting_after=-5',
      'starting_after=3',
      'stream=maybe',
    ]) {
      const r = await api.get(`/v1/responses/${mine.id}?${q}`);
      expect(r.status).toBe(400);
      expect(r.body.error.type).toBe('invalid_request_error');
    }
    const badPage = await api.get(`/v1/responses/${mine.id}/input_items?limit=0`);
    expect(badPage.status).toBe(400);
    expect(badPage.body.error.param).toBe('limit');
    const badCursor = await api.get(`/v1/responses/${mine.id}/input_items?after=msg_nope`);
    expect(badCursor.status).toBe(400);
  });
});
