import { createHmac, randomUUID } from 'node:crypto';
import {
  createTestEnv,
  FakeLlmServer,
  scripted,
  spawnApp,
  spawnGateway,
  waitFor,
  type AppProcess,
  type RecordedRequest,
  type ScriptedReply,
  type TestEnv,
} from '@switchboard/testing';
import { Api, newTenant } from '../support/api';

jest.setTimeout(120_000);

const ADMIN = 'test-admin-token-0123456789';
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const ENDED = ['completed', 'failed', 'cancelled'];

/** The last user message of a Chat Completions request, and whether a tool answered since. */
function lastInput(r: RecordedRequest): { input: string; answered: boolean } {
  const messages = (r.body as { messages: { role: string; content: string | null }[] }).messages;
  let last = -1;
  messages.forEach((m, i) => {
    if (m.role === 'user') last = i;
  });
  return {
    input: String(messages[last]?.content ?? ''),
    answered: messages.slice(last + 1).some((m) => m.role === 'tool'),
  };
}

/**
 * The agent lifecycle through real gateway, harness and triage worker processes (seed 002 "Agent
 * State", "Turn Terminal", "Wake / Sleep Lifecycle"; docs/adr/0031): pause holds, stop refuses every
 * admission path with 409 and stores nothing, resume runs what was held, sleep rests until a wake.
 */
