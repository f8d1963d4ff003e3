import path from 'node:path';
import { Agent, OpenAIResponsesModel, run, setTracingDisabled, tool } from '@openai/agents';
import OpenAI, { APIError } from 'openai';
import type { FunctionTool, ResponseFunctionToolCall } from 'openai/resources/responses/responses';
import {
  createTestEnv,
  crossRealmSafeFetch,
  waitFor,
  FakeLlmServer,
  runProcess,
  scripted,
  spawnApp,
  spawnGateway,
  type AppProcess,
  type TestEnv,
} from '@switchboard/testing';
import { newTenant, type Api } from '../support/api';
import { expectResponseResource, expectStreamingEvent } from '../support/open-responses';

/**
 * Client-side tools through the Responses API (docs/adr/0047, 0035), real processes (a gateway, a
 * harness worker) and the stock clients' own tool loops: `tools: [{type: "function"}]` are the
 * client's; when the agent's model calls one the response completes with `function_call` items and
 * the turn waits; a request whose input ends with `function_call_output` items resumes the same
 * turn, and its response (a new id) follows it to the answer.
 */
jest.setTimeout(120_000);

const ADMIN = 'test-admin-token-0123456789';

const WEATHER: FunctionTool = {
  type: 'function',
  name: 'get_weather',
  description: 'The weather in a city',
  parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] },
  strict: false,
};

