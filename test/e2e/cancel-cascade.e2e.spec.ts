import { randomUUID } from 'node:crypto';
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
const UUID = /[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}/g;

interface ChatMsg {
  role: string;
  content?: unknown;
}
const text = (c: unknown): string =>
  typeof c === 'string' ? c : Array.isArray(c) ? c.map((p: { text?: string }) => p.text ?? '').join('') : '';

/** Which agent a model request is for (its system prompt names it) and the tool results so far. */
function ask(req: RecordedRequest): { agent: string; results: string[] } {
  const messages = (req.body as { messages?: ChatMsg[] }).messages ?? [];
  const system = text(messages.find((m) => m.role === 'system' || m.role === 'developer')?.content);
  return {
    agent: /You are the agent "([^"]+)"/.exec(system)?.[1] ?? '?',
    results: messages.flatMap((m) => (m.role === 'tool' ? [text(m.content)] : [])),
  };
}

/**
 * Cancelling a parent while two of its sub-agents run (issue 11, docs/adr/0025), through a gateway,
 * a harness-worker process and a fake LLM: the parent spawns two children, pauses on wait_subagent,
 * and is cancelled while both children hang inside their model calls. Both child turns end
 * `cancelled` (their calls aborted), both tasks end `cancelled`, the parent never calls its model
 * again, and GET /v1/turns/:id rolls the children's cost up into the parent. A child's spend also
 * counts against the parent's maxUsd: a parent resuming after a blocking spawn over budget stops.
 */
