import { randomBytes } from 'node:crypto';
import { Queue } from 'bullmq';
import type IORedis from 'ioredis';
import { Jobs, newId, QueueName } from '@switchboard/contracts';
import { createRedis, publish } from '@switchboard/queue';
import { createTestEnv, waitFor, type TestEnv } from '@switchboard/testing';
import { newTenant, type Api } from '../support/api';
import { startStack } from '../support/stack';

/** Trigger deliveries through the real triage worker: rules drop noise, the rest become turns. */
jest.setTimeout(120_000);

describe('triage worker', () => {
  let env: TestEnv;
  let stack: Awaited<ReturnType<typeof startStack>>;
  let api: Api;
  let tenantId: string;
  let connection: IORedis;
  let triage: Queue;
  const ADMIN = 'test-admin-token-0123456789';

  beforeAll(async () => {
    env = await createTestEnv();
    stack = await startStack(env.config());
    ({ api, tenantId } = await newTenant(stack.url, ADMIN, 'hooks-inc'));
    connection = createRedis(env.redisUrl);
    triage = new Queue(QueueName.Triage, { connection, prefix: env.queuePrefix });
  });

  afterAll(async () => {
    await triage?.close();
    await connection?.quit();
    await stack?.close();
    await env?.cleanup();
  });

  it('drops a ping by rule and runs a forwarded delivery as a completed turn', async () => {
    const agent = await api.post('/v1/agents', {
      name: 'reactor',
      instructions: 'React to GitHub events.',
      tools: ['word_count'],
    });
    expect(agent.status).toBe(201);
    expect(agent.body.model).toBe('scripted/demo');

    const triggerId = newId();
    await env.db.trigger.create({
      data: {
        id: triggerId,
        tenantId,
        agentId: agent.body.id,
        name: 'github',
        tokenHash: randomBytes(16).toString('hex'),
        signatureScheme: 'github',
        rules: [{ match: { eventType: 'ping' }, action: 'drop', reason: 'ping is a health check' }],
      },
    });
    const ping = newId();
    const issue = newId();
    await env.db.triggerDelivery.createMany({
      data: [
        {
          id: ping,
          tenantId,
          triggerId,
          deliveryId: 'gh-delivery-ping',
          payload: { source: 'github', eventType: 'ping', body: { zen: 'Keep it logically awesome.' } },
        },
        {
          id: issue,
          tenantId,
          triggerId,
          deliveryId: 'gh-delivery-issue',
          // As the ingress records a delivery whose signature it checked: an integration_signal.
          verified: true,
          payload: {
            source: 'github',
            eventType: 'issues',
            body: { action: 'opened', issue: { number: 42, title: 'Build fails on main' } },
          },
        },
      ],
    });

    await publish(triage, Jobs.triage, { deliveryId: ping, tenantId });
    await publish(triage, Jobs.triage, { deliveryId: issue, tenantId });

    const dropped = await waitFor(
      async () => {
        const d = await env.db.triggerDelivery.findUniqueOrThrow({ where: { id: ping } });
        return d.decision ? d : undefined;
      },
      { what: 'the ping to be triaged' },
    );
    expect(dropped).toMatchObject({ decision: 'drop', reason: 'ping is a health check', messageId: null });

    const forwarded = await waitFor(
      async () => {
        const d = await env.db.triggerDelivery.findUniqueOrThrow({ where: { id: issue } });
        // The decision is recorded first, the message id once the turn is admitted.
        return d.messageId ? d : undefined;
      },
      { what: 'the issue delivery to be triaged' },
    );
    // No rule matched; the deployment's scripted model answers prose, not a decision, so triage
    // takes the safe default (docs/adr/0018).
    expect(forwarded).toMatchObject({ decision: 'spawn_orchestrator', decisionSource: 'default' });
    expect(forwarded.reason).toContain('no model gave a valid decision');
    expect(forwarded.messageId).toEqual(expect.any(String));

    // A new session per delivery, keyed by the delivery id, visible to the tenant.
    const session = await api.get(`/v1/sessions/${issue}`);
    expect(session.status).toBe(200);
    expect(session.body.agentId).toBe(agent.body.id);

    const input = await env.db.message.findUniqueOrThrow({ where: { id: forwarded.messageId! } });
    const turn = await waitFor(
      async () => {
        const r = await api.get(`/v1/turns/${input.turnId}`);
        return r.body.status === 'completed' ? r.body : undefined;
      },
      { what: 'the forwarded turn to complete', timeoutMs: 30_000 },
    );
    expect(turn.stopReason).toBe('final_answer');
    expect(turn.finalText).toContain('word_count');

    const transcript = await api.get(`/v1/sessions/${issue}/messages`);
    expect(transcript.status).toBe(200);
    expect(transcript.body.data.map((m: { role: string }) => m.role)).toEqual([
      'user',
      'assistant',
      'tool',
      'assistant',
    ]);
    expect(transcript.body.data[0]).toMatchObject({
      id: forwarded.messageId,
      turnId: turn.id,
      kind: 'webhook_event',
      origin: { kind: 'webhook', source: 'github', eventType: 'issues' },
      trust: 'trusted_integration',
      authorityClass: 'integration_signal',
      deliverySurface: 'http_webhook',
      admissionContext: 'external_trigger_capability',
      body: {
        type: 'json',
        value: { action: 'opened', issue: { number: 42, title: 'Build fails on main' } },
      },
      metadata: { triggerId, deliveryId: 'gh-delivery-issue' },
    });

    const events = await api.get(`/v1/sessions/${issue}/events`);
    expect(events.body.data[0]).toMatchObject({
      seq: 1,
      type: 'message_admitted',
      data: {
        messageId: forwarded.messageId,
        kind: 'webhook_event',
        authorityClass: 'integration_signal',
        deliverySurface: 'http_webhook',
      },
    });
    expect(events.body.data[events.body.data.length - 1].type).toBe('turn_completed');

    // The post-turn hooks run for it like for any other turn.
    await waitFor(
      () =>
        env.db.hookRun
          .findFirst({ where: { turnId: turn.id, hook: 'cost-log' } })
          .then((h) => h ?? undefined),
      { what: 'the cost-log hook of the forwarded turn' },
    );

    // The dropped ping opened no session and admitted nothing.
    expect((await api.get(`/v1/sessions/${ping}`)).status).toBe(404);
    expect(await env.db.message.count({ where: { idempotencyKey: `delivery:${ping}` } })).toBe(0);

    // Both jobs finished on the triage queue with their decision as the result.
    const jobs = await Promise.all([ping, issue].map((id) => triage.getJob(id)));
    await waitFor(async () => (await Promise.all(jobs.map((j) => j!.isCompleted()))).every(Boolean), {
      what: 'both triage jobs completed',
    });
    const results = await Promise.all(
      [ping, issue].map(async (id) => (await triage.getJob(id))!.returnvalue),
    );
    expect(results).toEqual(['drop', 'spawn_orchestrator']);
  });
});
