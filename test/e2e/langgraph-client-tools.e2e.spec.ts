import { tool } from '@langchain/core/tools';
import { convertToOpenAITool } from '@langchain/core/utils/function_calling';
import {
  Client,
  flushPendingHeadlessToolInterrupts,
  parseHeadlessToolInterruptPayload,
  type HeadlessToolImplementation,
  type HeadlessToolResumeCommand,
} from '@langchain/langgraph-sdk';
import { z } from 'zod';
import {
  createTestEnv,
  FakeLlmServer,
  scripted,
  spawnApp,
  spawnGateway,
  type AppProcess,
  type TestEnv,
} from '@switchboard/testing';
import { newTenant, type Api } from '../support/api';

jest.setTimeout(120_000);

const ADMIN = 'test-admin-token-0123456789';

/** The client's tool, as a LangChain user defines it; the agent offers it to its model by its schema. */
const getWeather = tool(async ({ city }: { city: string }) => `sunny in ${city}`, {
  name: 'get_weather',
  description: 'The weather in a city',
  schema: z.object({ city: z.string() }),
});
const CONTEXT = { tools: [convertToOpenAITool(getWeather)] };

interface Interrupt {
  id: string;
  value: Record<string, unknown>;
}
type Values = { messages: { type: string; content: unknown }[]; __interrupt__?: Interrupt[] };

/**
 * Client-side tools through the LangGraph Agent Server API (docs/adr/0038, 0047) with the stock
 * `@langchain/langgraph-sdk` Client and its own headless-tool helpers, through real processes: a run
 * declares the client's tools in `context.tools`; a call of one pauses the run as an interrupt
 * `{type: 'tool', toolCall}`; `command: {resume}` carries the result and the same turn goes on once.
 */
