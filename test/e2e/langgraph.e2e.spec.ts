import { randomUUID } from 'node:crypto';
import { Client } from '@langchain/langgraph-sdk';
import { RemoteGraph } from '@langchain/langgraph/remote';
import {
  createTestEnv,
  FakeLlmServer,
  spawnApp,
  spawnGateway,
  waitFor,
  type AppProcess,
  type RecordedRequest,
  type ScriptedReply,
  type TestEnv,
} from '@switchboard/testing';
import { newTenant, type Api } from '../support/api';

jest.setTimeout(120_000);

/** Every item of an async iterable (RemoteGraph's getStateHistory and stream, the SDK's streams). */
async function all<T>(items: AsyncIterable<T>): Promise<T[]> {
  const out: T[] = [];
  for await (const item of items) out.push(item);
  return out;
}

const ADMIN = 'test-admin-token-0123456789';

/** The last message the agent's model was sent: its role and text. */
function lastMessage(r: RecordedRequest): { role: string; text: string } {
  const messages = (r.body as { messages?: { role: string; content: unknown }[] })?.messages ?? [];
  const m = messages.at(-1);
  const c = m?.content;
  const text =
    typeof c === 'string'
      ? c
      : Array.isArray(c)
        ? c.map((p: { text?: string }) => p.text ?? '').join('')
        : '';
  return { role: m?.role ?? '', text };
}

/**
 * The model, by the turn's message: `stall…` streams a little and then holds the stream open (until
 * the turn is cancelled); `count…` calls word_count; after a tool result it reports it; anything
 * else is answered `Answer: <message>` in three streamed pieces.
 */
function reply(r: RecordedRequest): ScriptedReply {
  const last = lastMessage(r);
  if (last.role === 'tool') return { kind: 'message', text: `The tool said ${last.text}` };
  // Recalled memory (docs/adr/0022) comes before the message, set apart by a blank line.
  const cut = last.text.lastIndexOf('\n\n');
  const text = cut < 0 ? last.text : last.text.slice(cut + 2);
  if (text.startsWith('stall'))
    return { kind: 'message', text: 'thinking about it at length', stallAfterFrames: 2 };
  if (text.startsWith('count')) {
    return {
      kind: 'message',
      toolCalls: [
        { id: `call_${randomUUID().slice(0, 8)}`, name: 'word_count', arguments: '{"text":"one two three"}' },
      ],
    };
  }
  return { kind: 'message', text: `Answer: ${text}`, textPieces: 3, frameIntervalMs: 30 };
}

/**
 * The LangGraph Agent Server API subset (docs/adr/0038) with the stock `@langchain/langgraph-sdk`
 * Client, unmodified, through real processes: a gateway and a harness worker, the agent's model on
 * the fake LLM server. Assistant = agent, thread = session, run = turn, interrupt = approval.
 */