describe('client function tools on /v1/responses', () => {
  let env: TestEnv;
  let llm: FakeLlmServer;
  const processes: AppProcess[] = [];
  let url: string;
  let api: Api;
  let client: OpenAI;

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
  const turnCount = () => env.db.turn.count();
  const functionCalls = (output: { type: string }[]) =>
    output.filter((i): i is ResponseFunctionToolCall => i.type === 'function_call');

  beforeAll(async () => {
    setTracingDisabled(true);
    env = await createTestEnv();
    llm = await FakeLlmServer.start();
    const [gateway, harness] = await Promise.all([
      spawnGateway(env.processEnv(llm.providerEnv)),
      // The reconciler expires due client waits (the expiry case below).
      spawnApp('harness-worker', env.processEnv({ ...llm.providerEnv, RECONCILE_INTERVAL_MS: '500' })),
    ]);
    processes.push(gateway, harness);
    url = gateway.url;
    ({ api } = await newTenant(url, ADMIN));
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

  it('the openai SDK: a function_call completes the response; function_call_output resumes the same turn', async () => {
    llm.enqueue(scripted.toolCall('get_weather', { city: 'Paris' }, { text: 'Let me look.' }));
    llm.enqueue(scripted.text('It is sunny in Paris.'));
    const before = llm.requests.length;
    const first = await client.responses.create({
      model: 'helper',
      input: 'Weather in Paris?',
      tools: [WEATHER],
    });
    expect(first.status).toBe('completed');
    expectResponseResource(first);
    expect(offered(before)).toEqual(expect.arrayContaining(['word_count', 'get_weather']));
    const [call] = functionCalls(first.output);
    expect(call).toMatchObject({
      type: 'function_call',
      call_id: expect.stringMatching(/^call_[0-9a-f]{32}$/),
      name: 'get_weather',
      arguments: '{"city":"Paris"}',
      status: 'completed',
    });
    expect(call.id).toMatch(/^fc_/);
    expect(first.output_text).toBe('Let me look.');
    // The response echoes the tools the request declared.
    expect(first.tools).toEqual([{ ...WEATHER }]);
    expect(first.tool_choice).toBe('auto');
    const turns = await turnCount();

    const second = await client.responses.create({
      model: 'helper',
      previous_response_id: first.id,
      input: [{ type: 'function_call_output', call_id: call.call_id, output: 'sunny, 24 °C' }],
      tools: [WEATHER],
    });
    expect(second.status).toBe('completed');
    expectResponseResource(second);
    expect(second.output_text).toBe('It is sunny in Paris.');
    // The same turn, a new response id; its output is what came after the answer (no function_call again).
    expect((second as unknown as { turn_id: string }).turn_id).toBe(
      (first as unknown as { turn_id: string }).turn_id,
    );
    expect(second.id).not.toBe(first.id);
    expect(second.id.startsWith(`${first.id}_`)).toBe(true);
    expect(second.previous_response_id).toBe(first.id);
    expect(functionCalls(second.output)).toEqual([]);
    expect(second.tools).toEqual([{ ...WEATHER }]);
    expect(await turnCount()).toBe(turns);
    // The same answer again: nothing changes, and it names the same continuation, not the whole turn.
    const replayed = await client.responses.create({
      model: 'helper',
      previous_response_id: first.id,
      input: [{ type: 'function_call_output', call_id: call.call_id, output: 'sunny, 24 °C' }],
      tools: [WEATHER],
    });
    expect(replayed.id).toBe(second.id);
    expect(replayed.output_text).toBe('It is sunny in Paris.');
    expect(functionCalls(replayed.output)).toEqual([]);
    expect(await turnCount()).toBe(turns);
    expect(llm.requests.length).toBe(before + 2);
    expect(toolMessagesSent(before + 1).map((m) => m.content)).toEqual([
      expect.stringContaining('sunny, 24 °C'),
    ]);
    // Retrieved by id, each response is the one answered.
    const again = await client.responses.retrieve(second.id);
    expect(again.output_text).toBe('It is sunny in Paris.');
    expect(functionCalls(again.output)).toEqual([]);

    // A new message continues the session after the answered turn.
    llm.enqueue(scripted.text('You are welcome.'));
    const third = await client.responses.create({
      model: 'helper',
      previous_response_id: second.id,
      input: 'thanks',
    });
    expect(third.output_text).toBe('You are welcome.');
  });

  it('tool_choice a named function: forced on the first round only, echoed on the response', async () => {
    llm.enqueue(scripted.toolCall('get_weather', { city: 'Nice' }), scripted.text('Mild in Nice.'));
    const before = llm.requests.length;
    const choice = { type: 'function' as const, name: 'get_weather' };
    const first = await client.responses.create({
      model: 'helper',
      input: 'Weather in Nice?',
      tools: [WEATHER],
      tool_choice: choice,
    });
    expectResponseResource(first);
    expect(first.tool_choice).toEqual(choice);
    expect((llm.requests[before].body as { tool_choice?: unknown }).tool_choice).toEqual({
      type: 'function',
      function: { name: 'get_weather' },
    });
    const [call] = functionCalls(first.output);
    const second = await client.responses.create({
      model: 'helper',
      previous_response_id: first.id,
      input: [{ type: 'function_call_output', call_id: call.call_id, output: 'mild' }],
      tools: [WEATHER],
      tool_choice: choice,
    });
    expect(second.output_text).toBe('Mild in Nice.');
    expect(llm.requests[before + 1].body).not.toHaveProperty('tool_choice');
  });

  it('streamed: function_call events, then response.completed; the streamed continuation gets the answer', async () => {
    llm.enqueue(scripted.toolCall('get_weather', { city: 'Rome' }));
    llm.enqueue(scripted.text('Warm in Rome.', { textPieces: 3 }));
    const stream = await client.responses.create({
      model: 'helper',
      input: 'Weather in Rome?',
      tools: [WEATHER],
      stream: true,
    });
    const types: string[] = [];
    let done: OpenAI.Responses.Response | undefined;
    let args = '';
    for await (const e of stream) {
      expectStreamingEvent(e);
      types.push(e.type);
      if (e.type === 'response.function_call_arguments.delta') args += e.delta;
      if (e.type === 'response.completed') done = e.response;
    }
    expect(types.slice(0, 2)).toEqual(['response.created', 'response.in_progress']);
    expect(types.slice(-5)).toEqual([
      'response.output_item.added',
      'response.function_call_arguments.delta',
      'response.function_call_arguments.done',
      'response.output_item.done',
      'response.completed',
    ]);
    expect(args).toBe('{"city":"Rome"}');
    const [call] = functionCalls(done!.output);
    expect(call).toMatchObject({ name: 'get_weather', arguments: '{"city":"Rome"}' });

    // Without previous_response_id: the call id names the turn.
    const resumed = await client.responses.create({
      model: 'helper',
      input: [
        { role: 'user', content: 'Weather in Rome?' },
        { type: 'function_call', call_id: call.call_id, name: call.name, arguments: call.arguments },
        { type: 'function_call_output', call_id: call.call_id, output: 'warm' },
      ],
      tools: [WEATHER],
      stream: true,
    });
    let text = '';
    let final: OpenAI.Responses.Response | undefined;
    for await (const e of resumed) {
      expectStreamingEvent(e);
      if (e.type === 'response.output_text.delta') text += e.delta;
      if (e.type === 'response.completed') final = e.response;
    }
    expect(text).toBe('Warm in Rome.');
    expect(final?.output_text).toBe('Warm in Rome.');
    expect(final?.id).not.toBe(done!.id);
  });

  it('the OpenAI Agents SDK runs the function tool locally and gets the agent’s answer', async () => {
    llm.enqueue(scripted.toolCall('get_weather', { city: 'Lima' }));
    llm.enqueue(scripted.text('Foggy in Lima.'));
    const ran: string[] = [];
    const agent = new Agent({
      name: 'front',
      instructions: 'Relay.',
      // The SDK depends on openai 7, this repository on 6: the same wire, different declared types.
      model: new OpenAIResponsesModel(
        client as unknown as ConstructorParameters<typeof OpenAIResponsesModel>[0],
        'helper',
      ),
      tools: [
        tool({
          name: 'get_weather',
          description: 'The weather in a city',
          parameters: {
            type: 'object',
            properties: { city: { type: 'string' } },
            required: ['city'],
            additionalProperties: false,
          },
          strict: true,
          execute: async (input) => {
            const { city } = input as { city: string };
            ran.push(city);
            return `foggy in ${city}`;
          },
        }),
      ],
    });
    const before = llm.requests.length;
    const result = await run(agent, 'Weather in Lima?');
    expect(ran).toEqual(['Lima']);
    expect(result.finalOutput).toBe('Foggy in Lima.');
    expect(toolMessagesSent(before + 1).map((m) => m.content)).toEqual([
      expect.stringContaining('foggy in Lima'),
    ]);
  });

  it('the AI SDK’s generateText runs the tool on openai.responses(...) and on openai.chat(...)', async () => {
    // `ai` is ESM-only: the client runs in its own Node process (test/fixtures/clients).
    llm.enqueue(scripted.toolCall('get_weather', { city: 'Oslo' }), scripted.text('Rain in Oslo.'));
    llm.enqueue(scripted.toolCall('get_weather', { city: 'Bergen' }), scripted.text('Rain in Bergen.'));
    const out = await runProcess(
      'node',
      [path.join(__dirname, '../fixtures/clients/ai-sdk-client-tools.mjs')],
      {
        env: { ...process.env, BASE_URL: `${url}/v1`, API_KEY: api.key!, MODEL: 'helper' },
        timeoutMs: 60_000,
      },
    );
    expect(out.stderr).toBe('');
    expect(out.code).toBe(0);
    const result = JSON.parse(out.stdout.trim().split('\n').at(-1)!);
    expect(result).toEqual({
      responses: { text: 'Rain in Oslo.', finishReason: 'stop', steps: 2 },
      chat: { text: 'Rain in Bergen.', finishReason: 'stop', steps: 2 },
      ran: ['Oslo', 'Bergen'],
    });
  });

  it('the AI SDK’s streamText runs the tool and streams the answer, on openai.responses(...) and openai.chat(...)', async () => {
    llm.enqueue(scripted.toolCall('get_weather', { city: 'Oslo' }), scripted.text('Wind in Oslo.'));
    llm.enqueue(scripted.toolCall('get_weather', { city: 'Bergen' }), scripted.text('Wind in Bergen.'));
    const before = llm.requests.length;
    const out = await runProcess(
      'node',
      [path.join(__dirname, '../fixtures/clients/ai-sdk-stream-client-tools.mjs')],
      {
        env: { ...process.env, BASE_URL: `${url}/v1`, API_KEY: api.key!, MODEL: 'helper' },
        timeoutMs: 60_000,
      },
    );
    expect(out.stderr).toBe('');
    expect(out.code).toBe(0);
    const result = JSON.parse(out.stdout.trim().split('\n').at(-1)!);
    for (const [key, city] of [
      ['responses', 'Oslo'],
      ['chat', 'Bergen'],
    ] as const) {
      expect(result[key]).toMatchObject({
        text: `Wind in ${city}.`,
        deltas: `Wind in ${city}.`,
        finishReason: 'stop',
        steps: 2,
        toolCalls: [{ name: 'get_weather', input: { city } }],
        toolResults: [`windy in ${city}`],
        errors: [],
      });
      expect(result[key].parts).toEqual(
        expect.arrayContaining(['tool-call', 'tool-result', 'text-delta', 'finish']),
      );
    }
    expect(result.ran).toEqual(['Oslo', 'Bergen']);
    // Two turns, each resumed once by the streamed tool result: four model rounds in all.
    expect(llm.requests.length).toBe(before + 4);
  });

  describe('bad input: an OpenAI-shaped 4xx, nothing admitted or answered', () => {
    const refused = async (body: Record<string, unknown>) => {
      const turns = await turnCount();
      const requests = llm.requests.length;
      const err = await client.responses
        .create(body as unknown as OpenAI.Responses.ResponseCreateParamsNonStreaming)
        .then(
          () => undefined,
          (e: unknown) => e,
        );
      expect(err).toBeInstanceOf(APIError);
      expect(await turnCount()).toBe(turns);
      expect(llm.requests.length).toBe(requests);
      return err as APIError;
    };

    it('refuses a clash with the agent’s tools, an unusable schema, other tool types, a tool_choice naming no declared tool', async () => {
      expect(
        await refused({ model: 'helper', input: 'hi', tools: [{ ...WEATHER, name: 'word_count' }] }),
      ).toMatchObject({ status: 400, code: 'tool_name_clash', param: 'tools[0].name' });
      expect(
        await refused({
          model: 'helper',
          input: 'hi',
          tools: [{ ...WEATHER, parameters: { type: 'object', properties: { a: { type: 'nope' } } } }],
        }),
      ).toMatchObject({ status: 400, code: 'invalid_schema', param: 'tools[0].parameters' });
      expect(await refused({ model: 'helper', input: 'hi', tools: [{ type: 'web_search' }] })).toMatchObject({
        status: 400,
        code: 'unsupported_value',
        param: 'tools[0].type',
      });
      expect(
        await refused({
          model: 'helper',
          input: 'hi',
          tools: [WEATHER],
          tool_choice: { type: 'function', name: 'word_count' },
        }),
      ).toMatchObject({ status: 400, code: 'invalid_tool_choice', param: 'tool_choice' });
      expect(
        await refused({
          model: 'helper',
          input: 'hi',
          tools: [WEATHER],
          tool_choice: { type: 'allowed_tools', mode: 'required', tools: [] },
        }),
      ).toMatchObject({ status: 400, code: 'unsupported_value', param: 'tool_choice' });
    });

    it('refuses an answer that leaves a call of the round unanswered (400), then takes both', async () => {
      llm.enqueue({
        kind: 'message',
        toolCalls: [
          { id: 'c1', name: 'get_weather', arguments: '{"city":"Lyon"}' },
          { id: 'c2', name: 'get_weather', arguments: '{"city":"Nice"}' },
        ],
      });
      const waiting = await client.responses.create({
        model: 'helper',
        input: 'Lyon and Nice?',
        tools: [WEATHER],
      });
      const calls = functionCalls(waiting.output);
      expect(calls.map((c) => c.arguments)).toEqual(['{"city":"Lyon"}', '{"city":"Nice"}']);
      const missing = await refused({
        model: 'helper',
        previous_response_id: waiting.id,
        input: [{ type: 'function_call_output', call_id: calls[0].call_id, output: 'mild' }],
      });
      expect(missing).toMatchObject({ status: 400, code: 'missing_call' });
      llm.enqueue(scripted.text('Mild in both.'));
      const both = await client.responses.create({
        model: 'helper',
        previous_response_id: waiting.id,
        input: calls.map((c) => ({
          type: 'function_call_output' as const,
          call_id: c.call_id,
          output: 'mild',
        })),
      });
      expect(both.output_text).toBe('Mild in both.');
    });

    it('an unanswered call expires: the response is failed, a late answer is a 409', async () => {
      const res = await api.post('/v1/agents', {
        name: 'impatient',
        model: 'openai-chat/gpt-4o-mini',
        instructions: 'Be brief.',
        budgets: { clientToolTimeoutMs: 1000 },
      });
      expect(res.status).toBe(201);
      llm.enqueue(scripted.toolCall('get_weather', { city: 'Nuuk' }));
      const waiting = await client.responses.create({ model: 'impatient', input: 'Nuuk?', tools: [WEATHER] });
      const [call] = functionCalls(waiting.output);
      const failed = await waitFor(
        async () => {
          const r = await client.responses.retrieve(waiting.id);
          return r.status === 'failed' ? r : undefined;
        },
        { what: 'the response to fail client_tool_timeout', timeoutMs: 60_000 },
      );
      expect(failed.error?.message).toContain('client_tool_timeout');
      const late = await refused({
        model: 'impatient',
        previous_response_id: waiting.id,
        input: [{ type: 'function_call_output', call_id: call.call_id, output: 'ice' }],
      });
      expect(late).toMatchObject({ status: 409, code: 'expired' });
    });

    it('refuses an unknown call id (404) and a call of another response (404)', async () => {
      const unknown = await refused({
        model: 'helper',
        input: [
          { type: 'function_call_output', call_id: 'call_0123456789abcdef0123456789abcdef', output: 'x' },
        ],
      });
      expect(unknown).toMatchObject({ status: 404, code: 'unknown_call', param: 'input' });

      llm.enqueue(scripted.toolCall('get_weather', { city: 'Kyiv' }));
      const waiting = await client.responses.create({
        model: 'helper',
        input: 'Weather in Kyiv?',
        tools: [WEATHER],
      });
      const [call] = functionCalls(waiting.output);
      llm.enqueue(scripted.text('plain'));
      const other = await client.responses.create({ model: 'helper', input: 'no tools' });
      const wrong = await refused({
        model: 'helper',
        previous_response_id: other.id,
        input: [{ type: 'function_call_output', call_id: call.call_id, output: 'x' }],
      });
      expect(wrong).toMatchObject({ status: 404, code: 'unknown_call' });
      // Still waiting: the right answer resumes it.
      llm.enqueue(scripted.text('Cold in Kyiv.'));
      const ok = await client.responses.create({
        model: 'helper',
        previous_response_id: waiting.id,
        input: [{ type: 'function_call_output', call_id: call.call_id, output: 'cold' }],
      });
      expect(ok.output_text).toBe('Cold in Kyiv.');
    });
  });
});
