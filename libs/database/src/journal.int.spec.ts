import { randomUUID } from 'node:crypto';
import { newId } from '@switchboard/contracts';
import { createTestEnv, seedTenant, type TestEnv } from '@switchboard/testing';
import { appendEvents, LeaseLostError } from './journal';

/** The durable event journal: per-session seqs without gaps, fencing by lease, secrets redacted. */
jest.setTimeout(120_000);

describe('appendEvents', () => {
  let env: TestEnv;
  let tenantId: string;
  let agentId: string;

  beforeAll(async () => {
    env = await createTestEnv();
    ({ tenantId, agentId } = await seedTenant(env.db, 'journal'));
  });

  afterAll(async () => {
    await env?.cleanup();
  });

  async function newSession(): Promise<string> {
    const id = newId();
    await env.db.session.create({ data: { id, tenantId, agentId } });
    return id;
  }

  /** Holds the session lease directly, as a harness worker does. */
  async function holdLease(sessionId: string, ms: number): Promise<string> {
    const token = randomUUID();
    await env.db.session.update({
      where: { id: sessionId },
      data: { leaseOwner: 'test', leaseToken: token, leaseExpiresAt: new Date(Date.now() + ms) },
    });
    return token;
  }

  const storedSeqs = async (sessionId: string) =>
    (
      await env.db.event.findMany({ where: { sessionId }, orderBy: { seq: 'asc' }, select: { seq: true } })
    ).map((e) => e.seq);

  it('gives 50 concurrent single-event appends the seqs 1..50, no gap, no duplicate', async () => {
    const sessionId = await newSession();
    const results = await Promise.all(
      Array.from({ length: 50 }, (_, i) =>
        env.db.$transaction(
          (tx) => appendEvents(tx, { tenantId, sessionId, events: [{ type: 'text_delta', data: { i } }] }),
          { maxWait: 20_000, timeout: 20_000 },
        ),
      ),
    );
    const returned = results.map((seqs) => {
      expect(seqs).toHaveLength(1);
      return seqs[0];
    });
    const expected = Array.from({ length: 50 }, (_, i) => i + 1);
    expect([...returned].sort((a, b) => a - b)).toEqual(expected);
    expect(await storedSeqs(sessionId)).toEqual(expected);
    // Each caller got the seq its own event was stored under.
    const events = await env.db.event.findMany({ where: { sessionId } });
    for (const e of events) expect(returned[(e.data as { i: number }).i]).toBe(e.seq);
    const session = await env.db.session.findUniqueOrThrow({ where: { id: sessionId } });
    expect(session.lastEventSeq).toBe(50);
  });

  it('gives a batch consecutive seqs in order, after what is already there', async () => {
    const sessionId = await newSession();
    expect(
      await appendEvents(env.db, { tenantId, sessionId, events: [{ type: 'turn_started', data: {} }] }),
    ).toEqual([1]);
    const turnId = newId();
    const seqs = await env.db.$transaction((tx) =>
      appendEvents(tx, {
        tenantId,
        sessionId,
        events: [
          { type: 'provider_round_started', data: { n: 0 }, turnId },
          { type: 'text_delta', data: { n: 1 }, turnId },
          { type: 'provider_round_completed', data: { n: 2 } },
        ],
      }),
    );
    expect(seqs).toEqual([2, 3, 4]);
    const events = await env.db.event.findMany({ where: { sessionId }, orderBy: { seq: 'asc' } });
    expect(events.map((e) => [e.seq, e.type, e.turnId, e.tenantId])).toEqual([
      [1, 'turn_started', null, tenantId],
      [2, 'provider_round_started', turnId, tenantId],
      [3, 'text_delta', turnId, tenantId],
      [4, 'provider_round_completed', null, tenantId],
    ]);
    expect(await appendEvents(env.db, { tenantId, sessionId, events: [] })).toEqual([]);
    expect((await env.db.session.findUniqueOrThrow({ where: { id: sessionId } })).lastEventSeq).toBe(4);
  });

  it('keeps concurrent batches contiguous and the whole journal gap-free', async () => {
    const sessionId = await newSession();
    const batches = await Promise.all(
      Array.from({ length: 10 }, (_, b) =>
        env.db.$transaction(
          (tx) =>
            appendEvents(tx, {
              tenantId,
              sessionId,
              events: [0, 1, 2].map((n) => ({ type: 'text_delta', data: { b, n } })),
            }),
          { maxWait: 20_000, timeout: 20_000 },
        ),
      ),
    );
    for (const seqs of batches) expect(seqs).toEqual([seqs[0], seqs[0] + 1, seqs[0] + 2]);
    expect(await storedSeqs(sessionId)).toEqual(Array.from({ length: 30 }, (_, i) => i + 1));
    const events = await env.db.event.findMany({ where: { sessionId }, orderBy: { seq: 'asc' } });
    for (let i = 0; i < 30; i += 3) {
      const [a, b, c] = events.slice(i, i + 3).map((e) => e.data as { b: number; n: number });
      expect([a.n, b.n, c.n]).toEqual([0, 1, 2]);
      expect(new Set([a.b, b.b, c.b]).size).toBe(1);
    }
  });

  it('rolls the seq back with the transaction, leaving no gap', async () => {
    const sessionId = await newSession();
    await expect(
      env.db.$transaction(async (tx) => {
        await appendEvents(tx, { tenantId, sessionId, events: [{ type: 'text_delta', data: {} }] });
        throw new Error('boom');
      }),
    ).rejects.toThrow('boom');
    expect(await appendEvents(env.db, { tenantId, sessionId, events: [{ type: 'x', data: {} }] })).toEqual([
      1,
    ]);
  });

  it('fails a fenced append with LeaseLostError when the token does not match, and writes nothing', async () => {
    const sessionId = await newSession();
    await appendEvents(env.db, { tenantId, sessionId, events: [{ type: 'message_admitted', data: {} }] });
    const held = await holdLease(sessionId, 60_000);
    const before = await env.db.session.findUniqueOrThrow({ where: { id: sessionId } });

    const wrong = { token: randomUUID(), ms: 600_000 };
    const err = await env.db
      .$transaction((tx) =>
        appendEvents(tx, {
          tenantId,
          sessionId,
          events: [{ type: 'turn_started', data: {} }],
          lease: wrong,
        }),
      )
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(LeaseLostError);
    expect((err as Error).message).toContain(sessionId);

    // Without a transaction too.
    await expect(
      appendEvents(env.db, {
        tenantId,
        sessionId,
        events: [
          { type: 'turn_started', data: {} },
          { type: 'text_delta', data: {} },
        ],
        lease: wrong,
      }),
    ).rejects.toBeInstanceOf(LeaseLostError);

    const after = await env.db.session.findUniqueOrThrow({ where: { id: sessionId } });
    expect(await storedSeqs(sessionId)).toEqual([1]);
    expect(after.lastEventSeq).toBe(1);
    expect(after.leaseToken).toBe(held);
    expect(after.leaseExpiresAt).toEqual(before.leaseExpiresAt);
  });

  it('fails a fenced append on a session nobody holds', async () => {
    const sessionId = await newSession();
    await expect(
      appendEvents(env.db, {
        tenantId,
        sessionId,
        events: [{ type: 'turn_started', data: {} }],
        lease: { token: randomUUID(), ms: 1000 },
      }),
    ).rejects.toBeInstanceOf(LeaseLostError);
    expect(await env.db.event.count({ where: { sessionId } })).toBe(0);
    expect((await env.db.session.findUniqueOrThrow({ where: { id: sessionId } })).leaseExpiresAt).toBeNull();
  });

  it('appends under the held lease and extends lease_expires_at', async () => {
    const sessionId = await newSession();
    const token = await holdLease(sessionId, 1_000);
    const seqs = await env.db.$transaction((tx) =>
      appendEvents(tx, {
        tenantId,
        sessionId,
        events: [
          { type: 'turn_started', data: {} },
          { type: 'text_delta', data: {} },
        ],
        lease: { token, ms: 120_000 },
      }),
    );
    expect(seqs).toEqual([1, 2]);
    const row = await env.db.session.findUniqueOrThrow({ where: { id: sessionId } });
    expect(row.leaseToken).toBe(token);
    expect(row.leaseExpiresAt!.getTime()).toBeGreaterThan(Date.now() + 100_000);
    expect(row.leaseExpiresAt!.getTime()).toBeLessThanOrEqual(Date.now() + 121_000);
  });

  it('redacts secrets, nested too, before persistence', async () => {
    const sessionId = await newSession();
    await appendEvents(env.db, {
      tenantId,
      sessionId,
      events: [
        {
          type: 'tool_call_started',
          data: {
            authorization: 'Bearer SECRET-a',
            apiKey: 'SECRET-b',
            api_key: 'SECRET-c',
            token: 'SECRET-d',
            secret: 'SECRET-e',
            password: 'SECRET-f',
            tool: 'http_fetch',
            request: {
              headers: { Authorization: 'Bearer SECRET-g', accept: 'application/json' },
              auth: { Password: 'SECRET-h', user: 'bob' },
              list: [{ apiKey: 'SECRET-i', keep: 1 }, 'plain'],
            },
          },
        },
      ],
    });
    const [stored] = await env.db.event.findMany({ where: { sessionId } });
    expect(stored.data).toEqual({
      authorization: '[redacted]',
      apiKey: '[redacted]',
      api_key: '[redacted]',
      token: '[redacted]',
      secret: '[redacted]',
      password: '[redacted]',
      tool: 'http_fetch',
      request: {
        headers: { Authorization: '[redacted]', accept: 'application/json' },
        auth: { Password: '[redacted]', user: 'bob' },
        list: [{ apiKey: '[redacted]', keep: 1 }, 'plain'],
      },
    });
    expect(JSON.stringify(stored.data)).not.toMatch(/SECRET-/);
  });

  it('redacts common secret-bearing key variants too', async () => {
    const sessionId = await newSession();
    await appendEvents(env.db, {
      tenantId,
      sessionId,
      events: [
        {
          type: 'tool_call_started',
          data: {
            headers: { 'x-api-key': 'SECRET-1' },
            accessToken: 'SECRET-2',
            client_secret: 'SECRET-3',
            refresh_token: 'SECRET-4',
          },
        },
      ],
    });
    const [stored] = await env.db.event.findMany({ where: { sessionId } });
    expect(JSON.stringify(stored.data)).not.toMatch(/SECRET-/);
  });

  it('keeps Date values in event data', async () => {
    const sessionId = await newSession();
    const at = new Date('2025-06-01T12:00:00.000Z');
    await appendEvents(env.db, { tenantId, sessionId, events: [{ type: 'x', data: { at } }] });
    const [stored] = await env.db.event.findMany({ where: { sessionId } });
    expect(stored.data).toEqual({ at: at.toISOString() });
  });
});
