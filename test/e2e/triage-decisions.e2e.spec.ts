import { randomBytes } from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { Queue } from 'bullmq';
import type IORedis from 'ioredis';
import { Webhook } from 'standardwebhooks';
import { Jobs, newId, QueueName } from '@switchboard/contracts';
import { createRedis, publish } from '@switchboard/queue';
import {
  createTestEnv,
  FakeLlmServer,
  scripted,
  spawnApp,
  waitFor,
  type AppProcess,
  type TestEnv,
} from '@switchboard/testing';
import { newTenant, type Api } from '../support/api';
import { startGateway, type Running } from '../support/stack';

/**
 * Triage decisions through a real triage-worker process (docs/adr/0018): the tenant's burst model
 * answers garbage, the fallback model decides `notify`, and the worker's outbound-webhooks queue
 * delivers a Standard Webhooks-signed notification to a local receiver, retrying a 503.
 */
jest.setTimeout(120_000);

describe('triage decisions and signed notifications', () => {
  let env: TestEnv;
  let llm: FakeLlmServer;
  let gateway: Running & { url: string };
  let worker: AppProcess;
  let api: Api;
  let tenantId: string;
  let connection: IORedis;
  let triage: Queue;
  let receiver: http.Server;
  const received: { headers: Record<string, string>; body: string; status: number }[] = [];
  const answers: number[] = [];
  const secret = `whsec_${randomBytes(32).toString('base64')}`;

  beforeAll(async () => {
    env = await createTestEnv();
    llm = await FakeLlmServer.start();
    receiver = http.createServer((req, res) => {
      let body = '';
      req.on('data', (c: Buffer) => (body += c.toString()));
      req.on('end', () => {
        const status = answers.shift() ?? 204;
        received.push({ headers: req.headers as Record<string, string>, body, status });
        res.writeHead(status).end();
      });
    });
    await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve));
    const overrides = {
      ...llm.providerEnv,
      DEFAULT_MODEL: 'openai-chat/small',
      TRIAGE_FALLBACK_MODEL: 'openai-chat/big',
      // The receiver is on this machine: allow its name, and only its name, to be private.
      OUTBOUND_WEBHOOK_ALLOW_HOSTS: 'localhost',
    };
    gateway = await startGateway(env.config(overrides));
    worker = await spawnApp('triage-worker', env.processEnv(overrides));
    ({ api, tenantId } = await newTenant(gateway.url, 'test-admin-token-0123456789', 'notified'));
    connection = createRedis(env.redisUrl);
    triage = new Queue(QueueName.Triage, { connection, prefix: env.queuePrefix });
  });

  afterAll(async () => {
    await worker?.kill('SIGTERM');
    await triage?.close();
    await connection?.quit();
    await gateway?.close();
    await new Promise((resolve) => receiver?.close(resolve));
    await llm?.close();
    await env?.cleanup();
  });

  it('garbage from the burst model falls back; notify is signed, retried after a 503, and logged', async () => {
    const port = (receiver.address() as AddressInfo).port;
    const settings = await api.patch('/v1/settings', {
      notifyUrl: `http://localhost:${port}/switchboard`,
      notifySecret: secret,
    });
    expect(settings.status).toBe(200);
    const agent = await api.post('/v1/agents', { name: 'ops', instructions: 'Watch deployments.' });
    expect(agent.status).toBe(201);

    const triggerId = newId();
    await env.db.trigger.create({
      data: {
        id: triggerId,
        tenantId,
        agentId: agent.body.id,
        name: 'deploys',
        tokenHash: randomBytes(16).toString('hex'),
        rules: [{ match: { eventType: 'ping' }, action: 'drop' }],
      },
    });
    const deliveryId = newId();
    await env.db.triggerDelivery.create({
      data: {
        id: deliveryId,
        tenantId,
        triggerId,
        deliveryId: 'dep-1',
        payload: { source: 'ci', eventType: 'deployment_status', body: { state: 'failure', env: 'prod' } },
      },
    });
    const before = llm.requests.length;
    llm.enqueue(
      scripted.text('The deployment seems to have failed, someone should look.'),
      scripted.text('{"action":"notify","reason":"a production deployment failed"}', { costUsd: 0.0003 }),
    );
    answers.push(503);

    await publish(triage, Jobs.triage, { deliveryId, tenantId });

    // The first attempt is answered 503; the queue retries after its backoff (5 s).
    await waitFor(() => (received.length >= 2 ? true : undefined), {
      what: 'the notification to be retried',
      timeoutMs: 30_000,
    });
    expect(llm.requests.slice(before).map((r) => (r.body as { model: string }).model)).toEqual([
      'small',
      'big',
    ]);
    expect(received.map((r) => r.status)).toEqual([503, 204]);
    for (const r of received) {
      expect(new Webhook(secret).verify(r.body, r.headers)).toMatchObject({
        type: 'trigger.notify',
        data: {
          triggerId,
          deliveryId: 'dep-1',
          eventType: 'deployment_status',
          reason: 'a production deployment failed',
        },
      });
    }
    expect(received[0].headers['webhook-id']).toBe(received[1].headers['webhook-id']);

    const delivery = await env.db.triggerDelivery.findUniqueOrThrow({ where: { id: deliveryId } });
    expect(delivery).toMatchObject({
      decision: 'notify',
      decisionSource: 'model',
      decisionModel: 'openai-chat/big',
      messageId: null,
    });
    expect(Number(delivery.decisionCostUsd)).toBeCloseTo(0.0003, 8);
    const attempts = await waitFor(
      async () => {
        const rows = await env.db.outboundWebhookAttempt.findMany({
          where: { tenantId },
          orderBy: { attempt: 'asc' },
        });
        return rows.length === 2 ? rows : undefined;
      },
      { what: 'both attempts to be logged' },
    );
    expect(attempts.map((a) => [a.attempt, a.status])).toEqual([
      [1, 503],
      [2, 204],
    ]);
    // Nothing entered a transcript: notify is not a turn.
    expect(await env.db.message.count({ where: { tenantId } })).toBe(0);
  });

  it('wake_hint deliveries through the ingress: one system tick while idle, then coalesced, never a webhook message', async () => {
    const agent = await api.post('/v1/agents', {
      name: 'sleeper',
      instructions: 'Check the tracker when woken.',
    });
    expect(agent.status).toBe(201);
    const created = await api.post('/v1/triggers', {
      agentId: agent.body.id,
      name: 'tracker',
      scheme: 'token',
      deliveryMode: 'wake_hint',
    });
    expect(created.status).toBe(201);
    const triggerId: string = created.body.id;
    const hook = (n: number, type: string) =>
      fetch(`${gateway.url}${created.body.path}`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'idempotency-key': `wake-${n}` },
        body: JSON.stringify({ type, ticket: n }),
      });
    const before = llm.requests.length;

    expect((await hook(1, 'ticket.updated')).status).toBe(202);
    // No harness runs here: the tick's turn stays queued, so the session stays busy.
    const [tick] = await waitFor(
      async () => {
        const rows = await env.db.message.findMany({ where: { sessionId: triggerId } });
        return rows.length > 0 ? rows : undefined;
      },
      { what: 'the first wake hint to become a system tick' },
    );
    expect(tick).toMatchObject({
      kind: 'system_tick',
      authorityClass: 'runtime_instruction',
      metadata: { wakeHints: { count: 1, eventTypes: ['ticket.updated'], triggerIds: [triggerId] } },
    });

    for (const [n, type] of [
      [2, 'ticket.updated'],
      [3, 'ticket.closed'],
      [3, 'ticket.closed'], // a replay of the same delivery id: deduplicated by the ingress
    ] as const) {
      expect((await hook(n, type)).status).toBe(202);
    }
    const pending = await waitFor(
      async () => {
        const row = await env.db.wakeHint.findUnique({ where: { sessionId: triggerId } });
        return row && row.count === 2 ? row : undefined;
      },
      { what: 'the busy session to coalesce two wake hints' },
    );
    // The triage worker takes deliveries concurrently, so the order they coalesce in is not fixed.
    expect([...pending.eventTypes].sort()).toEqual(['ticket.closed', 'ticket.updated']);
    expect(await env.db.message.count({ where: { sessionId: triggerId } })).toBe(1);
    expect(await env.db.message.count({ where: { tenantId, kind: 'webhook_event' } })).toBe(0);
    // A wake hint asks no model.
    expect(llm.requests.length).toBe(before);
  });
});
