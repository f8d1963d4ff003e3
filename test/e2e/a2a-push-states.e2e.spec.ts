import { randomBytes, randomUUID } from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Task as TaskV03 } from 'a2a-js-sdk-v03';
import {
  ClientFactory as ClientFactoryV03,
  DefaultAgentCardResolver as DefaultAgentCardResolverV03,
  JsonRpcTransportFactory as JsonRpcTransportFactoryV03,
} from 'a2a-js-sdk-v03/client';
import { Webhook } from 'standardwebhooks';
import {
  createTestEnv,
  FakeLlmServer,
  spawnApp,
  spawnGateway,
  type AppProcess,
  type RecordedRequest,
  type TestEnv,
} from '@switchboard/testing';
import { newTenant, type Api } from '../support/api';

/**
 * A2A push notifications of a task's intermediate states (docs/adr/0037, issue 32) through real
 * processes (gateway, harness, hooks and outbound workers) with the stock v0.3 client and a local
 * HTTP receiver: a task that waits for an approval is pushed WORKING, INPUT_REQUIRED, WORKING again
 * once approved, then COMPLETED — each transition once, signed; a task whose config was deleted
 * while it waited is pushed nothing more.
 */
jest.setTimeout(120_000);

const ADMIN = 'test-admin-token-0123456789';

interface Delivery {
  path: string;
  headers: Record<string, string>;
  body: string;
}

/** The last message the model was sent: a tool result is reported, `count…` calls word_count. */
function reply(r: RecordedRequest) {
  const messages = (r.body as { messages: { role: string; content: unknown }[] }).messages;
  const last = messages.at(-1)!;
  if (last.role === 'tool') return { kind: 'message' as const, text: 'counted' };
  const text = typeof last.content === 'string' ? last.content : JSON.stringify(last.content);
  if (text.includes('count')) {
    return {
      kind: 'message' as const,
      toolCalls: [{ name: 'word_count', arguments: '{"text":"one two three"}' }],
    };
  }
  return { kind: 'message' as const, text: `echo: ${text}` };
}

