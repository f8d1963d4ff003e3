import net from 'node:net';
import OpenAI, { APIError, BadRequestError } from 'openai';
import { zodResponseFormat } from 'openai/helpers/zod';
import { ChatOpenAI } from '@langchain/openai';
import { z } from 'zod';
import {
  createTestEnv,
  crossRealmSafeFetch,
  FakeLlmServer,
  scripted,
  spawnApp,
  waitFor,
  type AppProcess,
  type RecordedRequest,
  type TestEnv,
} from '@switchboard/testing';
import { newTenant, type Api } from '../support/api';

/**
 * Structured output (docs/adr/0048) through real processes (a gateway and a harness worker) with the
 * stock clients: the openai SDK's `chat.completions.create` / `.parse` and `responses.create`, and
 * LangChain's `ChatOpenAI.withStructuredOutput`. The agents run against the fake LLM server through
 * the real provider SDKs (OpenAI Chat Completions and Anthropic Messages), so what the provider was
 * asked (its native format, or the instruction) is checked on the wire too.
 */
jest.setTimeout(120_000);

const ADMIN = 'test-admin-token-0123456789';

const PERSON = {
  type: 'object',
  properties: { name: { type: 'string' }, age: { type: 'integer', minimum: 0 } },
  required: ['name', 'age'],
  additionalProperties: false,
} as const;

const Person = z.object({ name: z.string(), age: z.number().int() });

