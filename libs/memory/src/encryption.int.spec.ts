import { randomBytes } from 'node:crypto';
import { newId } from '@switchboard/contracts';
import { poolOf, setContentCipher } from '@switchboard/database';
import { LocalKeyRing, TenantCipher } from '@switchboard/platform';
import { sqlDbFor, type SqlDb } from '@switchboard/store';
import { createTestEnv, type TestEnv } from '@switchboard/testing';
import { MemoryBlockStore } from './blocks';
import { memoryInsertSql, MemoryStore } from './store';
import type { MemoryWrite } from './types';

/**
 * Memory text sealed at rest (docs/adr/0067): records' titles and contents, blocks and their versions
 * are stored sealed for a tenant whose mode is on or strict and read back in clear; `on` keeps the
 * full-text index (derived in clear, in the statement), strict keeps none — by the tenant's setting or
 * by ENCRYPTION_DEFAULT_MODE.
 */
jest.setTimeout(120_000);

describe('memory text encrypted at rest', () => {
  let env: TestEnv;
  let db: SqlDb;
  let store: MemoryStore;
  let blocks: MemoryBlockStore;
  const ring = LocalKeyRing.fromSpec(`k1:${randomBytes(32).toString('base64')}`);

  const raw = async <R>(text: string, values: unknown[]): Promise<R[]> =>
    (await poolOf(env.db).query(text, values)).rows as R[];

  async function tenant(settings: object): Promise<{ tenantId: string; agentId: string }> {
    const tenantId = newId();
    await env.db.tenant.create({ data: { id: tenantId, name: 'enc-memory', settings } });
    return { tenantId, agentId: newId() };
  }

  const rec = (s: { tenantId: string; agentId: string }, title: string, content: string): MemoryWrite => ({
    ...s,
    kind: 'fact',
    title,
    content,
    dedupeKey: title,
    provenance: { source: 'api' },
  });

  beforeAll(async () => {
    env = await createTestEnv();
    db = sqlDbFor(poolOf(env.db), 'test');
    store = new MemoryStore(db);
    blocks = new MemoryBlockStore(db);
  });
  afterAll(async () => {
    setContentCipher(undefined);
    await env?.cleanup();
  });

  it('seals records of an `on` tenant, keeps full-text recall, and reads them whole and cut', async () => {
    setContentCipher(new TenantCipher(env.db, ring));
    const s = await tenant({ encryption: { mode: 'on' } });
    const long = `The user keeps a pet axolotl called Quetzalbert. ${'x'.repeat(400)}`;
    const ref = await store.add(rec(s, 'Axolotl pet', long));
    const [row] = await raw<{ title: string; content: string; search: string }>(
      'SELECT title, content, search::text AS search FROM memory_records WHERE tenant_id = $1',
      [s.tenantId],
    );
    expect(row.title.startsWith('sbe1.t.') && row.content.startsWith('sbe1.t.')).toBe(true);
    expect(`${row.title}${row.content}`).not.toMatch(/Quetzalbert|Axolotl/i);
    // `on`: the lexemes are kept (derived in clear), so full-text search still finds it.
    expect(row.search).toContain('quetzalbert');
    const [hit] = await store.search({ ...s, query: 'Quetzalbert' });
    expect(hit).toMatchObject({ sourceRef: ref, title: 'Axolotl pet', totalChars: long.length });
    expect(hit.snippet).toContain('Quetzalbert');
    // Read whole and cut after opening: a cut sealed value would not open.
    const doc = await store.get({ ...s, sourceRef: ref!, maxChars: 30 });
    expect(doc).toMatchObject({ content: long.slice(0, 30), truncated: true, totalChars: long.length });
    expect((await store.get({ ...s, sourceRef: ref! }))?.content).toBe(long);
    const { items } = await store.list(s);
    expect(items[0]).toMatchObject({
      title: 'Axolotl pet',
      preview: long.slice(0, 200),
      totalChars: long.length,
    });
  });

  it('keeps no lexemes for a tenant strict by ENCRYPTION_DEFAULT_MODE, and still lists its records', async () => {
    setContentCipher(new TenantCipher(env.db, ring, { defaultMode: 'strict' }));
    const s = await tenant({});
    const ref = await store.add(rec(s, 'Strict note', 'Marzipan is kept in the blue cupboard.'));
    const [row] = await raw<{ content: string; search: string }>(
      'SELECT content, search::text AS search FROM memory_records WHERE tenant_id = $1',
      [s.tenantId],
    );
    expect(row.search).toBe('');
    expect(row.content.startsWith('sbe1.t.')).toBe(true);
    expect(await store.search({ ...s, query: 'marzipan' })).toEqual([]);
    expect((await store.list(s)).items.map((i) => i.preview)).toEqual([
      'Marzipan is kept in the blue cupboard.',
    ]);
    expect((await store.get({ ...s, sourceRef: ref! }))?.content).toBe(
      'Marzipan is kept in the blue cupboard.',
    );
  });

  it('leaves an `off` tenant in clear, and refuses an insert built from records not prepared', async () => {
    setContentCipher(new TenantCipher(env.db, ring));
    const s = await tenant({ encryption: { mode: 'off' } });
    await store.add(rec(s, 'Plain', 'Plain words stay plain.'));
    const [row] = await raw<{ content: string }>('SELECT content FROM memory_records WHERE tenant_id = $1', [
      s.tenantId,
    ]);
    expect(row.content).toBe('Plain words stay plain.');
    expect(() => memoryInsertSql([rec(s, 'Unprepared', 'would go in clear')])).toThrow(/prepared/);
  });

  it('seals memory blocks and every version of them, and reads them back in clear', async () => {
    setContentCipher(new TenantCipher(env.db, ring));
    const s = await tenant({ encryption: { mode: 'strict' } });
    await blocks.put(s, 'persona', { content: 'I answer like a lighthouse keeper.' });
    const edited = await blocks.edit(s, {
      name: 'persona',
      edit: (c) => `${c} Foghorns are my hobby.`,
      turnId: newId(),
      callKey: 'k1',
    });
    expect(edited.content).toBe('I answer like a lighthouse keeper. Foghorns are my hobby.');
    const stored = await raw<{ content: string }>(
      `SELECT content FROM memory_blocks WHERE tenant_id = $1
       UNION ALL SELECT v.content FROM memory_block_versions v JOIN memory_blocks b ON b.id = v.block_id
        WHERE b.tenant_id = $1`,
      [s.tenantId],
    );
    expect(stored).toHaveLength(3);
    for (const r of stored) {
      expect(r.content.startsWith('sbe1.t.')).toBe(true);
      expect(r.content).not.toMatch(/lighthouse|Foghorn/);
    }
    expect((await blocks.get(s, 'persona'))?.content).toBe(edited.content);
    const versions = await blocks.versions(s, 'persona', { limit: 10 });
    expect(JSON.stringify(versions)).toContain('lighthouse keeper.');
  });
});
