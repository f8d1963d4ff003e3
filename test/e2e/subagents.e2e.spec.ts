import { randomUUID } from 'node:crypto';
import IORedis from 'ioredis';
import {
  createTestEnv,
  FakeLlmServer,
  scripted,
  spawnApp,
  waitFor,
  type AppProcess,
  type RecordedRequest,
  type ScriptedReply,
  type TestEnv,
} from '@switchboard/testing';
import { newTenant, type Api } from '../support/api';
import { startGateway, type Running } from '../support/stack';

jest.setTimeout(120_000);

const ADMIN = 'test-admin-token-0123456789';
const MODEL = 'openai-chat/gpt-4o-mini';
const UUID = /[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}/;

interface ChatMsg {
  role: string;
  content?: unknown;
}

/** What one model request is: which agent asks, and the tool results of its turn so far. */
interface Ask {
  agent: string;
  /** The turn's input (the last user message). */
  input: string;
  /** Tool result contents after the input, in order. */
  results: string[];
  /** The whole request's messages, as JSON. */
  transcript: string;
  /** The tools the request offered the model. */
  tools: string[];
}

const text = (c: unknown): string =>
  typeof c === 'string' ? c : Array.isArray(c) ? c.map((p: { text?: string }) => p.text ?? '').join('') : '';

function ask(req: RecordedRequest): Ask {
  const messages = (req.body as { messages?: ChatMsg[] }).messages ?? [];
  const system = text(messages.find((m) => m.role === 'system' || m.role === 'developer')?.content);
  const agent = /You are the agent "([^"]+)"/.exec(system)?.[1] ?? '?';
  let last = -1;
  messages.forEach((m, i) => {
    if (m.role === 'user') last = i;
  });
  return {
    agent,
    input: text(messages[last]?.content),
    results: messages.slice(last + 1).flatMap((m) => (m.role === 'tool' ? [text(m.content)] : [])),
    transcript: JSON.stringify(messages),
    tools: ((req.body as { tools?: { function?: { name?: string } }[] }).tools ?? []).map(
      (t) => t.function?.name ?? '',
    ),
  };
}

/**
 * Sub-agents through real processes (docs/adr/0024): a gateway, harness worker processes and a fake
 * LLM scripted per agent (each request is answered by the script of the agent whose system prompt
 * asks). A spawn is a task row and a child turn on the queue; the parent sees one compact handback;
 * waits pause the parent and free its worker.
 */
