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
import { startGateway, startHooks, type Running } from '../support/stack';

jest.setTimeout(120_000);

/** The streamed answer: 100 words, 200 ms apart (about 20 s on the wire, as in bench:inflight). */
const WORDS = 100;
const answer = Array.from({ length: WORDS }, (_, i) => `w${i}`).join(' ');

/**
 * A lease lost mid-stream never pays for the model call twice (docs/adr/0069), through real
 * processes and a local model server that counts its requests. The harness's renewals run every 10 s
 * (a 30 s lease); while the turn's answer streams for 20 s, just after a renewal, the test makes the
 * lease expire as a renewal that came too late would, and the harness's own sweep (every 100 ms) frees it and wakes the turn: the
 * harness claims the interrupted turn again. Before, that claim ran the turn a second time (a second
 * model call, the first aborted at the next renewal); now the claim's token goes to the run still
 * streaming, which finishes: one request at the model server, the turn completed once, its round
 * booked once.
 */
describe('a session lease lost while the model streams', () => {
  let env: TestEnv;
  let llm: FakeLlmServer;
  let gateway: Running & { url: string };
  let hooks: Running;
  let api: Api;
  let worker: AppProcess | undefined;

  beforeAll(async () => {
    env = await createTestEnv();
    llm = await FakeLlmServer.start();
    llm.setDefault(scripted.text(answer, { textPieces: WORDS, frameIntervalMs: 200 }));
    const config = env.config({ ...llm.providerEnv });
    gateway = await startGateway(config);
    hooks = await startHooks(config);
    ({ api } = await newTenant(gateway.url, 'test-admin-token-0123456789', 'lease-loss'));
    worker = await spawnApp(
      'harness-worker',
      env.processEnv({ ...llm.providerEnv, SESSION_LEASE_MS: '30000', LEASE_SWEEP_MS: '100' }),
    );
  });

  afterAll(async () => {
    await worker?.kill('SIGKILL');
    await hooks?.close();
    await gateway?.close();
    await llm?.close();
    await env?.cleanup();
  });

  const turn = (id: string) => env.db.turn.findUniqueOrThrow({ where: { id } });

  it('keeps the streaming run: one model call, the turn completed once', async () => {
    const agent = await api.post('/v1/agents', { name: 'streams', model: 'openai-chat/gpt-4o-mini' });
    const sessionId = (await api.post('/v1/sessions', { agentId: agent.body.id })).body.id as string;
    const sent = await api.post(`/v1/sessions/${sessionId}/messages`, { content: 'tell me forty words' });
    expect(sent.status).toBe(202);
    const turnId = sent.body.turnId as string;

    await llm.waitForRequests(1);
    const held = await env.db.session.findUniqueOrThrow({ where: { id: sessionId } });
    expect(held.leaseToken).not.toBeNull();
    expect((await turn(turnId)).runCount).toBe(1);
    // Just after a renewal (the next is 10 s away), so the sweep, not a renewal, comes next.
    await waitFor(
      async () => {
        const s = await env.db.session.findUniqueOrThrow({ where: { id: sessionId } });
        return s.leaseExpiresAt!.getTime() > held.leaseExpiresAt!.getTime() + 1_000 ? true : undefined;
      },
      { what: 'a lease renewal', timeoutMs: 20_000, intervalMs: 20 },
    );

    // The renewal is late: the lease expires mid-stream; the sweep frees it and wakes the turn.
    await env.db.$executeRaw`UPDATE sessions SET lease_expires_at = now() - interval '1 second' WHERE id = ${sessionId}::uuid`;
    // The harness claimed the interrupted turn again (a second run's claim), while the first streams.
    await waitFor(async () => ((await turn(turnId)).runCount === 2 ? true : undefined), {
      what: 'the interrupted turn claimed again',
      timeoutMs: 20_000,
      intervalMs: 20,
    });
    expect(llm.openResponseCount).toBe(1);

    const ended = await waitFor(
      async () => {
        const t = await turn(turnId);
        return ['completed', 'failed', 'cancelled'].includes(t.status) ? t : undefined;
      },
      { what: 'the turn ended', timeoutMs: 60_000 },
    );
    expect(ended.status).toBe('completed');
    expect(ended.finalText).toContain(`w${WORDS - 1}`);

    // One model call, not aborted; its round booked once; one answer in the transcript.
    expect(llm.requests).toHaveLength(1);
    expect(llm.requests[0]?.closedEarly).toBeFalsy();
    expect((await env.db.ledgerEntry.findMany({ where: { turnId } })).map((e) => e.key)).toEqual([
      `${turnId}:round:0`,
    ]);
    const transcript = await env.db.message.findMany({
      where: { sessionId },
      orderBy: [{ turnSeq: 'asc' }, { position: 'asc' }],
    });
    expect(transcript.map((m) => m.role)).toEqual(['user', 'assistant']);
    expect(await env.db.event.count({ where: { turnId, type: 'turn_started' } })).toBe(1);
    expect(await env.db.event.count({ where: { turnId, type: 'turn_completed' } })).toBe(1);
    // The session's lease was released with the end: nothing holds it.
    expect((await env.db.session.findUniqueOrThrow({ where: { id: sessionId } })).leaseToken).toBeNull();
  });
});
