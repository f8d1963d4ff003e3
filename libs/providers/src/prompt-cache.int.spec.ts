import { crossRealmSafeFetch, FakeLlmServer, type RecordedRequest } from '@switchboard/testing';
import { AnthropicProvider } from './anthropic';
import { OpenAIChatProvider } from './openai-chat';
import { OpenAIResponsesProvider } from './openai-responses';
import { cacheSavingsUsd, costOf } from './pricing';
import type { ChatMessage, ModelProvider, ModelResponse, PromptCache, ToolSpec } from './types';

/**
 * Prompt caching on the wire (docs/adr/0032), through the real `openai` and `@anthropic-ai/sdk`
 * clients against the fake server simulating each provider's prefix cache: where the breakpoints and
 * the cache key go, and the cached-read and cache-write tokens each provider reports, streamed.
 */
const TOOLS: ToolSpec[] = [
  {
    name: 'lookup',
    description: 'Looks a word up',
    parameters: { type: 'object', properties: { word: { type: 'string' } }, required: ['word'] },
  },
  {
    name: 'word_count',
    description: 'Counts words',
    parameters: { type: 'object', properties: { text: { type: 'string' } }, required: ['text'] },
  },
];

// Over 1024 tokens (4 characters each in the fake's estimate): a prefix both providers cache.
const SYSTEM = `You are a careful assistant. ${'Follow the house rules to the letter. '.repeat(130)}`;

const ROUND_1: ChatMessage[] = [
  { role: 'system', content: SYSTEM },
  { role: 'user', content: 'count: a b c' },
];
const ROUND_2: ChatMessage[] = [
  ...ROUND_1,
  {
    role: 'assistant',
    content: '',
    toolCalls: [{ id: 'c1', name: 'word_count', arguments: '{"text":"a b c"}' }],
  },
  { role: 'tool', toolCallId: 'c1', name: 'word_count', content: '{"ok":true,"result":{"words":3}}' },
];

type Kind = 'openai-chat' | 'openai' | 'anthropic';
const make = (kind: Kind, server: FakeLlmServer): ModelProvider => {
  const openai = { apiKey: 'k', baseURL: server.openaiBaseUrl, fetch: crossRealmSafeFetch };
  if (kind === 'openai-chat') return new OpenAIChatProvider(openai);
  if (kind === 'openai') return new OpenAIResponsesProvider(openai);
  return new AnthropicProvider({ apiKey: 'k', baseURL: server.anthropicBaseUrl });
};

const body = (r: RecordedRequest | undefined) => r?.body as Record<string, unknown>;

describe('prompt caching on the wire', () => {
  let server: FakeLlmServer;
  beforeEach(async () => {
    server = await FakeLlmServer.start();
    server.simulatePromptCache();
    server.setDefault({ kind: 'message', text: 'ok' });
  });
  afterEach(() => server.close());

  const call = (kind: Kind, messages: ChatMessage[], cache?: PromptCache): Promise<ModelResponse> =>
    make(kind, server).complete({
      model: 'claude-sonnet-4-5',
      messages,
      tools: TOOLS,
      ...(cache ? { cache } : {}),
    });

  describe('Anthropic Messages', () => {
    it('puts breakpoints on the last tool, the system prompt and the latest message; no ttl for short', async () => {
      await call('anthropic', ROUND_2, { key: 'k1', retention: 'short' });
      const b = body(server.requests[0]);
      const tools = b['tools'] as Record<string, unknown>[];
      expect(tools[0]).not.toHaveProperty('cache_control');
      expect(tools[1]['cache_control']).toEqual({ type: 'ephemeral' });
      expect(b['system']).toEqual([{ type: 'text', text: SYSTEM, cache_control: { type: 'ephemeral' } }]);
      const messages = b['messages'] as { role: string; content: Record<string, unknown>[] }[];
      // The two tool results' user message is the latest: its last block carries the breakpoint.
      const last = messages[messages.length - 1];
      expect(last.role).toBe('user');
      expect(last.content[last.content.length - 1]['cache_control']).toEqual({ type: 'ephemeral' });
      // Exactly three breakpoints (the API allows four).
      expect(server.requests[0].rawBody.match(/"cache_control"/g)).toHaveLength(3);
      // Earlier messages carry none, and a string message became one text block for it.
      expect(JSON.stringify(messages.slice(0, -1))).not.toContain('cache_control');
    });

    it('asks for the 1 h lifetime on every breakpoint for long retention, and reports 1 h writes', async () => {
      const r = await call('anthropic', ROUND_1, { key: 'k1', retention: 'long' });
      const b = body(server.requests[0]);
      expect((b['tools'] as Record<string, unknown>[])[1]['cache_control']).toEqual({
        type: 'ephemeral',
        ttl: '1h',
      });
      expect((b['system'] as Record<string, unknown>[])[0]['cache_control']).toEqual({
        type: 'ephemeral',
        ttl: '1h',
      });
      const messages = b['messages'] as { content: Record<string, unknown>[] }[];
      expect(messages[0].content).toEqual([
        { type: 'text', text: 'count: a b c', cache_control: { type: 'ephemeral', ttl: '1h' } },
      ]);
      expect(r.usage.cacheWriteTokens).toBeGreaterThan(1024);
      expect(r.usage.cacheWrite1hTokens).toBe(r.usage.cacheWriteTokens);
    });

    it('writes the prefix on the first round and reads it on the next; input counts every prompt token', async () => {
      const first = await call('anthropic', ROUND_1, { key: 'k1', retention: 'short' });
      expect(first.usage.cachedTokens).toBe(0);
      expect(first.usage.cacheWriteTokens).toBeGreaterThan(1024);
      expect(first.usage.inputTokens).toBeGreaterThanOrEqual(first.usage.cacheWriteTokens!);
      expect(first.usage.cacheWrite1hTokens).toBeUndefined();

      const second = await call('anthropic', ROUND_2, { key: 'k1', retention: 'short' });
      // The whole first request (up to its breakpoint on the user message) is read back.
      expect(second.usage.cachedTokens).toBe(first.usage.cacheWriteTokens);
      // Only the round's new blocks are written.
      expect(second.usage.cacheWriteTokens).toBeGreaterThan(0);
      expect(second.usage.cacheWriteTokens).toBeLessThan(200);
      expect(second.usage.inputTokens).toBeGreaterThanOrEqual(
        second.usage.cachedTokens + second.usage.cacheWriteTokens!,
      );
    });

    it('sends no breakpoint without a cache, and then nothing is cached', async () => {
      await call('anthropic', ROUND_1);
      const r = await call('anthropic', ROUND_2);
      expect(server.requests.map((q) => q.rawBody).join('')).not.toContain('cache_control');
      expect(r.usage).toMatchObject({ cachedTokens: 0, cacheWriteTokens: 0 });
      expect(body(server.requests[0])['system']).toBe(SYSTEM);
    });
  });

  describe.each<Kind>(['openai-chat', 'openai'])('OpenAI %s', (kind) => {
    it('sends prompt_cache_key, and prompt_cache_retention 24h only for long retention', async () => {
      await call(kind, ROUND_1, { key: 'sb-abc', retention: 'short' });
      await call(kind, ROUND_1, { key: 'sb-abc', retention: 'long' });
      await call(kind, ROUND_1);
      const [short, long, none] = server.requests.map(body);
      expect(short['prompt_cache_key']).toBe('sb-abc');
      expect(short).not.toHaveProperty('prompt_cache_retention');
      expect(long['prompt_cache_key']).toBe('sb-abc');
      expect(long['prompt_cache_retention']).toBe('24h');
      expect(none).not.toHaveProperty('prompt_cache_key');
      expect(none).not.toHaveProperty('prompt_cache_retention');
      // OpenAI caching needs no marker in the prompt.
      expect(server.requests.map((q) => q.rawBody).join('')).not.toContain('cache_control');
    });

    it('reports the cached prefix of a repeated prompt under the same key, in 128-token steps', async () => {
      const first = await call(kind, ROUND_1, { key: 'sb-abc', retention: 'short' });
      expect(first.usage.cachedTokens).toBe(0);
      const second = await call(kind, ROUND_2, { key: 'sb-abc', retention: 'short' });
      expect(second.usage.cachedTokens).toBeGreaterThanOrEqual(1024);
      expect(second.usage.cachedTokens % 128).toBe(0);
      expect(second.usage.cachedTokens).toBeLessThanOrEqual(second.usage.inputTokens);
      expect(second.usage.cacheWriteTokens).toBe(0);
      // Another key is another cache.
      const other = await call(kind, ROUND_2, { key: 'sb-other', retention: 'short' });
      expect(other.usage.cachedTokens).toBe(0);
    });
  });
});

