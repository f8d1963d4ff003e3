import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
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
import { Api, newTenant } from '../support/api';
import { EFFECT_TOOLS_MODULE, lines } from '../support/effect-tools';
import { startGateway, type Running } from '../support/stack';

jest.setTimeout(180_000);

const ADMIN = 'test-admin-token-0123456789';
/** The rolling window the harness processes run with: short, so the test sees it pass. */
const WINDOW_MS = 15_000;

interface ChatMsg {
  role: string;
  content?: unknown;
}
const text = (c: unknown): string =>
  typeof c === 'string' ? c : Array.isArray(c) ? c.map((p: { text?: string }) => p.text ?? '').join('') : '';

/**
 * The model: a message naming a path makes one side-effecting call (`effect_once` on it); after the
 * tool result it answers `refused: <kind>` when the call came back as a tool error, else `done`.
 */
function reply(req: RecordedRequest): ScriptedReply {
  const messages = (req.body as { messages?: ChatMsg[] }).messages ?? [];
  const lastUser = messages.map((m) => m.role).lastIndexOf('user');
  const prefix = /\/[^\s<>"']+/.exec(text(messages[lastUser]?.content))?.[0];
  if (!prefix) return scripted.text('hello');
  const result = messages.slice(lastUser).find((m) => m.role === 'tool');
  if (!result)
    return scripted.toolCall('effect_once', { path: prefix }, { id: `call_${randomUUID().slice(0, 8)}` });
  const kind = /"kind":"([a-z_]+)"/.exec(text(result.content))?.[1];
  return scripted.text(kind ? `refused: ${kind}` : 'done');
}

/**
 * The hourly side-effect budget (issue 38, docs/adr/0058) through real processes: an agent with
 * `maxActionsPerHour: 2` makes one side-effecting call per turn. Its first turn runs on harness
 * process A; A stops and process B runs the next two: the second call is counted beside A's, the
 * third is refused with the `action_budget_exceeded` tool error the model sees (the turn completes,
 * the effect never happens, the journal says why). Once the (short, test-only) window has passed
 * since A's call, B runs the next one. Bad input on the new settings is a 400 with nothing changed,
 * and GET /v1/turns lists the tenant's turns that have not ended.
 */
describe('the hourly side-effect budget across harness processes (docs/adr/0058)', () => {
  let env: TestEnv;
  let llm: FakeLlmServer;
  let gateway: Running & { url: string };
  let api: Api;
  let admin: Api;
  let tenantId: string;
  let dir: string;
  const workers: AppProcess[] = [];

  const harness = async () => {
    const w = await spawnApp(
      'harness-worker',
      env.processEnv({
        ...llm.providerEnv,
        EXTRA_TOOL_MODULES: EFFECT_TOOLS_MODULE,
        ACTION_BUDGET_WINDOW_MS: String(WINDOW_MS),
      }),
    );
    workers.push(w);
    return w;
  };

  beforeAll(async () => {
    env = await createTestEnv();
    llm = await FakeLlmServer.start();
    llm.setDefault(reply);
    gateway = await startGateway(env.config({ ...llm.providerEnv, EXTRA_TOOL_MODULES: EFFECT_TOOLS_MODULE }));
    ({ api, tenantId } = await newTenant(gateway.url, ADMIN, 'budgeted'));
    admin = new Api(gateway.url, ADMIN);
    dir = mkdtempSync(path.join(tmpdir(), 'sb-actions-'));
  });

  afterAll(async () => {
    await Promise.all(workers.map((w) => w.kill('SIGKILL')));
    await gateway?.close();
    await llm?.close();
    await env?.cleanup();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  const until = (turnId: string, as = api) =>
    waitFor(
      async () => {
        const r = await as.get(`/v1/turns/${turnId}`);
        return ['completed', 'failed', 'cancelled'].includes(r.body.status) ? r.body : undefined;
      },
      { what: `turn ${turnId} ended`, timeoutMs: 30_000 },
    );

  /** One turn in a new session of the agent that writes to a fresh path; its end and the path. */
  async function act(agentId: string, as = api) {
    const prefix = path.join(dir, randomUUID());
    writeFileSync(`${prefix}.release`, '');
    const sessionId = (await as.post('/v1/sessions', { agentId })).body.id as string;
    const msg = await as.post(`/v1/sessions/${sessionId}/messages`, { content: `write to ${prefix}` });
    expect(msg.status).toBe(202);
    const turn = await until(msg.body.turnId, as);
    return { turn, sessionId, effects: lines(prefix, 'effects').length };
  }

  it('refuses the next side-effecting call across two processes, and allows it again after the window', async () => {
    const agent = await api.post('/v1/agents', {
      name: 'writer',
      model: 'openai-chat/fake-a',
      tools: ['effect_once'],
      maxActionsPerHour: 2,
    });
    expect(agent.status).toBe(201);
    expect(agent.body.maxActionsPerHour).toBe(2);
    const agentId = agent.body.id as string;

    const a = await harness();
    const first = await act(agentId);
    expect(first.turn).toMatchObject({ status: 'completed', finalText: 'done' });
    expect(first.effects).toBe(1);

    // Process A goes; B takes the agent's next turns and sees A's call in the window.
    await a.kill('SIGKILL');
    const b = await harness();
    const second = await act(agentId);
    expect(second.turn).toMatchObject({ status: 'completed', finalText: 'done' });
    expect(second.effects).toBe(1);

    const third = await act(agentId);
    // A tool error the model saw and answered, not a turn failure; the effect never happened.
    expect(third.turn).toMatchObject({ status: 'completed', finalText: 'refused: action_budget_exceeded' });
    expect(third.effects).toBe(0);
    expect(third.turn.toolCalls).toEqual([
      expect.objectContaining({ name: 'effect_once', status: 'failed' }),
    ]);
    const events = await api.get(`/v1/sessions/${third.sessionId}/events`);
    const refused = events.body.data.find((e: { type: string }) => e.type === 'action_budget_exceeded');
    expect(refused?.data).toMatchObject({
      name: 'effect_once',
      scope: 'agent',
      limit: 2,
      windowMs: WINDOW_MS,
      retryAfterMs: expect.any(Number),
    });
    const completed = events.body.data.find((e: { type: string }) => e.type === 'tool_call_completed');
    expect(completed?.data).toMatchObject({
      ok: false,
      failure: { kind: 'action_budget_exceeded', class: 'BlockedByPolicy', category: 'blocked_by_policy' },
    });

    // The window is rolling: when A's call leaves it (the refusal said when), B has a slot again.
    const refusedAt = Date.parse(refused.createdAt);
    await waitFor(() => Date.now() > refusedAt + refused.data.retryAfterMs + 100, {
      what: 'a slot freed in the window',
      intervalMs: 100,
      timeoutMs: WINDOW_MS + 5000,
    });
    const fourth = await act(agentId);
    expect(fourth.turn).toMatchObject({ status: 'completed', finalText: 'done' });
    expect(fourth.effects).toBe(1);
    expect(b.child.pid).not.toBe(a.child.pid);
  });

  it("refuses on the tenant's budget, set by the operator, across the tenant's agents", async () => {
    // A tenant of its own: its window starts empty.
    const own = await newTenant(gateway.url, ADMIN, 'capped');
    const set = await admin.request('PATCH', `/v1/admin/tenants/${own.tenantId}`, {
      body: { maxActionsPerHour: 1 },
      headers: { authorization: `Bearer ${ADMIN}` },
    });
    expect(set.status).toBe(200);
    expect(set.body.maxActionsPerHour).toBe(1);
    const mk = async (name: string) =>
      (await own.api.post('/v1/agents', { name, model: 'openai-chat/fake-a', tools: ['effect_once'] })).body
        .id as string;
    const [one, two] = [await mk('one'), await mk('two')];
    expect((await act(one, own.api)).turn.finalText).toBe('done');
    const other = await act(two, own.api);
    expect(other.turn.finalText).toBe('refused: action_budget_exceeded');
    expect(other.effects).toBe(0);
    const events = await own.api.get(`/v1/sessions/${other.sessionId}/events`);
    expect(
      events.body.data.find((e: { type: string }) => e.type === 'action_budget_exceeded')?.data,
    ).toMatchObject({
      scope: 'tenant',
      limit: 1,
    });
    const cleared = await admin.request('PATCH', `/v1/admin/tenants/${own.tenantId}`, {
      body: { maxActionsPerHour: null },
      headers: { authorization: `Bearer ${ADMIN}` },
    });
    expect(cleared.body.maxActionsPerHour).toBeNull();
  });

  it('refuses bad settings with 400 and changes nothing', async () => {
    const agent = await api.post('/v1/agents', { name: 'steady', maxActionsPerHour: 5 });
    expect(agent.status).toBe(201);
    for (const bad of [0, -1, 1.5, '5', 2_000_000]) {
      const res = await api.patch(`/v1/agents/${agent.body.id}`, { maxActionsPerHour: bad });
      expect(res.status).toBe(400);
      expect(res.body.error.code).toBe('validation_failed');
      const created = await api.post('/v1/agents', { name: 'x', maxActionsPerHour: bad });
      expect(created.status).toBe(400);
    }
    for (const bad of [{ onMaxIterations: 'later' }, { onMaxIterations: true }]) {
      expect((await api.patch(`/v1/agents/${agent.body.id}`, { budgets: bad })).status).toBe(400);
    }
    expect((await api.get(`/v1/agents/${agent.body.id}`)).body).toMatchObject({
      maxActionsPerHour: 5,
      budgets: {},
    });
    for (const bad of [0, 'many', 1.5]) {
      const res = await admin.request('PATCH', `/v1/admin/tenants/${tenantId}`, {
        body: { maxActionsPerHour: bad },
        headers: { authorization: `Bearer ${ADMIN}` },
      });
      expect(res.status).toBe(400);
    }
    const tenant = await admin.request('GET', `/v1/admin/tenants/${tenantId}`, {
      headers: { authorization: `Bearer ${ADMIN}` },
    });
    expect(tenant.body.maxActionsPerHour).toBeNull();
    // Null clears the agent's budget.
    const cleared = await api.patch(`/v1/agents/${agent.body.id}`, { maxActionsPerHour: null });
    expect(cleared.body.maxActionsPerHour).toBeNull();
  });

  it("GET /v1/turns lists the tenant's turns that have not ended, and refuses an ended status", async () => {
    // No harness runs now: a new turn stays queued.
    await Promise.all(workers.map((w) => w.kill('SIGTERM')));
    const agent = await api.post('/v1/agents', { name: 'idle', model: 'openai-chat/fake-a' });
    const sessionId = (await api.post('/v1/sessions', { agentId: agent.body.id })).body.id as string;
    const msg = await api.post(`/v1/sessions/${sessionId}/messages`, { content: 'hello' });
    const listed = await api.get('/v1/turns');
    expect(listed.status).toBe(200);
    expect(listed.body.data.map((t: { id: string }) => t.id)).toEqual([msg.body.turnId]);
    expect(listed.body.data[0]).toMatchObject({ status: 'queued', sessionId });
    expect((await api.get('/v1/turns?status=running')).body.data).toEqual([]);
    expect((await api.get(`/v1/turns?status=queued,running&sessionId=${sessionId}`)).body.data).toHaveLength(
      1,
    );
    expect((await api.get(`/v1/turns?agentId=${randomUUID()}`)).body.data).toEqual([]);
    // Another tenant sees none of them.
    const { api: other } = await newTenant(gateway.url, ADMIN, 'other');
    expect((await other.get('/v1/turns')).body.data).toEqual([]);
    for (const bad of ['status=completed', 'status=running,nope', 'agentId=x', 'limit=0', 'cursor=zz']) {
      const res = await api.get(`/v1/turns?${bad}`);
      expect(res.status).toBe(400);
      expect(res.body.error).toBeDefined();
    }
  });
});
