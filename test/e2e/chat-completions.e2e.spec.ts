import net from 'node:net';
import IORedis from 'ioredis';
import OpenAI, { APIError, AuthenticationError, BadRequestError, NotFoundError } from 'openai';
import { ChatCompletionChunk, ChatCompletionResponse, OpenAiErrorResponse } from '@switchboard/contracts';
import { sessionChannel } from '@switchboard/live';
import {
  createTestEnv,
  crossRealmSafeFetch,
  FakeLlmServer,
  spawnApp,
  waitFor,
  type AppProcess,
  type TestEnv,
} from '@switchboard/testing';
import { newTenant, type Api } from '../support/api';

/**
 * POST /v1/chat/completions with the stock `openai` client (docs/adr/0016), through real processes
 * (a gateway and a harness worker, each its own process): `model` names an agent, the conversation
 * is a session, the answer is the turn's; the agent runs against the fake LLM server (in this
 * process) through the real openai SDK on the provider side too. (test/e2e/openai-chat.e2e.spec.ts is
 * the other direction: the harness calling an OpenAI-compatible model.)
 */
jest.setTimeout(90_000);

const ADMIN = 'test-admin-token-0123456789';

describe('POST /v1/chat/completions with the openai client', () => {
  let env: TestEnv;
  let llm: FakeLlmServer;
  const processes: AppProcess[] = [];
  let url: string;
  let api: Api;
  let client: OpenAI;
  let agentId: string;

  const openai = (
    baseUrl: string,
    apiKey: string,
    options: Partial<ConstructorParameters<typeof OpenAI>[0]> = {},
  ) =>
    new OpenAI({ baseURL: `${baseUrl}/v1`, apiKey, fetch: crossRealmSafeFetch, maxRetries: 0, ...options });

  /** What the agent's model was sent, as (role, content) pairs after the system prompt. */
  const conversationSent = (i: number) =>
    (llm.requests[i].body as { messages: { role: string; content: string }[] }).messages
      .slice(1)
      .map((m) => [m.role, m.content]);

  /** A gateway process on a free port; its URL once it answers. */
  async function gatewayProcess(overrides: Record<string, string> = {}): Promise<string> {
    const server = net.createServer();
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const { port } = server.address() as net.AddressInfo;
    await new Promise((resolve) => server.close(resolve));
    processes.push(
      await spawnApp(
        'gateway',
        env.processEnv({ ...llm.providerEnv, PORT: String(port), HOST: '127.0.0.1', ...overrides }),
        { readyPattern: /Server listening at|successfully started/ },
      ),
    );
    const base = `http://127.0.0.1:${port}`;
    await waitFor(async () => (await fetch(`${base}/healthz`)).ok, { what: 'the gateway to listen' });
    return base;
  }

  beforeAll(async () => {
    env = await createTestEnv();
    llm = await FakeLlmServer.start();
    const [gateway, harness] = await Promise.all([
      gatewayProcess(),
      spawnApp('harness-worker', env.processEnv(llm.providerEnv)),
    ]);
    processes.push(harness);
    url = gateway;
    ({ api } = await newTenant(url, ADMIN));
    client = openai(url, api.key!);
    agentId = (
      await api.post('/v1/agents', {
        name: 'helper',
        model: 'openai-chat/gpt-4o-mini',
        instructions: 'Be brief.',
        tools: ['word_count'],
      })
    ).body.id;
  });

  afterAll(async () => {
    await Promise.all(processes.map((p) => p.kill('SIGTERM')));
    await llm?.close();
    await env?.cleanup();
  });

  it('answers with the final text and the turn’s usage; a new session comes back in X-Session-Id', async () => {
    llm.enqueue({
      kind: 'message',
      text: 'Hello from the agent.',
      usage: { input: 50, output: 7, cached: 10 },
    });
    const before = llm.requests.length;
    const { data, response } = await client.chat.completions
      .create({
        model: 'helper',
        messages: [
          { role: 'system', content: 'You are a pirate.' },
          { role: 'user', content: 'hi' },
        ],
        temperature: 0.2,
        max_tokens: 100,
        user: 'end-user-7',
      })
      .withResponse();
    expect(ChatCompletionResponse.parse(data)).toBeTruthy();
    expect(data.object).toBe('chat.completion');
    expect(data.choices).toEqual([
      {
        index: 0,
        message: { role: 'assistant', content: 'Hello from the agent.', refusal: null },
        logprobs: null,
        finish_reason: 'stop',
      },
    ]);
    expect(data.usage).toEqual({
      prompt_tokens: 50,
      completion_tokens: 7,
      total_tokens: 57,
      prompt_tokens_details: { cached_tokens: 10 },
    });
    expect(data.model).toBe('helper');
    const extra = data as unknown as { session_id: string; turn_id: string };
    expect(response.headers.get('x-session-id')).toBe(extra.session_id);
    expect(data.id).toBe(`chatcmpl-${extra.turn_id}`);

    // The same turn through the API: completed in the new session of the agent, by the operator.
    const turn = (await api.get(`/v1/turns/${extra.turn_id}`)).body;
    expect(turn).toMatchObject({
      status: 'completed',
      sessionId: extra.session_id,
      agentId,
      finalText: 'Hello from the agent.',
    });
    expect(data.created).toBe(Math.floor(Date.parse(turn.createdAt) / 1000));
    const transcript = (await api.get(`/v1/sessions/${extra.session_id}/messages`)).body.data;
    expect(transcript[0]).toMatchObject({
      role: 'user',
      kind: 'operator_prompt',
      authorityClass: 'operator_instruction',
      body: { type: 'text', text: 'hi' },
      metadata: { user: 'end-user-7' },
    });
    // The client's system message does not reach the model: the agent's instructions are its system prompt.
    expect(llm.requests.length).toBe(before + 1);
    const sent = llm.requests[before].body as { messages: { role: string; content: string }[] };
    expect(sent.messages[0].role).toBe('system');
    expect(sent.messages[0].content).toContain('Be brief.');
    expect(JSON.stringify(sent.messages)).not.toContain('pirate');
    expect(conversationSent(before)).toEqual([['user', 'hi']]);
  });

  it('continues a session named by X-Session-Id or metadata.session_id: the model sees the history', async () => {
    llm.enqueue(
      { kind: 'message', text: 'first answer' },
      { kind: 'message', text: 'second answer' },
      { kind: 'message', text: 'third answer' },
    );
    const before = llm.requests.length;
    const first = await client.chat.completions
      .create({ model: 'helper', messages: [{ role: 'user', content: 'one' }] })
      .withResponse();
    const sessionId = first.response.headers.get('x-session-id')!;
    // The client resends the whole conversation (as OpenAI clients do): only the new message is admitted.
    const second = await client.chat.completions
      .create(
        {
          model: 'helper',
          messages: [
            { role: 'user', content: 'one' },
            { role: 'assistant', content: 'first answer' },
            { role: 'user', content: 'two' },
          ],
        },
        { headers: { 'X-Session-Id': sessionId } },
      )
      .withResponse();
    expect(second.response.headers.get('x-session-id')).toBe(sessionId);
    expect(second.data.choices[0].message.content).toBe('second answer');
    expect(conversationSent(before + 1)).toEqual([
      ['user', 'one'],
      ['assistant', 'first answer'],
      ['user', 'two'],
    ]);
    // The same through OpenAI's own metadata field, by agent id this time.
    const third = await client.chat.completions.create({
      model: agentId,
      messages: [{ role: 'user', content: 'three' }],
      metadata: { session_id: sessionId, topic: 'counting' },
    });
    expect((third as unknown as { session_id: string }).session_id).toBe(sessionId);
    expect(conversationSent(before + 2)).toEqual([
      ['user', 'one'],
      ['assistant', 'first answer'],
      ['user', 'two'],
      ['assistant', 'second answer'],
      ['user', 'three'],
    ]);
    const transcript = (await api.get(`/v1/sessions/${sessionId}/messages`)).body.data;
    expect(transcript.filter((m: { role: string }) => m.role === 'user').at(-1).metadata).toEqual({
      topic: 'counting',
    });
  });

  it('seeds a new session with the earlier messages of the request', async () => {
    llm.enqueue({ kind: 'message', text: 'Your name is Ada.' });
    const before = llm.requests.length;
    const completion = await client.chat.completions.create({
      model: 'helper',
      messages: [
        { role: 'developer', content: 'Answer in French.' },
        { role: 'user', content: 'My name is Ada.' },
        { role: 'assistant', content: 'Nice to meet you, Ada.' },
        { role: 'user', content: [{ type: 'text', text: 'What is my name?' }] },
      ],
    });
    expect(completion.choices[0].message.content).toBe('Your name is Ada.');
    expect(conversationSent(before)).toEqual([
      ['user', 'My name is Ada.'],
      ['assistant', 'Nice to meet you, Ada.'],
      ['user', 'What is my name?'],
    ]);
    const sessionId = (completion as unknown as { session_id: string }).session_id;
    const transcript = (await api.get(`/v1/sessions/${sessionId}/messages`)).body.data;
    expect(
      transcript.map((m: { role: string; metadata: { imported?: string } }) => [m.role, m.metadata.imported]),
    ).toEqual([
      ['user', 'chat.completions'],
      ['assistant', 'chat.completions'],
      ['user', undefined],
      ['assistant', undefined],
    ]);
    // The history is the session's first turn, ended as imported; the request's message is the second.
    const imported = (await api.get(`/v1/turns/${transcript[0].turnId}`)).body;
    expect(imported).toMatchObject({ seq: 1, status: 'completed', stopReason: 'imported', iterations: 0 });
    expect(transcript[1].turnId).toBe(imported.id);
    const asked = (await api.get(`/v1/turns/${transcript[2].turnId}`)).body;
    expect(asked).toMatchObject({ seq: 2, finalText: 'Your name is Ada.' });
  });

  it('runs the agent’s own tools inside the turn: the client sees only the answer', async () => {
    llm.enqueue(
      {
        kind: 'message',
        toolCalls: [{ id: 'call_wc', name: 'word_count', arguments: '{"text":"alpha beta gamma"}' }],
        usage: { input: 100, output: 10 },
      },
      { kind: 'message', text: 'Three words.', usage: { input: 140, output: 4 } },
    );
    const completion = await client.chat.completions.create({
      model: 'helper',
      messages: [{ role: 'user', content: 'how many words in "alpha beta gamma"?' }],
    });
    expect(completion.choices[0].message).toEqual({
      role: 'assistant',
      content: 'Three words.',
      refusal: null,
    });
    expect(completion.choices[0].message.tool_calls).toBeUndefined();
    expect(completion.usage).toMatchObject({ prompt_tokens: 240, completion_tokens: 14, total_tokens: 254 });
    const turn = (await api.get(`/v1/turns/${(completion as unknown as { turn_id: string }).turn_id}`)).body;
    expect(turn.toolCalls).toEqual([
      expect.objectContaining({ name: 'word_count', result: { words: 3, characters: 16 } }),
    ]);
  });

  it('streams chat.completion.chunks: role first, deltas while the provider streams, usage, [DONE]', async () => {
    const text = 'Streaming is a sequence of small pieces of text arriving one after another.';
    llm.enqueue({
      kind: 'message',
      text,
      textPieces: 12,
      frameIntervalMs: 150,
      usage: { input: 30, output: 15 },
    });
    const { data: stream, response } = await client.chat.completions
      .create({
        model: 'helper',
        messages: [{ role: 'user', content: 'stream please' }],
        stream: true,
        stream_options: { include_usage: true },
      })
      .withResponse();
    expect(response.headers.get('content-type')).toContain('text/event-stream');
    const sessionId = response.headers.get('x-session-id');
    const chunks: { chunk: OpenAI.Chat.Completions.ChatCompletionChunk; at: number }[] = [];
    for await (const chunk of stream) chunks.push({ chunk, at: Date.now() });
    for (const { chunk } of chunks) expect(ChatCompletionChunk.parse(chunk)).toBeTruthy();

    const first = chunks[0].chunk;
    expect(first.choices[0].delta.role).toBe('assistant');
    const contents = chunks.flatMap(({ chunk }) => chunk.choices.map((c) => c.delta.content ?? ''));
    expect(contents.join('')).toBe(text);
    const finish = chunks.at(-2)!.chunk;
    expect(finish.choices[0].finish_reason).toBe('stop');
    const usage = chunks.at(-1)!.chunk;
    expect(usage.choices).toEqual([]);
    expect(usage.usage).toMatchObject({ prompt_tokens: 30, completion_tokens: 15, total_tokens: 45 });
    expect(chunks.slice(0, -1).every(({ chunk }) => chunk.usage === null)).toBe(true);
    const turnId = (first as unknown as { turn_id: string }).turn_id;
    expect(new Set(chunks.map(({ chunk }) => chunk.id))).toEqual(new Set([`chatcmpl-${turnId}`]));
    expect((first as unknown as { session_id: string }).session_id).toBe(sessionId);

    // Live: text arrived in several chunks, the first of them well before the turn completed.
    const turn = (await api.get(`/v1/turns/${turnId}`)).body;
    expect(turn.finalText).toBe(text);
    const textChunks = chunks.filter(({ chunk }) => (chunk.choices[0]?.delta.content ?? '') !== '');
    expect(textChunks.length).toBeGreaterThan(3);
    expect(textChunks[0].at).toBeLessThan(Date.parse(turn.completedAt) - 500);
  });

  /** Every chunk of a stream, and the text they carry. */
  async function drain(stream: AsyncIterable<OpenAI.Chat.Completions.ChatCompletionChunk>) {
    const chunks: OpenAI.Chat.Completions.ChatCompletionChunk[] = [];
    for await (const chunk of stream) chunks.push(chunk);
    return { chunks, text: chunks.map((c) => c.choices[0]?.delta.content ?? '').join('') };
  }

  it('streams what a tool round says too, set apart from the answer; the whole completion is the answer', async () => {
    llm.enqueue(
      {
        kind: 'message',
        text: 'Let me count.',
        toolCalls: [{ id: 'call_s', name: 'word_count', arguments: '{"text":"a b"}' }],
      },
      { kind: 'message', text: 'Two words.', textPieces: 3 },
    );
    const stream = await client.chat.completions.create({
      model: 'helper',
      messages: [{ role: 'user', content: 'count "a b"' }],
      stream: true,
    });
    const { chunks, text } = await drain(stream);
    expect(text).toBe('Let me count.\n\nTwo words.');
    expect(chunks.every((c) => c.choices.every((choice) => choice.delta.tool_calls === undefined))).toBe(
      true,
    );
    const turn = (await api.get(`/v1/turns/${(chunks[0] as unknown as { turn_id: string }).turn_id}`)).body;
    expect(turn.finalText).toBe('Two words.');
  });

  it('a stream of a turn that already ended (a keyed replay) carries its text from the journal', async () => {
    llm.enqueue({ kind: 'message', text: 'Said once, streamed twice.', textPieces: 4 });
    const request = {
      model: 'helper',
      messages: [{ role: 'user' as const, content: 'replay me' }],
      stream: true as const,
      stream_options: { include_usage: true },
    };
    const headers = { 'Idempotency-Key': 'stream-replay-1' };
    const first = await drain(await client.chat.completions.create(request, { headers }));
    const again = await drain(await client.chat.completions.create(request, { headers }));
    expect(first.text).toBe('Said once, streamed twice.');
    expect(again.text).toBe(first.text);
    expect(again.chunks[0].id).toBe(first.chunks[0].id);
    expect(again.chunks.at(-1)!.usage).toEqual(first.chunks.at(-1)!.usage);
  });

  it('a client that leaves mid-stream releases the session’s subscription; the turn still completes', async () => {
    llm.enqueue({
      kind: 'message',
      text: 'one two three four five six',
      textPieces: 6,
      frameIntervalMs: 200,
    });
    const { data: stream, response } = await client.chat.completions
      .create({ model: 'helper', messages: [{ role: 'user', content: 'then leave' }], stream: true })
      .withResponse();
    const sessionId = response.headers.get('x-session-id')!;
    let turnId = '';
    for await (const chunk of stream) {
      turnId = (chunk as unknown as { turn_id: string }).turn_id;
      if (chunk.choices[0]?.delta.content) break; // leaving: the SDK aborts the request
    }
    const redis = new IORedis(env.redisUrl);
    try {
      await waitFor(
        async () =>
          Number(
            (
              (await redis.pubsub('NUMSUB', sessionChannel(env.queuePrefix, sessionId))) as [string, number]
            )[1],
          ) === 0,
        { what: 'the gateway to unsubscribe' },
      );
    } finally {
      redis.disconnect();
    }
    const turn = await waitFor(async () => {
      const t = (await api.get(`/v1/turns/${turnId}`)).body;
      return t.status === 'completed' ? t : undefined;
    });
    expect(turn.finalText).toBe('one two three four five six');
  });

  it('Idempotency-Key: a retry gets the same turn (in the same new session), the model is called once', async () => {
    llm.enqueue({ kind: 'message', text: 'only once' });
    const before = llm.requests.length;
    const request = { model: 'helper', messages: [{ role: 'user' as const, content: 'exactly once' }] };
    const headers = { 'Idempotency-Key': 'chat-retry-1' };
    const a = await client.chat.completions.create(request, { headers });
    const b = await client.chat.completions.create(request, { headers });
    expect(b.id).toBe(a.id);
    expect((b as unknown as { session_id: string }).session_id).toBe(
      (a as unknown as { session_id: string }).session_id,
    );
    expect(b.choices[0].message.content).toBe('only once');
    expect(llm.requests.length).toBe(before + 1);
    // Another message with the key is refused (422), in OpenAI's shape.
    const reused = await client.chat.completions
      .create({ ...request, messages: [{ role: 'user', content: 'something else' }] }, { headers })
      .catch((e: unknown) => e);
    expect(reused).toBeInstanceOf(APIError);
    expect(reused).toMatchObject({ status: 422, code: 'idempotency_key_reused' });
  });

  it('a failing provider fails the turn: 502 turn_failed (not retried), or an error in the stream', async () => {
    llm.enqueue({ kind: 'error', status: 401 });
    const before = llm.requests.length;
    const retrying = openai(url, api.key!, { maxRetries: 2 });
    const failed = await retrying.chat.completions
      .create({ model: 'helper', messages: [{ role: 'user', content: 'fail please' }] })
      .catch((e: unknown) => e);
    expect(failed).toBeInstanceOf(APIError);
    expect(failed).toMatchObject({ status: 502, code: 'turn_failed', type: 'server_error' });
    expect((failed as APIError).message).toMatch(/turn [0-9a-f-]{36} failed \(provider_error/);
    // x-should-retry: false kept the SDK from admitting the message again.
    expect(llm.requests.length).toBe(before + 1);

    llm.enqueue({ kind: 'error', status: 401 });
    const stream = await client.chat.completions.create({
      model: 'helper',
      messages: [{ role: 'user', content: 'fail while streaming' }],
      stream: true,
    });
    const seen: unknown[] = [];
    const streamed = await (async () => {
      for await (const chunk of stream) seen.push(chunk);
    })().catch((e: unknown) => e);
    expect(streamed).toBeInstanceOf(APIError);
    expect(streamed).toMatchObject({ code: 'turn_failed', type: 'server_error' });
    expect(seen).toHaveLength(1); // the role chunk
  });

  it('an unknown model is a NotFoundError model_not_found', async () => {
    const err = await client.chat.completions
      .create({ model: 'gpt-4o', messages: [{ role: 'user', content: 'hi' }] })
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(NotFoundError);
    expect(err).toMatchObject({ status: 404, code: 'model_not_found', param: 'model' });
    // Another tenant's agent is unknown too.
    const other = await newTenant(url, ADMIN, 'other');
    const theirs = openai(url, other.api.key!);
    await expect(
      theirs.chat.completions.create({ model: 'helper', messages: [{ role: 'user', content: 'hi' }] }),
    ).rejects.toBeInstanceOf(NotFoundError);
  });

  it('a bad key is an AuthenticationError, in OpenAI’s error shape', async () => {
    const err = await openai(url, 'sb_not-a-key')
      .chat.completions.create({ model: 'helper', messages: [{ role: 'user', content: 'hi' }] })
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(AuthenticationError);
    expect(err).toMatchObject({ status: 401, code: 'invalid_api_key' });
    const raw = await fetch(`${url}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'helper', messages: [{ role: 'user', content: 'hi' }] }),
    });
    expect(raw.status).toBe(401);
    expect(OpenAiErrorResponse.parse(await raw.json()).error).toMatchObject({
      type: 'authentication_error',
      code: 'invalid_api_key',
      param: null,
    });
  });

  it('bad bodies are BadRequestErrors that say what is wrong', async () => {
    const cases: [
      string,
      Record<string, unknown>,
      { code: string; param?: string | null; message: RegExp },
    ][] = [
      [
        'a client tool named like the agent’s own',
        { tools: [{ type: 'function', function: { name: 'word_count', parameters: {} } }] },
        { code: 'tool_name_clash', param: 'tools[0].function.name', message: /word_count/ },
      ],
      [
        'a named tool_choice that is not among the tools',
        { tool_choice: { type: 'function', function: { name: 'word_count' } } },
        { code: 'invalid_tool_choice', param: 'tool_choice', message: /word_count/ },
      ],
      ['n: 2', { n: 2 }, { code: 'unsupported_value', param: 'n', message: /one choice/ }],
      [
        'a response format whose schema is no JSON Schema',
        {
          response_format: {
            type: 'json_schema',
            json_schema: { name: 'x', schema: { type: 'object', required: 'a' } },
          },
        },
        { code: 'invalid_response_format', param: 'response_format', message: /required/ },
      ],
      [
        'a conversation ending with the assistant',
        {
          messages: [
            { role: 'user', content: 'hi' },
            { role: 'assistant', content: 'hello' },
          ],
        },
        { code: 'invalid_value', param: 'messages', message: /end with a user message/ },
      ],
      [
        'only a system message',
        { messages: [{ role: 'system', content: 'be nice' }] },
        { code: 'invalid_value', param: 'messages', message: /end with a user message/ },
      ],
      [
        'a tool result',
        {
          messages: [
            { role: 'user', content: 'hi' },
            { role: 'tool', content: '{}', tool_call_id: 'c' },
          ],
        },
        // A tool result answers a call the facade handed out (docs/adr/0047): `c` is none.
        { code: 'unknown_call', param: 'messages', message: /the id c$/ },
      ],
      [
        'an image part',
        {
          messages: [
            { role: 'user', content: [{ type: 'image_url', image_url: { url: 'https://x/y.png' } }] },
          ],
        },
        { code: 'unsupported_value', param: 'messages[0].content[0].type', message: /image_url parts/ },
      ],
      [
        'no messages',
        { messages: [] },
        { code: 'validation_failed', param: 'messages', message: /messages/ },
      ],
      ['an unknown field', { colour: 'red' }, { code: 'validation_failed', message: /colour/ }],
      ['a non-string model', { model: 42 }, { code: 'validation_failed', param: 'model', message: /model/ }],
      [
        'a stream flag of the wrong type',
        { stream: 'yes' },
        { code: 'validation_failed', param: 'stream', message: /stream/ },
      ],
      [
        'a session id that is not a UUID',
        { metadata: { session_id: 'nope' } },
        { code: 'session_not_found', message: /session nope not found/ },
      ],
    ];
    const failures: string[] = [];
    for (const [name, change, expected] of cases) {
      const body = { model: 'helper', messages: [{ role: 'user', content: 'hi' }], ...change };
      const err = await client.chat.completions
        .create(body as unknown as OpenAI.Chat.Completions.ChatCompletionCreateParamsNonStreaming)
        .catch((e: unknown) => e);
      const status = ['session_not_found', 'unknown_call'].includes(expected.code)
        ? NotFoundError
        : BadRequestError;
      if (!(err instanceof status)) {
        failures.push(`${name}: ${String(err)}`);
        continue;
      }
      const e = err as APIError;
      if (e.code !== expected.code) failures.push(`${name}: code ${e.code}`);
      if (expected.param !== undefined && e.param !== expected.param)
        failures.push(`${name}: param ${e.param}`);
      if (!expected.message.test(e.message)) failures.push(`${name}: message ${e.message}`);
    }
    expect(failures).toEqual([]);

    // Not JSON at all, in OpenAI's shape too.
    const raw = await fetch(`${url}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${api.key}` },
      body: '{"model":',
    });
    expect(raw.status).toBe(400);
    expect(OpenAiErrorResponse.parse(await raw.json()).error).toMatchObject({ code: 'invalid_json' });
  });

  it('a session of another agent, or a closed one, is refused', async () => {
    const other = (await api.post('/v1/agents', { name: 'other', model: 'openai-chat/gpt-4o-mini' })).body.id;
    const otherSession = (await api.post('/v1/sessions', { agentId: other })).body.id;
    const mismatch = await client.chat.completions
      .create(
        { model: 'helper', messages: [{ role: 'user', content: 'hi' }] },
        { headers: { 'X-Session-Id': otherSession } },
      )
      .catch((e: unknown) => e);
    expect(mismatch).toBeInstanceOf(BadRequestError);
    expect(mismatch).toMatchObject({ code: 'model_session_mismatch', param: 'model' });
    await api.delete(`/v1/sessions/${otherSession}`);
    const closed = await openai(url, api.key!, { maxRetries: 2 })
      .chat.completions.create(
        { model: 'other', messages: [{ role: 'user', content: 'hi' }] },
        { headers: { 'X-Session-Id': otherSession } },
      )
      .catch((e: unknown) => e);
    expect(closed).toMatchObject({ status: 409, code: 'session_closed' });
  });

  it('a gateway that shuts down answers its held requests at once: 503 server_shutting_down, or that error in the stream', async () => {
    const leaving = await gatewayProcess();
    const process_ = processes.at(-1)!;
    const before = llm.requests.length;
    llm.enqueue(
      { kind: 'message', text: 'too late', delayMs: 4000 },
      { kind: 'message', text: 'too late', delayMs: 4000 },
    );
    const held = openai(leaving, api.key!)
      .chat.completions.create(
        { model: 'helper', messages: [{ role: 'user', content: 'hold on' }] },
        { headers: { 'Idempotency-Key': 'shutdown-1' } },
      )
      .catch((e: unknown) => e);
    const stream = await openai(leaving, api.key!).chat.completions.create({
      model: 'helper',
      messages: [{ role: 'user', content: 'stream on' }],
      stream: true,
    });
    const streamed = (async () => {
      for await (const _ of stream) void _;
    })().catch((e: unknown) => e);
    // Both turns are at the model (each is a new session, so they run side by side).
    await waitFor(async () => llm.requests.length >= before + 2, { what: 'both turns to call the model' });
    const started = Date.now();
    await process_.kill('SIGTERM');
    const [answer, error] = await Promise.all([held, streamed]);
    expect(Date.now() - started).toBeLessThan(3000);
    expect(answer).toBeInstanceOf(APIError);
    expect(answer).toMatchObject({ status: 503, code: 'server_shutting_down' });
    // With an Idempotency-Key a retry (on another replica) waits for the same turn.
    expect((answer as APIError).headers?.get('x-should-retry')).toBe('true');
    expect(error).toBeInstanceOf(APIError);
    expect(error).toMatchObject({ code: 'server_shutting_down' });
  });

  it('a turn that outlasts WAIT_TIMEOUT_MS is a 408 turn_timeout naming the turn; a keyed retry waits again', async () => {
    const short = await gatewayProcess({ WAIT_TIMEOUT_MS: '400' });
    llm.enqueue({ kind: 'message', text: 'late but there', delayMs: 1500 });
    const err = await openai(short, api.key!)
      .chat.completions.create(
        { model: 'helper', messages: [{ role: 'user', content: 'take your time' }] },
        { headers: { 'Idempotency-Key': 'slow-1' } },
      )
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(APIError);
    expect(err).toMatchObject({ status: 408, code: 'turn_timeout' });
    const turnId = (err as APIError).headers?.get('x-turn-id');
    expect((err as APIError).message).toContain(`turn ${turnId} did not end`);
    expect((err as APIError).headers?.get('x-should-retry')).toBe('true');
    // The SDK's own retries (408 with the same key) wait for the same turn until it answers.
    const retried = await openai(short, api.key!, { maxRetries: 5 }).chat.completions.create(
      { model: 'helper', messages: [{ role: 'user', content: 'take your time' }] },
      { headers: { 'Idempotency-Key': 'slow-1' } },
    );
    expect(retried.id).toBe(`chatcmpl-${turnId}`);
    expect(retried.choices[0].message.content).toBe('late but there');
  });

  it('lists the tenant’s agents as models and retrieves one by name (GET /v1/models)', async () => {
    const { api: other } = await newTenant(url, ADMIN, 'models');
    const models = openai(url, other.key!);
    expect((await models.models.list()).data).toEqual([]);
    for (const name of ['first', 'second', 'first']) {
      expect((await other.post('/v1/agents', { name, model: 'openai-chat/gpt-4o-mini' })).status).toBe(201);
    }
    const listed = (await models.models.list()).data;
    // One model per name, the most recent first; nothing of another tenant (this file's `helper`).
    expect(listed.map((m) => m.id)).toEqual(['first', 'second']);
    expect(listed[0]).toEqual({
      id: 'first',
      object: 'model',
      created: expect.any(Number),
      owned_by: 'switchboard',
    });
    expect(await models.models.retrieve('second')).toMatchObject({ id: 'second', object: 'model' });
    // Errors in OpenAI's shape: the stock client raises its own error classes.
    await expect(models.models.retrieve('helper')).rejects.toBeInstanceOf(OpenAI.NotFoundError);
    await expect(models.models.retrieve('no-such-agent')).rejects.toMatchObject({
      status: 404,
      code: 'model_not_found',
      param: 'model',
    });
    await expect(openai(url, 'sb_not_a_key').models.list()).rejects.toBeInstanceOf(
      OpenAI.AuthenticationError,
    );
  });
});
