import { newId } from '@switchboard/contracts';
import { poolOf } from '@switchboard/database';
import { sqlDbFor, type SqlDb } from '@switchboard/store';
import { createTestEnv, type TestEnv } from '@switchboard/testing';
import { OriginalsStore } from './originals';

/** The originals store on real Postgres: tenant scoping, expiry, the sweep, a repeated keep. */
jest.setTimeout(120_000);

describe('OriginalsStore', () => {
  let env: TestEnv;
  let db: SqlDb;
  const tenant = newId();
  const other = newId();
  const write = (id: string, tenantId = tenant, content = `original ${id}`) => ({
    tenantId,
    id,
    turnId: newId(),
    callId: 'c1',
    tool: 'run_tests',
    kind: 'log',
    content,
  });

  beforeAll(async () => {
    env = await createTestEnv();
    db = sqlDbFor(poolOf(env.db), 'test');
  });
  afterAll(() => env?.cleanup());

  it('finds an original only in its own tenant', async () => {
    const store = new OriginalsStore(db, 3_600_000);
    await store.keep(write('a'.repeat(24), tenant, 'añb€ exact'));
    expect(await store.get(tenant, 'a'.repeat(24))).toMatchObject({
      tool: 'run_tests',
      kind: 'log',
      content: 'añb€ exact',
    });
    expect(await store.get(other, 'a'.repeat(24))).toBeUndefined();
    expect(await store.get(tenant, 'b'.repeat(24))).toBeUndefined();
    const row = await env.db.toolResultOriginal.findFirstOrThrow({
      where: { tenantId: tenant, id: 'a'.repeat(24) },
    });
    expect(row.bytes).toBe(Buffer.byteLength('añb€ exact'));
  });

  it('the same original in two tenants is two rows', async () => {
    const store = new OriginalsStore(db, 3_600_000);
    await store.keep(write('c'.repeat(24), tenant, 'same'));
    await store.keep(write('c'.repeat(24), other, 'same'));
    expect(await env.db.toolResultOriginal.count({ where: { id: 'c'.repeat(24) } })).toBe(2);
  });

  it('a repeated keep only moves the expiry later', async () => {
    const short = new OriginalsStore(db, 60_000);
    const long = new OriginalsStore(db, 7_200_000);
    const id = 'd'.repeat(24);
    await long.keep({ ...write(id), callId: 'first' });
    const first = await env.db.toolResultOriginal.findFirstOrThrow({ where: { tenantId: tenant, id } });
    await short.keep({ ...write(id), callId: 'second' });
    const again = await env.db.toolResultOriginal.findFirstOrThrow({ where: { tenantId: tenant, id } });
    expect(again.expiresAt).toEqual(first.expiresAt);
    expect(again.callId).toBe('first');
  });

  it('an expired original is not found, and the sweep deletes expired ones only', async () => {
    const expired = new OriginalsStore(db, -1000);
    const kept = new OriginalsStore(db, 3_600_000);
    const ids = Array.from({ length: 5 }, (_, i) => `${i}`.repeat(24));
    for (const id of ids) await expired.keep(write(id));
    await kept.keep(write('e'.repeat(24)));
    expect(await kept.get(tenant, ids[0])).toBeUndefined();
    expect(await kept.sweep()).toBeGreaterThanOrEqual(5);
    expect(await env.db.toolResultOriginal.count({ where: { id: { in: ids } } })).toBe(0);
    expect(await kept.get(tenant, 'e'.repeat(24))).toBeDefined();
    expect(await kept.sweep()).toBe(0);
  });
});
