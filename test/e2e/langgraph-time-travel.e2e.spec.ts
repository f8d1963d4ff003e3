import { randomUUID } from 'node:crypto';
import { Client, type ThreadState } from '@langchain/langgraph-sdk';
import { getBranchContext, getMessagesMetadataMap } from '@langchain/langgraph-sdk/ui';
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

const ADMIN = 'test-admin-token-0123456789';

type Msg = { type: string; content: string; id: string };
type Values = { messages: Msg[] };

/** The text of a provider message (a string, or text parts), after recalled memory (set apart by a blank line). */
function textOf(content: unknown): string {
  const text =
    typeof content === 'string'
      ? content
      : Array.isArray(content)
        ? content.map((p: { text?: string }) => p.text ?? '').join('')
        : '';
  return text;
}

/** What the agent's model was sent, system prompt aside: `[role, text]` per message. */
function exchange(r: RecordedRequest): [string, string][] {
  const messages = (r.body as { messages?: { role: string; content: unknown }[] })?.messages ?? [];
  return messages
    .filter((m) => m.role !== 'system')
    .map((m) => {
      const text = textOf(m.content);
      const cut = m.role === 'user' ? text.lastIndexOf('\n\n') : -1;
      return [m.role, cut < 0 ? text : text.slice(cut + 2)];
    });
}

/** `stall…` holds its stream open until the turn is cancelled; anything else is answered `Answer: <message>`. */
function reply(r: RecordedRequest): ScriptedReply {
  const last = exchange(r).at(-1)?.[1] ?? '';
  if (last.startsWith('stall')) return { kind: 'message', text: 'thinking at length', stallAfterFrames: 2 };
  return { kind: 'message', text: `Answer: ${last}` };
}

/** A run's input checkpoint: the run id's version-8 twin; the initial state's: the thread id's (docs/adr/0038). */
const twin = (id: string) => `${id.slice(0, 14)}8${id.slice(15)}`;

/**
 * LangGraph time travel on the adapter (docs/adr/0038, time-travel addendum) with the stock
 * `@langchain/langgraph-sdk` Client, RemoteGraph and useStream's own branching helpers, unmodified,
 * through real processes (a gateway and a harness worker, the model on the fake LLM server): a
 * thread's checkpoints are its initial state and, per run, its input and its end; a run from a past
 * checkpoint rewinds the later runs (docs/adr/0053) and goes on from there.
 */
