import { crossRealmSafeFetch, FakeLlmServer, scripted } from '@switchboard/testing';
import { strictViolations, ToolRegistry } from '@switchboard/tools';
import { AnthropicProvider } from './anthropic';
import { OpenAIChatProvider } from './openai-chat';
import { OpenAIResponsesProvider } from './openai-responses';
import { ProviderError, type ChatMessage, type ModelProvider, type ToolSpec } from './types';

/**
 * Every SDK-backed provider, through the real `openai` and `@anthropic-ai/sdk`
 * clients, against a local server speaking their wire formats: the same
 * provider-neutral request and answer, and the same failure classes.
 */
const TOOLS: ToolSpec[] = [
  {
    name: 'word_count',
    description: 'Counts words',
    parameters: { type: 'object', properties: { text: { type: 'string' } }, required: ['text'] },
  },
];

const HISTORY: ChatMessage[] = [
  { role: 'system', content: 'Be brief.' },
  { role: 'user', content: 'count: a b c' },
  {
    role: 'assistant',
    content: '',
    toolCalls: [
      { id: 'c1', name: 'word_count', arguments: '{"text":"a b c"}' },
      { id: 'c2', name: 'word_count', arguments: '{"text":"d"}' },
    ],
  },
  { role: 'tool', toolCallId: 'c1', name: 'word_count', content: '{"ok":true,"result":{"words":3}}' },
  { role: 'tool', toolCallId: 'c2', name: 'word_count', content: '{"ok":true,"result":{"words":1}}' },
];

type Kind = 'openai-chat' | 'openai' | 'anthropic';
const make = (kind: Kind, server: FakeLlmServer, timeoutMs?: number): ModelProvider => {
  switch (kind) {
    case 'openai-chat':
      return new OpenAIChatProvider({
        apiKey: 'k',
        baseURL: server.openaiBaseUrl,
        timeoutMs,
        fetch: crossRealmSafeFetch,
      });
    case 'openai':
      return new OpenAIResponsesProvider({
        apiKey: 'k',
        baseURL: server.openaiBaseUrl,
        timeoutMs,
        fetch: crossRealmSafeFetch,
      });
    case 'anthropic':
      return new AnthropicProvider({ apiKey: 'k', baseURL: server.anthropicBaseUrl, timeoutMs });
  }
};

