import { createHmac, randomBytes, randomUUID } from 'node:crypto';
import { Webhook } from 'standardwebhooks';
import { ENDED_STATUSES } from '@switchboard/contracts';
import { createTestEnv, waitFor, type TestEnv } from '@switchboard/testing';
import { Api, newTenant } from '../support/api';
import { startStack } from '../support/stack';

/**
 * Triggers and the webhook ingress through the real gateway and workers (docs/adr/0019): signed
 * deliveries are stored once and triaged into one turn however often they are replayed; a bad or
 * missing signature writes nothing; a revoked token is a 404; the trigger API is tenant-scoped.
 */
jest.setTimeout(120_000);

describe('triggers and webhook ingress', () => {
  let env: TestEnv;
  let stack: Awaited<ReturnType<typeof startStack>>;
  let api: Api;
  let other: Api;
  let agentId: string;
  const ADMIN = 'test-admin-token-0123456789';

  beforeAll(async () => {
    env = await createTestEnv();
    // Signing secrets sealed at rest (the OpenAPI and bad-input tests run without a key).
    stack = await startStack(env.config({ TRIGGER_SECRET_KEY: randomBytes(32).toString('base64') }));
    ({ api } = await newTenant(stack.url, ADMIN, 'hooks-inc'));
    ({ api: other } = await newTenant(stack.url, ADMIN, 'someone-else'));
    const agent = await api.post('/v1/agents', { name: 'reactor', instructions: 'React to GitHub events.' });
    expect(agent.status).toBe(201);
    agentId = agent.body.id;
  });

  afterAll(async () => {
    await stack?.close();
    await env?.cleanup();
  });

  /** Posts raw bytes to a hook path with no API key. */
  const deliver = (path: string, raw: string, headers: Record<string, string>) =>
    new Api(stack.url).request('POST', path, {
      raw,
      headers: { 'content-type': 'application/json', ...headers },
    });

  const githubHeaders = (secret: string, raw: string, delivery: string, event = 'issues') => ({
    'x-github-event': event,
    'x-github-delivery': delivery,
    'x-hub-signature-256': `sha256=${createHmac('sha256', secret).update(raw).digest('hex')}`,
  });

  /**
   * Row counts once earlier deliveries have settled (triaged, their turns ended), so a refused
   * delivery can be shown to change none of them: every delivery, and the messages and turns that
   * deliveries of `triggerId` admitted. Messages and turns are counted for the trigger under test
   * only: other tests' deliveries go on being admitted and answered in the background (a decision
   * is written before its admission; a wake hint becomes a tick later), which a whole-table count
   * would mistake for a write of the refused request.
   */
  const counts = async (triggerId: string) => {
    await waitFor(
      async () =>
        // Decided, and admitted when the decision admits: triage writes the decision, then admits.
        (await env.db.triggerDelivery.count({
          where: {
            OR: [
              { decision: null },
              { decision: { notIn: ['drop', 'notify', 'wake_hint'] }, messageId: null },
            ],
          },
        })) === 0 && (await env.db.turn.count({ where: { status: { notIn: [...ENDED_STATUSES] } } })) === 0,
      { what: 'earlier deliveries to settle', timeoutMs: 30_000 },
    );
    const [own] = await env.db.$queryRaw<{ messages: number; turns: number }[]>`
      SELECT
        (SELECT count(*)::int FROM messages WHERE metadata->>'triggerId' = ${triggerId}) AS messages,
        (SELECT count(*)::int FROM turns t JOIN messages m ON m.id = t.input_message_id
          WHERE m.metadata->>'triggerId' = ${triggerId}) AS turns`;
    return { deliveries: await env.db.triggerDelivery.count(), ...own };
  };

  it('turns a GitHub-signed delivery replayed 5 times into exactly one verified delivery and one turn', async () => {
    const created = await api.post('/v1/triggers', {
      agentId,
      name: 'github',
      scheme: 'github',
      rules: [
        { match: { eventType: 'ping' }, action: 'drop', reason: 'health check' },
        { match: {}, action: 'spawn_orchestrator', reason: 'every other event' },
      ],
    });
    expect(created.status).toBe(201);
    expect(created.body).toMatchObject({
      scheme: 'github',
      deliveryMode: 'enqueue_message',
      revokedAt: null,
    });
    expect(created.body.path).toMatch(/^\/v1\/hooks\/sbt_[A-Za-z0-9_-]{32}$/);
    expect(created.body.signingSecret).toMatch(/^[0-9a-f]{64}$/);
    // Neither credential is stored as given: the token as its hash, and nothing lists either again.
    const row = await env.db.trigger.findUniqueOrThrow({ where: { id: created.body.id } });
    expect(row.tokenHash).not.toContain(created.body.path.split('/').pop());
    expect(row.signingSecret).toMatch(/^enc:v1:/);
    expect(row.signingSecret).not.toContain(created.body.signingSecret);
    const listed = await api.get('/v1/triggers');
    expect(JSON.stringify(listed.body)).not.toContain(created.body.signingSecret);
    expect(listed.body.data.map((t: { id: string }) => t.id)).toEqual([created.body.id]);

    const raw = JSON.stringify({ action: 'opened', issue: { number: 42, title: 'Build fails on main' } });
    const delivery = randomUUID();
    const answers = [];
    for (let i = 0; i < 5; i++) {
      answers.push(
        await deliver(created.body.path, raw, githubHeaders(created.body.signingSecret, raw, delivery)),
      );
    }
    expect(answers.map((a) => a.status)).toEqual([202, 202, 202, 202, 202]);
    const deliveryId = answers[0].body.deliveryId;
    expect(answers.map((a) => a.body)).toEqual([
      { deliveryId, duplicate: false },
      ...Array.from({ length: 4 }, () => ({ deliveryId, duplicate: true })),
    ]);

    const stored = await env.db.triggerDelivery.findMany({ where: { triggerId: created.body.id } });
    expect(stored).toHaveLength(1);
    expect(stored[0]).toMatchObject({
      id: deliveryId,
      deliveryId: delivery,
      verified: true,
      payload: {
        source: 'github',
        eventType: 'issues',
        headers: { 'x-github-delivery': delivery, 'x-github-event': 'issues' },
        body: JSON.parse(raw),
      },
    });
    // The signature itself is not kept.
    expect(JSON.stringify(stored[0].payload)).not.toContain('sha256=');

    const triaged = await waitFor(
      async () => {
        const d = await env.db.triggerDelivery.findUniqueOrThrow({ where: { id: deliveryId } });
        return d.messageId ? d : undefined;
      },
      { what: 'the delivery to be triaged into a message' },
    );
    const message = await env.db.message.findUniqueOrThrow({ where: { id: triaged.messageId! } });
    // Verified by the ingress: an integration signal (which still cannot authorise side effects alone).
    expect(message).toMatchObject({ kind: 'webhook_event', authorityClass: 'integration_signal' });
    const turn = await waitFor(
      async () => {
        const r = await api.get(`/v1/turns/${message.turnId}`);
        return r.body.status === 'completed' ? r.body : undefined;
      },
      { what: 'the turn to complete', timeoutMs: 30_000 },
    );
    expect(turn.sessionId).toBe(message.sessionId);
    expect(await env.db.turn.count({ where: { sessionId: message.sessionId } })).toBe(1);
    expect(
      await env.db.message.count({ where: { sessionId: message.sessionId, kind: 'webhook_event' } }),
    ).toBe(1);

    // The journal of the delivery's session: one admission, one turn, completed.
    const events = await api.get(`/v1/sessions/${message.sessionId}/events`);
    const types = events.body.data.map((e: { type: string }) => e.type);
    expect(types.filter((t: string) => t === 'message_admitted')).toHaveLength(1);
    expect(types.filter((t: string) => t === 'turn_completed')).toHaveLength(1);
    const metrics = await (await fetch(`${stack.url}/metrics`)).text();
    expect(metrics).toMatch(
      /switchboard_webhook_deliveries_total\{scheme="github",outcome="accepted",service="gateway"\} 1\b/,
    );
    expect(metrics).toMatch(
      /switchboard_webhook_deliveries_total\{scheme="github",outcome="duplicate",service="gateway"\} 4\b/,
    );

    // A sixth replay after the turn: still the same delivery, still nothing new.
    const before = await counts(created.body.id);
    const late = await deliver(
      created.body.path,
      raw,
      githubHeaders(created.body.signingSecret, raw, delivery),
    );
    expect(late.body).toEqual({ deliveryId, duplicate: true });
    expect(await counts(created.body.id)).toEqual(before);
  });

  it('refuses a bad or missing signature with 401 and writes nothing; a token trigger is unverified evidence', async () => {
    const created = await api.post('/v1/triggers', { agentId, name: 'gh2', scheme: 'github' });
    const raw = JSON.stringify({ action: 'closed' });
    const before = await counts(created.body.id);

    const forged = await deliver(created.body.path, raw, githubHeaders('not-the-secret', raw, randomUUID()));
    expect(forged.status).toBe(401);
    expect(forged.body.error.code).toBe('unauthorized');
    const tampered = await deliver(
      created.body.path,
      JSON.stringify({ action: 'reopened' }),
      githubHeaders(created.body.signingSecret, raw, randomUUID()),
    );
    expect(tampered.status).toBe(401);
    const missing = await deliver(created.body.path, raw, { 'x-github-delivery': randomUUID() });
    expect(missing.status).toBe(401);
    expect(missing.body.error.message).toMatch(/X-Hub-Signature-256/);
    // Signed, but no delivery id to deduplicate by.
    const noId = await deliver(created.body.path, raw, {
      'x-hub-signature-256': githubHeaders(created.body.signingSecret, raw, 'x')['x-hub-signature-256'],
    });
    expect(noId.status).toBe(400);
    expect(await counts(created.body.id)).toEqual(before);

    // A token-only trigger: accepted on the URL alone, stored unverified (external evidence).
    const token = await api.post('/v1/triggers', {
      agentId,
      name: 'alerts',
      scheme: 'token',
      deliveryMode: 'wake_hint',
    });
    expect(token.status).toBe(201);
    expect(token.body).toMatchObject({ scheme: 'token', deliveryMode: 'wake_hint', signingSecret: null });
    const posted = await deliver(token.body.path, '{"type":"disk_full"}', { 'idempotency-key': 'alert-1' });
    expect(posted.status).toBe(202);
    const again = await deliver(token.body.path, '{"type":"disk_full"}', { 'idempotency-key': 'alert-1' });
    expect(again.body).toEqual({ deliveryId: posted.body.deliveryId, duplicate: true });
    expect(
      await env.db.triggerDelivery.findUniqueOrThrow({ where: { id: posted.body.deliveryId } }),
    ).toMatchObject({
      verified: false,
      payload: { source: 'alerts', eventType: 'disk_full' },
    });
  });

  it('answers 404 for unknown, malformed and revoked tokens, and 415/400 for bodies it cannot verify', async () => {
    const created = await api.post('/v1/triggers', { agentId, name: 'gh3', scheme: 'github' });
    const raw = '{"zen":"hi"}';
    const headers = () => githubHeaders(created.body.signingSecret, raw, randomUUID(), 'ping');
    expect((await deliver(created.body.path, raw, headers())).status).toBe(202);

    expect((await deliver('/v1/hooks/sbt_' + 'A'.repeat(32), raw, headers())).status).toBe(404);
    expect((await deliver('/v1/hooks/not-a-token', raw, headers())).status).toBe(404);
    const form = await new Api(stack.url).request('POST', created.body.path, {
      raw: `payload=${encodeURIComponent(raw)}`,
      headers: { 'content-type': 'application/x-www-form-urlencoded', ...headers() },
    });
    expect(form.status).toBe(415);
    expect((await deliver(created.body.path, '{"a":', headers())).status).toBe(400);

    const revoked = await api.delete(`/v1/triggers/${created.body.id}`);
    expect(revoked.status).toBe(200);
    expect(revoked.body.revokedAt).toEqual(expect.any(String));
    const before = await counts(created.body.id);
    const after = await deliver(created.body.path, raw, headers());
    expect(after.status).toBe(404);
    expect(after.body.error.code).toBe('not_found');
    expect(await counts(created.body.id)).toEqual(before);
    // Revoking twice is harmless; rotating a revoked trigger is a conflict.
    expect((await api.delete(`/v1/triggers/${created.body.id}`)).status).toBe(200);
    expect((await api.post(`/v1/triggers/${created.body.id}/rotate`, {})).status).toBe(409);
  });

  it('rotates: Standard Webhooks keeps the old secret for the grace period, GitHub switches at once', async () => {
    const std = await api.post('/v1/triggers', { agentId, name: 'std', scheme: 'standard-webhooks' });
    expect(std.body.signingSecret).toMatch(/^whsec_/);
    const old = std.body.signingSecret as string;
    const rotated = await api.post(`/v1/triggers/${std.body.id}/rotate`, {});
    expect(rotated.status).toBe(200);
    expect(rotated.body.signingSecret).toMatch(/^whsec_/);
    expect(rotated.body.signingSecret).not.toBe(old);
    expect(rotated.body.path).toBeNull();
    expect(Date.parse(rotated.body.previousSecretExpiresAt) - Date.now()).toBeGreaterThan(23 * 3600 * 1000);

    const raw = '{"type":"invoice.paid","data":{"id":"in_1"}}';
    const sign = (secrets: string[], id: string) => ({
      'webhook-id': id,
      'webhook-timestamp': String(Math.floor(Date.now() / 1000)),
      'webhook-signature': secrets.map((s) => new Webhook(s).sign(id, new Date(), raw)).join(' '),
    });
    const both = await deliver(std.body.path, raw, sign([old, rotated.body.signingSecret], 'msg_both'));
    expect(both.status).toBe(202);
    const oldOnly = await deliver(std.body.path, raw, sign([old], 'msg_old'));
    expect(oldOnly.status).toBe(202);
    const stored = await env.db.triggerDelivery.findUniqueOrThrow({ where: { id: both.body.deliveryId } });
    expect(stored).toMatchObject({
      deliveryId: 'msg_both',
      verified: true,
      payload: { eventType: 'invoice.paid' },
    });

    // A second rotation with no grace: the first secret no longer verifies.
    const again = await api.post(`/v1/triggers/${std.body.id}/rotate`, { graceSeconds: 0 });
    expect(again.body.previousSecretExpiresAt).toBeNull();
    expect((await deliver(std.body.path, raw, sign([old], 'msg_late'))).status).toBe(401);
    expect((await deliver(std.body.path, raw, sign([again.body.signingSecret], 'msg_new'))).status).toBe(202);

    // GitHub: no grace by default.
    const gh = await api.post('/v1/triggers', { agentId, name: 'gh4', scheme: 'github' });
    const ghRotated = await api.post(`/v1/triggers/${gh.body.id}/rotate`, {});
    expect(ghRotated.body.previousSecretExpiresAt).toBeNull();
    const body = '{"zen":"x"}';
    expect(
      (await deliver(gh.body.path, body, githubHeaders(gh.body.signingSecret, body, randomUUID()))).status,
    ).toBe(401);
    expect(
      (await deliver(gh.body.path, body, githubHeaders(ghRotated.body.signingSecret, body, randomUUID())))
        .status,
    ).toBe(202);

    // A token trigger rotates its URL: the old one is a 404 at once.
    const tok = await api.post('/v1/triggers', { agentId, name: 'tok', scheme: 'token' });
    const tokRotated = await api.post(`/v1/triggers/${tok.body.id}/rotate`, {});
    expect(tokRotated.body.path).not.toBe(tok.body.path);
    expect((await deliver(tok.body.path, '{}', {})).status).toBe(404);
    expect((await deliver(tokRotated.body.path, '{}', {})).status).toBe(202);
  });

  it('stores one delivery when its replays arrive at the same time', async () => {
    const created = await api.post('/v1/triggers', { agentId, name: 'gh-race', scheme: 'github' });
    const raw = JSON.stringify({ action: 'labeled' });
    const delivery = randomUUID();
    const answers = await Promise.all(
      Array.from({ length: 8 }, () =>
        deliver(created.body.path, raw, githubHeaders(created.body.signingSecret, raw, delivery)),
      ),
    );
    expect(answers.map((a) => a.status)).toEqual(Array(8).fill(202));
    expect(new Set(answers.map((a) => a.body.deliveryId)).size).toBe(1);
    expect(answers.filter((a) => !a.body.duplicate)).toHaveLength(1);
    expect(await env.db.triggerDelivery.count({ where: { triggerId: created.body.id } })).toBe(1);
  });

  it('accepts Slack v0 signatures and refuses a 6-minute-old request', async () => {
    const secret = 'abcdef0123456789abcdef0123456789';
    const slack = await api.post('/v1/triggers', {
      agentId,
      name: 'slack',
      scheme: 'slack',
      signingSecret: secret,
    });
    expect(slack.status).toBe(201);
    expect(slack.body.signingSecret).toBeNull();
    const raw = JSON.stringify({ type: 'event_callback', event_id: 'Ev01', event: { type: 'app_mention' } });
    const sign = (ts: number) => ({
      'x-slack-request-timestamp': String(ts),
      'x-slack-signature': `v0=${createHmac('sha256', secret).update(`v0:${ts}:${raw}`).digest('hex')}`,
    });
    const now = Math.floor(Date.now() / 1000);
    expect((await deliver(slack.body.path, raw, sign(now - 360))).status).toBe(401);
    const ok = await deliver(slack.body.path, raw, sign(now));
    expect(ok.status).toBe(202);
    // Slack's retry carries the same event_id: the same delivery.
    const retry = await deliver(slack.body.path, raw, { ...sign(now + 1), 'x-slack-retry-num': '1' });
    expect(retry.body).toEqual({ deliveryId: ok.body.deliveryId, duplicate: true });
    expect(
      await env.db.triggerDelivery.findUniqueOrThrow({ where: { id: ok.body.deliveryId } }),
    ).toMatchObject({
      deliveryId: 'Ev01',
      verified: true,
      payload: { source: 'slack', eventType: 'app_mention' },
    });

    // Slack's Request URL handshake: signed, answered with its challenge, nothing stored.
    const before = await env.db.triggerDelivery.count();
    const handshake = JSON.stringify({
      token: 'legacy',
      challenge: 'c-3eZbrw1aBm2rZgRNFdxV2595E9CY3gmdALWMmHkvFXO7tYXAYM8P',
      type: 'url_verification',
    });
    const signHandshake = (ts: number) => ({
      'x-slack-request-timestamp': String(ts),
      'x-slack-signature': `v0=${createHmac('sha256', secret).update(`v0:${ts}:${handshake}`).digest('hex')}`,
    });
    const answered = await deliver(slack.body.path, handshake, signHandshake(now));
    expect(answered.status).toBe(200);
    expect(answered.body).toEqual({ challenge: 'c-3eZbrw1aBm2rZgRNFdxV2595E9CY3gmdALWMmHkvFXO7tYXAYM8P' });
    // Unsigned (or stale), the handshake is refused like any delivery.
    expect((await deliver(slack.body.path, handshake, signHandshake(now - 360))).status).toBe(401);
    expect(await env.db.triggerDelivery.count()).toBe(before);
  });

  it('validates the trigger API and keeps triggers to their tenant', async () => {
    const bad = [
      {},
      { agentId, name: 'x', scheme: 'svn' },
      { agentId, name: 'x', scheme: 'github', extra: 1 },
      { agentId, name: 'x', scheme: 'github', signingSecret: 'abcdef0123456789abcdef' },
      { agentId, name: 'x', scheme: 'slack' },
      { agentId, name: 'x', scheme: 'token', deliveryMode: 'shout' },
      { agentId, name: '', scheme: 'token' },
      { agentId: 'nope', name: 'x', scheme: 'token' },
      { agentId, name: 'x', scheme: 'token', rules: [{ match: {}, action: 'explode' }] },
    ];
    for (const body of bad) {
      const res = await api.post('/v1/triggers', body);
      expect({ body, status: res.status }).toEqual({ body, status: 400 });
    }
    expect(
      (await api.post('/v1/triggers', { agentId: randomUUID(), name: 'x', scheme: 'token' })).status,
    ).toBe(404);
    const foreignSession = await other.post('/v1/agents', { name: 'theirs' });
    expect(
      (await api.post('/v1/triggers', { agentId: foreignSession.body.id, name: 'x', scheme: 'token' }))
        .status,
    ).toBe(404);
    const session = await other.post('/v1/sessions', { agentId: foreignSession.body.id });
    expect(
      (await api.post('/v1/triggers', { agentId, name: 'x', scheme: 'token', sessionId: session.body.id }))
        .status,
    ).toBe(404);

    const mine = await api.post('/v1/triggers', { agentId, name: 'mine', scheme: 'token' });
    expect((await api.get(`/v1/triggers/${mine.body.id}`)).status).toBe(200);
    expect((await other.get(`/v1/triggers/${mine.body.id}`)).status).toBe(404);
    expect((await other.delete(`/v1/triggers/${mine.body.id}`)).status).toBe(404);
    expect((await other.post(`/v1/triggers/${mine.body.id}/rotate`, {})).status).toBe(404);
    expect((await other.get('/v1/triggers')).body.data).toEqual([]);
    expect((await api.get('/v1/triggers/not-a-uuid')).status).toBe(404);
    expect((await api.post(`/v1/triggers/${mine.body.id}/rotate`, { graceSeconds: 60 })).status).toBe(400);
    expect((await api.post(`/v1/triggers/${mine.body.id}/rotate`, { graceSeconds: -1 })).status).toBe(400);
    expect((await new Api(stack.url).get('/v1/triggers')).status).toBe(401);
  });
});