describe('structured output with stock clients', () => {
  let env: TestEnv;
  let llm: FakeLlmServer;
  const processes: AppProcess[] = [];
  let url: string;
  let api: Api;
  let tenantId: string;
  let client: OpenAI;

  /** The requests the fake provider got since `from`. */
  const sentSince = (from: number): RecordedRequest[] => llm.requests.slice(from);

  /** How many turns the tenant's agents have (nothing admitted: unchanged). */
  const turnCount = async (): Promise<number> =>
    Number(
      (
        await env.db.$queryRawUnsafe<{ n: bigint }[]>(
          'SELECT count(*) AS n FROM turns t JOIN agents a ON a.id = t.agent_id WHERE a.tenant_id = $1::uuid',
          tenantId,
        )
      )[0].n,
    );

  /** The stored format of a turn (the column a worker reads it from). */
  const storedFormat = async (turnId: string): Promise<unknown> =>
    (
      await env.db.$queryRawUnsafe<{ f: unknown }[]>(
        'SELECT response_format AS f FROM turns WHERE id = $1::uuid',
        turnId,
      )
    )[0]?.f;

  async function gatewayProcess(): Promise<string> {
    const server = net.createServer();
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const { port } = server.address() as net.AddressInfo;
    await new Promise((resolve) => server.close(resolve));
    processes.push(
      await spawnApp(
        'gateway',
        env.processEnv({ ...llm.providerEnv, PORT: String(port), HOST: '127.0.0.1' }),
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
    ({ api, tenantId } = await newTenant(url, ADMIN));
    client = new OpenAI({
      baseURL: `${url}/v1`,
      apiKey: api.key!,
      fetch: crossRealmSafeFetch,
      maxRetries: 0,
    });
    for (const [name, model] of [
      ['extractor', 'openai-chat/gpt-4o-mini'],
      ['claude', 'anthropic/claude-sonnet-4-5'],
    ]) {
      const created = await api.post('/v1/agents', { name, model, instructions: 'Extract facts.' });
      expect(created.status).toBe(201);
    }
  });

  afterAll(async () => {
    await Promise.all(processes.map((p) => p.kill('SIGTERM')));
    await llm?.close();
    await env?.cleanup();
  });

  it('chat.completions.create with json_schema: the provider gets the schema, the answer is validated JSON', async () => {
    llm.enqueue({ kind: 'message', text: '{"name":"Ada","age":36}' });
    const from = llm.requests.length;
    const completion = await client.chat.completions.create({
      model: 'extractor',
      messages: [{ role: 'user', content: 'Ada is 36.' }],
      response_format: { type: 'json_schema', json_schema: { name: 'person', schema: PERSON, strict: true } },
    });
    expect(JSON.parse(completion.choices[0].message.content!)).toEqual({ name: 'Ada', age: 36 });
    const [sent] = sentSince(from);
    expect((sent.body as { response_format: unknown }).response_format).toEqual({
      type: 'json_schema',
      json_schema: { name: 'person', schema: PERSON, strict: true },
    });
    const turnId = (completion as unknown as { turn_id: string }).turn_id;
    expect(await storedFormat(turnId)).toEqual({
      type: 'json_schema',
      name: 'person',
      schema: PERSON,
      strict: true,
    });
  });

  it('chat.completions.create with json_object: a fenced object is unwrapped, a non-object repaired', async () => {
    llm.enqueue(
      { kind: 'message', text: '["not", "an", "object"]' },
      { kind: 'message', text: '```json\n{"ok": true}\n```' },
    );
    const from = llm.requests.length;
    const completion = await client.chat.completions.create({
      model: 'extractor',
      messages: [{ role: 'user', content: 'Answer in JSON.' }],
      response_format: { type: 'json_object' },
    });
    expect(completion.choices[0].message.content).toBe('{"ok": true}');
    const [first, second] = sentSince(from);
    expect((first.body as { response_format: unknown }).response_format).toEqual({ type: 'json_object' });
    const repair = (second.body as { messages: { role: string; content: string }[] }).messages.at(-1)!;
    expect(repair.role).toBe('user');
    expect(repair.content).toContain('not a JSON object');
  });

  it('chat.completions.parse with zodResponseFormat gives the parsed object', async () => {
    llm.enqueue({ kind: 'message', text: '{"name":"Grace","age":85}' });
    const completion = await client.chat.completions.parse({
      model: 'extractor',
      messages: [{ role: 'user', content: 'Grace Hopper, 85.' }],
      response_format: zodResponseFormat(Person, 'person'),
    });
    expect(completion.choices[0].message.parsed).toEqual({ name: 'Grace', age: 85 });
  });

  it('a repair that succeeds: the model is told what failed, both rounds are counted and billed', async () => {
    llm.enqueue(
      { kind: 'message', text: '{"name":"Alan"}', usage: { input: 100, output: 5 } },
      { kind: 'message', text: '{"name":"Alan","age":41}', usage: { input: 140, output: 9 } },
    );
    const from = llm.requests.length;
    const completion = await client.chat.completions.create({
      model: 'extractor',
      messages: [{ role: 'user', content: 'Alan, 41.' }],
      response_format: { type: 'json_schema', json_schema: { name: 'person', schema: PERSON } },
    });
    expect(JSON.parse(completion.choices[0].message.content!)).toEqual({ name: 'Alan', age: 41 });
    expect(completion.usage).toMatchObject({ prompt_tokens: 240, completion_tokens: 14 });
    const sent = sentSince(from);
    expect(sent).toHaveLength(2);
    const messages = (sent[1].body as { messages: { role: string; content: string }[] }).messages;
    expect(messages.slice(-2).map((m) => m.role)).toEqual(['assistant', 'user']);
    expect(messages.at(-2)!.content).toBe('{"name":"Alan"}');
    expect(messages.at(-1)!.content).toContain("must have required property 'age'");
    const turn = (await api.get(`/v1/turns/${(completion as unknown as { turn_id: string }).turn_id}`)).body;
    expect(turn).toMatchObject({ status: 'completed', iterations: 2, finalText: '{"name":"Alan","age":41}' });
  });

  it('a repair that fails: the turn fails structured_output_invalid, the client gets a clear 502', async () => {
    llm.enqueue(
      { kind: 'message', text: 'Alan is 41.' },
      { kind: 'message', text: '{"name":"Alan","age":"41"}' },
    );
    const from = llm.requests.length;
    const error = await client.chat.completions
      .create({
        model: 'extractor',
        messages: [{ role: 'user', content: 'Alan, 41.' }],
        response_format: { type: 'json_schema', json_schema: { name: 'person', schema: PERSON } },
      })
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(APIError);
    const e = error as APIError;
    expect(e.status).toBe(502);
    expect(e.code).toBe('structured_output_invalid');
    expect(e.message).toContain('$.age must be integer');
    expect(sentSince(from)).toHaveLength(2);
    const turns = await env.db.$queryRawUnsafe<{ failure: { kind: string; message: string } }[]>(
      `SELECT t.failure FROM turns t JOIN agents a ON a.id = t.agent_id
       WHERE a.tenant_id = $1::uuid AND t.status = 'failed' ORDER BY t.created_at DESC LIMIT 1`,
      tenantId,
    );
    expect(turns[0].failure).toMatchObject({
      kind: 'structured_output_invalid',
      message: expect.stringContaining('age'),
    });
  });

  it('streamed: only the validated answer reaches the client, not the rejected one', async () => {
    llm.enqueue(
      { kind: 'message', text: 'Sure! Here it is.' },
      { kind: 'message', text: '{"name":"Ada","age":36}' },
    );
    const stream = await client.chat.completions.create({
      model: 'extractor',
      messages: [{ role: 'user', content: 'Ada is 36.' }],
      response_format: { type: 'json_schema', json_schema: { name: 'person', schema: PERSON } },
      stream: true,
    });
    let text = '';
    for await (const chunk of stream) text += chunk.choices[0]?.delta.content ?? '';
    expect(text).toBe('{"name":"Ada","age":36}');
  });

  it('malformed formats are 400s in OpenAI’s shape and admit nothing', async () => {
    const before = await turnCount();
    const from = llm.requests.length;
    const cases: [Record<string, unknown>, RegExp][] = [
      // Not a JSON Schema: a keyword of the wrong type.
      [
        { type: 'json_schema', json_schema: { name: 'p', schema: { type: 'object', required: 'name' } } },
        /schema/,
      ],
      // An unknown keyword (a typo the validator would otherwise ignore).
      [
        { type: 'json_schema', json_schema: { name: 'p', schema: { type: 'object', propertiez: {} } } },
        /propertiez/,
      ],
      // No name.
      [{ type: 'json_schema', json_schema: { schema: PERSON } }, /name/],
      // An unsupported draft.
      [
        {
          type: 'json_schema',
          json_schema: {
            name: 'p',
            schema: { $schema: 'http://json-schema.org/draft-04/schema#', type: 'object' },
          },
        },
        /draft-04/,
      ],
      [{ type: 'xml' }, /type/],
    ];
    for (const [format, message] of cases) {
      const error = await client.chat.completions
        .create({
          model: 'extractor',
          messages: [{ role: 'user', content: 'x' }],
          response_format: format as never,
        })
        .catch((e: unknown) => e);
      expect(error).toBeInstanceOf(BadRequestError);
      expect((error as BadRequestError).error).toMatchObject({ type: 'invalid_request_error' });
      expect((error as BadRequestError).message).toMatch(message);
    }
    const responses = await fetch(`${url}/v1/responses`, {
      method: 'POST',
      headers: { authorization: `Bearer ${api.key}`, 'content-type': 'application/json' },
      body: JSON.stringify({
        model: 'extractor',
        input: 'x',
        text: { format: { type: 'json_schema', name: 'p', schema: { type: 'objekt' } } },
      }),
    });
    expect(responses.status).toBe(400);
    expect(await responses.json()).toMatchObject({
      error: { code: 'invalid_response_format', param: 'text.format', type: 'invalid_request_error' },
    });
    expect(await turnCount()).toBe(before);
    expect(llm.requests.length).toBe(from);
  });

  it('responses.create with text.format json_schema: validated output_text, the format echoed', async () => {
    llm.enqueue({ kind: 'message', text: 'Thinking…' }, { kind: 'message', text: '{"name":"Ada","age":36}' });
    const from = llm.requests.length;
    const format = { type: 'json_schema' as const, name: 'person', schema: PERSON, strict: true };
    const response = await client.responses.create({
      model: 'extractor',
      input: 'Ada is 36.',
      text: { format },
    });
    expect(response.status).toBe('completed');
    expect(JSON.parse(response.output_text)).toEqual({ name: 'Ada', age: 36 });
    expect(response.text?.format).toEqual(format);
    expect((sentSince(from)[0].body as { response_format: unknown }).response_format).toMatchObject({
      type: 'json_schema',
      json_schema: { name: 'person', strict: true },
    });
    const again = await client.responses.retrieve(response.id);
    expect(again.output_text).toBe(response.output_text);
    expect(again.text?.format).toEqual(format);
  });

  it('responses.create streamed with text.format: the deltas carry only the validated answer', async () => {
    llm.enqueue(
      { kind: 'message', text: 'Let me think.' },
      { kind: 'message', text: '{"name":"Ada","age":36}' },
    );
    const stream = await client.responses.create({
      model: 'extractor',
      input: 'Ada is 36.',
      text: { format: { type: 'json_schema', name: 'person', schema: PERSON } },
      stream: true,
    });
    let text = '';
    let completed: { output_text: string } | undefined;
    for await (const e of stream) {
      if (e.type === 'response.output_text.delta') text += e.delta;
      if (e.type === 'response.completed') completed = e.response;
    }
    expect(text).toBe('{"name":"Ada","age":36}');
    expect(completed?.output_text).toBe(text);
  });

  it('responses.create whose answer never matches: a failed response with code structured_output_invalid', async () => {
    llm.enqueue({ kind: 'message', text: 'no' }, { kind: 'message', text: 'still no' });
    const response = await client.responses.create({
      model: 'extractor',
      input: 'x',
      text: { format: { type: 'json_object' } },
    });
    expect(response.status).toBe('failed');
    expect(response.error).toMatchObject({
      code: 'structured_output_invalid',
      message: expect.stringContaining('not JSON'),
    });
  });

  it('LangChain ChatOpenAI.withStructuredOutput, jsonSchema and jsonMode methods', async () => {
    const model = new ChatOpenAI({
      model: 'extractor',
      apiKey: api.key!,
      maxRetries: 0,
      configuration: { baseURL: `${url}/v1`, fetch: crossRealmSafeFetch },
    });
    llm.enqueue({ kind: 'message', text: '{"name":"Linus","age":55}' });
    const from = llm.requests.length;
    const viaSchema = await model
      .withStructuredOutput(Person, { method: 'jsonSchema', name: 'person' })
      .invoke('Linus, 55.');
    expect(viaSchema).toEqual({ name: 'Linus', age: 55 });
    expect((sentSince(from)[0].body as { response_format: { type: string } }).response_format.type).toBe(
      'json_schema',
    );

    llm.enqueue({ kind: 'message', text: '{"name":"Barbara","age":86}' });
    const viaJsonMode = await model
      .withStructuredOutput(Person, { method: 'jsonMode' })
      .invoke('Barbara Liskov, 86. Answer in JSON with name and age.');
    expect(viaJsonMode).toEqual({ name: 'Barbara', age: 86 });
  });

  it('LangChain ChatOpenAI.withStructuredOutput, default method (functionCalling): a named tool_choice is forced', async () => {
    // LangChain's default is functionCalling for model names it takes for pre-JSON-Schema OpenAI
    // models (`gpt-4-…`), jsonSchema for any other name: an agent named so gets the default path.
    expect(
      (
        await api.post('/v1/agents', {
          name: 'gpt-4-turbo',
          model: 'openai-chat/gpt-4o-mini',
          instructions: 'Extract.',
        })
      ).status,
    ).toBe(201);
    const model = new ChatOpenAI({
      model: 'gpt-4-turbo',
      apiKey: api.key!,
      maxRetries: 0,
      configuration: { baseURL: `${url}/v1`, fetch: crossRealmSafeFetch },
    });
    llm.enqueue(scripted.toolCall('person', { name: 'Edsger', age: 72 }, { id: 'call_lc' }));
    const from = llm.requests.length;
    const turns = await turnCount();
    const person = await model
      .withStructuredOutput(Person, { name: 'person' })
      .invoke('Edsger Dijkstra, 72.');
    expect(person).toEqual({ name: 'Edsger', age: 72 });
    const [sent] = sentSince(from);
    const body = sent.body as { tool_choice: unknown; tools: { function: { name: string } }[] };
    // The named function reaches the provider as it was asked for, with the client's tool offered.
    expect(body.tool_choice).toEqual({ type: 'function', function: { name: 'person' } });
    expect(body.tools.map((t) => t.function.name)).toContain('person');
    expect(await turnCount()).toBe(turns + 1);
    // The turn waits for the client's result (LangChain reads the arguments and never sends one).
    const waits = await env.db.$queryRawUnsafe<{ status: string; tool: string }[]>(
      `SELECT t.status, a.tool_name AS tool FROM turns t JOIN approvals a ON a.turn_id = t.id
        JOIN agents g ON g.id = t.agent_id WHERE g.tenant_id = $1::uuid AND a.kind = 'client_tool'`,
      tenantId,
    );
    expect(waits).toEqual([{ status: 'awaiting_client_tool', tool: 'person' }]);
  });

  it('an Anthropic agent: a strict schema natively (output_config), json_object by instruction; both validated', async () => {
    llm.enqueue({ kind: 'message', text: '{"name":"Ada","age":36}' });
    let from = llm.requests.length;
    const strict = await client.chat.completions.create({
      model: 'claude',
      messages: [{ role: 'user', content: 'Ada is 36.' }],
      response_format: { type: 'json_schema', json_schema: { name: 'person', schema: PERSON, strict: true } },
    });
    expect(JSON.parse(strict.choices[0].message.content!)).toEqual({ name: 'Ada', age: 36 });
    let [sent] = sentSince(from);
    expect(sent.endpoint).toBe('anthropic.messages');
    expect((sent.body as { output_config: unknown }).output_config).toEqual({
      format: { type: 'json_schema', schema: PERSON },
    });

    // No native mode for a bare object: the model is told, and a prose answer is repaired.
    llm.enqueue(
      { kind: 'message', text: 'The answer is yes.' },
      { kind: 'message', text: '{"answer":"yes"}' },
    );
    from = llm.requests.length;
    const object = await client.chat.completions.create({
      model: 'claude',
      messages: [{ role: 'user', content: 'Is it?' }],
      response_format: { type: 'json_object' },
    });
    expect(JSON.parse(object.choices[0].message.content!)).toEqual({ answer: 'yes' });
    [sent] = sentSince(from);
    const body = sent.body as { output_config?: unknown; system: { text: string }[] | string };
    expect(body.output_config).toBeUndefined();
    expect(JSON.stringify(body.system)).toContain('single JSON object');
    expect(sentSince(from)).toHaveLength(2);
  });

  it('POST /v1/sessions/{id}/messages takes responseFormat natively; a malformed one is a 400 admitting nothing', async () => {
    const agent = (await api.get('/v1/agents')).body.data.find(
      (a: { name: string }) => a.name === 'extractor',
    );
    const session = (await api.post('/v1/sessions', { agentId: agent.id })).body;
    const responseFormat = { type: 'json_schema', name: 'person', schema: PERSON };
    llm.enqueue(
      { kind: 'message', text: '{"name":"Ada"}' },
      { kind: 'message', text: '{"name":"Ada","age":36}' },
    );
    const answered = await api.post(`/v1/sessions/${session.id}/messages`, {
      content: 'Ada is 36.',
      responseFormat,
      wait: true,
    });
    expect(answered.status).toBe(200);
    expect(answered.body).toMatchObject({
      status: 'completed',
      iterations: 2,
      finalText: '{"name":"Ada","age":36}',
    });
    expect(await storedFormat(answered.body.id)).toEqual(responseFormat);

    llm.enqueue({ kind: 'message', text: 'no' }, { kind: 'message', text: 'no again' });
    const failed = await api.post(`/v1/sessions/${session.id}/messages`, {
      content: 'x',
      responseFormat: { type: 'json_object' },
      wait: true,
    });
    expect(failed.body).toMatchObject({ status: 'failed', failure: { kind: 'structured_output_invalid' } });

    const before = await turnCount();
    const refused = await api.post(`/v1/sessions/${session.id}/messages`, {
      content: 'x',
      responseFormat: {
        type: 'json_schema',
        name: 'p',
        schema: { type: 'object', properties: { a: { minimum: 'x' } } },
      },
    });
    expect(refused.status).toBe(400);
    expect(refused.body.error).toMatchObject({
      code: 'validation_failed',
      details: { issues: [{ path: 'responseFormat.schema', message: expect.stringContaining('minimum') }] },
    });
    const unnamed = await api.post(`/v1/sessions/${session.id}/messages`, {
      content: 'x',
      responseFormat: { type: 'json_schema', schema: PERSON },
    });
    expect(unnamed.status).toBe(400);
    expect(await turnCount()).toBe(before);
  });
});