describe.each<Kind>(['openai-chat', 'openai', 'anthropic'])('%s provider', (kind) => {
  let server: FakeLlmServer;
  beforeEach(async () => {
    server = await FakeLlmServer.start();
  });
  afterEach(async () => {
    await server.close();
  });

  const failure = async (reply: Parameters<FakeLlmServer['enqueue']>[0], timeoutMs?: number) => {
    server.enqueue(reply);
    const err = await make(kind, server, timeoutMs)
      .complete({ model: 'm', messages: HISTORY.slice(0, 2), tools: [] })
      .then(
        () => undefined,
        (e: unknown) => e,
      );
    expect(err).toBeInstanceOf(ProviderError);
    return err as ProviderError;
  };

  it('streams text and tool calls into the neutral answer, with usage', async () => {
    server.enqueue(
      scripted.toolCall(
        'word_count',
        { text: 'x y' },
        { id: 'call_9', text: 'Counting.', usage: { input: 50, output: 7, cached: 10 } },
      ),
    );
    const deltas: string[] = [];
    const r = await make(kind, server).complete({
      model: 'm',
      messages: HISTORY.slice(0, 2),
      tools: TOOLS,
      onTextDelta: (d) => deltas.push(d),
    });
    expect(r.text).toBe('Counting.');
    expect(deltas.join('')).toBe('Counting.');
    expect(r.toolCalls).toEqual([{ id: 'call_9', name: 'word_count', arguments: expect.any(String) }]);
    expect(JSON.parse(r.toolCalls[0].arguments)).toEqual({ text: 'x y' });
    expect(r.finishReason).toBe('tool_calls');
    expect(r.usage).toEqual({ inputTokens: 50, outputTokens: 7, cachedTokens: 10, cacheWriteTokens: 0 });
    expect(server.requests[0].stream).toBe(true);
  });

  it('sends a forced tool choice in the provider’s own shape, and none when not asked', async () => {
    const wire = {
      'openai-chat': ['required', { type: 'function', function: { name: 'word_count' } }],
      openai: ['required', { type: 'function', name: 'word_count' }],
      anthropic: [{ type: 'any' }, { type: 'tool', name: 'word_count' }],
    }[kind];
    const p = make(kind, server);
    for (const toolChoice of [{ type: 'required' }, { type: 'tool', name: 'word_count' }] as const) {
      server.enqueue(scripted.toolCall('word_count', { text: 'x' }, { id: 'call_1' }));
      await p.complete({ model: 'm', messages: HISTORY.slice(0, 2), tools: TOOLS, toolChoice });
    }
    server.enqueue(scripted.text('free'));
    await p.complete({ model: 'm', messages: HISTORY.slice(0, 2), tools: TOOLS });
    const sent = server.requests.map((r) => (r.body as { tool_choice?: unknown }).tool_choice);
    expect(sent).toEqual([...wire, undefined]);
  });

  it('sends tool calls and their results back in the provider’s own shape', async () => {
    server.enqueue(scripted.text('Four words.'));
    const r = await make(kind, server).complete({ model: 'm', messages: HISTORY, tools: TOOLS });
    expect(r.text).toBe('Four words.');
    expect(r.finishReason).toBe('stop');
    const body = server.requests[0].body as Record<string, any>;
    if (kind === 'openai-chat') {
      expect(body.messages.map((m: { role: string }) => m.role)).toEqual([
        'system',
        'user',
        'assistant',
        'tool',
        'tool',
      ]);
      expect(body.messages[3]).toMatchObject({ tool_call_id: 'c1' });
    } else if (kind === 'openai') {
      expect(body.instructions).toBe('Be brief.');
      expect(body.input.map((i: { type?: string; role?: string }) => i.type ?? i.role)).toEqual([
        'user',
        'function_call',
        'function_call',
        'function_call_output',
        'function_call_output',
      ]);
      expect(body.input[3]).toMatchObject({ call_id: 'c1', output: '{"ok":true,"result":{"words":3}}' });
      expect(body.tools[0]).toMatchObject({ type: 'function', name: 'word_count', strict: false });
    } else {
      expect(body.system).toBe('Be brief.');
      // Consecutive tool results travel in one user message, as Anthropic requires.
      expect(body.messages.map((m: { role: string }) => m.role)).toEqual(['user', 'assistant', 'user']);
      expect(body.messages[1].content.map((b: { type: string }) => b.type)).toEqual(['tool_use', 'tool_use']);
      expect(body.messages[1].content[0]).toMatchObject({ id: 'c1', input: { text: 'a b c' } });
      expect(body.messages[2].content).toEqual([
        { type: 'tool_result', tool_use_id: 'c1', content: '{"ok":true,"result":{"words":3}}' },
        { type: 'tool_result', tool_use_id: 'c2', content: '{"ok":true,"result":{"words":1}}' },
      ]);
      expect(body.tools[0]).toMatchObject({ name: 'word_count', input_schema: TOOLS[0].parameters });
    }
  });

  it('sends a user message’s images in the provider’s own shape (docs/adr/0035)', async () => {
    server.enqueue(scripted.text('A dot.'));
    const png = 'data:image/png;base64,iVBORw0KGgo=';
    await make(kind, server).complete({
      model: 'm',
      messages: [
        { role: 'system', content: 'Be brief.' },
        {
          role: 'user',
          content: 'What is this?',
          images: [{ url: png, detail: 'low' }, { url: 'https://img.test/b.jpg' }],
        },
      ],
      tools: [],
    });
    const body = server.requests[0].body as Record<string, any>;
    if (kind === 'openai-chat') {
      expect(body.messages[1].content).toEqual([
        { type: 'text', text: 'What is this?' },
        { type: 'image_url', image_url: { url: png, detail: 'low' } },
        { type: 'image_url', image_url: { url: 'https://img.test/b.jpg' } },
      ]);
    } else if (kind === 'openai') {
      expect(body.input[0].content).toEqual([
        { type: 'input_text', text: 'What is this?' },
        { type: 'input_image', image_url: png, detail: 'low' },
        { type: 'input_image', image_url: 'https://img.test/b.jpg', detail: 'auto' },
      ]);
    } else {
      expect(body.messages[0].content).toEqual([
        { type: 'text', text: 'What is this?' },
        { type: 'image', source: { type: 'base64', media_type: 'image/png', data: 'iVBORw0KGgo=' } },
        { type: 'image', source: { type: 'url', url: 'https://img.test/b.jpg' } },
      ]);
    }
  });

  it('classifies 429 as retryable rate limiting and keeps retry-after', async () => {
    const e = await failure(scripted.rateLimited(3));
    expect(e).toMatchObject({ kind: 'rate_limited', retryable: true });
    expect(e.details.retryAfterMs).toBe(3000);
  });

  it('classifies 401 as a permanent auth failure', async () => {
    expect(await failure(scripted.error(401))).toMatchObject({ kind: 'auth', retryable: false });
  });

  it('classifies 500 as a retryable server failure', async () => {
    expect(await failure(scripted.error(500))).toMatchObject({ kind: 'server', retryable: true });
  });

  it('recognises the provider’s context-length error', async () => {
    const reply =
      kind === 'anthropic' ? scripted.anthropicPromptTooLong() : scripted.openAiContextLengthExceeded();
    expect(await failure(reply)).toMatchObject({ kind: 'context_length', retryable: false });
  });

  it('times out a hung connection as a retryable timeout', async () => {
    expect(await failure(scripted.hang(), 300)).toMatchObject({ kind: 'timeout', retryable: true });
  });

  it('reports a stream the caller aborts mid-answer as cancelled, not as a bad response', async () => {
    // The SDKs end an aborted stream quietly, as if the server had cut it short.
    // Frames up to and including the first text delta: role, text (chat); created, in_progress,
    // item added, part added, text (responses); message, ping, block start, text (anthropic).
    const upToText = { 'openai-chat': 2, openai: 5, anthropic: 4 }[kind];
    server.enqueue({ kind: 'message', text: 'working on it', stallAfterFrames: upToText });
    const controller = new AbortController();
    const err = await make(kind, server)
      .complete({
        model: 'm',
        messages: HISTORY.slice(0, 2),
        tools: [],
        signal: controller.signal,
        // Aborted once the answer has begun to stream.
        onTextDelta: () => controller.abort(),
      })
      .then(
        () => undefined,
        (e: unknown) => e,
      );
    expect(err).toMatchObject({ kind: 'cancelled', retryable: false });
  });

  it('rejects a malformed response', async () => {
    const e = await failure(scripted.malformed());
    expect(e).toMatchObject({ kind: 'invalid_response', retryable: false });
    expect(e.details.diagnostics?.stage).toBe('decode');
  });
});

describe('strict tool schemas in each provider’s request', () => {
  let server: FakeLlmServer;
  beforeEach(async () => {
    server = await FakeLlmServer.start();
  });
  afterEach(async () => {
    await server.close();
  });

  it.each<Kind>(['openai-chat', 'openai', 'anthropic'])(
    '%s sends every built-in tool in strict mode',
    async (kind) => {
      const registry = new ToolRegistry();
      const specs = registry.specsFor(registry.names(), 'strict');
      expect(specs.length).toBeGreaterThan(0);
      server.enqueue(scripted.text('ok'));
      await make(kind, server).complete({ model: 'm', messages: HISTORY.slice(0, 2), tools: specs });
      const tools = (server.requests[0].body as { tools: Record<string, any>[] }).tools;
      expect(tools).toHaveLength(specs.length);
      for (const t of tools) {
        const schema =
          kind === 'openai-chat' ? t.function.parameters : kind === 'openai' ? t.parameters : t.input_schema;
        expect(strictViolations(schema)).toEqual([]);
        expect(kind === 'openai-chat' ? t.function.strict : t.strict).toBe(true);
      }
    },
  );
});