describe('A2A push notifications of intermediate task states', () => {
  let env: TestEnv;
  let llm: FakeLlmServer;
  const processes: AppProcess[] = [];
  let url: string;
  let api: Api;
  let agentId: string;
  let receiver: http.Server;
  let base: string;
  const secret = `whsec_${randomBytes(32).toString('base64')}`;
  const deliveries: Delivery[] = [];
  const waiters: { when: () => boolean; resolve: () => void }[] = [];
  const delivered = (count: number, match: (d: Delivery) => boolean): Promise<Delivery[]> =>
    new Promise((resolve) => {
      const mine = () => deliveries.filter(match);
      const when = () => mine().length >= count;
      if (when()) return resolve(mine());
      waiters.push({ when, resolve: () => resolve(mine()) });
    });

  const withKey =
    (key: string): typeof fetch =>
    (input, init) => {
      const headers = new Headers(init?.headers);
      headers.set('authorization', `Bearer ${key}`);
      return fetch(input, { ...init, headers });
    };
  const a2a = () =>
    new ClientFactoryV03({
      transports: [new JsonRpcTransportFactoryV03({ fetchImpl: withKey(api.key!) })],
      cardResolver: new DefaultAgentCardResolverV03({ fetchImpl: withKey(api.key!) }),
    }).createFromUrl(`${url}/a2a/${agentId}/`);

  /** The task state a (signed, verified) delivery carries. */
  const stateOf = (d: Delivery): string =>
    (new Webhook(secret).verify(d.body, d.headers) as TaskV03).status.state;

  const pendingApproval = async (turnId: string): Promise<string> => {
    const page = await api.get('/v1/approvals?status=pending');
    const found = (page.body.data as { id: string; turnId: string }[]).find((a) => a.turnId === turnId);
    if (!found) throw new Error(`no pending approval for ${turnId}`);
    return found.id;
  };

  beforeAll(async () => {
    env = await createTestEnv();
    receiver = http.createServer((req, res) => {
      let body = '';
      req.on('data', (c: Buffer) => (body += c.toString()));
      req.on('end', () => {
        deliveries.push({ headers: req.headers as Record<string, string>, body, path: req.url ?? '' });
        res.writeHead(200).end();
        for (const w of waiters.splice(0)) (w.when() ? w.resolve : () => waiters.push(w))();
      });
    });
    await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve));
    base = `http://localhost:${(receiver.address() as AddressInfo).port}`;
    llm = await FakeLlmServer.start();
    llm.setDefault(reply);
    const processEnv = env.processEnv({
      ...llm.providerEnv,
      OUTBOUND_WEBHOOK_ALLOW_HOSTS: 'localhost',
      OUTBOUND_WEBHOOK_BACKOFF_MS: '100',
    });
    const [gateway, ...workers] = await Promise.all([
      spawnGateway(processEnv),
      spawnApp('harness-worker', processEnv),
      spawnApp('hooks-worker', processEnv),
      spawnApp('triage-worker', processEnv),
    ]);
    processes.push(gateway, ...workers);
    url = gateway.url;
    ({ api } = await newTenant(url, ADMIN));
    expect(
      (await api.patch('/v1/settings', { notifyUrl: `${base}/completions`, notifySecret: secret })).status,
    ).toBe(200);
    const agent = await api.post('/v1/agents', {
      name: 'counter',
      model: 'openai-chat/gpt-4o-mini',
      tools: ['word_count'],
      approvalRequired: ['word_count'],
    });
    expect(agent.status).toBe(201);
    agentId = agent.body.id;
  });

  afterAll(async () => {
    await Promise.all(processes.map((p) => p.kill('SIGTERM')));
    await llm?.close();
    await new Promise((resolve) => receiver?.close(resolve));
    await env?.cleanup();
  });

  /** Sends `text` as a new task with a push config to `path`; the task as first answered. */
  const sendWithPush = async (text: string, path: string) =>
    (await (
      await a2a()
    ).sendMessage({
      message: { kind: 'message', messageId: randomUUID(), role: 'user', parts: [{ kind: 'text', text }] },
      configuration: { blocking: false, pushNotificationConfig: { url: `${base}${path}`, token: 'tok' } },
    })) as TaskV03;

  it('working, input-required (an approval wait), working again, completed: each transition pushed once', async () => {
    const task = await sendWithPush('count these words', '/steps');
    const mine = (d: Delivery) => d.path === '/steps' && d.body.includes(task.id);
    const [first, second] = await delivered(2, mine);
    expect([first, second].map(stateOf)).toEqual(['working', 'input-required']);
    expect(second.headers['x-a2a-notification-token']).toBe('tok');

    const approval = await pendingApproval(task.id);
    expect((await api.post(`/v1/approvals/${approval}`, { decision: 'approve' })).status).toBe(200);
    const all = await delivered(4, mine);
    // The resumed run's WORKING and the end may arrive in either order (separate deliveries).
    expect(all.slice(2).map(stateOf).sort()).toEqual(['completed', 'working']);
    // One notification per transition: four distinct webhook ids, none sent twice.
    expect(new Set(all.map((d) => d.headers['webhook-id'])).size).toBe(4);
    // Nothing more once it ended: the turn's completion webhook was the hooks' last word, and the
    // outbound log holds one delivered attempt per webhook id of this task.
    await delivered(1, (d) => d.path === '/completions' && d.body.includes(task.id));
    const attempts = await env.db.outboundWebhookAttempt.findMany({
      where: { webhookId: { in: all.map((d) => d.headers['webhook-id']) } },
    });
    expect(attempts.map((a) => a.status)).toEqual([200, 200, 200, 200]);
    expect(deliveries.filter(mine)).toHaveLength(4);
  });

  it('a config deleted while the task waits: no push for the rest of the task', async () => {
    const task = await sendWithPush('count again', '/gone');
    const mine = (d: Delivery) => d.path === '/gone' && d.body.includes(task.id);
    await delivered(2, mine);
    const client = await a2a();
    const [config] = await client.listTaskPushNotificationConfig({ id: task.id });
    await client.deleteTaskPushNotificationConfig({
      id: task.id,
      pushNotificationConfigId: config.pushNotificationConfig.id!,
    });
    const approval = await pendingApproval(task.id);
    expect((await api.post(`/v1/approvals/${approval}`, { decision: 'approve' })).status).toBe(200);
    await delivered(1, (d) => d.path === '/completions' && d.body.includes(task.id));
    // The end's hook found no config (it records the pushes it published: none), and the resumed
    // run's WORKING was not published either: nothing but the two pushes before the delete.
    const run = await env.db.hookRun.findFirst({ where: { turnId: task.id, hook: 'completion-webhook' } });
    expect((run?.output as { a2aPushes?: string[] }).a2aPushes).toBeUndefined();
    expect(
      await env.db.outboundWebhookAttempt.count({
        where: { url: { contains: '/gone' } },
      }),
    ).toBe(2);
    expect(deliveries.filter(mine)).toHaveLength(2);
  });
});
