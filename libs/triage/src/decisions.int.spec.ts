import { randomBytes } from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Queue } from 'bullmq';
import { Webhook } from 'standardwebhooks';
import { Admission } from '@switchboard/admission';
import { newId, type OutboundWebhookJob } from '@switchboard/contracts';
import type { Prisma } from '@switchboard/database';
import { createLogger, type Logger } from '@switchboard/observability';
import { OpenAIChatProvider, ProviderRegistry } from '@switchboard/providers';
import {
  createTestEnv,
  crossRealmSafeFetch,
  FakeLlmServer,
  scripted,
  seedTenant,
  startAdmission,
  type AdmissionFixture,
  type TestEnv,
} from '@switchboard/testing';
import { DeliveryFailedError, RefusedAddressError, sendNotification } from './outbound';
import { triageDelivery, type TriageDeps } from './triage';

/**
 * The decision pipeline on real Postgres and BullMQ with the OpenAI SDK against FakeLlmServer:
 * the burst model, the fallback on a garbage answer, the safe default, the cache, and each action.
 */
jest.setTimeout(120_000);

const decision = (action: string, reason: string, costUsd?: number) =>
  scripted.text(JSON.stringify({ action, reason }), costUsd === undefined ? {} : { costUsd });

describe('triage decisions', () => {
  let f: AdmissionFixture;
  let env: TestEnv;
  let llm: FakeLlmServer;
  let queue: Queue;
  let logger: Logger;
  let deps: TriageDeps;
  let notified: Omit<OutboundWebhookJob, 'trace'>[];
  let tenantId: string;
  let agentId: string;

  beforeAll(async () => {
    f = await startAdmission();
    ({ env, turnsQueue: queue, logger } = f);
    llm = await FakeLlmServer.start();
    ({ tenantId, agentId } = await seedTenant(env.db, 'triage', {
      name: 'reactor',
      model: 'openai-chat/agent-model',
    }));
  });

  beforeEach(() => {
    notified = [];
    deps = {
      db: env.db,
      admission: new Admission(env.db, queue, logger),
      logger,
      providers: new ProviderRegistry({}, [
        new OpenAIChatProvider({ apiKey: 'k', baseURL: llm.openaiBaseUrl, fetch: crossRealmSafeFetch }),
      ]),
      defaultModel: 'openai-chat/small',
      fallbackModel: 'openai-chat/big',
      cacheTtlMs: 60_000,
      notify: (job) => {
        notified.push(job);
        return Promise.resolve();
      },
    };
  });

  afterAll(async () => {
    await llm?.close();
    await f?.close();
  });

  async function trigger(rules: Prisma.InputJsonValue = []) {
    const id = newId();
    await env.db.trigger.create({
      data: { id, tenantId, agentId, name: 'gh', tokenHash: randomBytes(16).toString('hex'), rules },
    });
    return id;
  }

  async function delivery(triggerId: string, body: Prisma.InputJsonValue, eventType = 'issues') {
    const id = newId();
    await env.db.triggerDelivery.create({
      data: {
        id,
        tenantId,
        triggerId,
        deliveryId: `gh-${id}`,
        payload: { source: 'github', eventType, body },
      },
    });
    return id;
  }

  const job = (deliveryId: string) => ({ deliveryId, tenantId, trace: {} });
  const modelsAsked = (from: number) =>
    llm.requests.slice(from).map((r) => (r.body as { model: string }).model);
  const row = (id: string) => env.db.triggerDelivery.findUniqueOrThrow({ where: { id } });

  it('falls back to the fallback model when the burst model answers garbage, and records both costs', async () => {
    const triggerId = await trigger();
    const id = await delivery(triggerId, { action: 'opened', issue: { title: 'prod is down' } });
    const before = llm.requests.length;
    llm.enqueue(
      scripted.text('Well, it depends on many things.', { costUsd: 0.0001 }),
      decision('notify', 'an outage report', 0.002),
    );

    const result = await triageDelivery(deps, job(id));

    expect(modelsAsked(before)).toEqual(['small', 'big']);
    expect(result!.decision).toEqual({
      action: 'notify',
      reason: 'an outage report',
      source: 'model',
      model: 'openai-chat/big',
      costUsd: expect.closeTo(0.0021, 8) as number,
    });
    expect(await row(id)).toMatchObject({
      decision: 'notify',
      reason: 'an outage report',
      decisionSource: 'model',
      decisionModel: 'openai-chat/big',
      fingerprint: expect.stringMatching(/^[0-9a-f]{64}$/) as string,
      decidedAt: expect.any(Date) as Date,
      messageId: null,
    });
    expect(Number((await row(id)).decisionCostUsd)).toBeCloseTo(0.0021, 8);
    // The model saw the event as evidence, never as instructions.
    const prompt = JSON.stringify(llm.requests[before].body);
    expect(prompt).toContain('prod is down');
    expect(prompt).toContain('<evidence kind=\\"trigger_event\\">');
    expect(notified).toEqual([
      expect.objectContaining({ tenantId, webhookId: `msg_${id}`, event: 'trigger.notify' }),
    ]);
    expect(notified[0].payload).toMatchObject({ triggerId, reason: 'an outage report', eventType: 'issues' });
    expect(await env.db.message.count({ where: { idempotencyKey: `delivery:${id}` } })).toBe(0);
  });

  it('takes the safe default spawn_orchestrator when both models fail, and admits the turn', async () => {
    const triggerId = await trigger();
    const id = await delivery(triggerId, { action: 'opened', n: 1 });
    const before = llm.requests.length;
    llm.enqueue(scripted.text('{"action":"panic"}'), scripted.error(500));

    const result = await triageDelivery(deps, job(id));

    // One attempt per model: triage is retried as a whole by its job, never per call.
    expect(modelsAsked(before)).toEqual(['small', 'big']);
    expect(result!.decision).toMatchObject({ action: 'spawn_orchestrator', source: 'default' });
    expect(result!.decision.reason).toContain('no model gave a valid decision');
    expect(result!.messageId).toEqual(expect.any(String));
    const message = await env.db.message.findUniqueOrThrow({ where: { id: result!.messageId! } });
    expect(message.metadata).toMatchObject({ triage: { action: 'spawn_orchestrator', source: 'default' } });
    expect(await row(id)).toMatchObject({ decisionSource: 'default', messageId: result!.messageId });
  });

  it("asks the tenant's burst route first and the agent's model when no fallback is configured", async () => {
    const tenant = newId();
    const agent = newId();
    await env.db.tenant.create({
      data: { id: tenant, name: 'routed', settings: { modelRoutes: { burst: 'openai-chat/tiny' } } },
    });
    await env.db.agent.create({
      data: { id: agent, tenantId: tenant, name: 'a', model: 'openai-chat/agent-model' },
    });
    const triggerId = newId();
    await env.db.trigger.create({
      data: {
        id: triggerId,
        tenantId: tenant,
        agentId: agent,
        name: 'x',
        tokenHash: randomBytes(16).toString('hex'),
      },
    });
    const id = newId();
    await env.db.triggerDelivery.create({
      data: { id, tenantId: tenant, triggerId, deliveryId: 'd1', payload: { source: 'x', body: { a: 1 } } },
    });
    const before = llm.requests.length;
    llm.enqueue(scripted.text(''), decision('drop', 'noise'));

    const result = await triageDelivery(
      { ...deps, fallbackModel: undefined },
      { deliveryId: id, tenantId: tenant, trace: {} },
    );

    expect(modelsAsked(before)).toEqual(['tiny', 'agent-model']);
    expect(result!.decision).toMatchObject({
      action: 'drop',
      source: 'model',
      model: 'openai-chat/agent-model',
    });
    expect(await env.db.message.count({ where: { sessionId: id } })).toBe(0);
  });

  it('reuses a model decision for an identical delivery within the TTL, not for a different one', async () => {
    const triggerId = await trigger();
    const body = { action: 'labeled', label: { name: 'wontfix' }, issue: { number: 3 } };
    const first = await delivery(triggerId, body);
    const before = llm.requests.length;
    llm.enqueue(decision('drop', 'label noise', 0.001));
    expect((await triageDelivery(deps, job(first)))!.decision.source).toBe('model');

    // The same event again (a new delivery id, keys in another order): no model call.
    const again = await delivery(triggerId, {
      issue: { number: 3 },
      label: { name: 'wontfix' },
      action: 'labeled',
    });
    const cached = await triageDelivery(deps, job(again));
    expect(cached!.decision).toEqual({
      action: 'drop',
      reason: 'label noise',
      source: 'cache',
      model: 'openai-chat/small',
      costUsd: 0,
    });
    expect(llm.requests.length).toBe(before + 1);
    expect(await row(again)).toMatchObject({
      decisionSource: 'cache',
      fingerprint: (await row(first)).fingerprint,
    });

    // A different body is asked about; so is the same body once the cache is off.
    const other = await delivery(triggerId, { ...body, issue: { number: 4 } });
    llm.enqueue(decision('spawn_reactor', 'needs a reply'), decision('drop', 'label noise'));
    expect((await triageDelivery(deps, job(other)))!.decision.source).toBe('model');
    const uncached = await delivery(triggerId, body);
    expect((await triageDelivery({ ...deps, cacheTtlMs: 0 }, job(uncached)))!.decision.source).toBe('model');
    expect(llm.requests.length).toBe(before + 3);
  });

  it('lets a rule decide without asking a model', async () => {
    const triggerId = await trigger([
      {
        match: { eventTypes: ['issues'], where: [{ path: 'issue.labels[0].name', equals: 'p0' }] },
        action: 'notify',
      },
    ]);
    const id = await delivery(triggerId, { issue: { labels: [{ name: 'p0' }] } });
    const before = llm.requests.length;
    const result = await triageDelivery(deps, job(id));
    expect(result!.decision).toEqual({
      action: 'notify',
      reason: 'rule 0 matched',
      source: 'rule',
      costUsd: 0,
    });
    expect(llm.requests.length).toBe(before);
    expect(notified).toHaveLength(1);
  });

  it('spawn_reactor admits a light turn: the message carries the iteration cap', async () => {
    const triggerId = await trigger();
    const id = await delivery(triggerId, { action: 'opened', issue: { title: 'typo in README' } });
    llm.enqueue(decision('spawn_reactor', 'a one-line fix'));
    const result = await triageDelivery(deps, job(id));
    const message = await env.db.message.findUniqueOrThrow({ where: { id: result!.messageId! } });
    expect(message).toMatchObject({
      kind: 'webhook_event',
      metadata: {
        triage: { action: 'spawn_reactor', reason: 'a one-line fix', source: 'model', maxIterations: 3 },
      },
    });
  });

  it('a retried job re-applies the stored decision without asking the model again', async () => {
    const triggerId = await trigger();
    const id = await delivery(triggerId, { action: 'opened', retry: true });
    llm.enqueue(decision('spawn_orchestrator', 'real work'));
    const first = await triageDelivery(deps, job(id));
    const before = llm.requests.length;
    // The worker died after the admission, before the message id was written.
    await env.db.triggerDelivery.update({ where: { id }, data: { messageId: null } });
    const second = await triageDelivery(deps, job(id));
    expect(llm.requests.length).toBe(before);
    expect(second).toMatchObject({ messageId: first!.messageId, decision: { source: 'model' } });
    expect(await env.db.message.count({ where: { idempotencyKey: `delivery:${id}` } })).toBe(1);
  });
});

