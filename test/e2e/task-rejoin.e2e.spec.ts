import { randomUUID } from 'node:crypto';
import { Client } from 'pg';
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

jest.setTimeout(180_000);

const ADMIN = 'test-admin-token-0123456789';
const MODEL = 'openai-chat/gpt-4o-mini';

interface ChatMsg {
  role: string;
  content?: unknown;
}

/** One model request: which agent asks, its turn's input (the last user message), and the tool results after it. */
interface Ask {
  agent: string;
  input: string;
  results: string[];
}

const text = (c: unknown): string =>
  typeof c === 'string' ? c : Array.isArray(c) ? c.map((p: { text?: string }) => p.text ?? '').join('') : '';

function ask(req: RecordedRequest): Ask {
  const messages = (req.body as { messages?: ChatMsg[] }).messages ?? [];
  const system = text(messages.find((m) => m.role === 'system' || m.role === 'developer')?.content);
  let last = -1;
  messages.forEach((m, i) => {
    if (m.role === 'user') last = i;
  });
  return {
    agent: /You are the agent "([^"]+)"/.exec(system)?.[1] ?? '?',
    input: text(messages[last]?.content),
    results: messages.slice(last + 1).flatMap((m) => (m.role === 'tool' ? [text(m.content)] : [])),
  };
}

/**
 * Task results rejoin their parent through real processes (docs/adr/0057): a gateway, harness worker
 * processes and a fake LLM scripted per agent. A parent spawns an async child and ends its turn; the
 * child's end admits exactly one `task_result` message into the parent's session, which starts one
 * parent turn carrying the result — also when the harness is SIGKILLed between the child's end and
 * the admission. An operator's POST /v1/tasks/:id/cancel stops a running child.
 */
