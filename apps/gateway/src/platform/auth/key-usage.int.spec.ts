import { Writable } from 'node:stream';
import pino from 'pino';
import { newId } from '@switchboard/contracts';
import { poolOf } from '@switchboard/database';
import { recordKeyUse, sqlDbFor, type SqlDb, type SqlRunner } from '@switchboard/store';
import { createTestEnv, waitFor, type TestEnv } from '@switchboard/testing';
import { KeyUsage } from './key-usage';

/** api_keys.last_used_at, written coarse-grained and off the request (KeyUsage), on the running Postgres. */
describe('KeyUsage', () => {
  let env: TestEnv;
  let db: SqlDb;
  let tenantId: string;
  const logger = pino({ level: 'silent' });

  beforeAll(async () => {
    env = await createTestEnv();
    db = sqlDbFor(poolOf(env.db), 'test');
    tenantId = newId();
    await env.db.tenant.create({ data: { id: tenantId, name: 'keys' } });
  });

  afterAll(async () => {
    await env?.cleanup();
  });

  const newKey = async () => {
    const id = newId();
    await env.db.apiKey.create({ data: { id, tenantId, name: 'k', prefix: id.slice(0, 10), hash: id } });
    return id;
  };
  const lastUsed = async (id: string) =>
    (await env.db.apiKey.findUniqueOrThrow({ where: { id } })).lastUsedAt?.getTime() ?? null;

  it('recordKeyUse writes a key never used, not again within the interval, and again past it', async () => {
    const id = await newKey();
    const other = await newKey();
    expect(await recordKeyUse(db, id, 60_000)).toBe(1);
    const first = await lastUsed(id);
    expect(first).not.toBeNull();
    expect(await recordKeyUse(db, id, 60_000)).toBe(0);
    expect(await lastUsed(id)).toBe(first);
    // Used two minutes ago: older than the interval, so written.
    await env.db.apiKey.update({ where: { id }, data: { lastUsedAt: new Date(Date.now() - 120_000) } });
    expect(await recordKeyUse(db, id, 60_000)).toBe(1);
    expect(await lastUsed(id)).toBeGreaterThanOrEqual(first!);
    expect(await lastUsed(other)).toBeNull();
  });

  it('touch sends at most one write per key per interval, without making the caller wait', async () => {
    let now = 1_000;
    const sent: string[] = [];
    const counting: SqlRunner = {
      rows: (q) => db.rows(q),
      first: (q) => db.first(q),
      execute: (q) => {
        sent.push(q.toQuery().values[0] as string);
        return db.execute(q);
      },
    };
    const usage = new KeyUsage(counting, logger, 60_000, { now: () => now });
    const [a, b] = [await newKey(), await newKey()];
    usage.touch(a);
    usage.touch(a);
    usage.touch(b);
    now += 59_999;
    usage.touch(a);
    expect(sent).toEqual([a, b]);
    await waitFor(async () => (await lastUsed(a)) !== null && (await lastUsed(b)) !== null, {
      what: 'both keys written',
    });
    now += 2;
    usage.touch(a);
    expect(sent).toEqual([a, b, a]);
  });

  it('a failed write is logged, not thrown', async () => {
    const lines: { level: number; msg: string; keyId?: string }[] = [];
    const sink = new Writable({
      write(chunk: Buffer, _enc, done) {
        lines.push(JSON.parse(chunk.toString()));
        done();
      },
    });
    const failing: SqlRunner = {
      rows: () => Promise.reject(new Error('unused')),
      first: () => Promise.reject(new Error('unused')),
      execute: () => Promise.reject(new Error('connection refused')),
    };
    const usage = new KeyUsage(failing, pino(sink), 60_000);
    const id = newId();
    expect(() => usage.touch(id)).not.toThrow();
    await waitFor(() => lines.find((l) => l.keyId === id), { what: 'the failure logged' });
    expect(lines).toContainEqual(
      expect.objectContaining({ level: 40, keyId: id, msg: "could not record the API key's last use" }),
    );
  });
});
