import { createTestEnv, waitFor, type TestEnv } from '@switchboard/testing';
import { Api, newTenant } from '../support/api';
import { FIXTURES, startStack } from '../support/stack';

/** The product's first complete path, through the HTTP API, on real Postgres, Redis and BullMQ. */
describe('a message travels end to end', () => {
  let env: TestEnv;
  let stack: Awaited<ReturnType<typeof startStack>>;
  let api: Api;
  const ADMIN = 'test-admin-token-0123456789';

  beforeAll(async () => {
    env = await createTestEnv();
    stack = await startStack(env.config({ SCRIPTED_FIXTURES_DIR: FIXTURES }));
    ({ api } = await newTenant(stack.url, ADMIN, 'acme'));
  });

  afterAll(async () => {
    await stack?.close();
    await env?.cleanup();
  });

  it('admits, runs a tool-using turn, persists it and runs the cost hook', async () => {
    const agent = await api.post('/v1/agents', {
      name: 'counter',
      instructions: 'Count words.',
      tools: ['word_count'],
    });
    expect(agent.status).toBe(201);
    expect(agent.body.model).toBe('scripted/demo');
    const session = await api.post('/v1/sessions', { agentId: agent.body.id });
    expect(session.status).toBe(201);

    const admitted = await api.post(`/v1/sessions/${session.body.id}/messages`, {
      content: 'one two three four',
    });
    expect(admitted.status).toBe(202);
    expect(admitted.body).toEqual({
      messageId: expect.any(String),
      turnId: expect.any(String),
      status: 'queued',
    });

    const turn = await waitFor(
      async () => {
        const r = await api.get(`/v1/turns/${admitted.body.turnId}`);
        return r.body.status === 'completed' ? r.body : undefined;
      },
      { what: 'turn completed' },
    );
    expect(turn.stopReason).toBe('final_answer');
    expect(turn.iterations).toBe(2);
    expect(turn.finalText).toContain('"words":4');
    expect(turn.toolCalls).toEqual([
      expect.objectContaining({
        name: 'word_count',
        status: 'completed',
        result: { words: 4, characters: 18 },
      }),
    ]);
    expect(Number(turn.costUsd)).toBeGreaterThan(0);
    expect(turn.usage.inputTokens).toBeGreaterThan(0);
    expect(turn.attempts).toHaveLength(2);
    expect(turn.attempts[0]).toMatchObject({
      outcome: 'succeeded',
      provider: 'scripted',
      usage: expect.any(Object),
    });
    // The decision record of seed 001 stage 6; no finalisation step failed.
    expect(turn.decision).toMatchObject({ strategy: 'tool_assisted', tools: ['word_count'], toolCalls: 1 });
    expect(turn.finalisationErrors).toEqual([]);

    const transcript = await api.get(`/v1/sessions/${session.body.id}/messages`);
    expect(transcript.status).toBe(200);
    expect(transcript.body.data.map((m: { role: string }) => m.role)).toEqual([
      'user',
      'assistant',
      'tool',
      'assistant',
    ]);
    const [input, , toolResult] = transcript.body.data;
    expect(input).toMatchObject({
      id: admitted.body.messageId,
      kind: 'operator_prompt',
      origin: { kind: 'operator' },
      trust: 'trusted_operator',
      authorityClass: 'operator_instruction',
      priority: 'normal',
      deliverySurface: 'http_public_enqueue',
      admissionContext: 'control_authenticated',
      body: { type: 'text', text: 'one two three four' },
    });
    expect(toolResult.authorityClass).toBe('external_evidence');

    const ledger = await env.db.ledgerEntry.findMany({ where: { turnId: turn.id } });
    expect(ledger).toHaveLength(2);
    expect(ledger.reduce((s, e) => s + Number(e.costUsd), 0)).toBeCloseTo(Number(turn.costUsd), 8);

    const hook = await waitFor(
      () =>
        env.db.hookRun
          .findFirst({ where: { turnId: turn.id, hook: 'cost-log' } })
          .then((h) => h ?? undefined),
      { what: 'cost-log hook' },
    );
    expect(hook.output).toMatchObject({
      turnId: turn.id,
      providerCalls: 2,
      costUsd: Number(turn.costUsd).toFixed(8),
    });

    const events = await api.get(`/v1/sessions/${session.body.id}/events`);
    const types = events.body.data.map((e: { type: string }) => e.type);
    expect(types[0]).toBe('message_admitted');
    expect(types).toEqual(
      expect.arrayContaining([
        'turn_started',
        'provider_round_started',
        'provider_round_completed',
        'tool_call_started',
        'tool_call_completed',
        'iteration_completed',
        'text_delta',
      ]),
    );
    expect(types[types.length - 1]).toBe('turn_completed');
    const seqs = events.body.data.map((e: { seq: number }) => e.seq);
    expect(seqs).toEqual(seqs.map((_: number, i: number) => i + 1));

    const after = await api.get(`/v1/sessions/${session.body.id}/events?after=${seqs[seqs.length - 2]}`);
    expect(after.body.data.map((e: { seq: number }) => e.seq)).toEqual([seqs[seqs.length - 1]]);

    const sessionAfter = await api.get(`/v1/sessions/${session.body.id}`);
    expect(sessionAfter.body.usage.costUsd).toBe(turn.costUsd);
  });

  it('runs the read-only calls of one round together and answers each exactly once', async () => {
    const agent = await api.post('/v1/agents', {
      name: 'parallel',
      model: 'scripted/parallel',
      tools: ['word_count', 'current_time'],
    });
    const session = await api.post('/v1/sessions', { agentId: agent.body.id });
    const admitted = await api.post(`/v1/sessions/${session.body.id}/messages`, { content: 'a b' });
    const turn = await waitFor(async () => {
      const r = await api.get(`/v1/turns/${admitted.body.turnId}`);
      return r.body.status === 'completed' ? r.body : undefined;
    });
    expect(turn.toolCalls.map((c: { callId: string }) => c.callId).sort()).toEqual([
      'call_0_0',
      'call_0_1',
      'call_0_2',
    ]);
    const transcript = (await api.get(`/v1/sessions/${session.body.id}/messages`)).body.data;
    expect(transcript.map((m: { role: string }) => m.role)).toEqual([
      'user',
      'assistant',
      'tool',
      'tool',
      'tool',
      'assistant',
    ]);
    expect(
      transcript
        .filter((m: { role: string }) => m.role === 'tool')
        .map((m: { toolCallId: string }) => m.toolCallId)
        .sort(),
    ).toEqual(['call_0_0', 'call_0_1', 'call_0_2']);
  });

  it('stops a tenant’s running turn at its next safe point when its kill switch is on, and holds its queued turns', async () => {
    // The kill switch is the operator's pause (docs/adr/0030; the API: test/e2e/tenant-admin.e2e.spec.ts).
    const { api: killed, tenantId } = await newTenant(stack.url, ADMIN, 'killed');
    const agent = await killed.post('/v1/agents', {
      name: 'k',
      model: 'scripted/tool-then-slow-tool',
      tools: ['word_count'],
    });
    const s1 = await killed.post('/v1/sessions', { agentId: agent.body.id });
    const s2 = await killed.post('/v1/sessions', { agentId: agent.body.id });
    const running = await killed.post(`/v1/sessions/${s1.body.id}/messages`, {
      content: 'count these words',
    });
    await waitFor(
      async () =>
        (await env.db.event.findFirst({
          where: { turnId: running.body.turnId, type: 'tool_call_completed' },
        })) ?? undefined,
      { what: 'the tool round committed' },
    );
    // Queued behind the running turn in its session.
    const held = await killed.post(`/v1/sessions/${s1.body.id}/messages`, { content: 'waits' });
    await env.db.tenant.update({ where: { id: tenantId }, data: { killSwitch: true } });
    // The running turn stops at its next safe point: after the round in flight, before the third;
    // cancelled, reason tenant_paused (docs/adr/0055).
    const turn = await waitFor(async () => {
      const r = await killed.get(`/v1/turns/${running.body.turnId}`);
      return r.body.status === 'cancelled' ? r.body : undefined;
    });
    expect([turn.stopReason, turn.cancelReason]).toEqual(['cancelled', 'tenant_paused']);
    expect(turn.iterations).toBe(2);
    expect(turn.finalText ?? '').not.toContain('counted twice');
    const events = (await killed.get(`/v1/sessions/${s1.body.id}/events`)).body.data;
    expect(events.map((e: { type: string }) => e.type)).toContain('stop_hook_fired');
    // A turn queued while the switch is on is held, not ended (docs/adr/0029): resuming the tenant
    // (POST /v1/admin/tenants/{id}/resume) wakes it.
    expect((await killed.get(`/v1/turns/${held.body.turnId}`)).body.status).toBe('queued');
    // While the switch is on, a new message is refused and writes nothing (docs/adr/0030).
    const refused = await killed.post(`/v1/sessions/${s2.body.id}/messages`, { content: 'anything' });
    expect(refused.status).toBe(403);
    expect(refused.body.error.code).toBe('tenant_paused');
    expect(await env.db.message.count({ where: { sessionId: s2.body.id } })).toBe(0);
  });

  it('reuses the system prompt of the first turn byte for byte', async () => {
    const agent = await api.post('/v1/agents', {
      name: 'echoer',
      model: 'scripted/echo',
      instructions: 'v1',
    });
    const session = await api.post('/v1/sessions', { agentId: agent.body.id });
    const first = await api.post(`/v1/sessions/${session.body.id}/messages`, { content: 'a' });
    await waitFor(async () => (await api.get(`/v1/turns/${first.body.turnId}`)).body.status === 'completed');
    const stored = await env.db.session.findUniqueOrThrow({ where: { id: session.body.id } });
    expect(stored.systemPrompt).toContain('v1');
    await api.patch(`/v1/agents/${agent.body.id}`, { instructions: 'v2' });
    const second = await api.post(`/v1/sessions/${session.body.id}/messages`, { content: 'b' });
    const t2 = await waitFor(async () => {
      const r = await api.get(`/v1/turns/${second.body.turnId}`);
      return r.body.status === 'completed' ? r.body : undefined;
    });
    expect(t2.finalText).toBe('You said: b');
    const again = await env.db.session.findUniqueOrThrow({ where: { id: session.body.id } });
    expect(again.systemPrompt).toBe(stored.systemPrompt);
  });

  it('honours Idempotency-Key: the same key admits once', async () => {
    const agent = await api.post('/v1/agents', { name: 'idem', model: 'scripted/echo' });
    const session = await api.post(`/v1/sessions`, { agentId: agent.body.id });
    const path = `/v1/sessions/${session.body.id}/messages`;
    // A retry after the first answer replays it (concurrent retries: test/e2e/idempotency.e2e.spec.ts).
    const a = await api.post(path, { content: 'once' }, { 'idempotency-key': 'k-1' });
    const b = await api.post(path, { content: 'once' }, { 'idempotency-key': 'k-1' });
    expect(a.status).toBe(202);
    expect(b.status).toBe(202);
    expect(b.body.messageId).toBe(a.body.messageId);
    expect(b.body.turnId).toBe(a.body.turnId);
    expect(await env.db.message.count({ where: { sessionId: session.body.id, role: 'user' } })).toBe(1);
    expect(await env.db.turn.count({ where: { sessionId: session.body.id } })).toBe(1);
  });

  it('multitask=reject answers 409 while a turn is queued or running, and writes nothing', async () => {
    const agent = await api.post('/v1/agents', { name: 'busy', model: 'scripted/slow' });
    const session = await api.post(`/v1/sessions`, { agentId: agent.body.id });
    const path = `/v1/sessions/${session.body.id}/messages`;
    const first = await api.post(path, { content: 'first' });
    expect(first.status).toBe(202);
    // The slow fixture answers after 1.5 s, so the first turn is still queued or running here.
    const rejected = await api.post(path, { content: 'second', multitask: 'reject' });
    expect(rejected.status).toBe(409);
    expect(rejected.body.error.code).toBe('conflict');
    expect(await env.db.message.count({ where: { sessionId: session.body.id, role: 'user' } })).toBe(1);
    expect(await env.db.turn.count({ where: { sessionId: session.body.id } })).toBe(1);

    await waitFor(async () => (await api.get(`/v1/turns/${first.body.turnId}`)).body.status === 'completed');
    const accepted = await api.post(path, { content: 'third', multitask: 'reject' });
    expect(accepted.status).toBe(202);
  });
});