describe('LangGraph Agent Server API with @langchain/langgraph-sdk', () => {
  let env: TestEnv;
  let llm: FakeLlmServer;
  const processes: AppProcess[] = [];
  let url: string;
  let api: Api;
  let other: Api;
  let client: Client;
  let agentId: string;
  let gatedId: string;

  const sdk = (apiKey: string) =>
    new Client({ apiUrl: `${url}/langgraph`, apiKey, callerOptions: { maxRetries: 0 } });

  beforeAll(async () => {
    env = await createTestEnv();
    llm = await FakeLlmServer.start();
    llm.setDefault(reply);
    const [gateway, harness] = await Promise.all([
      spawnGateway(env.processEnv(llm.providerEnv)),
      spawnApp('harness-worker', env.processEnv(llm.providerEnv)),
    ]);
    processes.push(gateway, harness);
    url = gateway.url;
    ({ api } = await newTenant(url, ADMIN));
    ({ api: other } = await newTenant(url, ADMIN, 'other'));
    client = sdk(api.key!);
    const agent = await api.post('/v1/agents', {
      name: 'helper',
      model: 'openai-chat/gpt-4o-mini',
      tools: ['word_count'],
    });
    expect(agent.status).toBe(201);
    agentId = agent.body.id;
    const gated = await api.post('/v1/agents', {
      name: 'gated',
      model: 'openai-chat/gpt-4o-mini',
      tools: ['word_count'],
      approvalRequired: ['word_count'],
    });
    expect(gated.status).toBe(201);
    gatedId = gated.body.id;
  });

  afterAll(async () => {
    await Promise.all(processes.map((p) => p.kill('SIGTERM')));
    await llm?.close();
    await env?.cleanup();
  });

  const newThread = async (graphId = 'helper') => (await client.threads.create({ graphId })).thread_id;

  it('lists the tenant’s agents as assistants and gets one by id or name', async () => {
    const found = await client.assistants.search({ limit: 10 });
    expect(found.map((a) => a.graph_id).sort()).toEqual(['gated', 'helper']);
    const helper = found.find((a) => a.graph_id === 'helper')!;
    expect(helper).toMatchObject({ assistant_id: agentId, name: 'helper', version: 1 });
    expect(await client.assistants.search({ graphId: 'gated' })).toEqual([
      expect.objectContaining({ assistant_id: gatedId }),
    ]);
    expect((await client.assistants.get(agentId)).graph_id).toBe('helper');
    expect((await client.assistants.get('helper')).assistant_id).toBe(agentId);
    // Another tenant sees none of them.
    expect(await sdk(other.key!).assistants.search()).toEqual([]);
    await expect(sdk(other.key!).assistants.get(agentId)).rejects.toMatchObject({ status: 404 });
  });

  it('creates a thread (a session of the agent), finds it, and streams a run: values, messages-tuple, updates', async () => {
    const thread = await client.threads.create({ graphId: 'helper', metadata: { topic: 'greeting' } });
    expect(thread).toMatchObject({
      status: 'idle',
      values: { messages: [] },
      metadata: { topic: 'greeting', assistant_id: agentId, graph_id: 'helper' },
    });
    const session = await api.get(`/v1/sessions/${thread.thread_id}`);
    expect(session.body).toMatchObject({ agentId, metadata: { topic: 'greeting' } });
    const searched = await client.threads.search({ metadata: { topic: 'greeting' } });
    expect(searched.map((t) => t.thread_id)).toEqual([thread.thread_id]);

    const events: { event: string; data: any }[] = [];
    for await (const part of client.runs.stream(thread.thread_id, 'helper', {
      input: { messages: [{ type: 'human', content: 'hello there' }] },
      streamMode: ['values', 'messages-tuple', 'updates'],
    })) {
      events.push(part);
    }
    const kinds = events.map((e) => e.event);
    expect(kinds[0]).toBe('metadata');
    expect(kinds.at(-1)).toBe('end');
    const runId = events[0].data.run_id as string;
    expect(events[0].data.thread_id).toBe(thread.thread_id);
    // The first values: the human message the run started from.
    const values = events.filter((e) => e.event === 'values');
    expect(values[0].data.messages).toEqual([
      expect.objectContaining({ type: 'human', content: 'hello there' }),
    ]);
    // Text deltas as AIMessageChunks, which together are the answer (live as the provider streams;
    // a round whose live chunks were not seen comes whole from the journal).
    const chunks = events.filter((e) => e.event === 'messages').map((e) => e.data);
    expect(chunks.length).toBeGreaterThanOrEqual(1);
    expect(chunks.map(([m]) => m.content).join('')).toBe('Answer: hello there');
    expect(chunks[0][0]).toMatchObject({ type: 'AIMessageChunk' });
    expect(chunks[0][1]).toMatchObject({ run_id: runId, langgraph_node: 'agent' });
    // The agent's step as an update, and the final values holding both messages.
    const updates = events.filter((e) => e.event === 'updates').map((e) => e.data);
    expect(updates).toContainEqual({
      agent: { messages: [expect.objectContaining({ type: 'ai', content: 'Answer: hello there' })] },
    });
    expect(values.at(-1)!.data.messages.map((m: any) => [m.type, m.content])).toEqual([
      ['human', 'hello there'],
      ['ai', 'Answer: hello there'],
    ]);
    expect(events.at(-1)!.data).toEqual({ run_id: runId, status: 'success' });

    // The run is the turn; the thread's state is the transcript.
    expect((await api.get(`/v1/turns/${runId}`)).body).toMatchObject({
      status: 'completed',
      sessionId: thread.thread_id,
    });
    const run = await client.runs.get(thread.thread_id, runId);
    expect(run).toMatchObject({
      run_id: runId,
      thread_id: thread.thread_id,
      assistant_id: agentId,
      status: 'success',
    });
    expect((await client.runs.list(thread.thread_id)).map((r) => r.run_id)).toEqual([runId]);
    const state = await client.threads.getState<{ messages: any[] }>(thread.thread_id);
    expect(state.values.messages.map((m) => [m.type, m.content])).toEqual([
      ['human', 'hello there'],
      ['ai', 'Answer: hello there'],
    ]);
    expect(state.next).toEqual([]);
    // Its checkpoints (docs/adr/0038): the run's end and input, the thread's initial state.
    const history = await client.threads.getHistory(thread.thread_id);
    expect(history.map((h) => h.metadata?.source)).toEqual(['loop', 'input', 'input']);
    expect(history[0].checkpoint.checkpoint_id).toBe(runId);
    expect((await client.threads.get(thread.thread_id)).status).toBe('idle');
  });

  it('waits for a run: the thread’s values; tool calls and results appear as ai / tool messages', async () => {
    const threadId = await newThread();
    const first = await client.runs.wait(threadId, agentId, {
      input: { messages: [{ role: 'user', content: 'hi' }] },
    });
    expect((first as { messages: any[] }).messages.at(-1)).toMatchObject({
      type: 'ai',
      content: 'Answer: hi',
    });

    const second = (await client.runs.wait(threadId, 'helper', {
      input: { messages: [{ type: 'human', content: 'count these words' }] },
    })) as { messages: any[] };
    const shape = second.messages.map((m) => m.type);
    expect(shape).toEqual(['human', 'ai', 'human', 'ai', 'tool', 'ai']);
    const call = second.messages[3];
    expect(call.tool_calls).toEqual([
      expect.objectContaining({ name: 'word_count', args: { text: 'one two three' }, type: 'tool_call' }),
    ]);
    expect(second.messages[4]).toMatchObject({ type: 'tool', tool_call_id: call.tool_calls[0].id });
    expect(second.messages[5].content).toMatch(/^The tool said/);
  });

  it('creates a background run and joins it', async () => {
    const threadId = await newThread();
    const run = await client.runs.create(threadId, 'helper', {
      input: { messages: [{ type: 'human', content: 'in the background' }] },
    });
    expect(run).toMatchObject({ thread_id: threadId, assistant_id: agentId });
    expect(['pending', 'running', 'success']).toContain(run.status);
    const joined = (await client.runs.join(threadId, run.run_id)) as { messages: any[] };
    expect(joined.messages.at(-1)).toMatchObject({ type: 'ai', content: 'Answer: in the background' });
    expect((await client.runs.get(threadId, run.run_id)).status).toBe('success');
    // Joined as a stream after it ended: replayed from the journal, to its end.
    const replay: { event: string; data: any }[] = [];
    for await (const part of client.runs.joinStream(threadId, run.run_id, {
      streamMode: ['values', 'updates'],
    })) {
      replay.push(part);
    }
    expect(replay[0]).toMatchObject({ event: 'metadata', data: { run_id: run.run_id } });
    expect(replay.at(-1)).toEqual({ event: 'end', data: { run_id: run.run_id, status: 'success' } });
    expect(
      replay
        .filter((e) => e.event === 'values')
        .at(-1)!
        .data.messages.at(-1),
    ).toMatchObject({
      type: 'ai',
      content: 'Answer: in the background',
    });
    expect(replay.filter((e) => e.event === 'updates').map((e) => Object.keys(e.data))).toEqual([['agent']]);
  });

  it('joins a running run as a stream', async () => {
    const threadId = await newThread();
    const run = await client.runs.create(threadId, 'helper', {
      input: { messages: [{ type: 'human', content: 'joined live' }] },
    });
    const events: { event: string; data: any }[] = [];
    for await (const part of client.runs.joinStream(threadId, run.run_id, {
      streamMode: ['messages-tuple', 'values'],
    })) {
      events.push(part);
    }
    expect(events.at(-1)).toEqual({ event: 'end', data: { run_id: run.run_id, status: 'success' } });
    const text = events
      .filter((e) => e.event === 'messages')
      .map((e) => e.data[0])
      .filter((m) => m.type === 'AIMessageChunk')
      .map((m) => m.content)
      .join('');
    expect(text).toBe('Answer: joined live');
  });

  it('multitask reject refuses a busy thread, interrupt cancels its run; cancel stops a long run', async () => {
    const threadId = await newThread();
    const running = async (text: string) => {
      const before = llm.requests.length;
      const run = await client.runs.create(threadId, 'helper', {
        input: { messages: [{ type: 'human', content: text }] },
      });
      await llm.waitForRequests(before + 1);
      await waitFor(
        async () => ((await client.runs.get(threadId, run.run_id)).status === 'running' ? true : undefined),
        { what: 'the run to be running' },
      );
      return run.run_id;
    };
    const turnEnded = (id: string) =>
      waitFor(
        async () => {
          const t = await api.get(`/v1/turns/${id}`);
          return ['completed', 'failed', 'cancelled'].includes(t.body.status) ? t.body : undefined;
        },
        { what: `turn ${id} ended`, timeoutMs: 60_000 },
      );

    const first = await running('stall for a while');
    expect((await client.threads.get(threadId)).status).toBe('busy');
    await expect(
      client.runs.create(threadId, 'helper', {
        input: { messages: [{ type: 'human', content: 'not now' }] },
        multitaskStrategy: 'reject',
      }),
    ).rejects.toMatchObject({ status: 409 });
    // interrupt: the running turn is cancelled, the new one runs after it.
    const after = (await client.runs.wait(threadId, 'helper', {
      input: { messages: [{ type: 'human', content: 'instead' }] },
      multitaskStrategy: 'interrupt',
    })) as { messages: any[] };
    expect(after.messages.at(-1)).toMatchObject({ type: 'ai', content: 'Answer: instead' });
    expect((await turnEnded(first)).status).toBe('cancelled');
    expect((await client.runs.get(threadId, first)).status).toBe('interrupted');

    const second = await running('stall once more');
    await client.runs.cancel(threadId, second);
    const turn = await turnEnded(second);
    expect([turn.status, turn.stopReason]).toEqual(['cancelled', 'cancelled']);
    expect((await client.runs.get(threadId, second)).status).toBe('interrupted');
    expect((await client.threads.get(threadId)).status).toBe('idle');
    // Rollback is not supported: refused.
    await expect(client.runs.cancel(threadId, second, false, 'rollback')).rejects.toMatchObject({
      status: 422,
    });
  });

  it('on_disconnect cancel: a client that leaves a stream cancels its run', async () => {
    const threadId = await newThread();
    const leave = new AbortController();
    let runId: string | undefined;
    const before = llm.requests.length;
    const reading = (async () => {
      for await (const part of client.runs.stream(threadId, 'helper', {
        input: { messages: [{ type: 'human', content: 'stall and wait for me' }] },
        onDisconnect: 'cancel',
        signal: leave.signal,
      })) {
        if (part.event === 'metadata') runId = (part.data as { run_id: string }).run_id;
      }
    })().catch(() => undefined);
    await llm.waitForRequests(before + 1);
    await waitFor(() => runId, { what: 'the metadata event' });
    leave.abort();
    await reading;
    const turn = await waitFor(
      async () => {
        const t = await api.get(`/v1/turns/${runId}`);
        return t.body.status === 'cancelled' ? t.body : undefined;
      },
      { what: 'the turn cancelled', timeoutMs: 60_000 },
    );
    expect(turn.stopReason).toBe('cancelled');
  });

  it('streams in `messages` mode: partial messages as the text grows, the complete message at the end', async () => {
    const threadId = await newThread();
    const events: { event: string; data: any }[] = [];
    for await (const part of client.runs.stream(threadId, 'helper', {
      input: { messages: [{ type: 'human', content: 'piece by piece' }] },
      streamMode: 'messages',
    })) {
      events.push(part);
    }
    expect(events.some((e) => e.event === 'values')).toBe(false);
    const partial = events.filter((e) => e.event === 'messages/partial').map((e) => e.data[0].content);
    expect(partial.at(-1)).toBe('Answer: piece by piece');
    const complete = events.filter((e) => e.event === 'messages/complete').map((e) => e.data[0]);
    expect(complete).toEqual([expect.objectContaining({ type: 'ai', content: 'Answer: piece by piece' })]);
  });

  it('surfaces an approval pause as an interrupt and resumes it with command.resume', async () => {
    const thread = await client.threads.create({ metadata: { assistant_id: gatedId } });
    const events: { event: string; data: any }[] = [];
    for await (const part of client.runs.stream(thread.thread_id, gatedId, {
      input: { messages: [{ type: 'human', content: 'count please' }] },
      streamMode: ['values', 'updates'],
    })) {
      events.push(part);
    }
    const runId = events[0].data.run_id as string;
    expect(events.at(-1)).toEqual({ event: 'end', data: { run_id: runId, status: 'interrupted' } });
    const interruptUpdate = events.find((e) => e.event === 'updates' && e.data.__interrupt__);
    expect(interruptUpdate).toBeDefined();
    const [interrupt] = interruptUpdate!.data.__interrupt__;
    expect(interrupt.value).toMatchObject({
      type: 'approval',
      run_id: runId,
      tool_call: { name: 'word_count', args: { text: 'one two three' } },
    });
    expect(events.filter((e) => e.event === 'values').at(-1)!.data.__interrupt__).toEqual([interrupt]);
    // The interrupt is the approval; the thread is interrupted, its state names the paused task.
    expect((await api.get(`/v1/approvals/${interrupt.id}`)).body).toMatchObject({
      status: 'pending',
      turnId: runId,
    });
    const t = await client.threads.get(thread.thread_id);
    expect(t.status).toBe('interrupted');
    expect(t.interrupts[runId]).toEqual([interrupt]);
    const state = await client.threads.getState(thread.thread_id);
    expect(state.next).toEqual(['tools']);
    expect(state.tasks).toEqual([expect.objectContaining({ id: runId, interrupts: [interrupt] })]);
    expect((await client.runs.get(thread.thread_id, runId)).status).toBe('interrupted');
    // A new message while it waits is refused, not queued behind the pause.
    await expect(
      client.runs.create(thread.thread_id, gatedId, {
        input: { messages: [{ type: 'human', content: 'other' }] },
      }),
    ).rejects.toMatchObject({ status: 409 });

    // Resumed: the approval is approved, the same turn goes on, the tool runs, the answer comes.
    const resumed: { event: string; data: any }[] = [];
    for await (const part of client.runs.stream(thread.thread_id, gatedId, {
      command: { resume: 'approve' },
      streamMode: ['values', 'updates'],
    })) {
      resumed.push(part);
    }
    expect(resumed[0]).toMatchObject({ event: 'metadata', data: { run_id: runId } });
    expect(resumed.at(-1)).toEqual({ event: 'end', data: { run_id: runId, status: 'success' } });
    const final = resumed.filter((e) => e.event === 'values').at(-1)!.data;
    expect(final.__interrupt__).toBeUndefined();
    expect(final.messages.map((m: any) => m.type)).toEqual(['human', 'ai', 'tool', 'ai']);
    expect(final.messages.at(-1).content).toMatch(/^The tool said/);
    expect((await api.get(`/v1/approvals/${interrupt.id}`)).body.status).toBe('approved');
    expect((await client.threads.get(thread.thread_id)).status).toBe('idle');
    // Nothing left to resume.
    await expect(
      client.runs.wait(thread.thread_id, gatedId, { command: { resume: 'approve' } }),
    ).rejects.toMatchObject({ status: 409 });
  });

  it('a rejected interrupt (runs.wait with a resume map by interrupt id): the tool does not run', async () => {
    const threadId = await newThread('gated');
    const paused = (await client.runs.wait(threadId, 'gated', {
      input: { messages: [{ type: 'human', content: 'count again' }] },
    })) as { messages: any[]; __interrupt__: { id: string }[] };
    expect(paused.__interrupt__).toHaveLength(1);
    const id = paused.__interrupt__[0].id;
    const done = (await client.runs.wait(threadId, 'gated', {
      command: { resume: { [id]: { decision: 'reject', reason: 'not now' } } },
    })) as { messages: any[]; __interrupt__?: unknown };
    expect(done.__interrupt__).toBeUndefined();
    expect((await api.get(`/v1/approvals/${id}`)).body).toMatchObject({
      status: 'rejected',
      reason: 'not now',
    });
    const tool = done.messages.find((m) => m.type === 'tool');
    expect(tool.content).not.toMatch(/"words"\s*:\s*3/);
  });

  it('refuses a wrong key (401), another tenant’s thread or run (404), and bad bodies (422 {detail}) without 5xx', async () => {
    const threadId = await newThread();
    const run = await client.runs.wait(threadId, 'helper', {
      input: { messages: [{ type: 'human', content: 'x' }] },
    });
    expect(run).toBeDefined();
    const runId = (await client.runs.list(threadId))[0].run_id;

    await expect(sdk('sb_not-a-key').assistants.search()).rejects.toMatchObject({ status: 401 });
    const noKey = await fetch(`${url}/langgraph/assistants/search`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: '{}',
    });
    expect(noKey.status).toBe(401);
    expect(await noKey.json()).toEqual({ detail: expect.stringContaining('API key') });
    // The x-api-key header is the LangGraph routes' only: the rest of the API wants the bearer.
    const elsewhere = await fetch(`${url}/v1/agents`, { headers: { 'x-api-key': api.key! } });
    expect(elsewhere.status).toBe(401);
    const bearer = await fetch(`${url}/langgraph/assistants/search`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${api.key}` },
      body: '{}',
    });
    expect(bearer.status).toBe(200);

    const stranger = sdk(other.key!);
    await expect(stranger.threads.get(threadId)).rejects.toMatchObject({ status: 404 });
    await expect(stranger.threads.getState(threadId)).rejects.toMatchObject({ status: 404 });
    await expect(stranger.runs.get(threadId, runId)).rejects.toMatchObject({ status: 404 });
    await expect(stranger.runs.cancel(threadId, runId)).rejects.toMatchObject({ status: 404 });
    await expect(stranger.runs.join(threadId, runId)).rejects.toMatchObject({ status: 404 });
    expect(await stranger.threads.search()).toEqual([]);
    await expect(
      stranger.runs.wait(threadId, 'helper', { input: { messages: [{ type: 'human', content: 'x' }] } }),
    ).rejects.toMatchObject({ status: 404 });

    const bad = async (path: string, body: unknown, status = 422) => {
      const res = await fetch(`${url}/langgraph${path}`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'x-api-key': api.key! },
        body: typeof body === 'string' ? body : JSON.stringify(body),
      });
      expect({ path, body, status: res.status }).toEqual({ path, body, status });
      const json = (await res.json()) as { detail: string };
      expect(json).toEqual({ detail: expect.any(String) });
      return json.detail;
    };
    const turnsBefore = await env.db.turn.count({ where: { sessionId: threadId } });
    await bad(`/threads/${threadId}/runs`, { assistant_id: 'helper', input: { messages: [] } });
    await bad(`/threads/${threadId}/runs`, {
      assistant_id: 'helper',
      input: { messages: [{ type: 'ai', content: 'x' }] },
    });
    await bad(`/threads/${threadId}/runs`, { assistant_id: 'helper', input: { messages: ['x'] }, bogus: 1 });
    expect(
      await bad(`/threads/${threadId}/runs`, {
        assistant_id: 'helper',
        input: { messages: ['x'] },
        multitask_strategy: 'rollback',
      }),
    ).toMatch(/rollback/);
    await bad(`/threads/${threadId}/runs`, {
      assistant_id: 'helper',
      input: { messages: ['x'] },
      checkpoint_id: 'c',
    });
    await bad(`/threads/${threadId}/runs/wait`, { assistant_id: 'helper', command: { goto: 'agent' } });
    await bad(`/threads/${threadId}/runs/stream`, { input: { messages: ['x'] } });
    await bad(`/threads/${threadId}/runs`, '{"assistant_id":', 400);
    await bad(`/threads/${threadId}/runs`, { assistant_id: 'nobody', input: { messages: ['x'] } }, 404);
    await bad(`/threads/${randomUUID()}/runs`, { assistant_id: 'helper', input: { messages: ['x'] } }, 404);
    await bad(`/threads/${threadId}/runs`, { assistant_id: 'gated', input: { messages: ['x'] } }, 409);
    await bad('/threads', { metadata: {} });
    await bad('/threads', { metadata: { graph_id: 'nobody' } }, 404);
    await bad('/threads', { thread_id: threadId, metadata: { graph_id: 'helper' } }, 409);
    await bad('/threads/search', { limit: -1 });
    await bad('/assistants/search', { limit: 'ten' });
    expect(await env.db.turn.count({ where: { sessionId: threadId } })).toBe(turnsBefore);
    const getBad = await fetch(`${url}/langgraph/threads/not-a-uuid`, { headers: { 'x-api-key': api.key! } });
    expect(getBad.status).toBe(404);
  });

  it('a run on a new thread id with if_not_exists: create binds the thread to the run’s assistant', async () => {
    const threadId = randomUUID();
    const values = (await client.runs.wait(threadId, 'helper', {
      input: { messages: [{ type: 'human', content: 'first words' }] },
      ifNotExists: 'create',
    })) as { messages: any[] };
    expect(values.messages.at(-1)).toMatchObject({ type: 'ai', content: 'Answer: first words' });
    expect((await api.get(`/v1/sessions/${threadId}`)).body.agentId).toBe(agentId);
  });

  describe('reading a thread as RemoteGraph and useStream do: checkpoints per run', () => {
    type Msg = { type: string; content: string };
    /** A run's input checkpoint: the run id's version-8 twin; the initial state's: the thread id's. */
    const twin = (id: string) => `${id.slice(0, 14)}8${id.slice(15)}`;
    const helper = (apiKey: string) =>
      new RemoteGraph({ graphId: 'helper', url: `${url}/langgraph`, apiKey });
    const say = (text: string) => ({ messages: [{ role: 'user', content: text }] });
    let threadId: string;
    let runs: string[];

    beforeAll(async () => {
      // Two turns through the stock RemoteGraph: invoke (a stream of values, if_not_exists create).
      threadId = randomUUID();
      const config = { configurable: { thread_id: threadId } };
      const graph = helper(api.key!);
      const first = (await graph.invoke(say('first'), config)) as { messages: Msg[] };
      expect(first.messages.map((m) => m.content)).toEqual(['first', 'Answer: first']);
      const second = (await graph.invoke(say('second'), config)) as { messages: Msg[] };
      expect(second.messages.map((m) => m.content)).toEqual([
        'first',
        'Answer: first',
        'second',
        'Answer: second',
      ]);
      runs = (await client.runs.list(threadId)).map((r) => r.run_id);
      expect(runs).toHaveLength(2);
    });

    it('RemoteGraph: getState is the newest run’s checkpoint, getStateHistory per run its end and input, with parent links', async () => {
      const graph = helper(api.key!);
      const config = { configurable: { thread_id: threadId } };
      const [newest, older] = runs;
      // getState sends POST /threads/{id}/state/checkpoint with {thread_id}: the current state.
      const state = await graph.getState(config);
      expect((state.values as { messages: Msg[] }).messages).toHaveLength(4);
      expect(state.config.configurable).toMatchObject({ thread_id: threadId, checkpoint_id: newest });
      expect(state.parentConfig?.configurable).toMatchObject({ checkpoint_id: twin(newest) });
      expect(state.next).toEqual([]);
      expect(state.metadata).toMatchObject({ source: 'loop', step: 2, run_id: newest });

      const history = await all(graph.getStateHistory(config));
      const ids = [newest, twin(newest), older, twin(older), twin(threadId)];
      expect(history.map((h) => h.config.configurable?.checkpoint_id)).toEqual(ids);
      expect(history.map((h) => h.parentConfig?.configurable?.checkpoint_id)).toEqual([
        ...ids.slice(1),
        undefined,
      ]);
      expect(history[0]).toEqual(state);
      const contents = (h: (typeof history)[number]) =>
        (h.values as { messages: Msg[] }).messages.map((m) => m.content);
      expect(history.map(contents)).toEqual([
        ['first', 'Answer: first', 'second', 'Answer: second'],
        ['first', 'Answer: first', 'second'],
        ['first', 'Answer: first'],
        ['first'],
        [],
      ]);
      expect(history.map((h) => h.next)).toEqual([[], ['agent'], [], ['agent'], []]);
      expect(history.map((h) => [h.metadata?.source, h.metadata?.step])).toEqual([
        ['loop', 2],
        ['input', 2],
        ['loop', 1],
        ['input', 1],
        ['input', -1],
      ]);
      // Paging: limit, and before a checkpoint.
      expect(
        (await all(graph.getStateHistory(config, { limit: 1 }))).map(
          (h) => h.config.configurable?.checkpoint_id,
        ),
      ).toEqual([newest]);
      const before = await all(graph.getStateHistory(config, { before: history[0].config }));
      expect(before).toEqual(history.slice(1));
      // A past checkpoint by id, through the config (POST …/state/checkpoint) and the SDK's GET.
      const past = await graph.getState({ configurable: { thread_id: threadId, checkpoint_id: older } });
      expect(past).toEqual(history[2]);
      const pastById = await client.threads.getState(threadId, older);
      expect(pastById.checkpoint.checkpoint_id).toBe(older);
      expect(pastById.values).toEqual(history[2].values);
      expect(
        await graph.getState({ configurable: { thread_id: threadId, checkpoint_id: twin(older) } }),
      ).toEqual(history[3]);
    });

    it('the SDK calls useStream makes (threads.get, getHistory, runs.stream from the head, joinStream): the same checkpoints', async () => {
      // useStream itself needs React; these are the Client methods it calls, with its arguments.
      const [newest, older] = runs;
      const thread = await client.threads.get(threadId);
      const history = await client.threads.getHistory(threadId, { limit: 10 });
      expect(history.map((h) => h.checkpoint.checkpoint_id)).toEqual([
        newest,
        twin(newest),
        older,
        twin(older),
        twin(threadId),
      ]);
      expect(history.map((h) => h.parent_checkpoint?.checkpoint_id ?? null)).toEqual([
        twin(newest),
        older,
        twin(older),
        twin(threadId),
        null,
      ]);
      expect(history[0].values).toEqual(thread.values);
      expect(await client.threads.getState(threadId)).toEqual(history[0]);
      expect(
        await client.threads.getHistory(threadId, {
          limit: 10,
          before: { configurable: history[0].checkpoint },
        }),
      ).toEqual(history.slice(1));
      expect(
        await client.threads.getHistory(threadId, { checkpoint: { checkpoint_id: older }, limit: 10 }),
      ).toEqual([history[2]]);
      expect(await client.threads.getHistory(threadId, { metadata: { step: 2 } })).toEqual(
        history.slice(0, 2),
      );
      expect(await client.threads.getHistory(threadId, { metadata: { step: 2, source: 'loop' } })).toEqual([
        history[0],
      ]);

      // Reconnecting to a run (useStream's joinStream, lastEventId -1: from its start): its
      // checkpoint is the one getState and getHistory name.
      const joined = await all(
        client.runs.joinStream(threadId, newest, { streamMode: ['values', 'checkpoints'] }),
      );
      expect(joined[0]).toMatchObject({ event: 'metadata', data: { run_id: newest } });
      // The run's two checkpoints: its input, then its end.
      const [input, checkpoint] = joined.filter((e) => e.event === 'checkpoints').map((e) => e.data);
      expect(input.config.configurable).toMatchObject({ thread_id: threadId, checkpoint_id: twin(newest) });
      expect(input.parent_config.configurable.checkpoint_id).toBe(older);
      expect(input.next).toEqual(['agent']);
      expect(checkpoint.config.configurable).toMatchObject({ thread_id: threadId, checkpoint_id: newest });
      expect(checkpoint.parent_config.configurable.checkpoint_id).toBe(twin(newest));
      expect(checkpoint.values).toEqual(history[0].values);
      expect(joined.at(-1)).toEqual({ event: 'end', data: { run_id: newest, status: 'success' } });

      // A submit naming the thread's current checkpoint (useStream sends its head's) is no time travel.
      const streamed = await all(
        client.runs.stream(threadId, 'helper', {
          input: { messages: [{ type: 'human', content: 'third' }] },
          streamMode: ['values', 'updates', 'checkpoints'],
          checkpoint: { checkpoint_ns: '', checkpoint_id: newest, checkpoint_map: null },
        }),
      );
      const third = (streamed[0].data as { run_id: string }).run_id;
      const events = streamed.filter((e) => e.event === 'checkpoints').map((e) => e.data as any);
      expect(events.map((e) => e.config.configurable.checkpoint_id)).toEqual([twin(third), third]);
      expect(events[0].parent_config.configurable.checkpoint_id).toBe(newest);
      // The ids are stable: a new run adds its checkpoints on top, the older ones stay as they were.
      const after = await client.threads.getHistory(threadId);
      expect(after.map((h) => h.checkpoint.checkpoint_id).slice(0, 3)).toEqual([third, twin(third), newest]);
      expect(after.slice(2)).toEqual(history);
      runs = [third, ...runs];
      // RemoteGraph's stream sees the same thread.
      const chunks = await all(
        await helper(api.key!).stream(say('fourth'), {
          configurable: { thread_id: threadId },
          streamMode: 'values',
        }),
      );
      expect((chunks.at(-1) as { messages: Msg[] }).messages.at(-1)?.content).toBe('Answer: fourth');
      runs = (await client.runs.list(threadId)).map((r) => r.run_id);
      expect((await client.threads.getState(threadId)).checkpoint.checkpoint_id).toBe(runs[0]);
    });

    it('refuses an unknown or another tenant’s thread (404), a malformed checkpoint (422) and writes that do not map (422), writing nothing', async () => {
      const [newest, older] = runs;
      const config = { configurable: { thread_id: threadId } };
      const count = async () => ({
        turns: await env.db.turn.count({ where: { sessionId: threadId } }),
        messages: await env.db.message.count({ where: { sessionId: threadId } }),
        sessions: await env.db.session.count(),
      });
      const before = await count();
      const stateBefore = await client.threads.getState(threadId);

      await expect(
        helper(api.key!).getState({ configurable: { thread_id: randomUUID() } }),
      ).rejects.toMatchObject({ status: 404 });
      const stranger = helper(other.key!);
      await expect(stranger.getState(config)).rejects.toMatchObject({ status: 404 });
      await expect(all(stranger.getStateHistory(config))).rejects.toMatchObject({ status: 404 });
      await expect(sdk(other.key!).threads.getState(threadId, older)).rejects.toMatchObject({ status: 404 });
      await expect(sdk(other.key!).threads.getHistory(threadId)).rejects.toMatchObject({ status: 404 });
      await expect(stranger.updateState(config, say('x'))).rejects.toMatchObject({ status: 404 });

      const call = async (method: string, path: string, body: unknown, status: number) => {
        const res = await fetch(`${url}/langgraph${path}`, {
          method,
          headers: { 'content-type': 'application/json', 'x-api-key': api.key! },
          body: body === undefined ? undefined : JSON.stringify(body),
        });
        expect({ path, body, status: res.status }).toEqual({ path, body, status });
        const json = (await res.json()) as { detail: string };
        expect(json).toEqual({ detail: expect.any(String) });
        return json.detail;
      };
      const at = `/threads/${threadId}`;
      // Malformed checkpoints: 422; one that is not this thread's: 404.
      expect(
        await call('POST', `${at}/state/checkpoint`, { checkpoint: { checkpoint_id: 'nope' } }, 422),
      ).toMatch(/not a checkpoint id/);
      await call('POST', `${at}/state/checkpoint`, { checkpoint: { checkpoint_ns: 'tools:1' } }, 422);
      await call('POST', `${at}/state/checkpoint`, { checkpoint: { thread_id: randomUUID() } }, 422);
      await call('POST', `${at}/state/checkpoint`, { checkpoint: { bogus: 1 } }, 422);
      await call('POST', `${at}/state/checkpoint`, {}, 422);
      await call('POST', `${at}/state/checkpoint`, { checkpoint: { checkpoint_id: randomUUID() } }, 404);
      await call('GET', `${at}/state/not-a-checkpoint`, undefined, 422);
      await call('GET', `${at}/state/${randomUUID()}`, undefined, 404);
      await call('POST', `${at}/history`, { before: { checkpoint_id: randomUUID() } }, 404);
      await call('POST', `${at}/history`, { before: 'nope' }, 422);
      await call('POST', `${at}/history`, { limit: -1 }, 422);
      await call('GET', `${at}/history?before=nope`, undefined, 422);

      // Writes that do not map: updateState with values, a message from a run's input checkpoint (a
      // run from it runs that input again), no message from a run's end; another tenant's copy.
      await expect(helper(api.key!).updateState(config, say('rewritten'))).rejects.toMatchObject({
        status: 422,
      });
      expect(await call('POST', `${at}/state`, { values: say('x'), checkpoint_id: older }, 422)).toMatch(
        /updateState/,
      );
      await call('POST', `${at}/state`, { checkpoint_id: twin(older) }, 422);
      await call('POST', `${at}/state`, { checkpoint_id: randomUUID() }, 404);
      await call('POST', `${at}/state`, { as_node: 'agent' }, 422);
      await expect(sdk(other.key!).threads.copy(threadId)).rejects.toMatchObject({ status: 404 });
      const fromPast = { input: { messages: [{ type: 'human', content: 'again' }] }, checkpointId: older };
      await expect(
        client.runs.wait(threadId, 'helper', { ...fromPast, checkpointId: twin(older) }),
      ).rejects.toMatchObject({ status: 422 });
      await expect(
        all(
          client.runs.stream(threadId, 'helper', {
            input: null,
            checkpoint: { checkpoint_id: older, checkpoint_ns: '', checkpoint_map: null },
          }),
        ),
      ).rejects.toMatchObject({ status: 422 });
      await expect(
        client.runs.create(threadId, 'helper', { ...fromPast, checkpointId: randomUUID() }),
      ).rejects.toMatchObject({ status: 404 });
      // A new thread cannot start from a checkpoint either: nothing is created.
      await expect(
        client.runs.wait(randomUUID(), 'helper', {
          ...fromPast,
          checkpointId: newest,
          ifNotExists: 'create',
        }),
      ).rejects.toMatchObject({ status: 404 });

      expect(await count()).toEqual(before);
      expect(await client.threads.getState(threadId)).toEqual(stateBefore);
    });
  });
});