describe('sub-agents', () => {
  let env: TestEnv;
  let llm: FakeLlmServer;
  let gateway: Running & { url: string };
  let api: Api;
  let tenantId: string;
  const workers: AppProcess[] = [];
  /** Per agent name: its reply to a request. */
  const scripts = new Map<string, (a: Ask) => ScriptedReply | Promise<ScriptedReply>>();

  beforeAll(async () => {
    env = await createTestEnv();
    llm = await FakeLlmServer.start();
    llm.setDefault((req) => {
      const a = ask(req);
      const script = scripts.get(a.agent);
      return script ? script(a) : scripted.text(`no script for ${a.agent}`);
    });
    gateway = await startGateway(env.config(llm.providerEnv));
    ({ api, tenantId } = await newTenant(gateway.url, ADMIN));
  });

  /** Redis connections a test opened. */
  const redises: IORedis[] = [];

  afterEach(async () => {
    await Promise.all(workers.splice(0).map((w) => w.kill('SIGKILL')));
    redises.splice(0).forEach((r) => r.disconnect());
  });

  afterAll(async () => {
    await gateway?.close();
    await llm?.close();
    await env?.cleanup();
  });

  const harness = async (extra: Record<string, string> = {}) => {
    const w = await spawnApp(
      'harness-worker',
      env.processEnv({ ...llm.providerEnv, RECONCILE_INTERVAL_MS: '500', ...extra }),
    );
    workers.push(w);
    return w;
  };

  const unique = (name: string) => `${name}-${randomUUID().slice(0, 6)}`;

  async function agent(name: string, tier: string, tools: string[] = []) {
    const r = await api.post('/v1/agents', { name, tier, model: MODEL, tools });
    expect(r.status).toBe(201);
    return r.body.id as string;
  }

  async function send(agentId: string, content: string) {
    const session = (await api.post('/v1/sessions', { agentId })).body.id as string;
    const r = await api.post(`/v1/sessions/${session}/messages`, { content });
    expect(r.status).toBe(202);
    return { session, turnId: r.body.turnId as string };
  }

  const ended = (turnId: string, timeoutMs = 60_000) =>
    waitFor(
      async () => {
        const r = await api.get(`/v1/turns/${turnId}`);
        return ['completed', 'failed', 'cancelled'].includes(r.body.status) ? r.body : undefined;
      },
      { what: `turn ${turnId} ended`, timeoutMs },
    );

  const events = (sessionId: string) =>
    env.db.event.findMany({ where: { sessionId }, orderBy: { seq: 'asc' } });

  it('async spawn then wait_subagent: the child runs as its own turn, the parent gets one compact handback', async () => {
    const boss = unique('boss');
    const helper = unique('helper');
    scripts.set(boss, (a) => {
      if (a.results.length === 0)
        return scripted.toolCall(
          'spawn_subagent',
          { agent: helper, task: 'count the sheep' },
          { id: 'call_spawn' },
        );
      if (a.results.length === 1) {
        const taskId = UUID.exec(a.results[0])![0];
        return scripted.toolCall('wait_subagent', { task_id: taskId }, { id: 'call_wait' });
      }
      return scripted.text(`relayed: ${a.results[1]}`);
    });
    const offered: string[][] = [];
    let bossId = '';
    scripts.set(helper, async (a) => {
      offered.push(a.tools);
      // Held until the parent's wait_subagent has found it running and paused the parent.
      await waitFor(
        async () =>
          (await env.db.turn.findFirst({ where: { agentId: bossId, status: 'awaiting_subagent' } })) ??
          undefined,
        { what: 'the parent paused', timeoutMs: 30_000 },
      );
      return scripted.text('there are 42 sheep');
    });
    // A worker-tier child is never offered the delegation tools, even when its definition names them.
    await agent(helper, 'worker', ['current_time', 'spawn_subagent']);
    bossId = await agent(boss, 'chat', ['spawn_subagent', 'wait_subagent']);
    await harness();
    const { session, turnId } = await send(bossId, 'how many sheep?');
    const turn = await ended(turnId);
    expect(turn.status).toBe('completed');
    expect(turn.finalText).toContain('there are 42 sheep');
    expect(turn.finalText).toContain('"status":"completed"');
    // ask_user is offered to every child; tokenjuice_retrieve to every agent with tools (ADR 0033).
    expect(offered).toEqual([['current_time', 'ask_user', 'tokenjuice_retrieve']]);

    // GET /v1/turns/:id lists its child; GET /v1/tasks/:id shows it.
    expect(turn.children).toHaveLength(1);
    const child = turn.children[0];
    expect(child).toMatchObject({
      agent: helper,
      status: 'completed',
      depth: 1,
      parentTurnId: turnId,
      parentSessionId: session,
      handback: { status: 'completed', result: 'there are 42 sheep' },
      output: 'there are 42 sheep',
    });
    const task = await api.get(`/v1/tasks/${child.id}`);
    expect(task.status).toBe(200);
    expect(task.body).toEqual(child);
    expect(task.body.blocking).toBe(true); // wait_subagent made the parent wait for it

    // The child is its own session and turn, linked to the parent; its transcript never reached the parent.
    const childTurn = await env.db.turn.findUniqueOrThrow({ where: { id: child.childTurnId } });
    expect(childTurn).toMatchObject({ parentTurnId: turnId, taskId: child.id, status: 'completed' });
    expect(childTurn.sessionId).toBe(child.childSessionId);
    expect(childTurn.sessionId).not.toBe(session);

    // The parent's journal has the spawn and the completion, once each.
    const journal = await events(session);
    const spawned = journal.filter((e) => e.type === 'subagent_spawned');
    const completed = journal.filter((e) => e.type === 'subagent_completed');
    expect(spawned).toHaveLength(1);
    expect(spawned[0].data).toMatchObject({ taskId: child.id, agent: helper, depth: 1, blocking: false });
    expect(completed).toHaveLength(1);
    expect(completed[0].data).toMatchObject({ taskId: child.id, status: 'completed' });
    // The parent paused for its child (awaiting_subagent, no worker held) and resumed once.
    expect(journal.filter((e) => e.type === 'turn_started' && e.turnId === turnId)).toHaveLength(2);
    expect(journal.filter((e) => e.type === 'turn_completed' && e.turnId === turnId)).toHaveLength(1);
  });

  it('a blocking spawn frees the parent’s worker: with one harness slot the child still runs', async () => {
    const boss = unique('boss');
    const helper = unique('helper');
    scripts.set(boss, (a) =>
      a.results.length === 0
        ? scripted.toolCall(
            'spawn_subagent',
            { agent: helper, task: 'name a colour', blocking: true },
            { id: 'call_block' },
          )
        : scripted.text(`child: ${a.results[0]}`),
    );
    scripts.set(helper, () => scripted.text('teal'));
    await agent(helper, 'worker');
    const bossId = await agent(boss, 'chat', ['spawn_subagent']);
    await harness({ HARNESS_CONCURRENCY: '1' });
    const { session, turnId } = await send(bossId, 'a colour please');
    const turn = await ended(turnId);
    expect(turn.status).toBe('completed');
    expect(turn.finalText).toContain('teal');
    const journal = await events(session);
    // The parent ran twice (paused, then resumed) and ended once.
    const started = journal.filter((e) => e.type === 'turn_started' && e.turnId === turnId);
    expect(started).toHaveLength(2);
    expect((started[1].data as { resumed: boolean }).resumed).toBe(true);
    expect(journal.filter((e) => e.type === 'turn_completed' && e.turnId === turnId)).toHaveLength(1);
    expect(turn.children).toHaveLength(1);
    expect(turn.children[0]).toMatchObject({ blocking: true, status: 'completed' });
  });

  it('refuses the spawn that would make depth 4, naming the depth', async () => {
    const root = unique('root');
    const mid = unique('mid');
    const leaf = unique('leaf');
    scripts.set(root, (a) =>
      a.results.length === 0
        ? scripted.toolCall('spawn_subagent', { agent: mid, task: 'delegate further', blocking: true })
        : scripted.text(`root got: ${a.results[0]}`),
    );
    scripts.set(mid, (a) =>
      a.results.length === 0
        ? scripted.toolCall('spawn_subagent', { agent: leaf, task: 'do it', blocking: true })
        : scripted.text(`mid could not delegate: ${a.results[0]}`),
    );
    scripts.set(leaf, () => scripted.text('leaf ran'));
    await agent(leaf, 'worker');
    await agent(mid, 'reasoning', ['spawn_subagent']);
    const rootId = await agent(root, 'chat', ['spawn_subagent']);
    // The root turn already runs as a grandchild (depth 2) of an outer chain: its child is depth 3, and
    // that child's spawn would make depth 4.
    const { turnId } = await send(rootId, 'start the chain');
    const outer = randomUUID();
    await env.db.$executeRaw`
      INSERT INTO tasks (id, tenant_id, agent_id, kind, status, depth, updated_at)
      VALUES (${outer}::uuid, ${tenantId}::uuid, ${rootId}::uuid, 'subagent', 'running', 2, now())`;
    await env.db.$executeRaw`UPDATE turns SET task_id = ${outer}::uuid WHERE id = ${turnId}::uuid`;
    await harness();
    const turn = await ended(turnId);
    expect(turn.status).toBe('completed');
    expect(turn.children).toHaveLength(1);
    const midTask = turn.children[0];
    expect(midTask.depth).toBe(3);
    expect(midTask.status).toBe('completed');
    // The mid agent's spawn was refused with a classified error naming the depth; no depth-4 task exists.
    expect(midTask.output).toContain('spawn_depth_exceeded');
    expect(midTask.output).toContain('depth 4');
    const deeper = await env.db.$queryRaw<{ n: number }[]>`
      SELECT count(*)::int AS n FROM tasks WHERE depth >= 4`;
    expect(deeper[0].n).toBe(0);
    const midCall = await env.db.toolCall.findFirstOrThrow({
      where: { turnId: midTask.childTurnId, name: 'spawn_subagent' },
    });
    expect(midCall.status).toBe('failed');
    expect(midCall.error).toMatchObject({ kind: 'spawn_depth_exceeded' });
  });

  it('a harness SIGKILLed while a child runs: the child completes once, one task, the parent resumes once', async () => {
    const boss = unique('boss');
    const helper = unique('helper');
    let childCalls = 0;
    scripts.set(boss, (a) =>
      a.results.length === 0
        ? scripted.toolCall(
            'spawn_subagent',
            { agent: helper, task: 'slow work', blocking: true },
            { id: 'call_slow' },
          )
        : scripted.text(`child: ${a.results[0]}`),
    );
    scripts.set(helper, () => {
      childCalls++;
      // The first call hangs long enough for the worker to be killed under it.
      return childCalls === 1
        ? scripted.text('slow result', { delayMs: 20_000 })
        : scripted.text('slow result');
    });
    await agent(helper, 'worker');
    const bossId = await agent(boss, 'chat', ['spawn_subagent']);
    const a = await harness({ SESSION_LEASE_MS: '3000' });
    const { session, turnId } = await send(bossId, 'do the slow thing');
    // The child's model call is in flight on worker a.
    await waitFor(() => childCalls >= 1, { what: 'the child called its model', timeoutMs: 30_000 });
    await a.kill('SIGKILL');
    await harness({ SESSION_LEASE_MS: '3000' });
    const turn = await ended(turnId, 90_000);
    expect(turn.status).toBe('completed');
    expect(turn.finalText).toContain('slow result');
    expect(turn.children).toHaveLength(1);
    const tasks = await env.db.$queryRaw<{ n: number }[]>`
      SELECT count(*)::int AS n FROM tasks WHERE parent_turn_id = ${turnId}::uuid`;
    expect(tasks[0].n).toBe(1);
    const child = turn.children[0];
    const childJournal = await events(child.childSessionId);
    expect(
      childJournal.filter((e) => e.type === 'turn_completed' && e.turnId === child.childTurnId),
    ).toHaveLength(1);
    const journal = await events(session);
    expect(journal.filter((e) => e.type === 'subagent_completed')).toHaveLength(1);
    expect(journal.filter((e) => e.type === 'turn_completed' && e.turnId === turnId)).toHaveLength(1);
    // The parent's spawn call has one result in its transcript.
    const results = await env.db.message.findMany({ where: { turnId, role: 'tool' } });
    expect(results).toHaveLength(1);
  });

  it('reuses an idle child session of the same agent, with its history', async () => {
    const boss = unique('boss');
    const helper = unique('helper');
    const seen: Ask[] = [];
    scripts.set(boss, (a) => {
      if (a.results.length < 2) {
        const task = a.results.length === 0 ? 'remember the word kiwi' : 'which word did I give you?';
        return scripted.toolCall('spawn_subagent', { agent: helper, task, blocking: true });
      }
      return scripted.text('done');
    });
    scripts.set(helper, (a) => {
      seen.push(a);
      return scripted.text(seen.length === 1 ? 'noted' : 'kiwi');
    });
    await agent(helper, 'worker');
    const bossId = await agent(boss, 'chat', ['spawn_subagent']);
    await harness();
    const { turnId } = await send(bossId, 'two delegations');
    const turn = await ended(turnId);
    expect(turn.status).toBe('completed');
    expect(turn.children).toHaveLength(2);
    const [first, second] = turn.children;
    expect(second.childSessionId).toBe(first.childSessionId);
    expect(second.handback).toEqual({ status: 'completed', result: 'kiwi' });
    // The second child turn saw the first task and its answer as history.
    expect(seen[1].input).toBe('which word did I give you?');
    expect(seen[1].transcript).toContain('remember the word kiwi');
    expect(seen[1].transcript).toContain('noted');
    const history = await env.db.message.findMany({
      where: { sessionId: first.childSessionId },
      orderBy: [{ turnSeq: 'asc' }, { position: 'asc' }],
    });
    expect(history.map((m) => m.turnSeq)).toEqual([1, 1, 2, 2]);
  });

  it('close_subagent cancels a running child; steer_subagent interjects into the running child turn', async () => {
    const boss = unique('boss');
    const slow = unique('slow');
    const quick = unique('quick');
    scripts.set(boss, (a) => {
      const ids = a.results.map((r) => UUID.exec(r)?.[0]);
      switch (a.results.length) {
        case 0:
          return {
            kind: 'message',
            toolCalls: [
              {
                id: 'call_a',
                name: 'spawn_subagent',
                arguments: JSON.stringify({ agent: slow, task: 'take forever' }),
              },
              {
                id: 'call_b',
                name: 'spawn_subagent',
                arguments: JSON.stringify({ agent: quick, task: 'say hi' }),
              },
            ],
          };
        case 2:
          return scripted.toolCall('close_subagent', { task_id: ids[0] }, { id: 'call_close' });
        case 3:
          // The quick child's turn is running: its first model call is held until this steer is admitted.
          return scripted.toolCall(
            'steer_subagent',
            { task_id: ids[1], message: 'now say bye' },
            { id: 'call_steer' },
          );
        case 4:
          return scripted.toolCall('list_subagents', {}, { id: 'call_list' });
        default:
          return scripted.text('closed and steered');
      }
    });
    scripts.set(slow, () => scripted.text('too late', { delayMs: 60_000 }));
    // One tool round, so its turn makes a second model call: the steer reaches that call.
    scripts.set(quick, async (a) => {
      if (a.transcript.includes('now say bye')) return scripted.text('bye');
      if (!a.transcript.includes('call_wc')) {
        // Held (the child's turn stays running) until the parent's steer is admitted and its worker
        // has been told on the control channel, so the steer meets a running turn however slow the
        // machine is.
        await steerSignalled;
        return scripted.toolCall('word_count', { text: 'hi there' }, { id: 'call_wc' });
      }
      return scripted.text('hi');
    });
    // The interjection's control message (docs/adr/0014) as published to the child's worker.
    const listener = new IORedis(env.redisUrl);
    redises.push(listener);
    await listener.psubscribe(`${env.queuePrefix}:control:worker:*`);
    const steerSignalled = new Promise<void>((resolve) =>
      listener.on('pmessage', (_p, _ch, m) => {
        if ((JSON.parse(m) as { type?: string }).type === 'interject') resolve();
      }),
    );
    await agent(slow, 'worker');
    await agent(quick, 'worker', ['word_count']);
    const bossId = await agent(boss, 'chat', [
      'spawn_subagent',
      'close_subagent',
      'steer_subagent',
      'list_subagents',
    ]);
    await harness();
    const { session, turnId } = await send(bossId, 'close one, steer the other');
    const turn = await ended(turnId);
    expect(turn.status).toBe('completed');
    expect(turn.children).toHaveLength(2);
    const [a, b] = turn.children;
    // The slow child was cancelled through the cancel path; its task ended incomplete and closed.
    const closed = await waitFor(
      async () => {
        const r = await api.get(`/v1/tasks/${a.id}`);
        return r.body.status === 'cancelled' ? r.body : undefined;
      },
      { what: 'the closed child was cancelled', timeoutMs: 30_000 },
    );
    expect(closed.closedAt).not.toBeNull();
    expect(closed.handback).toMatchObject({ status: 'incomplete', reason: 'cancelled' });
    const slowTurn = await env.db.turn.findUniqueOrThrow({ where: { id: a.childTurnId } });
    expect(slowTurn.status).toBe('cancelled');
    // The steer is an interjection (docs/adr/0014, 0024): delivered into the quick child's running turn
    // before its next model call, so that same turn answers it; the steer's own turn ends `interjected`.
    const steered = await waitFor(
      async () => {
        const turns = await env.db.turn.findMany({
          where: { sessionId: b.childSessionId },
          orderBy: { seq: 'asc' },
        });
        return turns.length === 2 && turns.every((t) => t.status === 'completed') ? turns : undefined;
      },
      { what: 'the child turn and the steer ended', timeoutMs: 30_000 },
    );
    expect(steered[0]).toMatchObject({ id: b.childTurnId, finalText: 'bye' });
    expect(steered[1]).toMatchObject({ priority: 'interject', stopReason: 'interjected' });
    const childAsks = llm.requests.map(ask).filter((x) => x.agent === quick);
    expect(childAsks).toHaveLength(2);
    expect(childAsks[0].transcript).not.toContain('now say bye');
    expect(childAsks[1].transcript).toContain('call_wc');
    expect(childAsks[1].transcript).toContain('now say bye');
    // Provenance: the steering parent turn and the task.
    const steerMessage = await env.db.message.findUniqueOrThrow({
      where: { id: steered[1].inputMessageId },
    });
    expect(steerMessage).toMatchObject({
      turnId: b.childTurnId,
      priority: 'interject',
      authorityClass: 'runtime_instruction',
      causationId: turnId,
      metadata: expect.objectContaining({ subagent: { taskId: b.id, steer: true, fromTurnId: turnId } }),
    });
    // list_subagents answered both tasks to the parent.
    const list = await env.db.message.findFirstOrThrow({
      where: { turnId, role: 'tool', toolCallId: 'call_list' },
    });
    expect(JSON.stringify(list.body)).toContain(a.id);
    expect(JSON.stringify(list.body)).toContain(b.id);
    // The parent's journal reports the cancelled child.
    await waitFor(
      async () =>
        (await events(session)).some(
          (e) => e.type === 'subagent_completed' && (e.data as { taskId: string }).taskId === a.id,
        ),
      { what: 'subagent_completed for the closed child' },
    );
  });

  it('a child that asks its user hands back awaiting_user; the answer through the API resumes it', async () => {
    const boss = unique('boss');
    const helper = unique('helper');
    scripts.set(boss, (a) =>
      a.results.length === 0
        ? scripted.toolCall('spawn_subagent', { agent: helper, task: 'book a trip', blocking: true })
        : scripted.text(`question for you: ${a.results[0]}`),
    );
    scripts.set(helper, (a) =>
      a.results.length === 0
        ? scripted.toolCall(
            'ask_user',
            { question: 'which city?', options: ['Paris', 'Rome'] },
            { id: 'call_ask' },
          )
        : scripted.text(`booked ${UUID.test(a.results[0]) ? '?' : a.results[0]}`),
    );
    await agent(helper, 'worker');
    const bossId = await agent(boss, 'chat', ['spawn_subagent']);
    await harness();
    const { session, turnId } = await send(bossId, 'plan my trip');
    // The parent resumes with the question and relays it; the child waits, holding no worker.
    const turn = await ended(turnId);
    expect(turn.status).toBe('completed');
    expect(turn.finalText).toContain('awaiting_user');
    expect(turn.finalText).toContain('which city?');
    const taskId = turn.children[0].id as string;
    const asked = (await api.get(`/v1/tasks/${taskId}`)).body;
    expect(asked.status).toBe('running');
    expect(asked.handback).toMatchObject({
      status: 'awaiting_user',
      question: 'which city?',
      options: ['Paris', 'Rome'],
    });
    const childTurn = await env.db.turn.findUniqueOrThrow({ where: { id: asked.childTurnId } });
    expect(childTurn.status).toBe('awaiting_subagent');
    // Answering something that does not wait is a 409; the answer resumes the child.
    const answered = await api.post(`/v1/tasks/${taskId}/answer`, { answer: 'Rome' });
    expect(answered.status).toBe(200);
    expect(answered.body.handback).toBeNull();
    expect((await api.post(`/v1/tasks/${taskId}/answer`, { answer: 'Paris' })).status).toBe(409);
    const done = await waitFor(
      async () => {
        const r = await api.get(`/v1/tasks/${taskId}`);
        return r.body.status === 'completed' ? r.body : undefined;
      },
      { what: 'the child completed after the answer', timeoutMs: 30_000 },
    );
    expect(done.handback.result).toContain('Rome');
    // The task's end commits with the child's last checkpoint; the parent's journal hears of it just
    // after (childEnded, retried by the tasks sweep), so the report is awaited, not read at once.
    const reports = await waitFor(
      async () => {
        const r = (await events(session)).filter((e) => e.type === 'subagent_completed');
        return r.length >= 2 ? r : undefined;
      },
      { what: "the parent's second subagent_completed", timeoutMs: 30_000 },
    );
    expect(reports.map((e) => (e.data as { status: string }).status)).toEqual(['awaiting_user', 'completed']);
  });

  it('GET /v1/tasks/:id: another tenant’s task and unknown or malformed ids are 404', async () => {
    const row = await env.db.$queryRaw<
      { id: string }[]
    >`SELECT id FROM tasks WHERE tenant_id = ${tenantId}::uuid LIMIT 1`;
    expect(row.length).toBe(1);
    const other = await newTenant(gateway.url, ADMIN);
    const foreign = await other.api.get(`/v1/tasks/${row[0].id}`);
    expect(foreign.status).toBe(404);
    expect(foreign.body.error.code).toBe('not_found');
    expect((await api.get(`/v1/tasks/${randomUUID()}`)).status).toBe(404);
    expect((await api.get('/v1/tasks/not-a-uuid')).status).toBe(404);
  });

  it('a child gets at most what its parent has left; with nothing left the spawn is refused', async () => {
    const boss = unique('boss');
    const broke = unique('broke');
    const helper = unique('helper');
    const delegate = (a: Ask) =>
      a.results.length === 0
        ? scripted.toolCall(
            'spawn_subagent',
            { agent: helper, task: 'help', blocking: true },
            { id: 'call_s' },
          )
        : scripted.text('done');
    scripts.set(boss, delegate);
    scripts.set(broke, delegate);
    scripts.set(helper, () => scripted.text('helped'));
    await agent(helper, 'worker');
    const budgeted = async (name: string, maxUsd: number) => {
      const r = await api.post('/v1/agents', {
        name,
        tier: 'chat',
        model: MODEL,
        tools: ['spawn_subagent'],
        budgets: { maxUsd },
      });
      expect(r.status).toBe(201);
      return r.body.id as string;
    };
    await harness();
    // $1 cap: the child's share is the dollar less the parent's first model call.
    const first = await send(await budgeted(boss, 1), 'delegate');
    const done = await ended(first.turnId);
    expect(done.status).toBe('completed');
    expect(done.children).toHaveLength(1);
    const childTurn = await env.db.turn.findUniqueOrThrow({ where: { id: done.children[0].childTurnId } });
    const input = await env.db.message.findUniqueOrThrow({ where: { id: childTurn.inputMessageId } });
    const share = (input.metadata as { subagent: { maxUsd: number } }).subagent.maxUsd;
    expect(share).toBeLessThan(1);
    expect(share).toBeGreaterThanOrEqual(1 - Number(done.costUsd));
    // A cap nothing fits under: the spawn is a classified tool error, no task, and the parent stops.
    const second = await send(await budgeted(broke, 0.0000001), 'delegate');
    const refused = await ended(second.turnId);
    expect(refused.children).toEqual([]);
    expect(refused.stopReason).toBe('max_usd');
    const result = await env.db.message.findFirstOrThrow({
      where: { turnId: second.turnId, role: 'tool', toolCallId: 'call_s' },
    });
    expect(JSON.stringify(result.body)).toContain('parent_budget_exhausted');
    expect(await env.db.task.count({ where: { parentTurnId: second.turnId } })).toBe(0);
  });
});
