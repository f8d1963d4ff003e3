import { Client } from 'pg';
import { createTestEnv, waitFor, type TestEnv } from '@switchboard/testing';
import { Api, newTenant } from '../support/api';
import { startGateway } from '../support/stack';

/**
 * Idempotency-Key on POST /v1/sessions/:id/messages, as draft-ietf-httpapi-idempotency-key-header
 * asks: a retry with the same key and body replays the first answer, the same key with another
 * body is a 422, a retry while the first request is still being processed is a 409.
 */
describe('Idempotency-Key', () => {
  let env: TestEnv;
  let gateway: Awaited<ReturnType<typeof startGateway>>;
  let api: Api;
  let agentId: string;

  beforeAll(async () => {
    env = await createTestEnv();
    // The gateway alone: admitted turns stay queued, so nothing else writes.
    gateway = await startGateway(env.config());
    ({ api } = await newTenant(gateway.url, 'test-admin-token-0123456789'));
    agentId = (await api.post('/v1/agents', { name: 'idem' })).body.id;
  });

  afterAll(async () => {
    await gateway?.close();
    await env?.cleanup();
  });

  const newSession = async () => (await api.post('/v1/sessions', { agentId })).body.id as string;
  const footprint = async (sessionId: string) => ({
    messages: await env.db.message.count({ where: { sessionId } }),
    turns: await env.db.turn.count({ where: { sessionId } }),
    events: await env.db.event.count({ where: { sessionId } }),
  });

  it('replays the first admission for the same key and the same request', async () => {
    const sessionId = await newSession();
    const path = `/v1/sessions/${sessionId}/messages`;
    const first = await api.post(path, { content: 'deploy' }, { 'idempotency-key': 'k-1' });
    expect(first.status).toBe(202);
    // The same message spelled differently, and the key as the draft's structured-field string.
    const again = await api.post(
      path,
      { content: [{ type: 'text', text: 'deploy' }], priority: 'normal' },
      { 'idempotency-key': '"k-1"' },
    );
    expect(again.status).toBe(202);
    expect(again.body).toEqual(first.body);
    expect(await footprint(sessionId)).toEqual({ messages: 1, turns: 1, events: 1 });
  });

  it('refuses the same key with a different body with 422 and keeps the first message', async () => {
    const sessionId = await newSession();
    const path = `/v1/sessions/${sessionId}/messages`;
    const first = await api.post(path, { content: 'deploy v1' }, { 'idempotency-key': 'k-2' });
    expect(first.status).toBe(202);
    const before = await footprint(sessionId);
    const reused = await api.post(path, { content: 'deploy v2' }, { 'idempotency-key': 'k-2' });
    expect(reused.status).toBe(422);
    expect(reused.body.error.code).toBe('idempotency_key_reused');
    expect(await footprint(sessionId)).toEqual(before);
    const transcript = await api.get(path);
    expect(transcript.body.data.map((m: { body: { text: string } }) => m.body.text)).toEqual(['deploy v1']);
    // A new key admits the new content.
    expect((await api.post(path, { content: 'deploy v2' }, { 'idempotency-key': 'k-3' })).status).toBe(202);
  });

  it('answers 409 with Retry-After while the first request with the key is in flight', async () => {
    const sessionId = await newSession();
    const path = `/v1/sessions/${sessionId}/messages`;
    // Holding the session row keeps the first admission inside its transaction, with the key taken.
    const holder = new Client({ connectionString: env.databaseUrl });
    await holder.connect();
    try {
      await holder.query('BEGIN');
      await holder.query('SELECT 1 FROM sessions WHERE id = $1 FOR UPDATE', [sessionId]);
      const first = api.post(path, { content: 'slow' }, { 'idempotency-key': 'k-4' });
      await waitFor(
        async () => {
          const { rows } = await holder.query<{ n: number }>(
            `SELECT count(*)::int AS n FROM pg_locks WHERE locktype = 'advisory' AND granted
               AND database = (SELECT oid FROM pg_database WHERE datname = current_database())`,
          );
          return rows[0].n > 0;
        },
        { what: 'the first request to hold the key' },
      );
      const second = await api.post(path, { content: 'slow' }, { 'idempotency-key': 'k-4' });
      expect(second.status).toBe(409);
      expect(second.body.error.code).toBe('idempotency_key_in_flight');
      expect(second.headers.get('retry-after')).toBe('1');
      await holder.query('COMMIT');
      const done = await first;
      expect(done.status).toBe(202);
      const retry = await api.post(path, { content: 'slow' }, { 'idempotency-key': 'k-4' });
      expect(retry.status).toBe(202);
      expect(retry.body.messageId).toBe(done.body.messageId);
      expect(await footprint(sessionId)).toEqual({ messages: 1, turns: 1, events: 1 });
    } finally {
      await holder.end();
    }
  });

  it('is one optional Idempotency-Key header in the OpenAPI document', async () => {
    const doc = (await api.get('/docs/openapi.json')).body;
    const admit = doc.paths['/v1/sessions/{id}/messages'].post;
    const headers = (admit.parameters as { in: string; name: string; required?: boolean }[]).filter(
      (p) => p.in === 'header',
    );
    expect(headers).toEqual([expect.objectContaining({ name: 'Idempotency-Key', required: false })]);
    expect(Object.keys(admit.responses)).toEqual(expect.arrayContaining(['409', '422']));
  });
});
