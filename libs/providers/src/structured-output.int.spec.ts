import type { ResponseFormat } from '@switchboard/contracts';
import { crossRealmSafeFetch, FakeLlmServer } from '@switchboard/testing';
import { AnthropicProvider } from './anthropic';
import { OpenAIChatProvider } from './openai-chat';
import { OpenAIResponsesProvider } from './openai-responses';
import type { ChatMessage, ModelProvider } from './types';

/**
 * A structured output format on the wire of each provider (docs/adr/0048), through the real SDKs
 * against the fake server: natively where the API has it, in words where it does not.
 */
const SCHEMA = {
  type: 'object',
  properties: { n: { type: 'integer' } },
  required: ['n'],
  additionalProperties: false,
};
const strict: ResponseFormat = { type: 'json_schema', name: 'count', schema: SCHEMA, strict: true };
const loose: ResponseFormat = { type: 'json_schema', name: 'count', schema: SCHEMA };
const object: ResponseFormat = { type: 'json_object' };
const MESSAGES: ChatMessage[] = [
  { role: 'system', content: 'Be brief.' },
  { role: 'user', content: 'count: a b c' },
];

describe('structured output on the provider wire', () => {
  let server: FakeLlmServer;
  beforeAll(async () => {
    // Idle connections stay open: requests here can be seconds apart under load, and a pooled
    // connection the server closes just as the next provider reuses it fails as "Connection error".
    server = await FakeLlmServer.start({ keepAliveTimeoutMs: 120_000 });
  });
  afterAll(async () => {
    await server.close();
  });

  /** The body the provider sent for one request with this format. */
  async function sent(
    provider: ModelProvider,
    responseFormat?: ResponseFormat,
  ): Promise<Record<string, unknown>> {
    server.enqueue({ kind: 'message', text: '{"n":3}' });
    const from = server.requests.length;
    const answer = await provider.complete({ model: 'm', messages: MESSAGES, tools: [], responseFormat });
    expect(answer.text).toBe('{"n":3}');
    return server.requests[from].body as Record<string, unknown>;
  }

  it('Chat Completions: response_format', async () => {
    const p = new OpenAIChatProvider({
      apiKey: 'k',
      baseURL: server.openaiBaseUrl,
      fetch: crossRealmSafeFetch,
    });
    expect((await sent(p, strict)).response_format).toEqual({
      type: 'json_schema',
      json_schema: { name: 'count', schema: SCHEMA, strict: true },
    });
    expect((await sent(p, object)).response_format).toEqual({ type: 'json_object' });
    expect(await sent(p)).not.toHaveProperty('response_format');
  });

  it('Responses: text.format', async () => {
    const p = new OpenAIResponsesProvider({
      apiKey: 'k',
      baseURL: server.openaiBaseUrl,
      fetch: crossRealmSafeFetch,
    });
    expect((await sent(p, loose)).text).toEqual({
      format: { type: 'json_schema', name: 'count', schema: SCHEMA },
    });
    expect((await sent(p, object)).text).toEqual({ format: { type: 'json_object' } });
    expect(await sent(p)).not.toHaveProperty('text');
  });

  it('Anthropic: output_config for a strict schema, an instruction after the system prompt otherwise', async () => {
    const p = new AnthropicProvider({ apiKey: 'k', baseURL: server.anthropicBaseUrl });
    const native = await sent(p, strict);
    expect(native.output_config).toEqual({ format: { type: 'json_schema', schema: SCHEMA } });
    expect(native.system).toBe('Be brief.');
    for (const format of [loose, object]) {
      const told = await sent(p, format);
      expect(told).not.toHaveProperty('output_config');
      const system = told.system as { type: string; text: string }[];
      expect(system[0]).toEqual({ type: 'text', text: 'Be brief.' });
      expect(system[1].text).toContain(
        format.type === 'json_object' ? 'single JSON object' : JSON.stringify(SCHEMA),
      );
    }
    // With the prompt cache, the instruction follows the cached block, outside the cached prefix.
    server.enqueue({ kind: 'message', text: '{}' });
    const from = server.requests.length;
    await p.complete({
      model: 'm',
      messages: MESSAGES,
      tools: [],
      responseFormat: object,
      cache: { key: 'k', retention: 'short' },
    });
    const system = (server.requests[from].body as { system: { text: string; cache_control?: unknown }[] })
      .system;
    expect(system[0]).toMatchObject({ text: 'Be brief.', cache_control: { type: 'ephemeral' } });
    expect(system[1]).not.toHaveProperty('cache_control');
  });
});
