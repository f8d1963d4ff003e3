import Anthropic from '@anthropic-ai/sdk';
import OpenAI from 'openai';
import { crossRealmSafeFetch, FakeLlmServer, scripted, type ScriptedReply } from './fake-llm-server';

const MODEL_OPENAI = 'gpt-test';
const MODEL_ANTHROPIC = 'claude-test';

const CHAT_TOOLS: OpenAI.Chat.Completions.ChatCompletionTool[] = [
  {
    type: 'function',
    function: {
      name: 'get_weather',
      description: 'Weather for a city',
      parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] },
    },
  },
];

const RESPONSES_TOOLS: OpenAI.Responses.Tool[] = [
  {
    type: 'function',
    name: 'get_weather',
    description: 'Weather for a city',
    parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] },
    strict: false,
  },
];

const ANTHROPIC_TOOLS: Anthropic.Messages.Tool[] = [
  {
    name: 'get_weather',
    description: 'Weather for a city',
    input_schema: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] },
  },
];

const WEATHER_ARGS = '{"city":"Paris","units":"celsius","days":[1,2,3]}';

type ClientOptions = { timeout?: number; quiet?: boolean };

function openaiClient(server: FakeLlmServer, options: ClientOptions = {}): OpenAI {
  return new OpenAI({
    apiKey: 'test',
    baseURL: server.openaiBaseUrl,
    maxRetries: 0,
    // openai@6 misclassifies its own timeouts under Jest's separate realm; see crossRealmSafeFetch.
    fetch: crossRealmSafeFetch,
    ...(options.timeout === undefined ? {} : { timeout: options.timeout }),
    ...(options.quiet ? { logLevel: 'off' as const } : {}),
  });
}

function anthropicClient(server: FakeLlmServer, options: ClientOptions = {}): Anthropic {
  return new Anthropic({
    apiKey: 'test',
    baseURL: server.anthropicBaseUrl,
    maxRetries: 0,
    ...(options.timeout === undefined ? {} : { timeout: options.timeout }),
    ...(options.quiet ? { logLevel: 'off' as const } : {}),
  });
}

async function drain<T>(iterable: AsyncIterable<T>): Promise<T[]> {
  const items: T[] = [];
  for await (const item of iterable) items.push(item);
  return items;
}