describe('cache tokens priced', () => {
  const usage = { inputTokens: 10_000, outputTokens: 100, cachedTokens: 5_000 };

  it('prices Anthropic cache writes at the write rate, 1 h writes at theirs (claude-sonnet-4-5: 3.75, 6)', () => {
    // 2000 plain × 3 + 5000 read × 0.3 + 3000 written × 3.75 + 100 out × 15, per million.
    expect(costOf('anthropic', 'claude-sonnet-4-5', { ...usage, cacheWriteTokens: 3_000 }).usd).toBeCloseTo(
      0.02025,
      10,
    );
    expect(
      costOf('anthropic', 'claude-sonnet-4-5', {
        ...usage,
        cacheWriteTokens: 3_000,
        cacheWrite1hTokens: 3_000,
      }).usd,
    ).toBeCloseTo((2_000 * 3 + 5_000 * 0.3 + 3_000 * 6 + 100 * 15) / 1e6, 10);
  });

  it('prices an override’s cacheWrite, else writes at its input rate', () => {
    const withWrite = { 'anthropic/x': { input: 1, output: 2, cachedInput: 0.1, cacheWrite: 1.25 } };
    const without = { 'anthropic/x': { input: 1, output: 2 } };
    const u = { inputTokens: 1_000_000, outputTokens: 0, cachedTokens: 500_000, cacheWriteTokens: 400_000 };
    expect(costOf('anthropic', 'x', u, undefined, withWrite).usd).toBeCloseTo(0.1 + 0.05 + 0.5, 10);
    expect(costOf('anthropic', 'x', u, undefined, without).usd).toBeCloseTo(1, 10);
  });

  it('says what caching saved: positive for reads, negative for a call that only wrote, zero unpriced', () => {
    expect(cacheSavingsUsd('anthropic', 'claude-sonnet-4-5', usage)).toBeCloseTo(
      (5_000 * (3 - 0.3)) / 1e6,
      10,
    );
    expect(
      cacheSavingsUsd('anthropic', 'claude-sonnet-4-5', {
        inputTokens: 4_000,
        outputTokens: 0,
        cachedTokens: 0,
        cacheWriteTokens: 4_000,
      }),
    ).toBeCloseTo((-4_000 * 0.75) / 1e6, 10);
    expect(cacheSavingsUsd('openai', 'gpt-4o', usage)).toBeCloseTo((5_000 * 1.25) / 1e6, 10);
    expect(cacheSavingsUsd('openai-chat', 'my-local-llama', usage)).toBe(0);
    expect(cacheSavingsUsd('anthropic', 'claude-sonnet-4-5', { ...usage, cachedTokens: 0 })).toBe(0);
  });
});