describe('task results rejoin the parent', () => {
  let env: TestEnv;
  let llm: FakeLlmServer;
  let gateway: Running & { url: string };
  let api: Api;
  let locker: Client;
  const workers: AppProcess[] = [];
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
    ({ api } = await newTenant(gateway.url, ADMIN));
    locker = new Client({ connectionString: env.databaseUrl });
    await locker.connect();
  });

  afterEach(async () => {
    await Promise.all(workers.splice(0).map((w) => w.kill('SIGKILL')));
  });

  afterAll(async () => {
    await locker?.end().catch(() => undefined);
    await gateway?.close();
    await llm?.close();
    await env?.cleanup();
  });

  /**
   * A harness process. Its Postgres sessions check every 100 ms that their client is still there, so
   * a statement of a killed harness that waits on a lock is rolled back at once.
   */
  const harness = async () => {
    const url = new URL(env.databaseUrl);
    url.searchParams.set('options', '-c client_connection_check_interval=100');
    const w = await spawnApp(
      'harness-worker',
      env.processEnv({ ...llm.providerEnv, RECONCILE_INTERVAL_MS: '500', DATABASE_URL: url.toString() }),
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

  /** The parent session's turn started by the task_result, once it ended. */
  const rejoinTurnEnded = (taskId: string, timeoutMs = 60_000) =>
    waitFor(
      async () => {
        const task = (await api.get(`/v1/tasks/${taskId}`)).body;
        if (!task.rejoinTurnId) return undefined;
        const turn = (await api.get(`/v1/turns/${task.rejoinTurnId}`)).body;
        return ['completed', 'failed', 'cancelled'].includes(turn.status) ? { task, turn } : undefined;
      },
      { what: `the task_result turn of ${taskId} ended`, timeoutMs },
    );

  const turnsOf = (sessionId: string) =>
    env.db.turn.findMany({ where: { sessionId }, orderBy: { seq: 'asc' } });
  const events = (sessionId: string, type: string) =>
    env.db.event.findMany({ where: { sessionId, type }, orderBy: { seq: 'asc' } });
  const taskResults = (sessionId: string) =>
    env.db.message.findMany({ where: { sessionId, kind: 'task_result' } });

  /**
   * The parent spawns `helper` asynchronously and ends its turn; a later turn whose input is the
   * task_result relays it. The child answers once `gate` lets it.
   */
  function delegate(boss: string, helper: string, gate: () => Promise<void>) {
    scripts.set(boss, (a) => {
      if (a.input.startsWith('Result of sub-agent task')) return scripted.text(`relayed: ${a.input}`);
      if (a.results.length === 0)
        return scripted.toolCall('spawn_subagent', { agent: helper, task: 'count the sheep' }, { id: 'c1' });
      return scripted.text('a helper is counting; the result will follow');
    });
    scripts.set(helper, async () => {
      await gate();
      return scripted.text('there are 42 sheep');
    });
  }

  /** The parent's turn ended and its closure (a finalisation step) is recorded. */
  const parentTurnEnded = async (bossId: string) => {
    await waitFor(
      async () => {
        const [row] = await env.db.$queryRaw<{ id: string }[]>`
          SELECT id FROM turns WHERE agent_id = ${bossId}::uuid AND status = 'completed' AND closure IS NOT NULL`;
        return row;
      },
      { what: 'the parent’s turn ended', timeoutMs: 30_000 },
    );
  };

  it('an async child ending after its parent’s turn ended starts exactly one parent turn carrying the result', async () => {
    const boss = unique('boss');
    const helper = unique('helper');
    let bossId = '';
    delegate(boss, helper, () => parentTurnEnded(bossId));
    await agent(helper, 'worker');
    bossId = await agent(boss, 'chat', ['spawn_subagent', 'wait_subagent']);
    await harness();
    const { session, turnId } = await send(bossId, 'how many sheep?');
    const first = await ended(turnId);
    expect(first.status).toBe('completed');
    expect(first.finalText).toContain('the result will follow');
    const taskId = first.children[0].id as string;
    // The turn ended with the task open: waiting for its result (the closure is a finalisation step's).
    const closure = await waitFor(
      async () => (await api.get(`/v1/turns/${turnId}`)).body.closure ?? undefined,
      {
        what: 'the parent turn’s closure',
      },
    );
    expect(closure).toMatchObject({
      outcome: 'waiting',
      waitingReason: 'awaiting_task_result',
      taskIds: [taskId],
    });

    const { task, turn } = await rejoinTurnEnded(taskId);
    expect(task).toMatchObject({ status: 'completed', blocking: false, rejoin: 'task_result' });
    expect(turn.status).toBe('completed');
    expect(turn.finalText).toContain('relayed: Result of sub-agent task');
    expect(turn.finalText).toContain('there are 42 sheep');
    // Its continuation resolution: the input matched the wait of the turn before it, with the task as evidence.
    expect(turn.continuation).toEqual({
      modelVisible: true,
      priorClosureOutcome: 'waiting',
      priorWaitingReason: 'awaiting_task_result',
      priorTurnId: turnId,
      matchedWaitingReason: true,
      evidence: expect.arrayContaining([`task:${taskId}`, `prior_turn:${turnId}`, 'kind:task_result']),
    });
    const started = (await events(session, 'turn_started')).filter((e) => e.turnId === turn.id);
    expect(started).toHaveLength(1);
    expect(started[0].data).toMatchObject({ continuation: { matchedWaitingReason: true } });

    // Exactly one message and one parent turn; the message is the task's, a runtime instruction.
    const messages = await taskResults(session);
    expect(messages).toHaveLength(1);
    expect(messages[0]).toMatchObject({
      id: task.rejoinMessageId,
      origin: { kind: 'task', taskId },
      authorityClass: 'runtime_instruction',
      deliverySurface: 'task_rejoin',
      taskId,
      sourceRefs: { taskId },
    });
    const turns = await turnsOf(session);
    expect(turns.map((t) => t.id)).toEqual([turnId, turn.id]);
    expect(turn.closure).toMatchObject({ outcome: 'completed' });
    const journal = await env.db.event.findMany({ where: { sessionId: session }, orderBy: { seq: 'asc' } });
    expect(journal.filter((e) => e.type === 'subagent_completed')).toHaveLength(1);
    expect(journal.filter((e) => e.type === 'message_admitted')).toHaveLength(2);
  });

  it('the harness SIGKILLed between the child’s end and the admission: still exactly one parent turn with the result', async () => {
    const boss = unique('boss');
    const helper = unique('helper');
    let bossId = '';
    let parentSession = '';
    delegate(boss, helper, async () => {
      await parentTurnEnded(bossId);
      // Hold the parent session's row: the child's end commits, its report to the parent then waits.
      await locker.query('BEGIN');
      await locker.query('SELECT 1 FROM sessions WHERE id = $1::uuid FOR UPDATE', [parentSession]);
    });
    await agent(helper, 'worker');
    bossId = await agent(boss, 'chat', ['spawn_subagent']);
    const a = await harness();
    const session = (await api.post('/v1/sessions', { agentId: bossId })).body.id as string;
    parentSession = session;
    const r = await api.post(`/v1/sessions/${session}/messages`, { content: 'how many sheep?' });
    const turnId = r.body.turnId as string;
    const first = await ended(turnId);
    const taskId = first.children[0].id as string;
    const childTurnId = first.children[0].childTurnId as string;

    // The child's end committed; the harness is blocked on the parent session, before the admission.
    await waitFor(
      async () => {
        const child = await env.db.turn.findUniqueOrThrow({ where: { id: childTurnId } });
        if (child.status !== 'completed') return undefined;
        const [w] = await env.db.$queryRaw<{ n: number }[]>`
          SELECT count(*)::int AS n FROM pg_stat_activity
          WHERE wait_event_type = 'Lock' AND query LIKE 'SELECT 1 FROM sessions WHERE id = %FOR UPDATE%'`;
        return w.n > 0 || undefined;
      },
      { what: 'the child ended and its report waits on the parent session', timeoutMs: 30_000 },
    );
    const before = await env.db.task.findUniqueOrThrow({ where: { id: taskId } });
    expect(before).toMatchObject({ status: 'completed', parentNotifiedAt: null, rejoin: null });
    expect(await taskResults(session)).toHaveLength(0);
    await a.kill('SIGKILL');
    await locker.query('ROLLBACK');

    // A new harness: the redelivered child job or the tasks sweep reports and admits, once.
    await harness();
    const { task, turn } = await rejoinTurnEnded(taskId, 90_000);
    expect(task.rejoin).toBe('task_result');
    expect(turn.status).toBe('completed');
    expect(turn.finalText).toContain('there are 42 sheep');
    expect(turn.continuation).toMatchObject({ matchedWaitingReason: true, priorTurnId: turnId });
    expect(await taskResults(session)).toHaveLength(1);
    expect((await turnsOf(session)).map((t) => t.id)).toEqual([turnId, turn.id]);
    expect(await events(session, 'subagent_completed')).toHaveLength(1);
    const childJournal = await env.db.event.findMany({
      where: { turnId: childTurnId, type: 'turn_completed' },
    });
    expect(childJournal).toHaveLength(1);
  });

  it('POST /v1/tasks/:id/cancel stops a running child (typed reason, audited); the parent hears of it once', async () => {
    const boss = unique('boss');
    const helper = unique('helper');
    let calls = 0;
    delegate(boss, helper, async () => undefined);
    // The child's model call hangs: it is running when the operator stops it.
    scripts.set(helper, () => {
      calls++;
      return scripted.text('too late', { delayMs: 60_000 });
    });
    await agent(helper, 'worker');
    const bossId = await agent(boss, 'chat', ['spawn_subagent']);
    await harness();
    const { session, turnId } = await send(bossId, 'how many sheep?');
    const first = await ended(turnId);
    const taskId = first.children[0].id as string;
    const childTurnId = first.children[0].childTurnId as string;
    await waitFor(() => calls >= 1 || undefined, { what: 'the child called its model', timeoutMs: 30_000 });

    // Bad input: 400 with the error shape, nothing changed.
    for (const body of [{ reason: '' }, { reason: 'x'.repeat(501) }, { why: 'no' }]) {
      const bad = await api.post(`/v1/tasks/${taskId}/cancel`, body);
      expect(bad.status).toBe(400);
      expect(bad.body.error).toMatchObject({ code: 'validation_failed' });
    }
    expect((await api.get(`/v1/tasks/${taskId}`)).body.status).toBe('running');
    // Another tenant's task, an unknown or malformed id: 404.
    const other = await newTenant(gateway.url, ADMIN);
    expect((await other.api.post(`/v1/tasks/${taskId}/cancel`, {})).status).toBe(404);
    expect((await api.post(`/v1/tasks/${randomUUID()}/cancel`, {})).status).toBe(404);
    expect((await api.post('/v1/tasks/not-an-id/cancel', {})).status).toBe(404);
    expect(await env.db.auditEvent.count({ where: { action: 'task.cancelled' } })).toBe(0);

    const stop = await api.post(`/v1/tasks/${taskId}/cancel`, { reason: 'not needed any more' });
    expect([200, 202]).toContain(stop.status);
    expect(stop.body.id).toBe(taskId);
    const child = await ended(childTurnId);
    expect(child).toMatchObject({
      status: 'cancelled',
      cancelReason: 'api_cancel',
      cancelNote: 'not needed any more',
    });
    const audit = await api.get('/v1/audit-events?action=task.cancelled');
    expect(audit.status).toBe(200);
    expect(audit.body.data).toHaveLength(1);
    expect(audit.body.data[0]).toMatchObject({
      action: 'task.cancelled',
      targetType: 'task',
      targetId: taskId,
      details: { reason: 'api_cancel', note: 'not needed any more', childTurnId },
    });
    // Ended: a second stop is a conflict.
    const again = await api.post(`/v1/tasks/${taskId}/cancel`, {});
    expect(again.status).toBe(409);
    expect(again.body.error).toMatchObject({ code: 'conflict' });

    // Its parent's turn had ended: the stop rejoins it as one task_result naming the cancel.
    const { task, turn } = await rejoinTurnEnded(taskId);
    expect(task).toMatchObject({ status: 'cancelled', rejoin: 'task_result' });
    expect(turn.finalText).toContain('"status":"cancelled"');
    expect(await taskResults(session)).toHaveLength(1);
  });
});