describe('agent lifecycle', () => {
  let env: TestEnv;
  let llm: FakeLlmServer;
  let api: Api;
  let url: string;
  const workers: AppProcess[] = [];

  const reply = (r: RecordedRequest): ScriptedReply => {
    const { input, answered } = lastInput(r);
    if (!answered && input.includes('go to sleep'))
      return scripted.toolCall('sleep', { reason: 'nothing to do' });
    if (!answered && input.includes('take a nap')) return scripted.toolCall('sleep', { duration_ms: 1500 });
    return scripted.text('ok');
  };

  beforeAll(async () => {
    env = await createTestEnv();
    llm = await FakeLlmServer.start();
    llm.setDefault(reply);
    const gateway = await spawnGateway(env.processEnv(llm.providerEnv));
    workers.push(
      gateway,
      await spawnApp('harness-worker', env.processEnv(llm.providerEnv)),
      await spawnApp('triage-worker', env.processEnv(llm.providerEnv)),
    );
    url = gateway.url;
    ({ api } = await newTenant(url, ADMIN, 'lifecycle'));
  });

  afterAll(async () => {
    await Promise.all(workers.map((w) => w.kill('SIGKILL')));
    await llm?.close();
    await env?.cleanup();
  });

  const newAgent = async (name: string) =>
    (await api.post('/v1/agents', { name, model: 'openai-chat/lifecycle', tools: ['sleep'] })).body
      .id as string;
  const lifecycle = async (agentId: string) => (await api.get(`/v1/agents/${agentId}`)).body.status.lifecycle;
  const idle = (agentId: string) =>
    waitFor(async () => (await env.db.turn.count({ where: { agentId, status: { notIn: ENDED } } })) === 0, {
      what: 'the agent idle',
    });
  /** Row counts of what an admission would write. */
  const counts = async () => ({
    messages: await env.db.message.count(),
    turns: await env.db.turn.count(),
    deliveries: await env.db.triggerDelivery.count(),
    events: await env.db.event.count(),
  });

  it('a stopped agent refuses a message, a chat completion, a signed webhook and a schedule fire with nothing written', async () => {
    const agentId = await newAgent('stoppable');
    const session = (await api.post('/v1/sessions', { agentId })).body.id;
    const trigger = (await api.post('/v1/triggers', { agentId, name: 'gh', scheme: 'github' })).body;
    expect((await lifecycle(agentId)).state).toBe('awake_idle');

    const stopped = await api.post(`/v1/agents/${agentId}/stop`, { reason: 'incident 42' });
    expect(stopped.status).toBe(200);
    expect(stopped.body).toMatchObject({ state: 'stopped', why: 'incident 42' });
    expect(stopped.body.hint).toContain('resume');
    // A schedule firing every second while the agent is stopped.
    const schedule = (await api.post('/v1/schedules', { agentId, cron: '* * * * * *' })).body;
    const before = await counts();

    const message = await api.post(`/v1/sessions/${session}/messages`, { content: 'hello?' });
    expect(message.status).toBe(409);
    expect(message.body.error.code).toBe('agent_stopped');
    expect(message.body.error.message).toContain(`/v1/agents/${agentId}/resume`);
    const chat = await api.post('/v1/chat/completions', {
      model: 'stoppable',
      messages: [{ role: 'user', content: 'hi' }],
    });
    expect(chat.status).toBe(409);
    const raw = JSON.stringify({ action: 'opened' });
    const hook = await new Api(url).request('POST', trigger.path, {
      raw,
      headers: {
        'content-type': 'application/json',
        'x-github-event': 'issues',
        'x-github-delivery': randomUUID(),
        'x-hub-signature-256': `sha256=${createHmac('sha256', trigger.signingSecret).update(raw).digest('hex')}`,
      },
    });
    expect(hook.status).toBe(409);
    expect(hook.body.error.code).toBe('agent_stopped');
    // Fires come and are refused: more than two seconds of them, none admitted.
    await sleep(2500);
    expect(await counts()).toEqual(before);
    expect(await env.db.message.count({ where: { sessionId: schedule.sessionId } })).toBe(0);
    expect((await api.get(`/v1/schedules/${schedule.id}`)).body.lastRunAt).toBeNull();
    // An operator's work item is taken (a control-plane change) but no tick crosses the boundary.
    expect((await api.post(`/v1/agents/${agentId}/work-items`, { objective: 'later' })).status).toBe(201);
    await sleep(500);
    expect(await env.db.message.count({ where: { agentId, kind: 'system_tick' } })).toBe(0);

    // Resume: admission works again; the schedule fires again.
    await api.delete(`/v1/schedules/${schedule.id}`);
    const resumed = await api.post(`/v1/agents/${agentId}/resume`);
    expect(resumed.status).toBe(200);
    expect(resumed.body.state).not.toBe('stopped');
    expect((await api.post(`/v1/sessions/${session}/messages`, { content: 'hello again' })).status).toBe(202);
  });

  it('paused holds queued work; resume processes what was held', async () => {
    const agentId = await newAgent('pausable');
    const session = (await api.post('/v1/sessions', { agentId })).body.id;
    const paused = await api.post(`/v1/agents/${agentId}/pause`);
    expect(paused.body).toMatchObject({ state: 'paused', why: 'paused by the operator' });
    const held = await api.post(`/v1/sessions/${session}/messages`, { content: 'run me later' });
    expect(held.status).toBe(202);
    await sleep(1500);
    expect((await env.db.turn.findUniqueOrThrow({ where: { id: held.body.turnId } })).status).toBe('queued');
    expect((await lifecycle(agentId)).state).toBe('paused');
    // The list answers the same lifecycle as the agent's own answer.
    const listed = (await api.get('/v1/agents?limit=200')).body.data as { id: string; lifecycle: unknown }[];
    expect(listed.find((a) => a.id === agentId)?.lifecycle).toEqual(await lifecycle(agentId));
    // A second pause changes nothing; resume runs the held turn.
    expect((await api.post(`/v1/agents/${agentId}/pause`, { reason: 'again' })).body.state).toBe('paused');
    expect((await api.post(`/v1/agents/${agentId}/resume`)).status).toBe(200);
    await waitFor(
      async () =>
        (await env.db.turn.findUniqueOrThrow({ where: { id: held.body.turnId } })).status === 'completed',
      { what: 'the held turn completed after resume' },
    );
    expect((await api.post(`/v1/agents/${agentId}/pause`, { reason: '' })).status).toBe(400);
    expect((await api.post(`/v1/agents/${agentId}/stop`, { extra: 1 })).status).toBe(400);
    expect((await api.post(`/v1/agents/${randomUUID()}/resume`)).status).toBe(404);
  });

  it('a sleeping agent wakes on a message and on its timer', async () => {
    const agentId = await newAgent('sleeper');
    const session = (await api.post('/v1/sessions', { agentId })).body.id;
    // Indefinite sleep: asleep until something arrives.
    await api.post(`/v1/sessions/${session}/messages`, { content: 'go to sleep', wait: 30 });
    await idle(agentId);
    const asleep = await lifecycle(agentId);
    expect(asleep).toMatchObject({ state: 'asleep', why: 'nothing to do', until: null });
    await sleep(1000);
    expect((await lifecycle(agentId)).state).toBe('asleep');
    const woke = await api.post(`/v1/sessions/${session}/messages`, { content: 'wake up', wait: 30 });
    expect(woke.status).toBe(200);
    expect((await lifecycle(agentId)).state).toBe('awake_idle');

    // Timed sleep: a runtime tick wakes it when the time is up.
    await api.post(`/v1/sessions/${session}/messages`, { content: 'take a nap', wait: 30 });
    await idle(agentId);
    const napping = await lifecycle(agentId);
    expect(napping.state).toBe('asleep');
    const nap = await env.db.turn.findFirstOrThrow({ where: { agentId }, orderBy: { createdAt: 'desc' } });
    expect((await api.get(`/v1/turns/${nap.id}`)).body.closure).toMatchObject({
      outcome: 'waiting',
      waitingReason: 'awaiting_timer',
      runtimePosture: 'asleep',
    });
    expect(Date.parse(napping.until)).toBeGreaterThan(Date.now() - 1000);
    const tick = await waitFor(
      () => env.db.message.findFirst({ where: { agentId, kind: 'system_tick' } }).then((m) => m ?? undefined),
      { what: 'the sleep timer tick', timeoutMs: 20_000 },
    );
    expect(tick).toMatchObject({
      authorityClass: 'runtime_instruction',
      metadata: { workTick: { reason: 'sleep_timer' } },
    });
    expect(tick.createdAt.getTime()).toBeGreaterThanOrEqual(Date.parse(napping.until) - 50);
    await idle(agentId);
    expect((await lifecycle(agentId)).state).toBe('awake_idle');
    // One wake per timer.
    await sleep(1000);
    expect(await env.db.message.count({ where: { agentId, kind: 'system_tick' } })).toBe(1);
  });
});
