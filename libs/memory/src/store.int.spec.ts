import { newId } from '@switchboard/contracts';
import { poolOf } from '@switchboard/database';
import { sql, sqlDbFor, type SqlDb } from '@switchboard/store';
import { createTestEnv, type TestEnv } from '@switchboard/testing';
import { decodeSourceRef } from './source-ref';
import { memoryInsertSql, MemoryStore, RANK_CANDIDATES } from './store';
import type { MemoryKind, MemoryWrite } from './types';

/** The memory store on real Postgres: scoping, ranking, CJK search, exact bounded reads, idempotent writes. */
jest.setTimeout(120_000);

describe('MemoryStore', () => {
  let env: TestEnv;
  let db: SqlDb;
  let store: MemoryStore;
  const tenant = newId();
  const agent = newId();
  const otherAgent = newId();
  const otherTenant = newId();

  const rec = (
    title: string,
    content: string,
    over: Partial<MemoryWrite> & { kind?: MemoryKind } = {},
  ): MemoryWrite => ({
    tenantId: tenant,
    agentId: agent,
    kind: 'fact',
    title,
    content,
    dedupeKey: `${title}:${content}`,
    provenance: { source: 'api' },
    ...over,
  });

  beforeAll(async () => {
    env = await createTestEnv();
    db = sqlDbFor(poolOf(env.db), 'test');
    store = new MemoryStore(db);
    await store.write([
      rec('Favourite colour', 'The user said their favourite colour is teal.'),
      rec('Pets', 'The user has two cats named Miso and Tofu.'),
      rec('Colour of the car', 'A passing mention: the rental car was a grey colour.', { kind: 'episode' }),
      rec('喜好', '用户喜欢机器学习和统计学。'),
      rec('好み', '私は東京タワーの近くに住んでいます。猫が好きです。'),
      rec('学习计划', '用户正在学习日语，每天一个小时。'),
      // The same words for another agent of the tenant and for another tenant: never found.
      rec('Favourite colour', 'Other agent: favourite colour is crimson. 机器学习 東京タワー', {
        agentId: otherAgent,
      }),
      rec('Favourite colour', 'Other tenant: favourite colour is amber. 机器学习 東京タワー', {
        tenantId: otherTenant,
        agentId: newId(),
      }),
    ]);
  });

  afterAll(async () => {
    await env?.cleanup();
  });

  const search = (query: string, over: { kinds?: MemoryKind[]; limit?: number } = {}) =>
    store.search({ tenantId: tenant, agentId: agent, query, ...over });

  it('keeps no search lexemes for a tenant in strict encryption mode (docs/adr/0067): full-text finds nothing of it', async () => {
    const strict = newId();
    await env.db.tenant.create({
      data: { id: strict, name: 'strict', settings: { encryption: { mode: 'strict' } } },
    });
    const scope = { tenantId: strict, agentId: newId() };
    await store.write([rec('Favourite colour', 'The user said their favourite colour is teal.', scope)]);
    const [row] = await db.rows<{ search: string }>(
      sql`SELECT search::text AS search FROM memory_records WHERE tenant_id = ${strict}::uuid`,
    );
    expect(row.search).toBe('');
    expect(await store.search({ ...scope, query: 'favourite colour' })).toEqual([]);
    // The record itself is kept, and listed.
    expect(await db.rows(sql`SELECT 1 FROM memory_records WHERE tenant_id = ${strict}::uuid`)).toHaveLength(
      1,
    );
  });

  it('ranks the record that matches more terms, and in its title, first', async () => {
    const hits = await search('what is my favourite colour?');
    expect(hits.map((h) => h.title)).toEqual(['Favourite colour', 'Colour of the car']);
    expect(hits[0].score).toBeGreaterThan(hits[1].score);
    expect(hits[0].snippet).toBe('The user said their favourite colour is teal.');
    expect(hits[0].sourceRef).toMatch(/^mem_/);
    expect(new Date(hits[0].updatedAt).getTime()).toBeGreaterThan(0);
    // Stemming on both sides: "cat" finds "cats".
    expect((await search('cat')).map((h) => h.title)).toEqual(['Pets']);
  });

  it('leaves out records of the session recall runs for (they are in its history), and only those', async () => {
    // An agent of its own, so the shared fixture stays as the other tests expect it.
    const scope = { tenantId: tenant, agentId: newId() };
    const session = newId();
    await store.write([
      rec('Deploy window', 'Deploys happen on Tuesdays.', {
        ...scope,
        dedupeKey: 'episode:s1',
        kind: 'episode',
        provenance: { source: 'episodic', sessionId: session },
      }),
      rec('Deploy freeze', 'No deploys on Fridays.', { ...scope, dedupeKey: 'api:1' }),
    ]);
    const titles = async (excludeSessionId?: string) =>
      (await store.search({ ...scope, query: 'deploys', excludeSessionId })).map((h) => h.title).sort();
    expect(await titles()).toEqual(['Deploy freeze', 'Deploy window']);
    // Records without a session (added through the API) are never left out.
    expect(await titles(session)).toEqual(['Deploy freeze']);
    expect(await titles(newId())).toEqual(['Deploy freeze', 'Deploy window']);
  });

  it('filters by kind and bounds the number of hits', async () => {
    expect((await search('colour', { kinds: ['episode'] })).map((h) => h.title)).toEqual([
      'Colour of the car',
    ]);
    expect(await search('colour', { limit: 1 })).toHaveLength(1);
  });

  it('finds Chinese text by a word inside a run, and not by its characters in another order', async () => {
    const hits = await search('机器学习');
    expect(hits.map((h) => h.title)).toEqual(['喜好']);
    expect(hits[0].snippet).toContain('机器学习');
    expect(hits[0].snippet).not.toMatch(/机器 器学/);
    expect(await search('习学器机')).toEqual([]);
    // 学习 occurs in two records (学习计划 in its title too: ranked first).
    expect((await search('学习')).map((h) => h.title)).toEqual(['学习计划', '喜好']);
  });

  it('answers a Chinese question by the bigrams it shares with a record (a sentence is no keyword)', async () => {
    const zhAgent = newId();
    await store.write([
      rec('颜色', '用户最喜欢的颜色是蓝色。', { agentId: zhAgent }),
      rec('天气', '明天北京有雨。', { agentId: zhAgent }),
    ]);
    const hits = await store.search({ tenantId: tenant, agentId: zhAgent, query: '我最喜欢的颜色是什么？' });
    expect(hits.map((h) => h.title)).toEqual(['颜色']);
    expect(hits[0].snippet).toBe('用户最喜欢的颜色是蓝色。');
  });

  it('finds Japanese text, kana and kanji, including a one-character query', async () => {
    expect((await search('東京タワー')).map((h) => h.title)).toEqual(['好み']);
    expect((await search('猫')).map((h) => h.title)).toEqual(['好み']);
    expect((await search('日本語')).map((h) => h.title)).toEqual([]);
  });

  it('never shows another agent or another tenant a record, by search, get, list or forget', async () => {
    for (const q of ['favourite colour crimson amber', '机器学习', '東京タワー']) {
      const hits = await search(q);
      expect(hits.every((h) => !/crimson|amber|Other/.test(h.snippet))).toBe(true);
    }
    const theirs = await store.search({ tenantId: tenant, agentId: otherAgent, query: 'colour' });
    expect(theirs.map((h) => h.snippet)).toEqual([
      'Other agent: favourite colour is crimson. 机器学习 東京タワー',
    ]);
    const ref = theirs[0].sourceRef;
    expect(await store.get({ tenantId: tenant, agentId: agent, sourceRef: ref })).toBeNull();
    expect(await store.get({ tenantId: otherTenant, agentId: otherAgent, sourceRef: ref })).toBeNull();
    expect(await store.forget({ tenantId: tenant, agentId: agent, sourceRef: ref })).toBe(false);
    expect(await store.get({ tenantId: tenant, agentId: otherAgent, sourceRef: ref })).not.toBeNull();
    const listed = await store.list({ tenantId: tenant, agentId: agent, limit: 100 });
    expect(listed.items.some((i) => /Other/.test(i.preview))).toBe(false);
    expect(listed.items).toHaveLength(6);
  });

  it('returns exact content, cut to max_chars (default 12,000, at most 50,000) with a truncated flag', async () => {
    const long = `${'长文本 '.repeat(4000)}END`; // 16,003 characters
    await store.write([rec('Long', long, { kind: 'note', dedupeKey: 'long' })]);
    const [hit] = await search('END');
    const base = { tenantId: tenant, agentId: agent, sourceRef: hit.sourceRef };
    const dflt = await store.get(base);
    expect(dflt).toMatchObject({ title: 'Long', kind: 'note', truncated: true, totalChars: long.length });
    expect(dflt?.content).toBe(long.slice(0, 12_000));
    const whole = await store.get({ ...base, maxChars: 50_000 });
    expect(whole?.content).toBe(long);
    expect(whole?.truncated).toBe(false);
    expect((await store.get({ ...base, maxChars: 10 }))?.content).toBe(long.slice(0, 10));
    expect((await store.get({ ...base, maxChars: 10 ** 9 }))?.content).toBe(long);
    expect(await store.get({ ...base, sourceRef: 'mem_nope' })).toBeNull();
  });

  it('writes a record once per (agent, dedupe key), also when two writers race', async () => {
    const r = rec('Idem', 'Written once.', { dedupeKey: 'turn-1:fact-1' });
    const results = await Promise.all([store.write([r, r]), store.write([r]), store.write([r])]);
    expect(results.reduce((a, b) => a + b, 0)).toBe(1);
    expect(await store.write([{ ...r, content: 'changed' }])).toBe(0);
    // The same key for another agent is another record.
    expect(await store.write([{ ...r, agentId: otherAgent }])).toBe(1);
    const rows = await db.rows<{ content: string }>(
      sql`SELECT content FROM memory_records WHERE dedupe_key = 'turn-1:fact-1' AND agent_id = ${agent}::uuid`,
    );
    expect(rows).toEqual([{ content: 'Written once.' }]);
  });

  it("commits records with the caller's own statement in one transaction, or not at all", async () => {
    const r = rec('Tx', 'Inside a transaction.', { dedupeKey: 'tx-1' });
    await expect(
      db.transaction(async (tx) => {
        await tx.execute(memoryInsertSql([r]));
        throw new Error('hook failed after writing');
      }),
    ).rejects.toThrow('hook failed');
    expect(await search('transaction')).toEqual([]);
    // As a CTE of one statement next to the caller's own insert.
    const row = await db.first<{ n: number }>(sql`
      WITH mem AS (${memoryInsertSql([r])})
      SELECT count(*)::int AS n FROM mem`);
    expect(row?.n).toBe(1);
    expect((await search('transaction')).map((h) => h.title)).toEqual(['Tx']);
    expect(() => memoryInsertSql([{ ...r, content: '' }])).toThrow(RangeError);
    expect(
      (
        await db.first<{ n: number }>(
          sql`WITH mem AS (${memoryInsertSql([])}) SELECT count(*)::int AS n FROM mem`,
        )
      )?.n,
    ).toBe(0);
  });

  it('finds nothing for a query of stop words or punctuation only', async () => {
    expect(await search('what is the')).toEqual([]);
    expect(await search('?!')).toEqual([]);
  });

  it('ranks at most the newest RANK_CANDIDATES matches, so a common word costs the same at any size', async () => {
    const bulkAgent = newId();
    const bulk = (i: number, title: string, content: string): MemoryWrite =>
      rec(title, content, { agentId: bulkAgent, dedupeKey: `bulk-${i}` });
    // The oldest record matches best (both words, in its title too); then more newer records that
    // match one word than the bound.
    await store.write([bulk(0, 'zebra quokka', 'zebra quokka zebra quokka')]);
    await db.execute(
      sql`UPDATE memory_records SET created_at = now() - interval '1 day' WHERE dedupe_key = 'bulk-0'`,
    );
    const newer = Array.from({ length: RANK_CANDIDATES }, (_, i) =>
      bulk(i + 1, `note ${i}`, `a zebra, number ${i}`),
    );
    for (let i = 0; i < newer.length; i += 250) await store.write(newer.slice(i, i + 250));
    const scope = { tenantId: tenant, agentId: bulkAgent };
    const hits = await store.search({ ...scope, query: 'zebra quokka', limit: 3 });
    expect(hits).toHaveLength(3);
    expect(hits.map((h) => h.title)).not.toContain('zebra quokka');
    // A query the old record alone matches still finds it (the GIN index, not the newest 1,000).
    expect((await store.search({ ...scope, query: 'quokka' })).map((h) => h.title)).toEqual(['zebra quokka']);
    // Fewer candidates (recall's bound) rank only the newest matches: a strong match behind three
    // newer weak ones is found by the default bound and not by a bound of three.
    await store.write([bulk(-1, 'zebra strong', 'zebra zebra zebra')]);
    await db.execute(
      sql`UPDATE memory_records SET created_at = now() + interval '1 minute' WHERE dedupe_key = 'bulk--1'`,
    );
    for (const n of [-2, -3, -4]) {
      await store.write([
        bulk(n, `weak ${n}`, `a long note that mentions a zebra once among many other words ${n}`),
      ]);
      await db.execute(
        sql`UPDATE memory_records SET created_at = now() + ${-n} * interval '1 minute' WHERE dedupe_key = ${`bulk-${n}`}`,
      );
    }
    expect((await store.search({ ...scope, query: 'zebra', limit: 1 })).map((h) => h.title)).toEqual([
      'zebra strong',
    ]);
    const few = await store.search({ ...scope, query: 'zebra', limit: 3, candidates: 3 });
    expect(few.map((h) => h.title).sort()).toEqual(['weak -2', 'weak -3', 'weak -4']);
  });

  it('lists newest first in pages and forgets a record', async () => {
    const scope = { tenantId: tenant, agentId: agent };
    const first = await store.list({ ...scope, limit: 3 });
    expect(first.items).toHaveLength(3);
    expect(first.more).toBe(true);
    const last = first.items[2];
    const second = await store.list({
      ...scope,
      limit: 100,
      after: decodeSourceRef(last.sourceRef) ?? '',
    });
    const all = await store.list({ ...scope, limit: 100 });
    expect([...first.items, ...second.items].map((i) => i.sourceRef)).toEqual(
      all.items.map((i) => i.sourceRef),
    );
    const facts = await store.list({ ...scope, kinds: ['episode'] });
    expect(facts.items.map((i) => i.title)).toEqual(['Colour of the car']);

    const [pets] = await search('cats');
    expect(await store.forget({ ...scope, sourceRef: pets.sourceRef })).toBe(true);
    expect(await store.forget({ ...scope, sourceRef: pets.sourceRef })).toBe(false);
    expect(await search('cats')).toEqual([]);
  });
});