describe('sendNotification', () => {
  let env: TestEnv;
  let receiver: http.Server;
  let url: string;
  let answer = 204;
  const received: { headers: http.IncomingHttpHeaders; body: string }[] = [];
  const secret = `whsec_${randomBytes(32).toString('base64')}`;
  const logger = createLogger({ service: 'test', level: 'silent' });

  beforeAll(async () => {
    env = await createTestEnv();
    receiver = http.createServer((req, res) => {
      let body = '';
      req.on('data', (c: Buffer) => (body += c.toString()));
      req.on('end', () => {
        received.push({ headers: req.headers, body });
        res.writeHead(answer).end();
      });
    });
    await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve));
    url = `http://localhost:${(receiver.address() as AddressInfo).port}/hook`;
  });

  afterAll(async () => {
    await new Promise((resolve) => receiver?.close(resolve));
    await env?.cleanup();
  });

  async function tenant(settings: Prisma.InputJsonValue) {
    const id = newId();
    await env.db.tenant.create({ data: { id, name: 't', settings } });
    return id;
  }
  const job = (tenantId: string, webhookId = `msg_${newId()}`): OutboundWebhookJob => ({
    tenantId,
    webhookId,
    event: 'trigger.notify',
    payload: { reason: 'an outage report' },
    trace: {},
  });
  const allowLocal = (db: TestEnv['db']) => ({
    db,
    logger,
    allowHosts: new Set(['localhost']),
    timeoutMs: 5000,
  });

  it('signs with Standard Webhooks and logs the attempt; the receiver verifies the signature', async () => {
    const tenantId = await tenant({ notifyUrl: url, notifySecret: secret });
    const j = job(tenantId);
    answer = 204;
    expect(await sendNotification(allowLocal(env.db), j, 1)).toBe('delivered');
    const got = received.at(-1)!;
    const verified = new Webhook(secret).verify(got.body, got.headers as Record<string, string>);
    expect(verified).toMatchObject({ type: 'trigger.notify', data: { reason: 'an outage report' } });
    expect(got.headers['webhook-id']).toBe(j.webhookId);
    expect(() =>
      new Webhook(`whsec_${randomBytes(32).toString('base64')}`).verify(
        got.body,
        got.headers as Record<string, string>,
      ),
    ).toThrow();
    expect(await env.db.outboundWebhookAttempt.findMany({ where: { webhookId: j.webhookId } })).toEqual([
      expect.objectContaining({ tenantId, url, attempt: 1, status: 204, error: null }),
    ]);
  });

  it('throws to be retried on a non-2xx answer, logging each attempt', async () => {
    const tenantId = await tenant({ notifyUrl: url, notifySecret: secret });
    const j = job(tenantId);
    answer = 503;
    await expect(sendNotification(allowLocal(env.db), j, 1)).rejects.toBeInstanceOf(DeliveryFailedError);
    answer = 200;
    expect(await sendNotification(allowLocal(env.db), j, 2)).toBe('delivered');
    const attempts = await env.db.outboundWebhookAttempt.findMany({
      where: { webhookId: j.webhookId },
      orderBy: { attempt: 'asc' },
    });
    expect(attempts.map((a) => [a.attempt, a.status])).toEqual([
      [1, 503],
      [2, 200],
    ]);
    // The same webhook-id on every attempt, so the receiver can deduplicate.
    expect(new Set(received.slice(-2).map((r) => r.headers['webhook-id']))).toEqual(new Set([j.webhookId]));
  });

  it('refuses a private address unless the host is allowlisted, sending nothing', async () => {
    const tenantId = await tenant({ notifyUrl: url, notifySecret: secret });
    const literal = await tenant({ notifyUrl: url.replace('localhost', '127.0.0.1'), notifySecret: secret });
    const count = received.length;
    const strict = { db: env.db, logger, allowHosts: new Set<string>(), timeoutMs: 5000 };
    await expect(sendNotification(strict, job(tenantId), 1)).rejects.toBeInstanceOf(RefusedAddressError);
    await expect(sendNotification(strict, job(literal), 1)).rejects.toBeInstanceOf(RefusedAddressError);
    expect(received.length).toBe(count);
    const logged = await env.db.outboundWebhookAttempt.findMany({ where: { tenantId } });
    expect(logged).toEqual([
      expect.objectContaining({ status: null, error: expect.stringContaining('private') }),
    ]);
  });

  it('logs and skips when the tenant has no endpoint', async () => {
    const tenantId = await tenant({});
    expect(await sendNotification(allowLocal(env.db), job(tenantId), 1)).toBe('no_endpoint');
    expect(await env.db.outboundWebhookAttempt.count({ where: { tenantId } })).toBe(1);
  });

  /** An A2A push config of a task (docs/adr/0037), as the gateway stores it. */
  async function pushConfig(
    tenantId: string,
    target: string,
    over: { token?: string; scheme?: string } = {},
  ) {
    const turnId = newId();
    await env.db.$executeRaw`
      INSERT INTO a2a_push_configs (id, tenant_id, agent_id, turn_id, config_id, url, token, auth_scheme,
        auth_credentials, protocol_version)
      VALUES (${newId()}::uuid, ${tenantId}::uuid, ${newId()}::uuid, ${turnId}::uuid, 'cfg', ${target},
        ${over.token ?? null}, ${over.scheme ?? null}, ${over.scheme ? 'cred-1' : null}, '0.3')`;
    return turnId;
  }
  const pushJob = (tenantId: string, turnId: string): OutboundWebhookJob => ({
    ...job(tenantId),
    event: 'a2a.task.completed',
    payload: { kind: 'task', id: turnId, status: { state: 'completed' } },
    a2aPush: { turnId, configId: 'cfg' },
  });

  it("A2A push: the task itself to the config's URL, signed with the tenant's secret, with its token and Authorization", async () => {
    // The tenant's notify URL is elsewhere: the config's URL is the one used.
    const tenantId = await tenant({ notifyUrl: 'https://example.com/not-this', notifySecret: secret });
    const turnId = await pushConfig(tenantId, `${url}?a2a`, { token: 'tok-1', scheme: 'Bearer' });
    answer = 200;
    const j = pushJob(tenantId, turnId);
    expect(await sendNotification(allowLocal(env.db), j, 1)).toBe('delivered');
    const got = received.at(-1)!;
    expect(got.headers).toMatchObject({
      'x-a2a-notification-token': 'tok-1',
      authorization: 'Bearer cred-1',
    });
    // The body is the payload itself (no Standard Webhooks envelope), and it verifies.
    expect(JSON.parse(got.body)).toEqual(j.payload);
    expect(new Webhook(secret).verify(got.body, got.headers as Record<string, string>)).toEqual(j.payload);
    expect(await env.db.outboundWebhookAttempt.findMany({ where: { webhookId: j.webhookId } })).toEqual([
      expect.objectContaining({ url: `${url}?a2a`, status: 200 }),
    ]);
  });

  it('A2A push: a deleted config, another tenant’s config or no secret sends nothing; a private address is refused at send time', async () => {
    const tenantId = await tenant({ notifyUrl: url, notifySecret: secret });
    const count = received.length;
    // No such config (deleted), or the config is another tenant's: logged, not sent, not retried.
    expect(await sendNotification(allowLocal(env.db), pushJob(tenantId, newId()), 1)).toBe('no_endpoint');
    const otherTenant = await tenant({ notifyUrl: url, notifySecret: secret });
    const theirs = await pushConfig(otherTenant, url);
    expect(await sendNotification(allowLocal(env.db), pushJob(tenantId, theirs), 1)).toBe('no_endpoint');
    // No signing secret: nothing unsigned goes out.
    const unsigned = await tenant({});
    const turn = await pushConfig(unsigned, url);
    expect(await sendNotification(allowLocal(env.db), pushJob(unsigned, turn), 1)).toBe('no_endpoint');
    // A URL that was fine when set but is private now (or never allowlisted): refused, not retried.
    const strict = { db: env.db, logger, allowHosts: new Set<string>(), timeoutMs: 5000 };
    const priv = await pushConfig(tenantId, url);
    await expect(sendNotification(strict, pushJob(tenantId, priv), 1)).rejects.toBeInstanceOf(
      RefusedAddressError,
    );
    expect(received.length).toBe(count);
    expect(
      (await env.db.outboundWebhookAttempt.findMany({ where: { tenantId: unsigned } })).map((a) => a.error),
    ).toEqual(['the tenant has no webhook signing secret']);
  });
});
