import { createServer } from 'node:net';
import {
  createTestEnv,
  FakeLlmServer,
  scripted,
  spawnApp,
  waitFor,
  type AppProcess,
  type TestEnv,
} from '@switchboard/testing';
import { Api, newTenant } from '../support/api';

jest.setTimeout(150_000);

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      server.close(() => resolve(typeof address === 'object' && address ? address.port : 0));
    });
  });
}

interface MessageRow {
  kind: string;
  triggerKind: string;
  sourceRefs: Record<string, string>;
  correlationId: string | null;
  causationId: string | null;
  metadata: Record<string, unknown>;
}

/**
 * Triggers and wake hints (issue 38, docs/adr/0060) with the gateway, the triage worker and a harness
 * worker as real processes and the fake LLM behind the real provider SDK: a trigger counts its
 * deliveries (a replay not) and says when it last fired; a wake hint without content resolves
 * liveness-only (journaled, no message, no turn, no model call) while one with content becomes a
 * system tick turn carrying its payload, provenance and correlation ids; a webhook delivery's message
 * carries `triggerKind` and `sourceRefs`.
 */
describe('trigger stats and wake provenance', () => {
  let env: TestEnv;
  let llm: FakeLlmServer;
  let api: Api;
  let url: string;
  const workers: AppProcess[] = [];

  beforeAll(async () => {
    env = await createTestEnv();
    llm = await FakeLlmServer.start();
    llm.setDefault(() => scripted.text('Checked.'));
    const port = await freePort();
    url = `http://127.0.0.1:${port}`;
    workers.push(
      await spawnApp(
        'gateway',
        env.processEnv({ ...llm.providerEnv, PORT: String(port), HOST: '127.0.0.1' }),
      ),
      await spawnApp('triage-worker', env.processEnv(llm.providerEnv)),
      await spawnApp('harness-worker', env.processEnv(llm.providerEnv)),
    );
    ({ api } = await newTenant(url, 'test-admin-token-0123456789', 'wake-provenance'));
  });

  afterAll(async () => {
    await Promise.all(workers.map((w) => w.kill('SIGKILL')));
    await llm?.close();
    await env?.cleanup();
  });

  const post = (path: string, body: unknown, headers: Record<string, string>) =>
    new Api(url).request('POST', path, {
      raw: JSON.stringify(body),
      headers: { 'content-type': 'application/json', ...headers },
    });

  const messagesOf = async (sessionId: string) =>
    (await api.get(`/v1/sessions/${sessionId}/messages?limit=200`)).body.data as MessageRow[];

  it('counts deliveries, resolves a content-less wake hint without a model turn, and keeps provenance', async () => {
    const agent = await api.post('/v1/agents', { name: 'sleeper', model: 'openai-chat/chat-mini' });
    expect(agent.status).toBe(201);
    const created = await api.post('/v1/triggers', {
      agentId: agent.body.id,
      name: 'tracker',
      scheme: 'token',
      deliveryMode: 'wake_hint',
    });
    expect(created.status).toBe(201);
    expect(created.body).toMatchObject({ deliveryCount: 0, lastDeliveryAt: null });
    const triggerId = created.body.id as string;
    const sessionId = triggerId; // a wake_hint trigger without a standing session: keyed by the trigger
    const modelCalls = llm.requests.length;

    // A pure liveness signal: an empty body.
    const ping = await post(created.body.path, {}, { 'idempotency-key': 'ping-1' });
    expect(ping.status).toBe(202);
    const liveness = await waitFor(
      async () => {
        const events = (await api.get(`/v1/sessions/${sessionId}/events?limit=200`)).body.data as
          { type: string; turnId: string | null; data: Record<string, unknown> }[] | undefined;
        return events?.find((e) => e.type === 'wake_liveness');
      },
      { what: 'the liveness-only resolution to be journaled', timeoutMs: 30_000 },
    );
    expect(liveness).toMatchObject({
      turnId: null,
      data: {
        resolution: 'liveness_only',
        count: 1,
        triggerIds: [triggerId],
        deliveryIds: [ping.body.deliveryId],
      },
    });
    expect(await messagesOf(sessionId)).toEqual([]);
    expect((await api.get(`/v1/sessions/${sessionId}/turns`)).body.data).toEqual([]);
    // A replay of the same delivery id is not counted again.
    const replay = await post(created.body.path, {}, { 'idempotency-key': 'ping-1' });
    expect(replay.body).toEqual({ deliveryId: ping.body.deliveryId, duplicate: true });

    // A wake hint with content: a system tick turn, its payload and correlation kept.
    const changed = await post(
      created.body.path,
      { type: 'ticket.updated', ticket: 42 },
      { 'idempotency-key': 'change-1', 'x-correlation-id': 'wf-42', 'x-causation-id': 'jira-evt-9' },
    );
    expect(changed.status).toBe(202);
    const [tick] = await waitFor(
      async () => {
        const rows = await messagesOf(sessionId);
        return rows.length > 0 ? rows : undefined;
      },
      { what: 'the contentful wake hint to become a system tick' },
    );
    expect(tick).toMatchObject({
      kind: 'system_tick',
      triggerKind: 'system_tick',
      correlationId: 'wf-42',
      causationId: 'jira-evt-9',
      sourceRefs: { triggerId, deliveryId: changed.body.deliveryId, wakeHintId: expect.any(String) },
      metadata: {
        wakeHints: {
          resolution: 'contentful',
          count: 1,
          hints: [
            expect.objectContaining({
              triggerId,
              deliveryId: changed.body.deliveryId,
              externalDeliveryId: 'change-1',
              eventType: 'ticket.updated',
              contentType: 'application/json',
              body: { type: 'ticket.updated', ticket: 42 },
              correlationId: 'wf-42',
              causationId: 'jira-evt-9',
            }),
          ],
        },
      },
    });
    const [turn] = await waitFor(
      async () => {
        const turns = (await api.get(`/v1/sessions/${sessionId}/turns`)).body.data as { status: string }[];
        return turns.length === 1 && turns[0].status === 'completed' ? turns : undefined;
      },
      { what: 'the tick turn to complete', timeoutMs: 30_000 },
    );
    expect(turn).toMatchObject({ status: 'completed', finalText: 'Checked.' });
    // The one model call is the tick turn's; the liveness-only one spent none.
    expect(llm.requests.length).toBe(modelCalls + 1);

    // The trigger's delivery tracking: two stored deliveries (the replay not counted).
    const got = await api.get(`/v1/triggers/${triggerId}`);
    expect(got.status).toBe(200);
    expect(got.body.deliveryCount).toBe(2);
    expect(Date.parse(got.body.lastDeliveryAt)).toBeGreaterThanOrEqual(Date.parse(created.body.createdAt));
    const listed = await api.get('/v1/triggers');
    expect(listed.body.data.find((t: { id: string }) => t.id === triggerId)).toMatchObject({
      deliveryCount: 2,
    });
    const deliveries = await api.get(`/v1/triggers/${triggerId}/deliveries`);
    expect(deliveries.body.data).toEqual([
      expect.objectContaining({ id: changed.body.deliveryId, decision: 'wake_hint', decisionSource: 'mode' }),
      expect.objectContaining({ id: ping.body.deliveryId, decision: 'wake_hint', decisionSource: 'mode' }),
    ]);
  });

  it("gives a webhook delivery's message its triggerKind and sourceRefs", async () => {
    const agent = await api.post('/v1/agents', { name: 'reactor', model: 'openai-chat/chat-mini' });
    const created = await api.post('/v1/triggers', {
      agentId: agent.body.id,
      name: 'alerts',
      scheme: 'token',
      rules: [{ match: {}, action: 'spawn_reactor', reason: 'always react' }],
    });
    expect(created.status).toBe(201);
    const sent = await post(
      created.body.path,
      { type: 'disk_full' },
      { 'idempotency-key': 'alert-1', 'x-correlation-id': 'incident-7' },
    );
    expect(sent.status).toBe(202);
    const delivery = await waitFor(
      async () => {
        const rows = (await api.get(`/v1/triggers/${created.body.id}/deliveries`)).body.data as {
          messageId: string | null;
          decision: string | null;
        }[];
        return rows[0]?.messageId ? rows[0] : undefined;
      },
      { what: 'the delivery to be admitted' },
    );
    expect(delivery.decision).toBe('spawn_reactor');
    // Without a standing session each delivery gets its own, keyed by the stored delivery's id.
    const [message] = await messagesOf(sent.body.deliveryId);
    expect(message).toMatchObject({
      kind: 'webhook_event',
      triggerKind: 'external_event',
      correlationId: 'incident-7',
      sourceRefs: {
        triggerId: created.body.id,
        deliveryId: sent.body.deliveryId,
        externalDeliveryId: 'alert-1',
      },
    });
    expect((await api.get(`/v1/triggers/${created.body.id}`)).body.deliveryCount).toBe(1);
  });
});
