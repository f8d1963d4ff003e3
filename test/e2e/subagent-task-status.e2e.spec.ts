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

/** The agent whose system prompt asks, and how many tool results its turn has so far. */
function asker(req: RecordedRequest): { agent: string; results: number } {
  const messages = (req.body as { messages?: { role: string; content?: unknown }[] }).messages ?? [];
  const system = messages.find((m) => m.role === 'system' || m.role === 'developer')?.content;
  const text = Array.isArray(system)
    ? system.map((p: { text?: string }) => p.text ?? '').join('')
    : typeof system === 'string'
      ? system
      : '';
  const agent = /You are the agent "([^"]+)"/.exec(text)?.[1] ?? '?';
  return { agent, results: messages.filter((m) => m.role === 'tool').length };
}

/**
 * A sub-agent task's status through real processes (docs/adr/0024): `GET /v1/tasks/:id` says
 * `running` from the moment the child turn is claimed, while its first model call is still in
 * flight (issue 18, defect 3: it said `pending` until the child's first checkpoint).
 */
describe('sub-agent task status', () => {
  let env: TestEnv;
  let llm: FakeLlmServer;
  let gateway: Running & { url: string };
  let api: Api;
  let worker: AppProcess | undefined;
  const boss = `boss-${randomUUID().slice(0, 6)}`;
  const helper = `helper-${randomUUID().slice(0, 6)}`;
  /** Set when the child's first model request arrives; the child's reply waits for `release`. */
  let childAsked = false;
  let release!: (reply: ScriptedReply) => void;
  const held = new Promise<ScriptedReply>((resolve) => (release = resolve));

  beforeAll(async () => {
    env = await createTestEnv();
    llm = await FakeLlmServer.start();
    llm.setDefault((req) => {
      const a = asker(req);
      if (a.agent === helper) {
        childAsked = true;
        return held;
      }
      if (a.agent === boss && a.results === 0)
        return scripted.toolCall('spawn_subagent', { agent: helper, task: 'count the sheep' });
      return scripted.text('spawned');
    });
    gateway = await startGateway(env.config(llm.providerEnv));
    ({ api } = await newTenant(gateway.url, ADMIN));
  });

  afterAll(async () => {
    release?.(scripted.text('late'));
    await worker?.kill('SIGKILL');
    await gateway?.close();
    await llm?.close();
    await env?.cleanup();
  });

  it('is running while the child’s first model reply is held, then completed', async () => {
    const agent = async (name: string, tier: string, tools: string[]) => {
      const r = await api.post('/v1/agents', { name, tier, model: MODEL, tools });
      expect(r.status).toBe(201);
      return r.body.id as string;
    };
    await agent(helper, 'worker', []);
    const bossId = await agent(boss, 'chat', ['spawn_subagent']);
    worker = await spawnApp('harness-worker', env.processEnv(llm.providerEnv));
    const session = (await api.post('/v1/sessions', { agentId: bossId })).body.id as string;
    const sent = await api.post(`/v1/sessions/${session}/messages`, { content: 'how many sheep?' });
    expect(sent.status).toBe(202);

    // The child's first model call is in flight, its reply held: nothing of the child has committed.
    await waitFor(() => childAsked, { what: 'the child’s first model request', timeoutMs: 60_000 });
    const parent = await api.get(`/v1/turns/${sent.body.turnId}`);
    expect(parent.body.children).toHaveLength(1);
    const taskId = parent.body.children[0].id as string;
    const childTurnId = parent.body.children[0].childTurnId as string;
    expect(await env.db.event.count({ where: { turnId: childTurnId, type: 'turn_started' } })).toBe(0);
    const during = await api.get(`/v1/tasks/${taskId}`);
    expect(during.status).toBe(200);
    expect(during.body.status).toBe('running');

    release(scripted.text('there are 42 sheep'));
    const done = await waitFor(
      async () => {
        const r = await api.get(`/v1/tasks/${taskId}`);
        return r.body.status === 'running' ? undefined : r.body;
      },
      { what: `task ${taskId} ended`, timeoutMs: 60_000 },
    );
    expect(done).toMatchObject({ status: 'completed', output: 'there are 42 sheep' });
  });
});