describe('sub-agent cancel cascade and cost roll-up through real processes', () => {
  let env: TestEnv;
  let llm: FakeLlmServer;
  let gateway: Running & { url: string };
  let api: Api;
  let harness: AppProcess;
  const scripts = new Map<string, (a: { results: string[] }) => ScriptedReply>();

  beforeAll(async () => {
    env = await createTestEnv();
    llm = await FakeLlmServer.start();
    llm.setDefault((req) => {
      const a = ask(req);
      return scripts.get(a.agent)?.(a) ?? scripted.text(`no script for ${a.agent}`);
    });
    gateway = await startGateway(env.config(llm.providerEnv));
    ({ api } = await newTenant(gateway.url, ADMIN));
    harness = await spawnApp(
      'harness-worker',
      env.processEnv({ ...llm.providerEnv, RECONCILE_INTERVAL_MS: '500' }),
    );
  });

  afterAll(async () => {
    await harness?.kill('SIGKILL');
    await gateway?.close();
    await llm?.close();
    await env?.cleanup();
  });

  const requestsOf = (agent: string) => llm.requests.filter((r) => ask(r).agent === agent);

  /** A parent waiting on the first of two children it spawned, both hanging inside their model calls. */
  async function twoRunningChildren() {
    const boss = `boss-${randomUUID().slice(0, 6)}`;
    const helper = `helper-${randomUUID().slice(0, 6)}`;
    scripts.set(boss, (a) => {
      if (a.results.length === 0) {
        return {
          kind: 'message',
          toolCalls: [1, 2].map((n) => ({
            id: `call_spawn_${n}`,
            name: 'spawn_subagent',
            arguments: JSON.stringify({ agent: helper, task: `long job ${n}` }),
          })),
        };
      }
      if (a.results.length === 2) {
        const [first] = a.results[0].match(UUID) ?? [];
        return scripted.toolCall('wait_subagent', { task_id: first }, { id: 'call_wait' });
      }
      return scripted.text('the boss went on');
    });
    // The children's model calls never answer: they are running when the parent is cancelled.
    scripts.set(helper, () => scripted.hang());
    expect((await api.post('/v1/agents', { name: helper, tier: 'worker', model: MODEL })).status).toBe(201);
    const bossAgent = await api.post('/v1/agents', {
      name: boss,
      tier: 'chat',
      model: MODEL,
      tools: ['spawn_subagent', 'wait_subagent'],
      allowedSubagents: [helper],
      budgets: { maxUsd: 5 },
    });
    expect(bossAgent.status).toBe(201);
    const session = (await api.post('/v1/sessions', { agentId: bossAgent.body.id })).body.id as string;
    const admitted = await api.post(`/v1/sessions/${session}/messages`, { content: 'do two long jobs' });
    expect(admitted.status).toBe(202);
    const parentId = admitted.body.turnId as string;

    // Both children are inside their model calls and the parent waits for the first.
    await waitFor(() => (requestsOf(helper).length >= 2 ? true : undefined), {
      what: 'two children calling',
    });
    const waiting = await waitFor(
      async () => {
        const r = await api.get(`/v1/turns/${parentId}`);
        return r.body.status === 'awaiting_subagent' ? r.body : undefined;
      },
      { what: 'parent waiting on its child' },
    );
    expect(waiting.children).toHaveLength(2);
    const childTurns: string[] = waiting.children.map((c: { childTurnId: string }) => c.childTurnId);
    for (const id of childTurns) expect((await api.get(`/v1/turns/${id}`)).body.status).toBe('running');
    const bossCalls = requestsOf(boss).length;

    return { boss, parentId, session, childTurns, bossCalls };
  }

  /** Waits for a turn to end and returns it. */
  const ended = (id: string) =>
    waitFor(
      async () => {
        const r = await api.get(`/v1/turns/${id}`);
        return ['completed', 'failed', 'cancelled'].includes(r.body.status) ? r.body : undefined;
      },
      { what: `turn ${id} ended` },
    );

  it('a parent cancelled while two children run cancels both children and their tasks', async () => {
    const { boss, parentId, session, childTurns, bossCalls } = await twoRunningChildren();
    const cancel = await api.post(`/v1/turns/${parentId}/cancel`, { reason: 'user stopped it' });
    expect(cancel.status).toBe(200);
    expect(cancel.body.status).toBe('cancelled');

    // Each child's worker aborts its model call and ends it cancelled; its task ends cancelled.
    for (const id of childTurns) {
      const t = await waitFor(
        async () => {
          const r = await api.get(`/v1/turns/${id}`);
          return ['completed', 'failed', 'cancelled'].includes(r.body.status) ? r.body : undefined;
        },
        { what: `child ${id} ended` },
      );
      expect(t.status).toBe('cancelled');
      // The parent's reason; the note names the parent (docs/adr/0055).
      expect(t).toMatchObject({
        cancelReason: 'api_cancel',
        cancelNote: `parent turn ${parentId} was cancelled`,
      });
    }
    await waitFor(() => (llm.requests.filter((r) => r.closedEarly).length >= 2 ? true : undefined), {
      what: 'both hanging child calls aborted',
    });
    const parent = (await api.get(`/v1/turns/${parentId}`)).body;
    expect(parent.status).toBe('cancelled');
    expect(parent.children.map((c: { status: string }) => c.status)).toEqual(['cancelled', 'cancelled']);
    // The roll-up: the parent's own cost plus what its children spent (nothing: their calls never answered).
    expect(parent.childrenCostUsd).toMatch(/^0(\.0+)?$/);
    expect(Number(parent.totalCostUsd)).toBeCloseTo(Number(parent.costUsd), 8);
    // The parent never ran again; one turn_cancelled on its session.
    expect(requestsOf(boss).length).toBe(bossCalls);
    const journal = await env.db.event.findMany({ where: { sessionId: session, turnId: parentId } });
    expect(journal.filter((e) => e.type === 'turn_cancelled')).toHaveLength(1);
  });

  it('children left running under a cancelled parent (a gateway died mid-cascade) are cancelled by the maintenance sweep', async () => {
    const { parentId, childTurns } = await twoRunningChildren();
    // The parent's own cancel committed; the gateway died before it cancelled the children.
    await env.db.$executeRaw`
      UPDATE turns SET status = 'cancelled', stop_reason = 'cancelled', completed_at = now(),
        cancel_requested_at = now(), cancel_reason = 'operator'
      WHERE id = ${parentId}::uuid`;
    for (const id of childTurns) {
      expect(await ended(id)).toMatchObject({
        status: 'cancelled',
        cancelReason: 'operator',
        cancelNote: `parent turn ${parentId} was cancelled`,
      });
    }
    const tasks = await env.db.task.findMany({ where: { parentTurnId: parentId } });
    expect(tasks.map((t) => t.status)).toEqual(['cancelled', 'cancelled']);
  });

  it('a child’s spend counts against the parent’s maxUsd: the parent resumes over budget and stops', async () => {
    const boss = `thrifty-${randomUUID().slice(0, 6)}`;
    const helper = `spender-${randomUUID().slice(0, 6)}`;
    scripts.set(boss, (a) =>
      a.results.length === 0
        ? scripted.toolCall(
            'spawn_subagent',
            { agent: helper, task: 'spend', blocking: true },
            { id: 'call_b' },
          )
        : scripted.text('the boss spent more'),
    );
    // The provider reports what the child's call cost.
    scripts.set(helper, () => scripted.text('spent', { costUsd: 0.3 }));
    expect((await api.post('/v1/agents', { name: helper, tier: 'worker', model: MODEL })).status).toBe(201);
    const bossAgent = await api.post('/v1/agents', {
      name: boss,
      tier: 'chat',
      model: MODEL,
      tools: ['spawn_subagent'],
      budgets: { maxUsd: 0.25 },
    });
    expect(bossAgent.status).toBe(201);
    const session = (await api.post('/v1/sessions', { agentId: bossAgent.body.id })).body.id as string;
    const admitted = await api.post(`/v1/sessions/${session}/messages`, { content: 'spend it' });
    const parentId = admitted.body.turnId as string;
    const parent = await waitFor(
      async () => {
        const r = await api.get(`/v1/turns/${parentId}`);
        return ['completed', 'failed', 'cancelled'].includes(r.body.status) ? r.body : undefined;
      },
      { what: 'parent ended' },
    );
    // Its own spend is far below 0.25; with the child's 0.3 it is over, so it stops before its next call.
    expect(parent.stopReason).toBe('max_usd');
    expect(requestsOf(boss)).toHaveLength(1);
    expect(Number(parent.costUsd)).toBeLessThan(0.25);
    expect(parent.children).toHaveLength(1);
    expect(parent.children[0].status).toBe('completed');
    expect(Number(parent.childrenCostUsd)).toBeCloseTo(0.3, 8);
    expect(Number(parent.totalCostUsd)).toBeCloseTo(Number(parent.costUsd) + 0.3, 8);
  });
});