describe('LangGraph client tools (headless-tool interrupts) with @langchain/langgraph-sdk', () => {
  let env: TestEnv;
  let llm: FakeLlmServer;
  const processes: AppProcess[] = [];
  let url: string;
  let api: Api;
  let other: Api;
  let client: Client;

  const sdk = (apiKey: string) =>
    new Client({ apiUrl: `${url}/langgraph`, apiKey, callerOptions: { maxRetries: 0 } });

  /** What the client runs for the agent: the SDK's headless-tool implementation shape. */
  const executed: unknown[] = [];
  const implementations: HeadlessToolImplementation[] = [
    {
      tool: { name: 'get_weather' },
      execute: async (args) => {
        executed.push(args);
        return { forecast: `sunny in ${(args as { city: string }).city}` };
      },
    },
  ];

  /** The SDK's own flush: runs every pending headless-tool interrupt and hands back its resume command. */
  const flush = (values: Values) =>
    new Promise<HeadlessToolResumeCommand>((resolve) =>
      flushPendingHeadlessToolInterrupts(values, implementations, new Set(), { resumeSubmit: resolve }),
    );

  const toolMessagesSent = (i: number) =>
    (llm.requests[i].body as { messages: { role: string; content: string }[] }).messages.filter(
      (m) => m.role === 'tool',
    );

  beforeAll(async () => {
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
    client = sdk(api.key!);
    for (const [name, extra] of [
      ['helper', {}],
      ['gated', { approvalRequired: ['word_count'] }],
    ] as const) {
      const res = await api.post('/v1/agents', {
        name,
        model: 'openai-chat/gpt-4o-mini',
        tools: ['word_count'],
        ...extra,
      });
      expect(res.status).toBe(201);
    }
  });

  afterAll(async () => {
    await Promise.all(processes.map((p) => p.kill('SIGTERM')));
    await llm?.close();
    await env?.cleanup();
  });

  const newThread = async (graphId = 'helper') => (await client.threads.create({ graphId })).thread_id;

  it('runs.wait pauses at a headless-tool interrupt; the SDK’s flush answers it and the same run goes on once', async () => {
    llm.enqueue(scripted.toolCall('get_weather', { city: 'Oslo' }));
    llm.enqueue(scripted.text('Oslo is sunny.'));
    const threadId = await newThread();
    const before = llm.requests.length;
    const paused = (await client.runs.wait(threadId, 'helper', {
      input: { messages: [{ type: 'human', content: 'Weather in Oslo?' }] },
      context: CONTEXT,
    })) as Values;
    // The model was offered the client's tool beside the agent's own.
    const offered = (llm.requests[before].body as { tools: { function: { name: string } }[] }).tools;
    expect(offered.map((t) => t.function.name)).toEqual(
      expect.arrayContaining(['word_count', 'get_weather']),
    );
    expect(paused.__interrupt__).toHaveLength(1);
    const [interrupt] = paused.__interrupt__!;
    const headless = parseHeadlessToolInterruptPayload(interrupt.value);
    expect(headless).toMatchObject({
      type: 'tool',
      toolCall: { name: 'get_weather', args: { city: 'Oslo' } },
    });
    expect(headless!.toolCall.id).toMatch(/^call_[0-9a-f]{32}$/);

    // The thread and its run show the interrupt, as for an approval.
    const thread = await client.threads.get(threadId);
    expect(thread.status).toBe('interrupted');
    const [run] = await client.runs.list(threadId);
    expect(run.status).toBe('interrupted');
    expect(thread.interrupts[run.run_id]).toEqual([interrupt]);
    const state = await client.threads.getState(threadId);
    expect(state.next).toEqual(['tools']);
    expect(state.tasks[0].interrupts).toEqual([interrupt]);
    expect((await api.get(`/v1/turns/${run.run_id}`)).body.status).toBe('awaiting_client_tool');
    // A client tool wait is not a person's approval.
    expect((await api.get('/v1/approvals?status=pending')).body.data).toEqual([]);
    // A new message while it waits is refused: the run must be resumed (or interrupted).
    await expect(
      client.runs.wait(threadId, 'helper', { input: { messages: [{ type: 'human', content: 'hello?' }] } }),
    ).rejects.toMatchObject({ status: 409 });

    const command = await flush(paused);
    expect(executed).toEqual([{ city: 'Oslo' }]);
    const resumedAt = llm.requests.length;
    // As useStream submits it: the command as the flush built it, multitask interrupt, its context again.
    const done = (await client.runs.wait(threadId, 'helper', {
      command,
      multitaskStrategy: 'interrupt',
      context: CONTEXT,
    })) as Values;
    expect(done.__interrupt__).toBeUndefined();
    expect(done.messages.at(-1)).toMatchObject({ type: 'ai', content: 'Oslo is sunny.' });
    expect(toolMessagesSent(resumedAt).at(-1)?.content).toContain('sunny in Oslo');
    expect((await client.runs.list(threadId)).map((r) => [r.run_id, r.status])).toEqual([
      [run.run_id, 'success'],
    ]);
    expect((await client.threads.get(threadId)).status).toBe('idle');

    // The same answer again: the run is the same, nothing resumes twice.
    const again = (await client.runs.wait(threadId, 'helper', { command })) as Values;
    expect(again.messages).toEqual(done.messages);
    expect(llm.requests.length).toBe(resumedAt + 1);
    expect(await env.db.turn.count({ where: { sessionId: threadId } })).toBe(1);
    // Another output for the answered call is a conflict.
    await expect(
      client.runs.wait(threadId, 'helper', { command: { resume: { [headless!.toolCall.id!]: 'rain' } } }),
    ).rejects.toMatchObject({ status: 409 });
  });

  it('streams a pause as updates {__interrupt__} and end interrupted; a resume by interrupt id streams the rest', async () => {
    llm.enqueue(scripted.toolCall('get_weather', { city: 'Rome' }));
    llm.enqueue(scripted.text('Rome: warm.'));
    const threadId = await newThread();
    const first: { event: string; data: unknown }[] = [];
    for await (const chunk of client.runs.stream(threadId, 'helper', {
      input: { messages: [{ type: 'human', content: 'Weather in Rome?' }] },
      context: CONTEXT,
      streamMode: ['values', 'updates'],
    })) {
      first.push(chunk);
    }
    const interruptEvent = first.find(
      (c) => c.event === 'updates' && (c.data as { __interrupt__?: unknown }).__interrupt__,
    );
    const [interrupt] = (interruptEvent!.data as { __interrupt__: Interrupt[] }).__interrupt__;
    const callId = parseHeadlessToolInterruptPayload(interrupt.value)!.toolCall.id!;
    expect(first.at(-1)).toMatchObject({ event: 'end', data: { status: 'interrupted' } });

    // The batch form the SDK sends when it knows the interrupt ids: {[interrupt id]: {[toolCall.id]: result}}.
    const second: { event: string; data: unknown }[] = [];
    for await (const chunk of client.runs.stream(threadId, 'helper', {
      command: { resume: { [interrupt.id]: { [callId]: 'warm, 28C' } } },
      streamMode: ['values'],
    })) {
      second.push(chunk);
    }
    const last = second.filter((c) => c.event === 'values').at(-1)!.data as Values;
    expect(last.messages.map((m) => m.type)).toEqual(['human', 'ai', 'tool', 'ai']);
    // A tool message holds the result as every tool's: `{ok: true, result}` (docs/adr/0047).
    expect(JSON.parse(last.messages[2].content as string)).toEqual({ ok: true, result: 'warm, 28C' });
    expect(last.messages[3].content).toBe('Rome: warm.');
    expect(second.at(-1)).toMatchObject({ event: 'end', data: { status: 'success' } });
  });

  it('a round with an approval and a client tool: one resume map by interrupt id answers both', async () => {
    llm.enqueue({
      kind: 'message',
      toolCalls: [
        { name: 'get_weather', arguments: '{"city":"Bern"}' },
        { name: 'word_count', arguments: '{"text":"one two"}' },
      ],
    });
    llm.enqueue(scripted.text('Bern: fog; two words.'));
    const threadId = await newThread('gated');
    const paused = (await client.runs.wait(threadId, 'gated', {
      input: { messages: [{ type: 'human', content: 'Both please' }] },
      context: CONTEXT,
    })) as Values;
    const interrupts = paused.__interrupt__!;
    expect(interrupts.map((i) => i.value.type).sort()).toEqual(['approval', 'tool']);
    const toolInterrupt = interrupts.find((i) => i.value.type === 'tool')!;
    const approval = interrupts.find((i) => i.value.type === 'approval')!;
    // The client's result alone is not enough: the approval must be decided too (nothing written).
    await expect(
      client.runs.wait(threadId, 'gated', { command: { resume: { [toolInterrupt.id]: 'fog' } } }),
    ).rejects.toMatchObject({ status: 422 });
    const done = (await client.runs.wait(threadId, 'gated', {
      command: { resume: { [toolInterrupt.id]: 'fog', [approval.id]: 'approve' } },
    })) as Values;
    expect(done.messages.at(-1)).toMatchObject({ type: 'ai', content: 'Bern: fog; two words.' });
    const results = done.messages
      .filter((m) => m.type === 'tool')
      .map((m) => JSON.parse(m.content as string));
    expect(results).toEqual(
      expect.arrayContaining([
        { ok: true, result: 'fog' },
        { ok: true, result: { words: 2, characters: 7 } },
      ]),
    );
  });

  it('refuses bad declarations and bad answers with a 4xx, admitting and storing nothing', async () => {
    const threadId = await newThread();
    const turns = () => env.db.turn.count();
    const before = await turns();
    const human = { messages: [{ type: 'human', content: 'x' }] };
    const refusals: [unknown, number, RegExp][] = [
      // Checked as every protocol checks them (docs/adr/0047); a body LangGraph cannot take is 422.
      [{ tools: [{ type: 'function', function: { name: 'word_count' } }] }, 422, /agent has its own tool/],
      [{ tools: [{ name: 'a b' }] }, 422, /context\.tools\[0\]\.name/],
      [{ tools: [{ name: 'x', parameters: { type: 'string' } }] }, 422, /context\.tools\[0\]\.parameters/],
      [{ tools: [{ name: 'x', parameters: { type: 'object', required: 'city' } }] }, 422, /JSON Schema/],
      [{ tools: [{ name: 'x' }, { name: 'x' }] }, 422, /declared twice/],
      [{ tools: 'get_weather' }, 422, /must be a list/],
      [{ tools: [{ type: 'web_search' }] }, 422, /only function tools/],
    ];
    for (const [context, status, detail] of refusals) {
      const err = await client.runs
        .wait(threadId, 'helper', { input: human, context })
        .catch((e: unknown) => e);
      expect(err).toMatchObject({ status });
      expect(String((err as Error).message)).toMatch(detail);
    }
    // A new thread with if_not_exists create is not created either.
    const fresh = '0190ffff-0000-7000-8000-00000000c1a7';
    await expect(
      client.runs.wait(fresh, 'helper', { input: human, context: { tools: 1 }, ifNotExists: 'create' }),
    ).rejects.toMatchObject({ status: 422 });
    await expect(client.threads.get(fresh)).rejects.toMatchObject({ status: 404 });
    expect(await turns()).toBe(before);

    // A waiting run: answers that are not its calls' are refused, and it still waits.
    llm.enqueue({
      kind: 'message',
      toolCalls: [
        { name: 'get_weather', arguments: '{"city":"Lima"}' },
        { name: 'get_weather', arguments: '{"city":"Quito"}' },
      ],
    });
    llm.enqueue(scripted.text('Both warm.'));
    const paused = (await client.runs.wait(threadId, 'helper', { input: human, context: CONTEXT })) as Values;
    const ids = paused.__interrupt__!.map((i) => parseHeadlessToolInterruptPayload(i.value)!.toolCall.id!);
    expect(ids).toHaveLength(2);
    const resume = (r: unknown, on = client) => on.runs.wait(threadId, 'helper', { command: { resume: r } });
    // A bare value cannot say which of two calls it answers.
    await expect(resume('warm')).rejects.toMatchObject({ status: 422 });
    // One of two calls: the other is missing (400); an unknown call id: 404.
    await expect(resume({ [ids[0]]: 'warm' })).rejects.toMatchObject({ status: 400 });
    await expect(resume({ [ids[0]]: 'a', ['call_' + '0'.repeat(32)]: 'b' })).rejects.toMatchObject({
      status: 404,
    });
    // Another tenant cannot answer (nor see) the thread's calls.
    await expect(resume({ [ids[0]]: 'a', [ids[1]]: 'b' }, sdk(other.key!))).rejects.toMatchObject({
      status: 404,
    });
    const runId = (await client.runs.list(threadId))[0].run_id;
    expect((await api.get(`/v1/turns/${runId}`)).body.status).toBe('awaiting_client_tool');
    expect(await env.db.approval.count({ where: { turnId: runId, status: 'answered' } })).toBe(0);

    const done = (await resume({ [ids[0]]: 'warm', [ids[1]]: 'warmer' })) as Values;
    expect(done.messages.at(-1)).toMatchObject({ type: 'ai', content: 'Both warm.' });
  });
});
