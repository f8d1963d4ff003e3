import { mkdtempSync, existsSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { randomUUID } from 'node:crypto';
import { Client } from '@langchain/langgraph-sdk';
import {
  createTestEnv,
  FakeLlmServer,
  freePort,
  scripted,
  spawnApp,
  waitFor,
  type AppProcess,
  type RecordedRequest,
  type ScriptedReply,
  type TestEnv,
} from '@switchboard/testing';
import { Api, newTenant } from '../support/api';
import { CONTROL_TOOLS_MODULE } from '../support/control-tools';
import { startGateway, type Running } from '../support/stack';

jest.setTimeout(120_000);

const ADMIN = 'test-admin-token-0123456789';
const MODEL = 'openai-chat/gpt-4o-mini';
const UUID = /[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}/;

interface ChatMsg {
  role: string;
  content?: unknown;
}
const text = (c: unknown): string =>
  typeof c === 'string' ? c : Array.isArray(c) ? c.map((p: { text?: string }) => p.text ?? '').join('') : '';

/** A model request as the scripts read it: whose agent (its system prompt names it), the last user text, the tool results. */
interface Asked {
  agent: string;
  user: string;
  results: string[];
}
function ask(req: RecordedRequest): Asked {
  const messages = (req.body as { messages?: ChatMsg[] }).messages ?? [];
  const system = text(messages.find((m) => m.role === 'system' || m.role === 'developer')?.content);
  const user = text(messages.filter((m) => m.role === 'user').at(-1)?.content);
  return {
    agent: /You are the agent "([^"]+)"/.exec(system)?.[1] ?? '?',
    user: user.slice(user.lastIndexOf('\n\n') >= 0 ? user.lastIndexOf('\n\n') + 2 : 0),
    results: messages.flatMap((m) => (m.role === 'tool' ? [text(m.content)] : [])),
  };
}

/**
 * The default model: `stall…` streams a little and then holds the stream open (a turn that keeps
 * running until it is stopped); `hold1 <dir>` asks for one `hold` call (the tool waits for a file);
 * anything else is echoed.
 */
function byText(a: Asked): ScriptedReply {
  if (a.user.startsWith('stall')) return { kind: 'message', text: 'working on it', stallAfterFrames: 2 };
  const m = /^hold1 (\S+)/.exec(a.user);
  if (m && a.results.length === 0) return scripted.toolCall('hold', { path: `${m[1]}/call1` });
  return scripted.text(`echo: ${a.user}`);
}

/**
 * Typed cancel reasons (docs/adr/0055), one case per reason, through real processes: the gateway in
 * this process, a harness worker spawned with its metrics port, the fake LLM server, the stock
 * LangGraph SDK. Each case reads the reason where a client reads it: GET /v1/turns/{id}
 * (`cancelReason`, `cancelNote`), the journal's `turn_cancelled` (`data.reason`), and LangGraph's
 * `Run.cancel_reason`; the worker's and the gateway's /metrics count cancels by reason.
 */
