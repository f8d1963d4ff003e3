import { randomBytes } from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { Queue } from 'bullmq';
import type IORedis from 'ioredis';
import { Webhook } from 'standardwebhooks';
import { QueueName } from '@switchboard/contracts';
import { createRedis } from '@switchboard/queue';
import { createTestEnv, waitFor, type TestEnv } from '@switchboard/testing';
import { newTenant, type Api } from '../support/api';
import { FIXTURES, startStack } from '../support/stack';

/**
 * Completion webhooks (docs/adr/0018, addendum): every ended turn of a tenant with a notify endpoint
 * becomes one signed `turn.*` notification, published by the hooks worker's `completion-webhook` hook
 * and delivered by the outbound-webhooks worker, retried with backoff, every attempt logged.
 */
jest.setTimeout(120_000);

describe('completion webhooks', () => {
  let env: TestEnv;
  let stack: Awaited<ReturnType<typeof startStack>>;
  let connection: IORedis;
  let postTurn: Queue;
  let receiver: http.Server;
  /** Every request the receiver got, with the status it answered. */
  const received: { headers: Record<string, string>; body: string; status: number }[] = [];
  /** Statuses to answer before the default 200. */
  const answers: number[] = [];
  /** What the receiver acted on: verified bodies, once per webhook-id (Standard Webhooks deduplication). */
  const actedOn = new Map<string, { type: string; data: Record<string, unknown> }>();
  const secret = `whsec_${randomBytes(32).toString('base64')}`;
  let notifyUrl: string;
  const ADMIN = 'test-admin-token-0123456789';

  beforeAll(async () => {
    env = await createTestEnv();
    receiver = http.createServer((req, res) => {
      let body = '';
      req.on('data', (c: Buffer) => (body += c.toString()));
      req.on('end', () => {
        const headers = req.headers as Record<string, string>;
        let status = answers.shift() ?? 200;
        let verified: { type: string; data: Record<string, unknown> } | undefined;
        try {
          verified = new Webhook(secret).verify(body, headers) as typeof verified;
        } catch {
          status = 401;
        }
        if (verified && status === 200 && !actedOn.has(headers['webhook-id'])) {
          actedOn.set(headers['webhook-id'], verified);
        }
        received.push({ headers, body, status });
        res.writeHead(status).end();
      });
    });
    await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve));
    notifyUrl = `http://localhost:${(receiver.address() as AddressInfo).port}/hooks`;
    stack = await startStack(
      env.config({
        SCRIPTED_FIXTURES_DIR: FIXTURES,
        // The receiver is on this machine: allow its name, and only its name, to be private.
        OUTBOUND_WEBHOOK_ALLOW_HOSTS: 'localhost',
        // Retries after 100 ms and 200 ms instead of 5 s and 10 s.
        OUTBOUND_WEBHOOK_BACKOFF_MS: '100',
      }),
    );
    connection = createRedis(env.redisUrl);
    postTurn = new Queue(QueueName.PostTurn, { connection, prefix: env.queuePrefix });
  });

  afterAll(async () => {
    await stack?.close();
    await postTurn?.close();
    await connection?.quit();
    await new Promise((resolve) => receiver?.close(resolve));
    await env?.cleanup();
  });

  async function tenant(name: string, withEndpoint: boolean): Promise<{ api: Api; tenantId: string }> {
    const t = await newTenant(stack.url, ADMIN, name);
    if (withEndpoint) {
      expect((await t.api.patch('/v1/settings', { notifyUrl, notifySecret: secret })).status).toBe(200);
    }
    return t;
  }

  async function runTurn(api: Api, model: string, content: string) {
    const agent = await api.post('/v1/agents', { name: `a-${Date.now()}`, instructions: 'Answer.', model });
    expect(agent.status).toBe(201);
    const session = await api.post('/v1/sessions', { agentId: agent.body.id });
    const admitted = await api.post(`/v1/sessions/${session.body.id}/messages`, { content });
    expect(admitted.status).toBe(202);
    return {
      sessionId: session.body.id as string,
      agentId: agent.body.id as string,
      turnId: admitted.body.turnId,
    };
  }

  const ended = (api: Api, turnId: string) =>
    waitFor(
      async () => {
        const r = await api.get(`/v1/turns/${turnId}`);
        return ['completed', 'failed', 'cancelled'].includes(r.body.status) ? r.body : undefined;
      },
      { what: `turn ${turnId} ended` },
    );

  const attemptsOf = (webhookId: string, count: number) =>
    waitFor(
      async () => {
        const rows = await env.db.outboundWebhookAttempt.findMany({
          where: { webhookId },
          orderBy: { attempt: 'asc' },
        });
        return rows.length >= count ? rows : undefined;
      },
      { what: `${count} attempts of ${webhookId}` },
    );

  it('a completed turn: signed turn.completed, 500 twice then 200, one webhook-id, three attempts logged, acted on once', async () => {
    const { api, tenantId } = await tenant('hooked', true);
    answers.push(500, 500);
    const { turnId, sessionId, agentId } = await runTurn(api, 'scripted/demo', 'one two three');
    const turn = await ended(api, turnId);
    expect(turn.status).toBe('completed');

    const webhookId = `msg_turn_${turnId}`;
    const attempts = await attemptsOf(webhookId, 3);
    expect(attempts.map((a) => [a.attempt, a.status, a.event, a.url])).toEqual([
      [1, 500, 'turn.completed', notifyUrl],
      [2, 500, 'turn.completed', notifyUrl],
      [3, 200, 'turn.completed', notifyUrl],
    ]);
    expect(attempts.every((a) => a.tenantId === tenantId)).toBe(true);

    const mine = received.filter((r) => r.headers['webhook-id'] === webhookId);
    expect(mine.map((r) => r.status)).toEqual([500, 500, 200]);
    // Every attempt is freshly signed and verifies; the receiver acted on it once.
    for (const r of mine) expect(() => new Webhook(secret).verify(r.body, r.headers)).not.toThrow();
    expect(actedOn.get(webhookId)).toEqual({
      type: 'turn.completed',
      timestamp: expect.any(String),
      data: {
        type: 'turn.completed',
        turnId,
        sessionId,
        agentId,
        status: 'completed',
        stopReason: turn.stopReason,
        finalText: turn.finalText,
        finalTextTruncated: false,
        usage: {
          inputTokens: turn.usage.inputTokens,
          outputTokens: turn.usage.outputTokens,
          cachedTokens: turn.usage.cachedTokens,
        },
        costUsd: Number(turn.costUsd).toFixed(8),
        completedAt: turn.completedAt,
      },
    });
    expect(turn.finalText).toEqual(expect.any(String));

    // The hook runs again (a retry, or the hooks reconcile): its hook_runs record says it ran, so it
    // publishes nothing (ADR 0027); had it died between publishing and recording, the outbound job id
    // is the webhook id, already taken, so nothing more would be sent either.
    const data = { turnId, tenantId, hook: 'completion-webhook' as const, trace: {} };
    const rerun = await postTurn.add(QueueName.PostTurn, data, {
      jobId: `${turnId}.completion-webhook.rerun`,
    });
    await waitFor(async () => ((await rerun.isCompleted()) ? true : undefined), { what: 'the re-run hook' });
    expect((await postTurn.getJob(rerun.id!))?.returnvalue).toBe('already_done');
    expect(await env.db.outboundWebhookAttempt.count({ where: { webhookId } })).toBe(3);
    expect(received.filter((r) => r.headers['webhook-id'] === webhookId)).toHaveLength(3);
  });

  it('a failed turn sends turn.failed', async () => {
    const { api } = await tenant('failing', true);
    const { turnId } = await runTurn(api, 'scripted/auth-fails', 'hello');
    expect((await ended(api, turnId)).status).toBe('failed');
    const [attempt] = await attemptsOf(`msg_turn_${turnId}`, 1);
    expect([attempt.event, attempt.status]).toEqual(['turn.failed', 200]);
    expect(actedOn.get(`msg_turn_${turnId}`)).toMatchObject({
      type: 'turn.failed',
      data: { turnId, status: 'failed', stopReason: expect.any(String) },
    });
  });

  it('a cancelled turn sends turn.cancelled', async () => {
    const { api } = await tenant('cancelling', true);
    // A slow turn holds the session, so the second one is still queued when it is cancelled.
    const first = await runTurn(api, 'scripted/slow', 'first');
    const second = await api.post(`/v1/sessions/${first.sessionId}/messages`, { content: 'second' });
    expect(second.status).toBe(202);
    expect((await api.post(`/v1/turns/${second.body.turnId}/cancel`)).status).toBeLessThan(300);
    expect((await ended(api, second.body.turnId)).status).toBe('cancelled');
    const [attempt] = await attemptsOf(`msg_turn_${second.body.turnId}`, 1);
    expect(attempt.event).toBe('turn.cancelled');
    expect(actedOn.get(`msg_turn_${second.body.turnId}`)).toMatchObject({
      type: 'turn.cancelled',
      data: { turnId: second.body.turnId, status: 'cancelled' },
    });
  });

  it('a tenant without an endpoint sends nothing: the hook is skipped', async () => {
    const { api, tenantId } = await tenant('quiet', false);
    const before = received.length;
    const { turnId } = await runTurn(api, 'scripted/demo', 'four five');
    expect((await ended(api, turnId)).status).toBe('completed');
    const job = await waitFor(
      async () => {
        // finishedOn and the return value come in the one read of the job: asking its state after
        // fetching it could find it completed while the fetched copy still had no return value.
        const j = await postTurn.getJob(`${turnId}.hooks`);
        return j?.finishedOn ? j : undefined;
      },
      { what: "the turn's post-turn job" },
    );
    expect((job.returnvalue as Record<string, string>)['completion-webhook']).toBe('skipped');
    expect(await env.db.outboundWebhookAttempt.count({ where: { tenantId } })).toBe(0);
    expect(received.slice(before).some((r) => r.headers['webhook-id'] === `msg_turn_${turnId}`)).toBe(false);
  });
});