describe('LangGraph time travel with @langchain/langgraph-sdk', () => {
  let env: TestEnv;
  let llm: FakeLlmServer;
  const processes: AppProcess[] = [];
  let url: string;
  let api: Api;
  let other: Api;
  let client: Client;

  const sdk = (apiKey: string) =>
    new Client({ apiUrl: `${url}/langgraph`, apiKey, callerOptions: { maxRetries: 0 } });
  const say = (text: string) => ({ input: { messages: [{ type: 'human', content: text }] } });
  const contents = (s: { values: unknown }) => (s.values as Values).messages.map((m) => m.content);
  const ids = (h: ThreadState[]) => h.map((s) => s.checkpoint.checkpoint_id);
  const parents = (h: ThreadState[]) => h.map((s) => s.parent_checkpoint?.checkpoint_id ?? null);

  /** The model request a run caused: the one sent after `before` requests. */
  const requestAfter = async (before: number) => {
    await waitFor(() => llm.requests.length > before, { what: 'the model request' });
    return llm.requests[before];
  };

  /** A thread with runs `texts`, their run ids oldest first. */
  async function threadWith(...texts: string[]): Promise<{ threadId: string; runs: string[] }> {
    const threadId = (await client.threads.create({ graphId: 'helper' })).thread_id;
    for (const text of texts) {
      const values = (await client.runs.wait(threadId, 'helper', say(text))) as Values;
      expect(values.messages.at(-1)?.content).toBe(`Answer: ${text}`);
    }
    const runs = (await client.runs.list(threadId)).map((r) => r.run_id).reverse();
    return { threadId, runs };
  }

  const turns = (sessionId: string) =>
    env.db.turn.findMany({
      where: { sessionId },
      orderBy: { seq: 'asc' },
      select: { id: true, status: true, rewoundAt: true },
    });

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
    const agent = await api.post('/v1/agents', { name: 'helper', model: 'openai-chat/gpt-4o-mini' });
    expect(agent.status).toBe(201);
    expect(
      (await other.post('/v1/agents', { name: 'helper', model: 'openai-chat/gpt-4o-mini' })).status,
    ).toBe(201);
  });

  afterAll(async () => {
    await Promise.all(processes.map((p) => p.kill('SIGTERM')));
    await llm?.close();
    await env?.cleanup();
  });

  it('three runs: getHistory lists their checkpoints newest first with parent links; getState at an old one is that state', async () => {
    const { threadId, runs } = await threadWith('alpha', 'bravo', 'charlie');
    const [r1, r2, r3] = runs;
    const history = await client.threads.getHistory(threadId, { limit: 100 });
    // Per run its end (the run id) and its input (before the model ran); the initial state last.
    expect(ids(history)).toEqual([r3, twin(r3), r2, twin(r2), r1, twin(r1), twin(threadId)]);
    expect(parents(history)).toEqual([twin(r3), r2, twin(r2), r1, twin(r1), twin(threadId), null]);
    expect(history.map(contents)).toEqual([
      ['alpha', 'Answer: alpha', 'bravo', 'Answer: bravo', 'charlie', 'Answer: charlie'],
      ['alpha', 'Answer: alpha', 'bravo', 'Answer: bravo', 'charlie'],
      ['alpha', 'Answer: alpha', 'bravo', 'Answer: bravo'],
      ['alpha', 'Answer: alpha', 'bravo'],
      ['alpha', 'Answer: alpha'],
      ['alpha'],
      [],
    ]);
    expect(history.map((s) => s.next)).toEqual([[], ['agent'], [], ['agent'], [], ['agent'], []]);
    expect(history.map((s) => [s.metadata?.source, s.metadata?.step, s.metadata?.run_id])).toEqual([
      ['loop', 3, r3],
      ['input', 3, r3],
      ['loop', 2, r2],
      ['input', 2, r2],
      ['loop', 1, r1],
      ['input', 1, r1],
      ['input', -1, null],
    ]);
    // The state at an old checkpoint, by id and through RemoteGraph's config.
    expect(await client.threads.getState(threadId, r1)).toEqual(history[4]);
    expect(await client.threads.getState(threadId, { checkpoint_id: twin(r2) } as never)).toEqual(history[3]);
    const graph = new RemoteGraph({ graphId: 'helper', url: `${url}/langgraph`, apiKey: api.key! });
    const past = await graph.getState({ configurable: { thread_id: threadId, checkpoint_id: r1 } });
    expect(past.values).toEqual(history[4].values);
    expect(past.parentConfig?.configurable?.checkpoint_id).toBe(twin(r1));
    const remote = [];
    for await (const s of graph.getStateHistory({ configurable: { thread_id: threadId } }, { limit: 100 })) {
      remote.push(s.config.configurable?.checkpoint_id);
    }
    expect(remote).toEqual(ids(history));
    // The current state is the newest checkpoint, as in LangGraph.
    expect(await client.threads.getState(threadId)).toEqual(history[0]);
  });

  it('runs.wait from the checkpoint after run 1: the model is sent run 1 and the new message only; the later runs stay on their branch, rewound', async () => {
    const { threadId, runs } = await threadWith('alpha', 'bravo', 'charlie');
    const [r1, r2, r3] = runs;
    const before = llm.requests.length;
    const values = (await client.runs.wait(threadId, 'helper', {
      ...say('delta'),
      checkpointId: r1,
    })) as Values;
    expect(values.messages.map((m) => m.content)).toEqual([
      'alpha',
      'Answer: alpha',
      'delta',
      'Answer: delta',
    ]);
    expect(exchange(await requestAfter(before))).toEqual([
      ['user', 'alpha'],
      ['assistant', 'Answer: alpha'],
      ['user', 'delta'],
    ]);
    expect(JSON.stringify(llm.requests[before].body)).not.toMatch(/bravo|charlie/);

    // The later runs are kept, marked rewound (one rewind: one time), and still listed as runs.
    const rows = await turns(threadId);
    const r4 = rows[3].id;
    expect(rows.map((t) => [t.id, t.status, t.rewoundAt !== null])).toEqual([
      [r1, 'completed', false],
      [r2, 'completed', true],
      [r3, 'completed', true],
      [r4, 'completed', false],
    ]);
    expect(rows[1].rewoundAt).toEqual(rows[2].rewoundAt);
    expect((await client.runs.list(threadId)).map((r) => r.run_id)).toEqual([r4, r3, r2, r1]);
    // Journaled and audited as a rewind with the caller as actor.
    expect(
      await env.db.event.count({ where: { sessionId: threadId, type: 'session_rewound', turnId: r2 } }),
    ).toBe(1);
    expect(
      await env.db.auditEvent.findFirst({ where: { action: 'session.rewound', targetId: threadId } }),
    ).toMatchObject({
      actor: expect.stringMatching(/^api_key:/),
      details: expect.objectContaining({ turnId: r2, rewoundTurns: 2 }),
    });

    // The history shows the branch: the new run's input hangs off run 1's end; the left runs keep their states.
    const history = await client.threads.getHistory<Values>(threadId, { limit: 100 });
    expect(ids(history)).toEqual([r4, twin(r4), r3, twin(r3), r2, twin(r2), r1, twin(r1), twin(threadId)]);
    expect(parents(history)).toEqual([
      twin(r4),
      r1,
      twin(r3),
      r2,
      twin(r2),
      r1,
      twin(r1),
      twin(threadId),
      null,
    ]);
    expect(contents(history[2])).toEqual([
      'alpha',
      'Answer: alpha',
      'bravo',
      'Answer: bravo',
      'charlie',
      'Answer: charlie',
    ]);
    expect(await client.threads.getState(threadId)).toEqual(history[0]);
    expect((await client.threads.get(threadId)).values).toEqual(history[0].values);
    // As useStream sees it: a fork at run 1's end, the newest branch shown; the other still reachable.
    const view = getBranchContext('', history);
    expect(view.threadHead?.checkpoint.checkpoint_id).toBe(r4);
    expect(view.flatHistory.map((s) => s.checkpoint.checkpoint_id)).toEqual([
      twin(threadId),
      twin(r1),
      r1,
      twin(r4),
      r4,
    ]);
    const options = view.branchByCheckpoint[twin(r4)].branchOptions!;
    expect(options).toHaveLength(2);
    const left = getBranchContext(
      options.find((o) => !o.includes(twin(r4)))!,
      history,
    );
    expect(left.threadHead?.checkpoint.checkpoint_id).toBe(r3);

    // The next plain run goes on from the new branch.
    const next = llm.requests.length;
    await client.runs.wait(threadId, 'helper', say('echo'));
    expect(exchange(await requestAfter(next))).toEqual([
      ['user', 'alpha'],
      ['assistant', 'Answer: alpha'],
      ['user', 'delta'],
      ['assistant', 'Answer: delta'],
      ['user', 'echo'],
    ]);
  });

  it('regenerate and edit as useStream does: a run from the parent checkpoint of the message, with no input (that input again) or a new one', async () => {
    const { threadId, runs } = await threadWith('alpha', 'bravo');
    const [r1, r2] = runs;
    const metadata = async () => {
      const history = await client.threads.getHistory<Values>(threadId, { limit: 100 });
      const branchContext = getBranchContext('', history);
      const meta = getMessagesMetadataMap<Values>({
        initialValues: null,
        history,
        getMessages: (v) => v.messages as never,
        branchContext,
      });
      const head = branchContext.threadHead!;
      return { head, meta, history };
    };
    // Regenerate the last answer: submit(undefined, { checkpoint: parent of the state it was first seen in }).
    let { head, meta } = await metadata();
    const answer = meta.find((m) => m.messageId === (head.values as Values).messages.at(-1)!.id)!;
    const regenerateFrom = { ...answer.firstSeenState!.parent_checkpoint! } as Record<string, unknown>;
    expect(regenerateFrom.checkpoint_id).toBe(twin(r2));
    delete regenerateFrom.thread_id;
    let before = llm.requests.length;
    const streamed = [];
    for await (const e of client.runs.stream(threadId, 'helper', {
      input: undefined,
      checkpoint: regenerateFrom as never,
      streamMode: ['values', 'checkpoints'],
    })) {
      streamed.push(e);
    }
    expect(streamed.at(-1)).toMatchObject({ event: 'end', data: { status: 'success' } });
    const r3 = (streamed[0].data as { run_id: string }).run_id;
    expect(exchange(await requestAfter(before))).toEqual([
      ['user', 'alpha'],
      ['assistant', 'Answer: alpha'],
      ['user', 'bravo'],
    ]);
    const checkpoints = streamed.filter((e) => e.event === 'checkpoints').map((e) => e.data as any);
    expect(checkpoints.map((c) => c.config.configurable.checkpoint_id)).toEqual([twin(r3), r3]);
    expect(checkpoints[0].parent_config.configurable.checkpoint_id).toBe(r1);
    expect((await turns(threadId)).map((t) => [t.id, t.rewoundAt !== null])).toEqual([
      [r1, false],
      [r2, true],
      [r3, false],
    ]);

    // Edit the human message of the regenerated run: submit(new message, { checkpoint: its parent }).
    ({ head, meta } = await metadata());
    expect(head.checkpoint.checkpoint_id).toBe(r3);
    const human = meta.find((m) => m.messageId === (head.values as Values).messages[2].id)!;
    expect(human.firstSeenState?.checkpoint.checkpoint_id).toBe(twin(r3));
    // The fork at run 1's end: the human message can switch between its two versions.
    expect(human.branchOptions).toHaveLength(2);
    before = llm.requests.length;
    const edited = (await client.runs.wait(threadId, 'helper', {
      ...say('bravo, edited'),
      checkpoint: { ...human.firstSeenState!.parent_checkpoint!, thread_id: undefined } as never,
    })) as Values;
    expect(edited.messages.map((m) => m.content)).toEqual([
      'alpha',
      'Answer: alpha',
      'bravo, edited',
      'Answer: bravo, edited',
    ]);
    expect(exchange(await requestAfter(before))).toEqual([
      ['user', 'alpha'],
      ['assistant', 'Answer: alpha'],
      ['user', 'bravo, edited'],
    ]);
    const { meta: after, history } = await metadata();
    expect(parents(history).slice(0, 2)).toEqual([twin(history[0].checkpoint.checkpoint_id!), r1]);
    expect(after.find((m) => m.messageId === edited.messages[2].id)?.branchOptions).toHaveLength(3);
  });

  it('from the initial state: every run rewound, the model is sent the new message alone', async () => {
    const { threadId, runs } = await threadWith('alpha', 'bravo');
    const before = llm.requests.length;
    const values = (await client.runs.wait(threadId, 'helper', {
      ...say('fresh start'),
      checkpoint: { checkpoint_id: twin(threadId), checkpoint_ns: '', checkpoint_map: null },
    })) as Values;
    expect(values.messages.map((m) => m.content)).toEqual(['fresh start', 'Answer: fresh start']);
    expect(exchange(await requestAfter(before))).toEqual([['user', 'fresh start']]);
    const rows = await turns(threadId);
    expect(rows.map((t) => t.rewoundAt !== null)).toEqual([true, true, false]);
    const state = await client.threads.getState(threadId);
    expect(state.parent_checkpoint?.checkpoint_id).toBe(twin(rows[2].id));
    expect((await client.threads.getState(threadId, twin(rows[2].id))).parent_checkpoint?.checkpoint_id).toBe(
      twin(threadId),
    );
    expect(runs).toEqual(rows.slice(0, 2).map((t) => t.id));
  });

  it('updateState with no values (RemoteGraph’s fork, as_node __copy__): the thread goes on from the checkpoint', async () => {
    const { threadId, runs } = await threadWith('alpha', 'bravo', 'charlie');
    const [r1, r2, r3] = runs;
    const graph = new RemoteGraph({ graphId: 'helper', url: `${url}/langgraph`, apiKey: api.key! });
    // At the current checkpoint: nothing changes.
    expect(await client.threads.updateState(threadId, { values: null, asNode: '__copy__' })).toEqual({
      checkpoint: { thread_id: threadId, checkpoint_ns: '', checkpoint_id: r3, checkpoint_map: null },
    });
    expect((await turns(threadId)).every((t) => t.rewoundAt === null)).toBe(true);
    // At run 2's end, through RemoteGraph: runs 3 is rewound; the config names the checkpoint.
    const forked = await graph.updateState(
      { configurable: { thread_id: threadId, checkpoint_id: r2 } },
      null as never,
      '__copy__',
    );
    expect(forked.configurable).toMatchObject({ thread_id: threadId, checkpoint_id: r2 });
    expect((await turns(threadId)).map((t) => t.rewoundAt !== null)).toEqual([false, false, true]);
    const state = await graph.getState({ configurable: { thread_id: threadId } });
    expect(state.config.configurable?.checkpoint_id).toBe(r2);
    expect((state.values as Values).messages.map((m) => m.content)).toEqual([
      'alpha',
      'Answer: alpha',
      'bravo',
      'Answer: bravo',
    ]);
    // The SDK's form, back to run 1's end.
    // (The SDK types the answer as a config; the server answers `{checkpoint}`, which RemoteGraph reads.)
    const updated = (await client.threads.updateState(threadId, {
      values: { messages: [] },
      checkpointId: r1,
    })) as unknown as { checkpoint: { checkpoint_id: string } };
    expect(updated.checkpoint).toMatchObject({ checkpoint_id: r1 });
    // The next run (RemoteGraph's invoke, no checkpoint) goes on from there.
    const before = llm.requests.length;
    const out = (await graph.invoke(
      { messages: [{ role: 'user', content: 'foxtrot' }] },
      {
        configurable: { thread_id: threadId },
      },
    )) as Values;
    expect(out.messages.map((m) => m.content)).toEqual([
      'alpha',
      'Answer: alpha',
      'foxtrot',
      'Answer: foxtrot',
    ]);
    expect(exchange(await requestAfter(before))).toEqual([
      ['user', 'alpha'],
      ['assistant', 'Answer: alpha'],
      ['user', 'foxtrot'],
    ]);
    const history = await client.threads.getHistory(threadId, { limit: 100 });
    expect(history[1].parent_checkpoint?.checkpoint_id).toBe(r1);
  });

  it('threads.copy: a fork of the session at its current branch — a new thread with copies of its runs and the lineage; the left branch stays behind', async () => {
    const { threadId, runs } = await threadWith('alpha', 'bravo');
    await client.runs.wait(threadId, 'helper', { ...say('charlie'), checkpointId: runs[0] });
    const source = await client.threads.getHistory(threadId, { limit: 100 });
    const copy = await client.threads.copy(threadId);
    expect(copy.thread_id).not.toBe(threadId);
    expect(copy.status).toBe('idle');
    expect(copy.metadata).toMatchObject({ graph_id: 'helper' });
    expect(contents(copy)).toEqual(['alpha', 'Answer: alpha', 'charlie', 'Answer: charlie']);
    // The copy's checkpoints: the current branch's runs, copied (new run ids), in the same shape.
    const history = await client.threads.getHistory(copy.thread_id, { limit: 100 });
    expect(history.map(contents)).toEqual(
      [source[0], source[1], source[4], source[5], source[6]].map(contents),
    );
    const copied = (await turns(copy.thread_id)).map((t) => t.id);
    expect(copied).toHaveLength(2);
    expect(copied).not.toContain(runs[0]);
    expect(ids(history)).toEqual([
      copied[1],
      twin(copied[1]),
      copied[0],
      twin(copied[0]),
      twin(copy.thread_id),
    ]);
    const lineage = await api.get(`/v1/sessions/${copy.thread_id}/lineage`);
    expect(lineage.body.ancestors).toEqual([expect.objectContaining({ sessionId: threadId })]);
    // A run on the copy goes on from its history; the original is untouched.
    const before = llm.requests.length;
    await client.runs.wait(copy.thread_id, 'helper', say('hotel'));
    expect(exchange(await requestAfter(before))).toEqual([
      ['user', 'alpha'],
      ['assistant', 'Answer: alpha'],
      ['user', 'charlie'],
      ['assistant', 'Answer: charlie'],
      ['user', 'hotel'],
    ]);
    expect(await client.threads.getHistory(threadId, { limit: 100 })).toEqual(source);
    // Another tenant cannot copy it.
    await expect(sdk(other.key!).threads.copy(threadId)).rejects.toMatchObject({ status: 404 });
  });

  it('refuses, writing nothing: a left branch (409), another thread’s or tenant’s checkpoint (404), malformed ones and inputs that do not fit (422), a busy thread (409) unless multitask interrupt', async () => {
    const { threadId, runs } = await threadWith('alpha', 'bravo', 'charlie');
    const [r1, r2, r3] = runs;
    await client.runs.wait(threadId, 'helper', { ...say('delta'), checkpointId: r1 });
    const { threadId: otherThread, runs: otherRuns } = await threadWith('kilo');
    const count = async () => ({
      turns: await env.db.turn.count({ where: { sessionId: threadId } }),
      rewound: await env.db.turn.count({ where: { sessionId: threadId, rewoundAt: { not: null } } }),
      messages: await env.db.message.count({ where: { sessionId: threadId } }),
      rewinds: await env.db.event.count({ where: { sessionId: threadId, type: 'session_rewound' } }),
      audit: await env.db.auditEvent.count({ where: { action: 'session.rewound' } }),
      sessions: await env.db.session.count(),
    });
    const counted = await count();
    const state = await client.threads.getState(threadId);

    const refused = async (p: Promise<unknown>, status: number, detail?: RegExp) => {
      const err = (await p.then(
        () => undefined,
        (e: unknown) => e,
      )) as { status?: number; message?: string } | undefined;
      expect({ status: err?.status }).toEqual({ status });
      if (detail) expect(err?.message).toMatch(detail);
    };
    // A checkpoint on the branch left by the run from run 1: 409, naming the fork.
    await refused(client.runs.wait(threadId, 'helper', { ...say('x'), checkpointId: r2 }), 409, /fork/);
    await refused(client.runs.wait(threadId, 'helper', { input: null, checkpointId: twin(r3) }), 409);
    await refused(client.threads.updateState(threadId, { values: null, checkpointId: r3 }), 409);
    // Not this thread's: another thread's, another tenant's, unknown.
    await refused(client.runs.wait(threadId, 'helper', { ...say('x'), checkpointId: otherRuns[0] }), 404);
    await refused(
      client.runs.wait(threadId, 'helper', { ...say('x'), checkpointId: twin(otherThread) }),
      404,
    );
    await refused(client.threads.getState(threadId, otherRuns[0]), 404);
    await refused(client.threads.updateState(threadId, { values: null, checkpointId: randomUUID() }), 404);
    await refused(sdk(other.key!).runs.wait(threadId, 'helper', { ...say('x'), checkpointId: r1 }), 404);
    await refused(sdk(other.key!).threads.updateState(threadId, { values: null, checkpointId: r1 }), 404);
    // Malformed, or not fitting the checkpoint.
    await refused(client.runs.wait(threadId, 'helper', { ...say('x'), checkpointId: 'yesterday' }), 422);
    await refused(
      client.runs.wait(threadId, 'helper', {
        ...say('x'),
        checkpoint: { checkpoint_id: r1, checkpoint_ns: 'tools:1', checkpoint_map: null },
      }),
      422,
    );
    await refused(
      client.runs.wait(threadId, 'helper', { ...say('x'), checkpointId: twin(r1) }),
      422,
      /no input/,
    );
    await refused(
      client.runs.wait(threadId, 'helper', { input: null, checkpointId: r1 }),
      422,
      /nothing left/,
    );
    await refused(client.runs.wait(threadId, 'helper', { input: null }), 422, /exactly one/);
    await refused(
      client.runs.wait(threadId, 'helper', { command: { resume: 'approve' }, checkpointId: r1 }),
      422,
      /resume/,
    );
    await refused(client.threads.updateState(threadId, { values: null, checkpointId: twin(r1) }), 422);
    await refused(
      client.threads.updateState(threadId, {
        values: { messages: [{ type: 'ai', content: 'x' }] },
        asNode: 'agent',
      }),
      422,
    );
    expect(await count()).toEqual(counted);
    expect(await client.threads.getState(threadId)).toEqual(state);

    // A busy thread: a run from a past checkpoint rewinds, which needs it idle: reject and enqueue are 409.
    const stalled = await client.runs.create(threadId, 'helper', say('stall here'));
    await waitFor(async () => (await client.runs.get(threadId, stalled.run_id)).status === 'running', {
      what: 'the stalled run to run',
    });
    const busy = await count();
    for (const multitaskStrategy of ['reject', 'enqueue'] as const) {
      await refused(
        client.runs.wait(threadId, 'helper', { ...say('golf'), checkpointId: r1, multitaskStrategy }),
        409,
        /busy/,
      );
    }
    await refused(client.threads.updateState(threadId, { values: null, checkpointId: r1 }), 409);
    expect(await count()).toEqual(busy);
    // multitask interrupt: the running run is cancelled first, then rewound with the rest.
    const before = llm.requests.length;
    const values = (await client.runs.wait(threadId, 'helper', {
      ...say('golf'),
      checkpointId: r1,
      multitaskStrategy: 'interrupt',
    })) as Values;
    expect(values.messages.map((m) => m.content)).toEqual(['alpha', 'Answer: alpha', 'golf', 'Answer: golf']);
    expect(exchange(llm.requests.at(-1)!)).toEqual([
      ['user', 'alpha'],
      ['assistant', 'Answer: alpha'],
      ['user', 'golf'],
    ]);
    expect(llm.requests.length).toBeGreaterThan(before);
    const rows = await turns(threadId);
    expect(rows.find((t) => t.id === stalled.run_id)).toMatchObject({
      status: 'cancelled',
      rewoundAt: expect.any(Date),
    });
    expect(rows.filter((t) => t.rewoundAt === null).map((t) => t.id)).toEqual([r1, rows.at(-1)!.id]);
  });
});
