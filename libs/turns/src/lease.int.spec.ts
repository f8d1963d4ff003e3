import { newId } from '@switchboard/contracts';
import { createTestEnv, seedTenant, waitFor, type TestEnv } from '@switchboard/testing';
import type { Lease } from '@switchboard/store';
import { SessionLease } from './lease';

/** The per-session lease in Postgres: at most one worker holds a session at a time. */
jest.setTimeout(120_000);

describe('SessionLease', () => {
  let env: TestEnv;
  let tenantId: string;
  let agentId: string;

  beforeAll(async () => {
    env = await createTestEnv();
    ({ tenantId, agentId } = await seedTenant(env.db, 'lease'));
  });

  afterAll(async () => {
    await env?.cleanup();
  });

  async function newSession(): Promise<string> {
    const id = newId();
    await env.db.session.create({ data: { id, tenantId, agentId } });
    return id;
  }

  const leaseRow = (id: string) =>
    env.db.session.findUniqueOrThrow({
      where: { id },
      select: { leaseOwner: true, leaseToken: true, leaseExpiresAt: true },
    });

  it('lets exactly one of 10 concurrent claims win', async () => {
    const sessionId = await newSession();
    const results = await Promise.all(
      Array.from({ length: 10 }, (_, i) => SessionLease.claim(env.db, sessionId, `worker-${i}`, 30_000)),
    );
    const winners = results.filter((l): l is SessionLease => l !== null);
    expect(winners).toHaveLength(1);
    const row = await leaseRow(sessionId);
    expect(row.leaseToken).toBe(winners[0].token);
    expect(row.leaseOwner).toBe(`worker-${results.indexOf(winners[0])}`);
    expect(row.leaseExpiresAt!.getTime()).toBeGreaterThan(Date.now() + 20_000);
  });

  it('does not claim a session that does not exist', async () => {
    expect(await SessionLease.claim(env.db, newId(), 'w', 1000)).toBeNull();
  });

  it('blocks other claims while held, and lets one in once the lease expired', async () => {
    const sessionId = await newSession();
    const held = await SessionLease.claim(env.db, sessionId, 'holder', 500);
    expect(held).not.toBeNull();
    const heldUntil = (await leaseRow(sessionId)).leaseExpiresAt!.getTime();

    expect(await SessionLease.claim(env.db, sessionId, 'other', 30_000)).toBeNull();

    const taken = await waitFor(
      () => SessionLease.claim(env.db, sessionId, 'other', 30_000).then((l) => l ?? undefined),
      {
        what: 'the expired lease to be claimable',
        timeoutMs: 5_000,
        intervalMs: 20,
      },
    );
    // Not before the 500 ms lease ran out, both instants by the database's clock (the test's own
    // clock read after the claim came back runs late by however long that took on a loaded machine).
    const row = await leaseRow(sessionId);
    expect(row.leaseExpiresAt!.getTime() - 30_000).toBeGreaterThanOrEqual(heldUntil);
    expect(row.leaseOwner).toBe('other');
    expect(row.leaseToken).toBe(taken.token);
    expect(taken.token).not.toBe(held!.token);
  });

  it('renews while held; renew is false once another worker took the expired lease', async () => {
    const sessionId = await newSession();
    const first = (await SessionLease.claim(env.db, sessionId, 'first', 300))!;
    expect(first).not.toBeNull();
    const before = (await leaseRow(sessionId)).leaseExpiresAt!.getTime();
    expect(await first.renew()).toBe(true);
    expect((await leaseRow(sessionId)).leaseExpiresAt!.getTime()).toBeGreaterThanOrEqual(before);

    const second = await waitFor(
      () => SessionLease.claim(env.db, sessionId, 'second', 30_000).then((l) => l ?? undefined),
      { what: 'the second worker to take the lease', timeoutMs: 5_000, intervalMs: 20 },
    );
    expect(await first.renew()).toBe(false);
    // The failed renew did not touch the new holder's lease.
    const row = await leaseRow(sessionId);
    expect(row.leaseToken).toBe(second.token);
    expect(row.leaseOwner).toBe('second');
    expect(row.leaseExpiresAt!.getTime()).toBeGreaterThan(Date.now() + 20_000);
    expect(await second.renew()).toBe(true);
  });

  it('release frees the lease for the next claim at once', async () => {
    const sessionId = await newSession();
    const lease = (await SessionLease.claim(env.db, sessionId, 'w1', 60_000))!;
    expect(lease).not.toBeNull();
    expect(await SessionLease.claim(env.db, sessionId, 'w2', 60_000)).toBeNull();
    await lease.release();
    expect(await leaseRow(sessionId)).toEqual({ leaseOwner: null, leaseToken: null, leaseExpiresAt: null });
    const next = await SessionLease.claim(env.db, sessionId, 'w2', 60_000);
    expect(next).not.toBeNull();
    expect(await lease.renew()).toBe(false);
  });

  it("a stale holder's release does not free another worker's lease", async () => {
    const sessionId = await newSession();
    const stale = (await SessionLease.claim(env.db, sessionId, 'stale', 300))!;
    expect(stale).not.toBeNull();
    const current = await waitFor(
      () => SessionLease.claim(env.db, sessionId, 'current', 60_000).then((l) => l ?? undefined),
      { what: 'the lease to change hands', timeoutMs: 5_000, intervalMs: 20 },
    );
    await stale.release();
    const row = await leaseRow(sessionId);
    expect(row.leaseOwner).toBe('current');
    expect(row.leaseToken).toBe(current.token);
    expect(await SessionLease.claim(env.db, sessionId, 'third', 60_000)).toBeNull();
    expect(await current.renew()).toBe(true);
  });

  it('is the Lease (token and duration) that statements are fenced by', async () => {
    const sessionId = await newSession();
    const lease: Lease = (await SessionLease.claim(env.db, sessionId, 'w', 1234))!;
    expect({ token: lease.token, ms: lease.ms }).toEqual({ token: expect.any(String), ms: 1234 });
    expect((await leaseRow(sessionId)).leaseToken).toBe(lease.token);
  });
});
