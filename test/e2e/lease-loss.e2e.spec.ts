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
 * (a 30 s lease); while a turn's answer streams for 20 s, just after a renewal, the test makes the
 * lease expire as a renewal that came too late would (and, in the second case, the harness's own
 * sweep frees the session). Before, the next renewal found the lease gone, aborted the stream and
 * the job ran the turn again: a second model call. Now either the harness claims the interrupted
 * turn again (the next fair choice takes it first) and the claim's token goes to the run still
 * streaming, or nobody claims it and the next renewal restores the lease: one request at the model
 * server per turn, not aborted, the turn completed once, its round booked once.
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
  });

  afterEach(async () => {
    await worker?.kill('SIGKILL');
    worker = undefined;
  });

  afterAll(async () => {
    await hooks?.close();
    await gateway?.close();
    await llm?.close();
    await env?.cleanup();
  });

  /** The harness, its lease sweep every `sweepMs` (0: none). */
  const harness = async (sweepMs: number, extra: Record<string, string> = {}) => {
    worker = await spawnApp(
      'harness-worker',
      env.processEnv({
        ...llm.providerEnv,
        SESSION_LEASE_MS: '30000',
        LEASE_SWEEP_MS: String(sweepMs),
        ...extra,
      }),
    );
  };

  const turn = (id: string) => env.db.turn.findUniqueOrThrow({ where: { id } });

  it('keeps the streaming run: one model call, the turn completed once', async () => {
    // No sweep: the session stays under its expired lease until a choice claims it.
    await harness(0);
    const agent = await api.post('/v1/agents', { name: 'streams', model: 'openai-chat/gpt-4o-mini' });
    const session = async () =>
      (await api.post('/v1/sessions', { agentId: agent.body.id })).body.id as string;
    const [s1, s2] = [await session(), await session()];
    const sent = await api.post(`/v1/sessions/${s1}/messages`, { content: 'tell me a hundred words' });
    expect(sent.status).toBe(202);
    const turnId = sent.body.turnId as string;

    await llm.waitForRequests(1);
    const held = await env.db.session.findUniqueOrThrow({ where: { id: s1 } });
    expect(held.leaseToken).not.toBeNull();
    expect((await turn(turnId)).runCount).toBe(1);
    // Just after a renewal (the next is 10 s away), so a choice, not a renewal, comes next.
    await waitFor(
      async () => {
        const s = await env.db.session.findUniqueOrThrow({ where: { id: s1 } });
        return s.leaseExpiresAt!.getTime() > held.leaseExpiresAt!.getTime() + 1_000 ? true : undefined;
      },
      { what: 'a lease renewal', timeoutMs: 20_000, intervalMs: 20 },
    );

    // The renewal is late: the lease expires mid-stream.
    await env.db
      .$executeRaw`UPDATE sessions SET lease_expires_at = now() - interval '1 second' WHERE id = ${s1}::uuid`;
    // The next fair choice takes the interrupted turn first and claims it while its first run still
    // streams: the process's Postgres intake (docs/adr/0075), or the job of a message on another session.
    const other = await api.post(`/v1/sessions/${s2}/messages`, { content: 'and you, a hundred more' });
    expect(other.status).toBe(202);
    await waitFor(async () => ((await turn(turnId)).runCount === 2 ? true : undefined), {
      what: 'the interrupted turn claimed again',
      timeoutMs: 8_000,
      intervalMs: 20,
    });

    const ended = async (id: string) =>
      waitFor(
        async () => {
          const t = await turn(id);
          return ['completed', 'failed', 'cancelled'].includes(t.status) ? t : undefined;
        },
        { what: `turn ${id} ended`, timeoutMs: 60_000 },
      );
    const first = await ended(turnId);
    expect(first.status).toBe('completed');
    expect(first.finalText).toContain(`w${WORDS - 1}`);
    expect((await ended(other.body.turnId as string)).status).toBe('completed');

    // One model call per turn, the first not aborted; its round booked once; one answer in the transcript.
    const asked = (words: string) => llm.requests.filter((r) => JSON.stringify(r.body).includes(words));
    expect(asked('tell me a hundred words')).toHaveLength(1);
    expect(asked('tell me a hundred words')[0]?.closedEarly).toBeFalsy();
    expect(llm.requests).toHaveLength(2);
    expect((await env.db.ledgerEntry.findMany({ where: { turnId } })).map((e) => e.key)).toEqual([
      `${turnId}:round:0`,
    ]);
    const transcript = await env.db.message.findMany({
      where: { sessionId: s1 },
      orderBy: [{ turnSeq: 'asc' }, { position: 'asc' }],
    });
    expect(transcript.map((m) => m.role)).toEqual(['user', 'assistant']);
    expect(await env.db.event.count({ where: { turnId, type: 'turn_started' } })).toBe(1);
    expect(await env.db.event.count({ where: { turnId, type: 'turn_completed' } })).toBe(1);
    // The session's lease was released with the end: nothing holds it.
    expect((await env.db.session.findUniqueOrThrow({ where: { id: s1 } })).leaseToken).toBeNull();
  });

  it('keeps a turn whose freed lease nobody claimed: the next renewal restores it', async () => {
    // The sweep frees the expired lease within 100 ms, and no other message comes. No Postgres intake
    // (docs/adr/0075): its next choice would take the interrupted turn, the first case's outcome.
    await harness(100, { HARNESS_INTAKE_POLL_MS: '0' });
    const agent = await api.post('/v1/agents', { name: 'streams-2', model: 'openai-chat/gpt-4o-mini' });
    const s = (await api.post('/v1/sessions', { agentId: agent.body.id })).body.id as string;
    const before = llm.requests.length;
    const sent = await api.post(`/v1/sessions/${s}/messages`, { content: 'a third hundred words' });
    const turnId = sent.body.turnId as string;
    await llm.waitForRequests(before + 1);
    const held = await env.db.session.findUniqueOrThrow({ where: { id: s } });
    await waitFor(
      async () => {
        const r = await env.db.session.findUniqueOrThrow({ where: { id: s } });
        return r.leaseExpiresAt!.getTime() > held.leaseExpiresAt!.getTime() + 1_000 ? true : undefined;
      },
      { what: 'a lease renewal', timeoutMs: 20_000, intervalMs: 20 },
    );
    await env.db
      .$executeRaw`UPDATE sessions SET lease_expires_at = now() - interval '1 second' WHERE id = ${s}::uuid`;
    await waitFor(
      async () =>
        (await env.db.session.findUniqueOrThrow({ where: { id: s } })).leaseToken ? undefined : true,
      { what: 'the sweep to free the lease', timeoutMs: 5_000, intervalMs: 10 },
    );
    // Before, the next heartbeat found the lease gone, aborted the stream and the job ran the turn again.
    const restored = await waitFor(
      async () => (await env.db.session.findUniqueOrThrow({ where: { id: s } })).leaseToken ?? undefined,
      { what: 'the next renewal to restore the lease', timeoutMs: 15_000, intervalMs: 50 },
    );
    expect(restored).toBe(held.leaseToken);
    const t = await waitFor(
      async () => {
        const r = await turn(turnId);
        return ['completed', 'failed', 'cancelled'].includes(r.status) ? r : undefined;
      },
      { what: 'the turn ended', timeoutMs: 60_000 },
    );
    expect(t.status).toBe('completed');
    expect(t.runCount).toBe(1);
    expect(llm.requests.filter((r) => JSON.stringify(r.body).includes('a third hundred words'))).toHaveLength(
      1,
    );
    expect(llm.requests).toHaveLength(before + 1);
  });
});