async function caught(promise: Promise<unknown>): Promise<unknown> {
  try {
    await promise;
  } catch (err) {
    return err;
  }
  throw new Error('expected the call to fail');
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** Read the provider-specific `usage.cost` extension without `any`. */
function costOf(usage: unknown): unknown {
  return isRecord(usage) ? usage['cost'] : undefined;
}

describe('FakeLlmServer', () => {
  let server: FakeLlmServer;

  beforeEach(async () => {
    server = await FakeLlmServer.start();
  });

  afterEach(async () => {
    await server.close();
  });

  it('exposes base URLs and records requests', async () => {
    expect(server.url).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
    expect(server.openaiBaseUrl).toBe(`${server.url}/v1`);
    expect(server.anthropicBaseUrl).toBe(server.url);

    server.enqueue(scripted.text('hi'));
    await openaiClient(server).chat.completions.create({
      model: MODEL_OPENAI,
      messages: [{ role: 'user', content: 'hello' }],
    });

    expect(server.requests).toHaveLength(1);
    const [request] = server.requests;
    expect(request).toMatchObject({
      method: 'POST',
      path: '/v1/chat/completions',
      endpoint: 'openai.chat.completions',
      stream: false,
      body: { model: MODEL_OPENAI, messages: [{ role: 'user', content: 'hello' }] },
    });
    expect(request?.headers['authorization']).toBe('Bearer test');
    expect(JSON.parse(request?.rawBody ?? '')).toEqual(request?.body);
    expect(server.pendingReplies).toBe(0);
  });

  describe('OpenAI Chat Completions', () => {
    it('returns text and a tool call (non-stream)', async () => {
      server.enqueue({
        kind: 'message',
        text: 'Checking the weather.',
        toolCalls: [{ id: 'call_abc', name: 'get_weather', arguments: WEATHER_ARGS }],
        usage: { input: 120, output: 30, cached: 100 },
        costUsd: 0.0042,
      });

      const completion = await openaiClient(server).chat.completions.create({
        model: MODEL_OPENAI,
        messages: [{ role: 'user', content: 'Weather in Paris?' }],
        tools: CHAT_TOOLS,
      });

      expect(completion.object).toBe('chat.completion');
      expect(completion.model).toBe(MODEL_OPENAI);
      const choice = completion.choices[0];
      expect(choice?.finish_reason).toBe('tool_calls');
      expect(choice?.message.content).toBe('Checking the weather.');
      expect(choice?.message.tool_calls).toEqual([
        { id: 'call_abc', type: 'function', function: { name: 'get_weather', arguments: WEATHER_ARGS } },
      ]);
      expect(completion.usage).toMatchObject({
        prompt_tokens: 120,
        completion_tokens: 30,
        total_tokens: 150,
        prompt_tokens_details: { cached_tokens: 100 },
      });
      expect(costOf(completion.usage)).toBe(0.0042);
    });

    it('streams chunked tool_call deltas that reassemble, plus a final usage chunk', async () => {
      const secondArgs = '{"query":"umbrella shops near the Louvre"}';
      server.enqueue({
        kind: 'message',
        text: 'Let me look that up for you.',
        toolCalls: [
          { name: 'get_weather', arguments: WEATHER_ARGS },
          { id: 'call_second', name: 'search', arguments: secondArgs },
        ],
        usage: { input: 50, output: 12, cached: 8 },
        costUsd: 0.001,
      });

      const stream = await openaiClient(server).chat.completions.create({
        model: MODEL_OPENAI,
        messages: [{ role: 'user', content: 'Weather in Paris?' }],
        tools: CHAT_TOOLS,
        stream: true,
        stream_options: { include_usage: true },
      });
      const chunks = await drain(stream);

      let text = '';
      let finishReason: string | null = null;
      let textChunks = 0;
      const calls = new Map<number, { id?: string; name?: string; args: string; argChunks: number }>();
      for (const chunk of chunks) {
        expect(chunk.object).toBe('chat.completion.chunk');
        for (const choice of chunk.choices) {
          if (choice.delta.content) {
            text += choice.delta.content;
            textChunks += 1;
          }
          for (const delta of choice.delta.tool_calls ?? []) {
            const call = calls.get(delta.index) ?? { args: '', argChunks: 0 };
            if (delta.id) call.id = delta.id;
            if (delta.function?.name) call.name = delta.function.name;
            if (delta.function?.arguments) {
              call.args += delta.function.arguments;
              call.argChunks += 1;
            }
            calls.set(delta.index, call);
          }
          finishReason = choice.finish_reason ?? finishReason;
        }
      }

      expect(chunks[0]?.choices[0]?.delta.role).toBe('assistant');
      expect(text).toBe('Let me look that up for you.');
      expect(textChunks).toBeGreaterThan(1);
      expect(finishReason).toBe('tool_calls');
      expect(calls.get(0)).toMatchObject({ name: 'get_weather', args: WEATHER_ARGS });
      expect(calls.get(0)?.id).toMatch(/^call_/);
      expect(calls.get(1)).toMatchObject({ id: 'call_second', name: 'search', args: secondArgs });
      expect(calls.get(0)?.argChunks).toBeGreaterThan(1);
      expect(calls.get(1)?.argChunks).toBeGreaterThan(1);

      const usageChunk = chunks.at(-1);
      expect(usageChunk?.choices).toEqual([]);
      expect(usageChunk?.usage).toMatchObject({
        prompt_tokens: 50,
        completion_tokens: 12,
        prompt_tokens_details: { cached_tokens: 8 },
      });
      expect(costOf(usageChunk?.usage)).toBe(0.001);
      expect(chunks.slice(0, -1).every((chunk) => chunk.usage === null)).toBe(true);
    });

    it('streams plain text with finish_reason stop and no usage chunk unless asked', async () => {
      server.enqueue(scripted.text('Just text.'));

      const stream = await openaiClient(server).chat.completions.create({
        model: MODEL_OPENAI,
        messages: [{ role: 'user', content: 'hi' }],
        stream: true,
      });
      const chunks = await drain(stream);

      expect(chunks.map((chunk) => chunk.choices[0]?.delta.content ?? '').join('')).toBe('Just text.');
      expect(chunks.at(-1)?.choices[0]?.finish_reason).toBe('stop');
      expect(chunks.some((chunk) => chunk.usage)).toBe(false);
      expect(server.requests[0]?.stream).toBe(true);
    });

    it('streams the text in `textPieces` deltas, `frameIntervalMs` apart', async () => {
      server.enqueue(scripted.text('abcdefghij', { textPieces: 10, frameIntervalMs: 20 }));

      const started = Date.now();
      const stream = await openaiClient(server).chat.completions.create({
        model: MODEL_OPENAI,
        messages: [{ role: 'user', content: 'hi' }],
        stream: true,
      });
      const arrivals: { text: string; at: number }[] = [];
      for await (const chunk of stream) {
        const text = chunk.choices[0]?.delta.content;
        if (text) arrivals.push({ text, at: Date.now() - started });
      }

      expect(arrivals.map((a) => a.text)).toEqual('abcdefghij'.split(''));
      // Spread over the stream, not delivered at once at its end.
      expect(arrivals[9].at - arrivals[0].at).toBeGreaterThanOrEqual(150);
    });

    it('reports each streamed frame to `onFrame` before it is written, paced or not', async () => {
      const seen: string[] = [];
      server.onFrame = (frame) => seen.push(frame);
      server.enqueue(
        scripted.text('abc', { textPieces: 3, frameIntervalMs: 5 }),
        scripted.text('xy', { textPieces: 2 }),
      );
      const client = openaiClient(server);
      const texts: string[] = [];
      for (let i = 0; i < 2; i++) {
        const stream = await client.chat.completions.create({
          model: MODEL_OPENAI,
          messages: [{ role: 'user', content: 'hi' }],
          stream: true,
        });
        for await (const chunk of stream) {
          const text = chunk.choices[0]?.delta.content;
          // A frame is reported no later than the client reads it.
          if (text) expect(seen.filter((f) => f.includes(`"content":"${text}"`))).toHaveLength(1);
          if (text) texts.push(text);
        }
      }

      expect(texts).toEqual(['a', 'b', 'c', 'x', 'y']);
      // role, pieces, finish, [DONE] for each stream.
      expect(seen).toHaveLength(6 + 5);
      expect(seen.filter((f) => f === 'data: [DONE]\n\n')).toHaveLength(2);
    });

    it('is compatible with the SDK stream helper (finalChatCompletion)', async () => {
      server.enqueue(scripted.toolCall('get_weather', { city: 'Oslo' }, { text: 'One sec.', id: 'call_x' }));

      const runner = openaiClient(server).chat.completions.stream({
        model: MODEL_OPENAI,
        messages: [{ role: 'user', content: 'Weather in Oslo?' }],
        tools: CHAT_TOOLS,
      });
      const completion = await runner.finalChatCompletion();

      expect(completion.choices[0]?.message.content).toBe('One sec.');
      expect(completion.choices[0]?.message.tool_calls).toEqual([
        { id: 'call_x', type: 'function', function: { name: 'get_weather', arguments: '{"city":"Oslo"}' } },
      ]);
      expect(completion.choices[0]?.finish_reason).toBe('tool_calls');
    });
  });

  describe('OpenAI Responses', () => {
    it('returns a message and a function call (non-stream)', async () => {
      server.enqueue({
        kind: 'message',
        text: 'Calling the tool.',
        toolCalls: [{ id: 'call_resp', name: 'get_weather', arguments: WEATHER_ARGS }],
        usage: { input: 90, output: 20, cached: 64 },
        costUsd: 0.0031,
      });

      const response = await openaiClient(server).responses.create({
        model: MODEL_OPENAI,
        input: 'Weather in Paris?',
        tools: RESPONSES_TOOLS,
      });

      expect(response.object).toBe('response');
      expect(response.status).toBe('completed');
      expect(response.output_text).toBe('Calling the tool.');
      expect(response.output.map((item) => item.type)).toEqual(['message', 'function_call']);
      const call = response.output.find((item) => item.type === 'function_call');
      expect(call).toMatchObject({ call_id: 'call_resp', name: 'get_weather', arguments: WEATHER_ARGS });
      expect(response.usage).toMatchObject({
        input_tokens: 90,
        output_tokens: 20,
        total_tokens: 110,
        input_tokens_details: { cached_tokens: 64 },
      });
      expect(costOf(response.usage)).toBe(0.0031);
    });

    it('streams typed events with sequence numbers and split argument deltas', async () => {
      server.enqueue({
        kind: 'message',
        text: 'Looking it up.',
        toolCalls: [{ name: 'get_weather', arguments: WEATHER_ARGS }],
        usage: { input: 40, output: 9, cached: 16 },
      });

      const stream = await openaiClient(server).responses.create({
        model: MODEL_OPENAI,
        input: 'Weather in Paris?',
        tools: RESPONSES_TOOLS,
        stream: true,
      });
      const events = await drain(stream);
      const types = events.map((event) => event.type);

      expect(events.map((event) => event.sequence_number)).toEqual(events.map((_, i) => i));
      expect(types[0]).toBe('response.created');
      expect(types.at(-1)).toBe('response.completed');
      for (const required of [
        'response.output_item.added',
        'response.output_text.delta',
        'response.function_call_arguments.delta',
        'response.output_item.done',
      ]) {
        expect(types).toContain(required);
      }

      let text = '';
      let args = '';
      let argDeltas = 0;
      for (const event of events) {
        if (event.type === 'response.output_text.delta') text += event.delta;
        if (event.type === 'response.function_call_arguments.delta') {
          args += event.delta;
          argDeltas += 1;
        }
      }
      expect(text).toBe('Looking it up.');
      expect(args).toBe(WEATHER_ARGS);
      expect(argDeltas).toBeGreaterThan(1);

      const added = events.find(
        (event) => event.type === 'response.output_item.added' && event.item.type === 'function_call',
      );
      expect(added?.type === 'response.output_item.added' && added.item).toMatchObject({
        type: 'function_call',
        name: 'get_weather',
        arguments: '',
      });
      const done = events.find(
        (event) => event.type === 'response.output_item.done' && event.item.type === 'function_call',
      );
      expect(done?.type === 'response.output_item.done' && done.item).toMatchObject({
        name: 'get_weather',
        arguments: WEATHER_ARGS,
        call_id: expect.stringMatching(/^call_/),
      });

      const completed = events.at(-1);
      expect(completed?.type === 'response.completed' && completed.response.usage).toMatchObject({
        input_tokens: 40,
        output_tokens: 9,
        input_tokens_details: { cached_tokens: 16 },
      });
    });

    it('is compatible with the SDK stream helper (finalResponse)', async () => {
      server.enqueue(scripted.toolCall('get_weather', { city: 'Rome' }, { text: 'Sure.', id: 'call_rome' }));

      const response = await openaiClient(server)
        .responses.stream({ model: MODEL_OPENAI, input: 'Weather in Rome?', tools: RESPONSES_TOOLS })
        .finalResponse();

      expect(response.output_text).toBe('Sure.');
      expect(response.output[1]).toMatchObject({
        type: 'function_call',
        call_id: 'call_rome',
        name: 'get_weather',
        arguments: '{"city":"Rome"}',
      });
    });
  });

  describe('Anthropic Messages', () => {
    it('returns text and tool_use blocks (non-stream)', async () => {
      server.enqueue({
        kind: 'message',
        text: 'Let me check.',
        toolCalls: [{ id: 'toolu_1', name: 'get_weather', arguments: WEATHER_ARGS }],
        usage: { input: 200, output: 25, cached: 150 },
        costUsd: 0.002,
      });

      const message = await anthropicClient(server).messages.create({
        model: MODEL_ANTHROPIC,
        max_tokens: 512,
        messages: [{ role: 'user', content: 'Weather in Paris?' }],
        tools: ANTHROPIC_TOOLS,
      });

      expect(message.type).toBe('message');
      expect(message.role).toBe('assistant');
      expect(message.model).toBe(MODEL_ANTHROPIC);
      expect(message.stop_reason).toBe('tool_use');
      expect(message.content).toMatchObject([
        { type: 'text', text: 'Let me check.' },
        { type: 'tool_use', id: 'toolu_1', name: 'get_weather', input: JSON.parse(WEATHER_ARGS) },
      ]);
      // Anthropic excludes cache reads from input_tokens.
      expect(message.usage).toMatchObject({
        input_tokens: 50,
        cache_read_input_tokens: 150,
        output_tokens: 25,
      });
      expect(costOf(message.usage)).toBe(0.002);
      // @anthropic-ai/sdk 1.x sends the API key as a bearer token, not as x-api-key.
      expect(server.requests[0]?.headers['authorization']).toBe('Bearer test');
      expect(server.requests[0]?.headers['anthropic-version']).toEqual(expect.any(String));
      expect(server.requests[0]?.path).toBe('/v1/messages');
    });

    it('streams events that MessageStream.finalMessage() assembles', async () => {
      server.enqueue({
        kind: 'message',
        text: 'Checking now.',
        toolCalls: [{ name: 'get_weather', arguments: WEATHER_ARGS }],
        usage: { input: 30, output: 14, cached: 10 },
        costUsd: 0.0005,
      });

      const stream = anthropicClient(server).messages.stream({
        model: MODEL_ANTHROPIC,
        max_tokens: 512,
        messages: [{ role: 'user', content: 'Weather in Paris?' }],
        tools: ANTHROPIC_TOOLS,
      });
      const eventTypes: string[] = [];
      const jsonPieces: string[] = [];
      let finalDeltaCost: unknown;
      stream.on('streamEvent', (event) => {
        eventTypes.push(event.type);
        if (event.type === 'message_delta') finalDeltaCost = costOf(event.usage);
      });
      stream.on('inputJson', (partial) => jsonPieces.push(partial));
      const message = await stream.finalMessage();

      expect(eventTypes[0]).toBe('message_start');
      expect(eventTypes.slice(-2)).toEqual(['message_delta', 'message_stop']);
      for (const required of ['content_block_start', 'content_block_delta', 'content_block_stop']) {
        expect(eventTypes).toContain(required);
      }
      expect(jsonPieces.filter((piece) => piece !== '').length).toBeGreaterThan(1);
      expect(jsonPieces.join('')).toBe(JSON.stringify(JSON.parse(WEATHER_ARGS)));

      expect(message.stop_reason).toBe('tool_use');
      expect(message.content).toHaveLength(2);
      expect(message.content[0]).toMatchObject({ type: 'text', text: 'Checking now.' });
      expect(message.content[1]).toMatchObject({
        type: 'tool_use',
        id: expect.stringMatching(/^toolu_/),
        name: 'get_weather',
        input: JSON.parse(WEATHER_ARGS),
      });
      expect(message.usage).toMatchObject({
        input_tokens: 20,
        cache_read_input_tokens: 10,
        output_tokens: 14,
      });
      // The cost extension lives on the final message_delta usage (MessageStream does not copy unknown fields).
      expect(finalDeltaCost).toBe(0.0005);
    });

    it('streams plain text ending with end_turn', async () => {
      server.enqueue(scripted.text('Hello there!'));

      const stream = anthropicClient(server).messages.stream({
        model: MODEL_ANTHROPIC,
        max_tokens: 64,
        messages: [{ role: 'user', content: 'hi' }],
      });
      const deltas: string[] = [];
      stream.on('text', (delta) => deltas.push(delta));
      const message = await stream.finalMessage();

      expect(deltas.length).toBeGreaterThan(1);
      expect(deltas.join('')).toBe('Hello there!');
      expect(message.stop_reason).toBe('end_turn');
      expect(message.content).toEqual([{ type: 'text', text: 'Hello there!', citations: null }]);
    });

    it('rejects tool arguments that are not JSON with a clear 500', async () => {
      server.enqueue({ kind: 'message', toolCalls: [{ name: 'broken', arguments: '{nope' }] });

      const err = await caught(
        anthropicClient(server).messages.create({
          model: MODEL_ANTHROPIC,
          max_tokens: 64,
          messages: [{ role: 'user', content: 'hi' }],
        }),
      );

      expect(err).toBeInstanceOf(Anthropic.InternalServerError);
      expect(String(err)).toContain('not valid JSON');
    });
  });

  type Call = (server: FakeLlmServer, options: ClientOptions & { stream: boolean }) => Promise<unknown>;

  interface ProviderCase {
    name: string;
    call: Call;
    errors: {
      APIError: abstract new (...args: never[]) => {
        headers: { get(name: string): string | null } | undefined;
      };
      RateLimitError: abstract new (...args: never[]) => unknown;
      AuthenticationError: abstract new (...args: never[]) => unknown;
      InternalServerError: abstract new (...args: never[]) => unknown;
      BadRequestError: abstract new (...args: never[]) => unknown;
      APIConnectionError: abstract new (...args: never[]) => unknown;
      APIConnectionTimeoutError: abstract new (...args: never[]) => unknown;
    };
    contextLength: ScriptedReply;
    expectContextLength: (err: unknown) => void;
  }

  const openaiErrors = {
    APIError: OpenAI.APIError,
    RateLimitError: OpenAI.RateLimitError,
    AuthenticationError: OpenAI.AuthenticationError,
    InternalServerError: OpenAI.InternalServerError,
    BadRequestError: OpenAI.BadRequestError,
    APIConnectionError: OpenAI.APIConnectionError,
    APIConnectionTimeoutError: OpenAI.APIConnectionTimeoutError,
  };

  const expectOpenAiContextLength = (err: unknown): void => {
    expect(err).toBeInstanceOf(OpenAI.BadRequestError);
    if (!(err instanceof OpenAI.BadRequestError)) return;
    expect(err.status).toBe(400);
    expect(err.code).toBe('context_length_exceeded');
    expect(err.type).toBe('invalid_request_error');
    expect(err.message).toContain('maximum context length');
  };

  const providers: ProviderCase[] = [
    {
      name: 'openai chat.completions',
      call: async (s, { stream, ...options }) => {
        const client = openaiClient(s, options);
        const messages: OpenAI.Chat.Completions.ChatCompletionMessageParam[] = [
          { role: 'user', content: 'hi' },
        ];
        if (!stream) return client.chat.completions.create({ model: MODEL_OPENAI, messages });
        return drain(await client.chat.completions.create({ model: MODEL_OPENAI, messages, stream: true }));
      },
      errors: openaiErrors,
      contextLength: scripted.openAiContextLengthExceeded(),
      expectContextLength: expectOpenAiContextLength,
    },
    {
      name: 'openai responses',
      call: async (s, { stream, ...options }) => {
        const client = openaiClient(s, options);
        if (!stream) return client.responses.create({ model: MODEL_OPENAI, input: 'hi' });
        return drain(await client.responses.create({ model: MODEL_OPENAI, input: 'hi', stream: true }));
      },
      errors: openaiErrors,
      contextLength: scripted.openAiContextLengthExceeded(),
      expectContextLength: expectOpenAiContextLength,
    },
    {
      name: 'anthropic messages',
      call: async (s, { stream, ...options }) => {
        const client = anthropicClient(s, options);
        const params = {
          model: MODEL_ANTHROPIC,
          max_tokens: 64,
          messages: [{ role: 'user' as const, content: 'hi' }],
        };
        if (!stream) return client.messages.create(params);
        return client.messages.stream(params).finalMessage();
      },
      errors: {
        APIError: Anthropic.APIError,
        RateLimitError: Anthropic.RateLimitError,
        AuthenticationError: Anthropic.AuthenticationError,
        InternalServerError: Anthropic.InternalServerError,
        BadRequestError: Anthropic.BadRequestError,
        APIConnectionError: Anthropic.APIConnectionError,
        APIConnectionTimeoutError: Anthropic.APIConnectionTimeoutError,
      },
      contextLength: scripted.anthropicPromptTooLong(),
      expectContextLength: (err) => {
        expect(err).toBeInstanceOf(Anthropic.BadRequestError);
        if (!(err instanceof Anthropic.BadRequestError)) return;
        expect(err.status).toBe(400);
        expect(err.type).toBe('invalid_request_error');
        expect(err.apiMessage).toMatch(/^prompt is too long/);
        expect(err.message).toContain('prompt is too long');
      },
    },
  ];

  describe.each(providers)('failure kinds: $name', ({ call, errors, contextLength, expectContextLength }) => {
    it.each([false, true])(
      '429 surfaces as RateLimitError with retry-after visible (stream=%s)',
      async (stream) => {
        server.enqueue(scripted.rateLimited(1));

        const err = await caught(call(server, { stream }));

        expect(err).toBeInstanceOf(errors.RateLimitError);
        expect(err).toBeInstanceOf(errors.APIError);
        if (!(err instanceof errors.APIError)) return;
        expect(err.headers?.get('retry-after')).toBe('1');
        expect(server.requests).toHaveLength(1);
      },
    );

    it('401 surfaces as AuthenticationError', async () => {
      server.enqueue({ kind: 'error', status: 401 });
      expect(await caught(call(server, { stream: false }))).toBeInstanceOf(errors.AuthenticationError);
    });

    it('500 surfaces as InternalServerError', async () => {
      server.enqueue({ kind: 'error', status: 500 });
      expect(await caught(call(server, { stream: true }))).toBeInstanceOf(errors.InternalServerError);
    });

    it('context-length 400 surfaces as BadRequestError with the provider code/message', async () => {
      server.enqueue(contextLength);
      expectContextLength(await caught(call(server, { stream: false })));
    });

    it.each([false, true])('hang aborts with the SDK timeout (stream=%s)', async (stream) => {
      server.enqueue({ kind: 'hang' });
      const err = await caught(call(server, { stream, timeout: 300, quiet: true }));
      expect(err).toBeInstanceOf(errors.APIConnectionTimeoutError);
    });

    it('a streaming delay happens before the first byte, so the client timeout applies', async () => {
      server.enqueue({ kind: 'message', text: 'too late', delayMs: 10_000 });
      const err = await caught(call(server, { stream: true, timeout: 300, quiet: true }));
      expect(err).toBeInstanceOf(errors.APIConnectionTimeoutError);
    });

    it.each([false, true])('malformed body surfaces as an error (stream=%s)', async (stream) => {
      server.enqueue({ kind: 'malformed' });
      const err = await caught(call(server, { stream, quiet: true }));
      // Non-stream bodies are parsed by undici's `response.json()`, whose SyntaxError comes from the host
      // realm under Jest (so no `instanceof Error` here); streams are parsed by the SDK itself.
      expect(isRecord(err) || err instanceof Error).toBe(true);
      expect(String(err)).toMatch(/JSON/);
    });

    it('answers a clear 500 when the script runs out', async () => {
      const err = await caught(call(server, { stream: false }));
      expect(err).toBeInstanceOf(errors.InternalServerError);
      expect(String(err)).toContain('script ran out');
    });

    it('close() ends a hanging request', async () => {
      server.enqueue({ kind: 'hang' });
      const pending = caught(call(server, { stream: false, quiet: true }));
      await server.waitForRequests(1);

      await server.close();

      expect(await pending).toBeInstanceOf(errors.APIConnectionError);
    });
  });

  describe('scripting', () => {
    it('consumes replies FIFO across endpoints, then falls back to setDefault', async () => {
      server.enqueue(scripted.text('first'), scripted.text('second'));
      server.setDefault((req) => scripted.text(`default for ${req.path}`));
      const openai = openaiClient(server);
      const anthropic = anthropicClient(server);

      const first = await openai.chat.completions.create({
        model: MODEL_OPENAI,
        messages: [{ role: 'user', content: 'a' }],
      });
      const second = await anthropic.messages.create({
        model: MODEL_ANTHROPIC,
        max_tokens: 16,
        messages: [{ role: 'user', content: 'b' }],
      });
      const third = await openai.responses.create({ model: MODEL_OPENAI, input: 'c' });

      expect(first.choices[0]?.message.content).toBe('first');
      expect(second.content).toEqual([{ type: 'text', text: 'second', citations: null }]);
      expect(third.output_text).toBe('default for /v1/responses');
      expect(server.requests.map((req) => req.endpoint)).toEqual([
        'openai.chat.completions',
        'anthropic.messages',
        'openai.responses',
      ]);
    });

    it('waits delayMs before answering', async () => {
      server.enqueue({ kind: 'message', text: 'slow', delayMs: 60 });
      const started = Date.now();

      const completion = await openaiClient(server).chat.completions.create({
        model: MODEL_OPENAI,
        messages: [{ role: 'user', content: 'hi' }],
      });

      expect(completion.choices[0]?.message.content).toBe('slow');
      expect(Date.now() - started).toBeGreaterThanOrEqual(55);
    });

    it('estimates usage when none is scripted', async () => {
      server.enqueue(scripted.text('12345678'));
      const completion = await openaiClient(server).chat.completions.create({
        model: MODEL_OPENAI,
        messages: [{ role: 'user', content: 'hi' }],
      });
      expect(completion.usage?.completion_tokens).toBe(2);
      expect(completion.usage?.prompt_tokens).toBeGreaterThan(0);
      expect(completion.usage?.prompt_tokens_details?.cached_tokens).toBe(0);
      expect(costOf(completion.usage)).toBeUndefined();
    });
  });
});