describe('typed cancel reasons', () => {
  let env: TestEnv;
  let llm: FakeLlmServer;
  let gateway: Running & { url: string };
  let harness: AppProcess;
  let metricsPort: number;
  let api: Api;
  let tenantId: string;
  let agentId: string;
  let langgraph: Client;
  const admin = () => new Api(gateway.url, ADMIN);
  const dir = mkdtempSync(path.join(tmpdir(), 'sb-cancel-reasons-'));
  /** Scripts of the sub-agent cases, by agent name. */
  const scripts = new Map<string, (a: Asked) => ScriptedReply>();

  beforeAll(async () => {
    env = await createTestEnv();
    llm = await FakeLlmServer.start();
    llm.setDefault((req) => {
      const a = ask(req);
      return scripts.get(a.agent)?.(a) ?? byText(a);
    });
    const extra = { ...llm.providerEnv, EXTRA_TOOL_MODULES: CONTROL_TOOLS_MODULE };
    gateway = await startGateway(env.config(extra));
    metricsPort = await freePort();
    harness = await spawnApp(
      'harness-worker',
      env.processEnv({ ...extra, METRICS_PORT: String(metricsPort), HOST: '127.0.0.1' }),
    );
    ({ api, tenantId } = await newTenant(gateway.url, ADMIN));
    const agent = await api.post('/v1/agents', { name: 'steady', model: MODEL, tools: ['hold'] });
    expect(agent.status).toBe(201);
    agentId = agent.body.id;
    langgraph = new Client({
      apiUrl: `${gateway.url}/langgraph`,
      apiKey: api.key!,
      callerOptions: { maxRetries: 0 },
    });
  });

  afterAll(async () => {
    await harness?.kill('SIGKILL');
    await gateway?.close();
    await llm?.close();
    await env?.cleanup();
  });

  const session = async (client = api, agent = agentId) =>
    (await client.post('/v1/sessions', { agentId: agent })).body.id as string;
  const admit = async (sessionId: string, content: string, client = api) => {
    const r = await client.post(`/v1/sessions/${sessionId}/messages`, { content });
    expect(r.status).toBe(202);
    return r.body.turnId as string;
  };
  const turnOf = async (id: string, client = api) => (await client.get(`/v1/turns/${id}`)).body;
  const ended = (id: string, client = api) =>
    waitFor(
      async () => {
        const t = await turnOf(id, client);
        return ['completed', 'failed', 'cancelled'].includes(t.status) ? t : undefined;
      },
      { what: `turn ${id} ended`, timeoutMs: 60_000 },
    );
  const status = (id: string, wanted: string, client = api) =>
    waitFor(async () => ((await turnOf(id, client)).status === wanted ? true : undefined), {
      what: `turn ${id} ${wanted}`,
    });
  /** A turn whose model stream has begun and stalled: it runs until something stops it. */
  const stalled = async (sessionId: string, client = api) => {
    const before = llm.requests.length;
    const id = await admit(sessionId, `stall ${randomUUID()}`, client);
    await llm.waitForRequests(before + 1);
    await status(id, 'running', client);
    return id;
  };
  /** The journal's end event of the turn. */
  const endEvent = async (sessionId: string, turnId: string, client = api) => {
    const events = (await client.get(`/v1/sessions/${sessionId}/events`)).body.data as {
      type: string;
      turnId: string;
      data: Record<string, unknown>;
    }[];
    return events.find((e) => e.turnId === turnId && e.type === 'turn_cancelled');
  };
  const cancelledCount = (metrics: string, reason: string) =>
    Number(
      new RegExp(`^switchboard_turns_cancelled_total\\{[^}]*reason="${reason}"[^}]*\\} (\\d+)`, 'm').exec(
        metrics,
      )?.[1] ?? 0,
    );
  const workerMetrics = async () => (await fetch(`http://127.0.0.1:${metricsPort}/metrics`)).text();
  const gatewayMetrics = async () => (await fetch(`${gateway.url}/metrics`)).text();

  it('api_cancel: POST /v1/turns/{id}/cancel; the client’s reason is the note; a queued turn is counted by the gateway', async () => {
    const s = await session();
    const running = await stalled(s);
    const queued = await admit(s, 'behind it');
    // A queued turn ends in the gateway at once.
    const q = await api.post(`/v1/turns/${queued}/cancel`);
    expect(q.status).toBe(200);
    expect(q.body).toMatchObject({ status: 'cancelled', cancelReason: 'api_cancel', cancelNote: null });
    expect(cancelledCount(await gatewayMetrics(), 'api_cancel')).toBeGreaterThanOrEqual(1);

    const r = await api.post(`/v1/turns/${running}/cancel`, { reason: 'changed my mind' });
    expect(r.status).toBe(202);
    // Requested: the reason is on the turn before its worker stops it.
    expect(r.body).toMatchObject({
      status: 'running',
      cancelReason: 'api_cancel',
      cancelNote: 'changed my mind',
    });
    expect(await ended(running)).toMatchObject({
      status: 'cancelled',
      stopReason: 'cancelled',
      cancelReason: 'api_cancel',
      cancelNote: 'changed my mind',
    });
    expect((await endEvent(s, running))?.data).toMatchObject({
      stopReason: 'cancelled',
      reason: 'api_cancel',
      note: 'changed my mind',
    });
    // The worker that stopped it counts it by reason.
    await waitFor(async () => (cancelledCount(await workerMetrics(), 'api_cancel') >= 1 ? true : undefined), {
      what: 'the worker’s api_cancel count',
    });
  });

  it('superseded: LangGraph multitask_strategy interrupt; the SDK’s Run.cancel_reason says so', async () => {
    const { thread_id: threadId } = await langgraph.threads.create({ graphId: 'steady' });
    const before = llm.requests.length;
    const first = await langgraph.runs.create(threadId, 'steady', {
      input: { messages: [{ type: 'human', content: 'stall for LangGraph' }] },
    });
    await llm.waitForRequests(before + 1);
    await status(first.run_id, 'running');
    const second = await langgraph.runs.create(threadId, 'steady', {
      input: { messages: [{ type: 'human', content: 'instead, this' }] },
      multitaskStrategy: 'interrupt',
    });
    expect(await ended(first.run_id)).toMatchObject({
      status: 'cancelled',
      cancelReason: 'superseded',
      cancelNote: `interrupted by turn ${second.run_id}`,
    });
    expect(await langgraph.runs.get(threadId, first.run_id)).toMatchObject({
      status: 'interrupted',
      cancel_reason: 'superseded',
    });
    expect(await ended(second.run_id)).toMatchObject({ status: 'completed', cancelReason: null });
    expect((await langgraph.runs.get(threadId, second.run_id)).cancel_reason).toBeNull();
    expect((await endEvent(threadId, first.run_id))?.data).toMatchObject({ reason: 'superseded' });
    // Cancelled through the LangGraph API itself: api_cancel.
    const third = await langgraph.runs.create(threadId, 'steady', {
      input: { messages: [{ type: 'human', content: 'stall once more' }] },
    });
    await status(third.run_id, 'running');
    await langgraph.runs.cancel(threadId, third.run_id, true);
    expect(await langgraph.runs.get(threadId, third.run_id)).toMatchObject({
      status: 'interrupted',
      cancel_reason: 'api_cancel',
    });
  });

  it('client_disconnected: a LangGraph stream with on_disconnect cancel that the client leaves', async () => {
    const { thread_id: threadId } = await langgraph.threads.create({ graphId: 'steady' });
    const leave = new AbortController();
    let runId: string | undefined;
    const before = llm.requests.length;
    const reading = (async () => {
      for await (const part of langgraph.runs.stream(threadId, 'steady', {
        input: { messages: [{ type: 'human', content: 'stall and wait for me' }] },
        onDisconnect: 'cancel',
        signal: leave.signal,
      })) {
        if (part.event === 'metadata') runId = (part.data as { run_id: string }).run_id;
      }
    })().catch(() => undefined);
    await llm.waitForRequests(before + 1);
    const id = await waitFor(() => runId, { what: 'the metadata event' });
    leave.abort();
    await reading;
    expect(await ended(id)).toMatchObject({ status: 'cancelled', cancelReason: 'client_disconnected' });
    expect((await langgraph.runs.get(threadId, id)).cancel_reason).toBe('client_disconnected');
    expect((await endEvent(threadId, id))?.data).toMatchObject({ reason: 'client_disconnected' });
  });

  it('tenant_paused: the operator pauses the tenant; its running turn is cancelled at the next safe point', async () => {
    const other = await newTenant(gateway.url, ADMIN, 'paused-tenant');
    const agent = await other.api.post('/v1/agents', { name: 'pausable', model: MODEL, tools: ['hold'] });
    expect(agent.status).toBe(201);
    const s = await session(other.api, agent.body.id);
    const d = mkdtempSync(path.join(dir, 'pause-'));
    const running = await admit(s, `hold1 ${d}`, other.api);
    await waitFor(() => (existsSync(`${d}/call1.started`) ? true : undefined), { what: 'the tool started' });
    const paused = await admin().post(`/v1/admin/tenants/${other.tenantId}/pause`, { reason: 'incident 7' });
    expect(paused.status).toBe(200);
    // The tool's round ends; the kill switch stops the turn before its next model call.
    writeFileSync(`${d}/call1.release`, '');
    expect(await ended(running, other.api)).toMatchObject({
      status: 'cancelled',
      stopReason: 'cancelled',
      cancelReason: 'tenant_paused',
      cancelRequestedAt: null,
      iterations: 1,
    });
    expect((await endEvent(s, running, other.api))?.data).toMatchObject({ reason: 'tenant_paused' });
    await waitFor(
      async () => (cancelledCount(await workerMetrics(), 'tenant_paused') >= 1 ? true : undefined),
      {
        what: 'the worker’s tenant_paused count',
      },
    );
    expect((await admin().post(`/v1/admin/tenants/${other.tenantId}/resume`)).status).toBe(200);
  });

  it('agent_stopped: POST /v1/agents/{id}/stop cancels its running turn; its queued turn is held', async () => {
    const agent = await api.post('/v1/agents', {
      name: `stoppable-${randomUUID().slice(0, 6)}`,
      model: MODEL,
    });
    expect(agent.status).toBe(201);
    const s = await session(api, agent.body.id);
    const running = await stalled(s);
    const queued = await admit(s, 'after the stop');
    const stop = await api.post(`/v1/agents/${agent.body.id}/stop`, { reason: 'incident 9' });
    expect(stop.status).toBe(200);
    expect(stop.body).toMatchObject({ state: 'stopped' });
    expect(await ended(running)).toMatchObject({
      status: 'cancelled',
      cancelReason: 'agent_stopped',
      cancelNote: 'incident 9',
    });
    expect((await endEvent(s, running))?.data).toMatchObject({ reason: 'agent_stopped', note: 'incident 9' });
    expect((await turnOf(queued)).status).toBe('queued');
    await waitFor(
      async () => (cancelledCount(await workerMetrics(), 'agent_stopped') >= 1 ? true : undefined),
      {
        what: 'the worker’s agent_stopped count',
      },
    );
  });

  it('operator: POST /v1/admin/tenants/{id}/turns/{turnId}/cancel, audited', async () => {
    const s = await session();
    const running = await stalled(s);
    // The tenant's key is not the operator's; another tenant's turn is not found.
    expect((await api.post(`/v1/admin/tenants/${tenantId}/turns/${running}/cancel`)).status).toBe(401);
    const stranger = await newTenant(gateway.url, ADMIN, 'stranger');
    expect(
      (await admin().post(`/v1/admin/tenants/${stranger.tenantId}/turns/${running}/cancel`)).status,
    ).toBe(404);
    expect(
      (await admin().post(`/v1/admin/tenants/${tenantId}/turns/${running}/cancel`, { reason: '' })).status,
    ).toBe(400);
    expect((await turnOf(running)).cancelRequestedAt).toBeNull();

    const r = await admin().post(`/v1/admin/tenants/${tenantId}/turns/${running}/cancel`, {
      reason: 'runaway loop',
    });
    expect(r.status).toBe(202);
    expect(r.body).toMatchObject({ id: running, cancelReason: 'operator', cancelNote: 'runaway loop' });
    expect(await ended(running)).toMatchObject({ status: 'cancelled', cancelReason: 'operator' });
    expect((await endEvent(s, running))?.data).toMatchObject({ reason: 'operator', note: 'runaway loop' });
    const audit = await admin().get(`/v1/admin/audit-events?tenantId=${tenantId}&action=turn.cancelled`);
    expect(audit.body.data).toEqual([
      expect.objectContaining({
        actor: 'operator',
        action: 'turn.cancelled',
        targetType: 'turn',
        targetId: running,
        details: { reason: 'operator', note: 'runaway loop', status: 'running' },
      }),
    ]);
    // Again, on the ended turn: answered as it is, no second entry.
    expect((await admin().post(`/v1/admin/tenants/${tenantId}/turns/${running}/cancel`)).status).toBe(200);
    expect(
      (await admin().get(`/v1/admin/audit-events?tenantId=${tenantId}&action=turn.cancelled`)).body.data,
    ).toHaveLength(1);
  });

  /**
   * A parent that spawns an asynchronous child (which hangs in its model call), then stops at its
   * own deadline or budget: the parent ends `completed` with that stop reason, and the child is
   * cancelled with the matching cancel reason.
   */
  async function parentWithRunningChild(kind: 'deadline' | 'budget') {
    const boss = `${kind}-boss-${randomUUID().slice(0, 6)}`;
    const helper = `${kind}-helper-${randomUUID().slice(0, 6)}`;
    scripts.set(boss, (a) => {
      if (a.results.length === 0) {
        return {
          kind: 'message',
          toolCalls: [
            { name: 'spawn_subagent', arguments: JSON.stringify({ agent: helper, task: 'long job' }) },
          ],
          usage: { input: 10, output: 10 },
        };
      }
      // deadline: the parent's next call hangs until its deadline cuts it off; budget: it costs
      // more than the whole budget and asks for one more tool, so the stop hook runs.
      return kind === 'deadline'
        ? scripted.hang()
        : {
            kind: 'message',
            toolCalls: [{ name: 'current_time', arguments: '{}' }],
            usage: { input: 2_000_000, output: 10 },
          };
    });
    scripts.set(helper, () => scripted.hang());
    expect((await api.post('/v1/agents', { name: helper, tier: 'worker', model: MODEL })).status).toBe(201);
    const parentAgent = await api.post('/v1/agents', {
      name: boss,
      tier: 'chat',
      model: MODEL,
      tools: ['spawn_subagent', 'current_time'],
      allowedSubagents: [helper],
      budgets: kind === 'deadline' ? { deadlineMs: 4000 } : { maxUsd: 0.01 },
    });
    expect(parentAgent.status).toBe(201);
    const s = await session(api, parentAgent.body.id);
    const parentId = await admit(s, 'start a long job');
    const parent = await ended(parentId);
    expect(parent).toMatchObject({
      status: 'completed',
      stopReason: kind === 'deadline' ? 'deadline' : 'max_usd',
      // The parent's own limit is a stop reason, not a cancel.
      cancelReason: null,
    });
    const task = (await turnOf(parentId)).children?.[0];
    expect(task?.childTurnId).toMatch(UUID);
    return { parentId, childTurnId: task.childTurnId as string };
  }

  it('deadline: a parent that ends at its deadline cancels its still-running child', async () => {
    const { parentId, childTurnId } = await parentWithRunningChild('deadline');
    expect(await ended(childTurnId)).toMatchObject({
      status: 'cancelled',
      cancelReason: 'deadline',
      cancelNote: `parent turn ${parentId} stopped at its deadline`,
    });
  });

  it('budget: a parent that ends at its maxUsd cancels its still-running child', async () => {
    const { parentId, childTurnId } = await parentWithRunningChild('budget');
    expect(await ended(childTurnId)).toMatchObject({
      status: 'cancelled',
      cancelReason: 'budget',
      cancelNote: `parent turn ${parentId} stopped at its budget (max_usd)`,
    });
    // The label's values stay the enum's.
    const metrics = await workerMetrics();
    const reasons = [...metrics.matchAll(/^switchboard_turns_cancelled_total\{[^}]*reason="([^"]+)"/gm)].map(
      (m) => m[1],
    );
    expect(reasons.length).toBeGreaterThan(0);
    for (const r of reasons) {
      expect([
        'api_cancel',
        'client_disconnected',
        'superseded',
        'tenant_paused',
        'agent_stopped',
        'deadline',
        'budget',
        'operator',
      ]).toContain(r);
    }
  });
});
