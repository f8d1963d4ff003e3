import { createHmac } from 'node:crypto';
import { AppError } from '@switchboard/contracts';
import type { IngressTrigger, NewDelivery } from './deliveries-repository';
import { WebhookIngress, type WebhookDelivery } from './ingress';
import { hashTriggerToken } from './verify';

const TOKEN = `sbt_${'a'.repeat(32)}`;
const SECRET = 'github-secret';

const trigger = (change: Partial<IngressTrigger> = {}): IngressTrigger => ({
  id: 'tr1',
  tenantId: 't1',
  name: 'deploys',
  signatureScheme: 'github',
  signingSecret: `sealed:${SECRET}`,
  previousSigningSecret: null,
  previousSecretExpiresAt: null,
  revokedAt: null,
  tenantPaused: false,
  agentId: 'a1',
  agentStopped: false,
  ...change,
});

/** The ingress over in-memory deliveries; what it stored, enqueued and counted. */
function ingress(t: IngressTrigger | undefined) {
  const stored: NewDelivery[] = [];
  const enqueued: { deliveryId: string; tenantId: string }[] = [];
  const counted: string[] = [];
  const ingress = new WebhookIngress({
    deliveries: {
      triggerByTokenHash: (hash) => Promise.resolve(hash === hashTriggerToken(TOKEN) ? t : undefined),
      record: (d) => {
        const replay = stored.some((s) => s.deliveryId === d.deliveryId);
        if (!replay) stored.push(d);
        return Promise.resolve(!replay);
      },
      find: (_triggerId, deliveryId) => {
        const s = stored.find((x) => x.deliveryId === deliveryId);
        return Promise.resolve(s ? ({ id: s.id, decision: null } as never) : undefined);
      },
    },
    enqueue: (job) => (enqueued.push(job), Promise.resolve()),
    openSecret: (sealed) => (sealed.startsWith('sealed:') ? sealed.slice(7) : undefined),
    count: (scheme, outcome) => counted.push(`${scheme}:${outcome}`),
    logger: { info: jest.fn(), error: jest.fn() } as never,
  });
  return { ingress, stored, enqueued, counted };
}

/** A GitHub delivery of `body`, signed with `secret`. */
function github(body: unknown, secret = SECRET, id = 'gh-1'): WebhookDelivery {
  const raw = Buffer.from(JSON.stringify(body));
  return {
    token: TOKEN,
    rawBody: raw,
    body,
    headers: {
      'x-github-delivery': id,
      'x-github-event': 'push',
      'x-hub-signature-256': `sha256=${createHmac('sha256', secret).update(raw).digest('hex')}`,
      authorization: 'not kept',
    },
    limit: () => Promise.resolve(),
  };
}

const refusal = (p: Promise<unknown>) =>
  p.then(
    () => undefined,
    (err: AppError) => ({ status: err.status, code: err.code }),
  );

describe('WebhookIngress', () => {
  it('stores a verified delivery with its provenance and hands it to triage', async () => {
    const { ingress: i, stored, enqueued, counted } = ingress(trigger());
    const answer = await i.deliver(github({ ref: 'main' }));
    expect(answer).toEqual({ status: 202, body: { deliveryId: stored[0].id, duplicate: false } });
    expect(stored[0]).toMatchObject({
      tenantId: 't1',
      triggerId: 'tr1',
      deliveryId: 'gh-1',
      verified: true,
      payload: { source: 'github', eventType: 'push', body: { ref: 'main' } },
    });
    expect(Object.keys((stored[0].payload as { headers: object }).headers)).toEqual([
      'x-github-event',
      'x-github-delivery',
    ]);
    expect(enqueued).toEqual([{ deliveryId: stored[0].id, tenantId: 't1' }]);
    expect(counted).toEqual(['github:accepted']);
  });

  it('answers a replay with the first delivery, storing nothing new', async () => {
    const { ingress: i, stored, counted } = ingress(trigger());
    expect(await i.deliver(github({ n: 1 }))).toMatchObject({ body: { duplicate: false } });
    expect(await i.deliver(github({ n: 1 }))).toEqual({
      status: 202,
      body: { deliveryId: stored[0].id, duplicate: true },
    });
    expect(stored).toHaveLength(1);
    expect(counted).toEqual(['github:accepted', 'github:duplicate']);
  });

  it('refuses before writing: unknown token 404, bad signature 401, paused 403, stopped 409', async () => {
    expect(await refusal(ingress(undefined).ingress.deliver(github({})))).toEqual({
      status: 404,
      code: 'not_found',
    });
    expect(await refusal(ingress(trigger({ revokedAt: new Date() })).ingress.deliver(github({})))).toEqual({
      status: 404,
      code: 'not_found',
    });
    const bad = ingress(trigger());
    expect(await refusal(bad.ingress.deliver(github({}, 'wrong')))).toEqual({
      status: 401,
      code: 'unauthorized',
    });
    expect(bad.counted).toEqual(['github:refused']);
    const paused = ingress(trigger({ tenantPaused: true }));
    expect(await refusal(paused.ingress.deliver(github({})))).toMatchObject({ status: 403 });
    const stopped = ingress(trigger({ agentStopped: true }));
    expect(await refusal(stopped.ingress.deliver(github({})))).toMatchObject({ status: 409 });
    for (const x of [bad, paused, stopped]) expect(x.stored).toEqual([]);
  });

  it('verifies with the previous secret during its grace period only', async () => {
    const rotated = (expires: number) =>
      trigger({
        signingSecret: 'sealed:new',
        previousSigningSecret: `sealed:${SECRET}`,
        previousSecretExpiresAt: new Date(Date.now() + expires),
      });
    expect((await ingress(rotated(60_000)).ingress.deliver(github({}))).status).toBe(202);
    expect(await refusal(ingress(rotated(-1)).ingress.deliver(github({})))).toMatchObject({ status: 401 });
  });

  it('echoes a Slack url_verification challenge, storing nothing', async () => {
    const t = ingress(trigger({ signatureScheme: 'token' }));
    const slack = ingress(trigger({ signatureScheme: 'slack' }));
    const body = { type: 'url_verification', challenge: 'c-1' };
    const raw = Buffer.from(JSON.stringify(body));
    const ts = String(Math.floor(Date.now() / 1000));
    const sig = `v0=${createHmac('sha256', SECRET).update(`v0:${ts}:${raw.toString()}`).digest('hex')}`;
    const delivery: WebhookDelivery = {
      token: TOKEN,
      rawBody: raw,
      body,
      headers: { 'x-slack-request-timestamp': ts, 'x-slack-signature': sig },
      limit: () => Promise.resolve(),
    };
    expect(await slack.ingress.deliver(delivery)).toEqual({ status: 200, body: { challenge: 'c-1' } });
    expect(slack.stored).toEqual([]);
    // On a token trigger the same body is an event like any other.
    expect((await t.ingress.deliver({ ...delivery, headers: {} })).status).toBe(202);
  });

  it('counts the delivery against its trigger’s limit before verifying it', async () => {
    const { ingress: i, stored } = ingress(trigger());
    const limited = github({});
    limited.limit = () => Promise.reject(new AppError('rate_limited', 'slow down'));
    expect(await refusal(i.deliver({ ...limited, headers: {} }))).toEqual({
      status: 429,
      code: 'rate_limited',
    });
    expect(stored).toEqual([]);
  });
});
