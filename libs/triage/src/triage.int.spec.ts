import { randomBytes } from 'node:crypto';
import type { Queue } from 'bullmq';
import { newId } from '@switchboard/contracts';
import type { Prisma } from '@switchboard/database';
import { seedTenant, startAdmission, type AdmissionFixture, type TestEnv } from '@switchboard/testing';
import { triageDelivery } from './triage';

/** Triage of trigger deliveries with a real Admission on Postgres and BullMQ. */
jest.setTimeout(120_000);

describe('triageDelivery', () => {
  let f: AdmissionFixture;
  let env: TestEnv;
  let queue: Queue;
  let deps: Parameters<typeof triageDelivery>[0];
  let tenantId: string;
  let agentId: string;

  beforeAll(async () => {
    f = await startAdmission();
    ({ env, turnsQueue: queue } = f);
    deps = { db: env.db, admission: f.admission, logger: f.logger };
    ({ tenantId, agentId } = await seedTenant(env.db, 'triage', { name: 'reactor' }));
  });

  afterAll(() => f?.close());

  async function trigger(
    options: { signatureScheme?: string; sessionId?: string; rules?: Prisma.InputJsonValue } = {},
  ) {
    const id = newId();
    await env.db.trigger.create({
      data: {
        id,
        tenantId,
        agentId,
        name: 'gh',
        tokenHash: randomBytes(16).toString('hex'),
        signatureScheme: options.signatureScheme ?? 'github',
        sessionId: options.sessionId ?? null,
        rules: options.rules ?? [],
      },
    });
    return id;
  }

  async function delivery(
    triggerId: string,
    payload: { source?: string; eventType?: string; body?: Prisma.InputJsonValue },
    tenant = tenantId,
    verified = false,
  ) {
    const id = newId();
    await env.db.triggerDelivery.create({
      data: { id, tenantId: tenant, triggerId, deliveryId: `gh-${id}`, payload, verified },
    });
    return id;
  }

  const job = (deliveryId: string, tenant = tenantId) => ({ deliveryId, tenantId: tenant, trace: {} });

  async function standingSession(): Promise<string> {
    const id = newId();
    await env.db.session.create({ data: { id, tenantId, agentId } });
    return id;
  }

  const messagesOf = (deliveryRowId: string) =>
    env.db.message.findMany({ where: { idempotencyKey: `delivery:${deliveryRowId}` } });

  it('drops by rule: records the decision and its reason, admits nothing', async () => {
    const triggerId = await trigger({
      rules: [
        { match: { eventType: 'ping' }, action: 'drop', reason: 'pings are noise' },
        { match: {}, action: 'forward' },
      ],
    });
    const id = await delivery(triggerId, { source: 'github', eventType: 'ping', body: { zen: 'hi' } });

    const result = await triageDelivery(deps, job(id));

    expect(result).toEqual({
      decision: { action: 'drop', reason: 'pings are noise', source: 'rule', costUsd: 0 },
    });
    expect(await env.db.triggerDelivery.findUniqueOrThrow({ where: { id } })).toMatchObject({
      decision: 'drop',
      reason: 'pings are noise',
      messageId: null,
    });
    expect(await env.db.session.findUnique({ where: { id } })).toBeNull();
    expect(await messagesOf(id)).toHaveLength(0);
    expect(await env.db.turn.count({ where: { sessionId: id } })).toBe(0);
  });

  it('forwards an unmatched delivery into a new session keyed by the delivery id', async () => {
    const triggerId = await trigger({
      signatureScheme: 'github',
      rules: [{ match: { eventType: 'ping' }, action: 'drop' }],
    });
    const id = await delivery(
      triggerId,
      { source: 'github', eventType: 'issues', body: { action: 'opened', issue: { number: 7 } } },
      tenantId,
      true,
    );

    const result = await triageDelivery(deps, job(id));

    expect(result).toEqual({
      decision: { action: 'spawn_orchestrator', reason: 'no rule matched', source: 'default', costUsd: 0 },
      messageId: expect.any(String),
      turnId: expect.any(String),
    });
    const session = await env.db.session.findUniqueOrThrow({ where: { id } });
    expect(session).toMatchObject({ tenantId, agentId, status: 'active' });

    const messages = await env.db.message.findMany({ where: { sessionId: id } });
    expect(messages).toHaveLength(1);
    expect(messages[0]).toMatchObject({
      id: result!.messageId,
      tenantId,
      agentId,
      turnId: result!.turnId,
      kind: 'webhook_event',
      origin: { kind: 'webhook', source: 'github', eventType: 'issues' },
      trust: 'trusted_integration',
      authorityClass: 'integration_signal',
      deliverySurface: 'http_webhook',
      admissionContext: 'external_trigger_capability',
      body: { type: 'json', value: { action: 'opened', issue: { number: 7 } } },
      metadata: { triggerId, deliveryId: `gh-${id}` },
    });
    expect(await env.db.turn.findUniqueOrThrow({ where: { id: result!.turnId! } })).toMatchObject({
      sessionId: id,
      status: 'queued',
    });
    expect(await queue.getJob(result!.turnId!)).toBeDefined();
    expect(await env.db.triggerDelivery.findUniqueOrThrow({ where: { id } })).toMatchObject({
      decision: 'spawn_orchestrator',
      reason: 'no rule matched',
      messageId: result!.messageId,
    });
  });

  it("gives an unsigned trigger's delivery the authority of external evidence", async () => {
    const triggerId = await trigger({ signatureScheme: 'none' });
    const id = await delivery(triggerId, { source: 'custom', eventType: 'alert', body: 'disk full' });

    const result = await triageDelivery(deps, job(id));

    const message = await env.db.message.findUniqueOrThrow({ where: { id: result!.messageId! } });
    expect(message).toMatchObject({
      kind: 'webhook_event',
      origin: { kind: 'webhook', source: 'custom', eventType: 'alert' },
      authorityClass: 'external_evidence',
      body: { type: 'json', value: 'disk full' },
    });
  });

  // The scheme is only configuration: a delivery the ingress did not verify is external evidence.
  it('gives an unverified delivery of a signed trigger the authority of external evidence', async () => {
    const triggerId = await trigger({ signatureScheme: 'github' });
    const id = await delivery(triggerId, { source: 'github', eventType: 'issues', body: { n: 1 } });

    const result = await triageDelivery(deps, job(id));

    const message = await env.db.message.findUniqueOrThrow({ where: { id: result!.messageId! } });
    expect(message).toMatchObject({ kind: 'webhook_event', authorityClass: 'external_evidence' });
  });

  it('gives a verified delivery the authority of an integration signal', async () => {
    const triggerId = await trigger({ signatureScheme: 'slack' });
    const id = await delivery(
      triggerId,
      { source: 'slack', eventType: 'message', body: { n: 2 } },
      tenantId,
      true,
    );

    const result = await triageDelivery(deps, job(id));

    const message = await env.db.message.findUniqueOrThrow({ where: { id: result!.messageId! } });
    expect(message).toMatchObject({ kind: 'webhook_event', authorityClass: 'integration_signal' });
  });

  it("falls back to the trigger's name as the source", async () => {
    const triggerId = await trigger({ signatureScheme: 'none' });
    const id = await delivery(triggerId, { body: { x: 1 } });
    const result = await triageDelivery(deps, job(id));
    const message = await env.db.message.findUniqueOrThrow({ where: { id: result!.messageId! } });
    expect(message.origin).toEqual({ kind: 'webhook', source: 'gh' });
  });

  it("admits into the trigger's standing session when it has one", async () => {
    const sessionId = await standingSession();
    const triggerId = await trigger({ sessionId });
    const first = await delivery(triggerId, { source: 'github', eventType: 'push', body: { n: 1 } });
    const second = await delivery(triggerId, { source: 'github', eventType: 'push', body: { n: 2 } });

    const a = await triageDelivery(deps, job(first));
    const b = await triageDelivery(deps, job(second));

    expect(await env.db.session.findUnique({ where: { id: first } })).toBeNull();
    expect(await env.db.session.findUnique({ where: { id: second } })).toBeNull();
    const messages = await env.db.message.findMany({ where: { sessionId }, orderBy: { turnSeq: 'asc' } });
    expect(messages.map((m) => [m.id, m.turnSeq, m.body])).toEqual([
      [a!.messageId, 1, { type: 'json', value: { n: 1 } }],
      [b!.messageId, 2, { type: 'json', value: { n: 2 } }],
    ]);
  });

  it('forwards a delivery that a forward rule matches, with the rule as reason', async () => {
    const triggerId = await trigger({
      rules: [{ match: { path: 'action', equals: 'opened' }, action: 'forward', reason: 'new issues' }],
    });
    const id = await delivery(triggerId, {
      source: 'github',
      eventType: 'issues',
      body: { action: 'opened' },
    });
    const result = await triageDelivery(deps, job(id));
    expect(result!.decision).toEqual({
      action: 'spawn_orchestrator',
      reason: 'new issues',
      source: 'rule',
      costUsd: 0,
    });
    expect(await messagesOf(id)).toHaveLength(1);
  });

  it('ignores invalid trigger rules and, without a model, takes the safe default', async () => {
    const triggerId = await trigger({ rules: [{ match: { nope: 1 }, action: 'explode' }] });
    const id = await delivery(triggerId, { source: 'github', eventType: 'ping' });
    const result = await triageDelivery(deps, job(id));
    expect(result!.decision.action).toBe('spawn_orchestrator');
    expect(await env.db.triggerDelivery.findUniqueOrThrow({ where: { id } })).toMatchObject({
      reason: 'no rule matched',
      decisionSource: 'default',
    });
    expect(await messagesOf(id)).toHaveLength(1);
  });

  it('admits a delivery exactly once when it runs twice', async () => {
    const triggerId = await trigger();
    const id = await delivery(triggerId, { source: 'github', eventType: 'push', body: {} });

    const first = await triageDelivery(deps, job(id));
    const second = await triageDelivery(deps, job(id));

    expect(second!.decision.action).toBe('spawn_orchestrator');
    expect(await messagesOf(id)).toHaveLength(1);
    expect(await env.db.turn.count({ where: { sessionId: id } })).toBe(1);
    expect((await env.db.triggerDelivery.findUniqueOrThrow({ where: { id } })).messageId).toBe(
      first!.messageId,
    );
  });

  it('admits once when the first run died before recording the decision', async () => {
    const sessionId = await standingSession();
    for (const standing of [undefined, sessionId]) {
      const triggerId = await trigger({ sessionId: standing });
      const id = await delivery(triggerId, { source: 'github', eventType: 'push', body: { standing } });
      const first = await triageDelivery(deps, job(id));
      // The worker died after the session and the admission, before the decision was recorded.
      await env.db.triggerDelivery.update({
        where: { id },
        data: { decision: null, reason: null, messageId: null },
      });

      const retried = await triageDelivery(deps, job(id));

      expect(retried).toMatchObject({ messageId: first!.messageId, turnId: first!.turnId });
      expect(await messagesOf(id)).toHaveLength(1);
      expect(await env.db.turn.count({ where: { inputMessageId: first!.messageId } })).toBe(1);
      expect(await env.db.session.count({ where: { id } })).toBe(standing ? 0 : 1);
      expect(await env.db.triggerDelivery.findUniqueOrThrow({ where: { id } })).toMatchObject({
        decision: 'spawn_orchestrator',
        messageId: first!.messageId,
      });
    }
    expect(await env.db.turn.count({ where: { sessionId } })).toBe(1);
  });

  it('admits once when runs of one delivery race (a stalled job run twice)', async () => {
    const triggerId = await trigger();
    const id = await delivery(triggerId, { source: 'github', eventType: 'push', body: {} });

    // A losing run may throw (the session upsert is not atomic) and is retried by BullMQ;
    // what must hold is that no run admits a second message.
    const results = await Promise.allSettled(Array.from({ length: 4 }, () => triageDelivery(deps, job(id))));
    const retried = await triageDelivery(deps, job(id));

    const admitted = results.flatMap((r) =>
      r.status === 'fulfilled' && r.value?.messageId ? [r.value.messageId] : [],
    );
    expect(admitted.length).toBeGreaterThan(0);
    const [message] = await messagesOf(id);
    expect(new Set(admitted)).toEqual(new Set([message.id]));
    expect(await messagesOf(id)).toHaveLength(1);
    expect(await env.db.session.count({ where: { id } })).toBe(1);
    expect(retried!.decision.action).toBe('spawn_orchestrator');
    expect((await env.db.triggerDelivery.findUniqueOrThrow({ where: { id } })).messageId).toBe(message.id);
  });

  it('admits once when the first run died after creating the session, before admitting', async () => {
    const triggerId = await trigger();
    const id = await delivery(triggerId, { source: 'github', eventType: 'push', body: {} });
    await env.db.session.create({ data: { id, tenantId, agentId, title: 'gh delivery' } });

    const result = await triageDelivery(deps, job(id));
    expect(result!.messageId).toBeDefined();
    expect(await env.db.message.count({ where: { sessionId: id } })).toBe(1);
    expect(await triageDelivery(deps, job(id))).toMatchObject({ decision: { action: 'spawn_orchestrator' } });
    expect(await env.db.message.count({ where: { sessionId: id } })).toBe(1);
  });

  it("ignores a job whose tenant is not the delivery's", async () => {
    const triggerId = await trigger();
    const id = await delivery(triggerId, { source: 'github', eventType: 'push', body: {} });

    expect(await triageDelivery(deps, job(id, newId()))).toBeNull();
    expect(await triageDelivery(deps, job(newId()))).toBeNull();

    expect(await env.db.triggerDelivery.findUniqueOrThrow({ where: { id } })).toMatchObject({
      decision: null,
      messageId: null,
    });
    expect(await env.db.session.findUnique({ where: { id } })).toBeNull();
    expect(await messagesOf(id)).toHaveLength(0);
  });

  it('ignores a delivery that claims a trigger of another tenant', async () => {
    const otherTenant = newId();
    await env.db.tenant.create({ data: { id: otherTenant, name: 'other' } });
    const triggerId = await trigger();
    const id = await delivery(triggerId, { source: 'github', eventType: 'push', body: {} }, otherTenant);

    expect(await triageDelivery(deps, job(id, otherTenant))).toBeNull();
    expect(await env.db.session.findUnique({ where: { id } })).toBeNull();
    expect(await messagesOf(id)).toHaveLength(0);
  });

  it('admits nothing for a paused tenant (docs/adr/0030): the decision is kept, no session is left', async () => {
    const paused = await seedTenant(env.db, 'paused', { name: 'reactor' });
    const triggerId = newId();
    await env.db.trigger.create({
      data: {
        id: triggerId,
        tenantId: paused.tenantId,
        agentId: paused.agentId,
        name: 'gh',
        tokenHash: randomBytes(16).toString('hex'),
        signatureScheme: 'github',
      },
    });
    const id = await delivery(
      triggerId,
      { source: 'github', eventType: 'issues', body: {} },
      paused.tenantId,
    );
    await env.db.tenant.update({ where: { id: paused.tenantId }, data: { killSwitch: true } });
    const result = await triageDelivery(deps, job(id, paused.tenantId));
    expect(result).toEqual({
      decision: { action: 'spawn_orchestrator', reason: 'no rule matched', source: 'default', costUsd: 0 },
    });
    expect(await env.db.session.count({ where: { tenantId: paused.tenantId } })).toBe(0);
    expect(await env.db.message.count({ where: { tenantId: paused.tenantId } })).toBe(0);
    expect(await env.db.triggerDelivery.findUniqueOrThrow({ where: { id } })).toMatchObject({
      decision: 'spawn_orchestrator',
      messageId: null,
    });
  });
});
