import { randomBytes, randomUUID } from 'node:crypto';
import { CLAIMED_PREFERENCES_LIMIT, newId } from '@switchboard/contracts';
import { poolOf, setContentCipher } from '@switchboard/database';
import { contextPack, loadContext, type ContextSources } from '@switchboard/engine';
import { LocalKeyRing, TenantCipher } from '@switchboard/platform';
import { EmbedderRegistry } from '@switchboard/providers';
import { claimNext, SqlDb, type Sql, type SqlRunner } from '@switchboard/store';
import { createTestEnv, seedSession, seedTurn, type TestEnv } from '@switchboard/testing';
import { memoryContext } from './context-pack';
import { MemorySearch } from './search';
import { PREFERENCE_TAG, preferenceHit } from './store';
import type { MemoryWrite } from './types';

/**
 * The agent's memory read by the turn's claim (docs/adr/0076): its settings, vector set and newest
 * preferences come with the claim (sealed ones opened, rewound turns' left out), and the turn's
 * memory context then runs one statement, the input's search, instead of three.
 */
jest.setTimeout(120_000);

/** A runner that counts the statements it is given. */
function counting(inner: SqlRunner): { runner: SqlRunner; n: number } {
  const c: { runner: SqlRunner; n: number } = {
    n: 0,
    runner: {
      rows: <R>(q: Sql) => (c.n++, inner.rows<R>(q)),
      first: <R>(q: Sql) => (c.n++, inner.first<R>(q)),
      execute: (q: Sql) => (c.n++, inner.execute(q)),
    },
  };
  return c;
}

describe('the agent memory the claim reads', () => {
  let env: TestEnv;
  let db: SqlDb;
  const embedders = new EmbedderRegistry();
  const ring = LocalKeyRing.fromSpec(`k1:${randomBytes(32).toString('base64')}`);

  beforeAll(async () => {
    env = await createTestEnv();
    db = new SqlDb(poolOf(env.db), { component: 'test' });
  });
  afterAll(async () => {
    setContentCipher(undefined);
    await env?.cleanup();
  });

  function sources(runner: SqlRunner): ContextSources {
    const m = memoryContext(new MemorySearch(runner, embedders), { limit: 5, timeoutMs: 2_000 });
    return { memory: m.episodic, contextPack: contextPack({ memory: m.pack, workItems: async () => null }) };
  }

  it('carries the newest preferences opened, and leaves the turn one memory statement', async () => {
    setContentCipher(new TenantCipher(env.db, ring));
    const tenantId = newId();
    await env.db.tenant.create({
      data: { id: tenantId, name: 'claimed-memory', settings: { encryption: { mode: 'on' } } },
    });
    const agent = await env.db.agent.create({
      data: {
        id: newId(),
        tenantId,
        name: 'claimed',
        instructions: 'be brief',
        model: 'm',
        memory: { recall: 'fts' },
      },
    });
    const s = { tenantId, agentId: agent.id };
    const sessionId = await seedSession(env.db, tenantId, agent.id);
    const rewound = await seedTurn(
      env.db,
      { ...s, sessionId },
      { status: 'completed', rewoundAt: new Date() },
    );
    const search = new MemorySearch(db, embedders);
    const rec = (title: string, content: string, over: Partial<MemoryWrite> = {}): MemoryWrite => ({
      ...s,
      kind: 'fact',
      title,
      content,
      dedupeKey: title,
      provenance: { source: 'api' },
      tags: [PREFERENCE_TAG],
      ...over,
    });
    const long = `The user wants answers in Esperanto. ${'x'.repeat(1500)}`;
    // One at a time: each newer than the one before.
    for (let i = 0; i < CLAIMED_PREFERENCES_LIMIT; i++)
      await search.store.write([rec(`Pref ${i}`, `Likes ${i}.`)]);
    await search.store.write([rec('Language', long)]);
    // The newest of all, from a rewound turn: the session goes on as if it had never been said.
    await search.store.write([
      rec('Rewound', 'Likes nothing.', { provenance: { source: 'api', turnId: rewound.id } }),
    ]);
    await search.store.write([rec('Deploy window', 'Deploys go out on Tuesdays.', { tags: [] })]);

    const turn = await seedTurn(env.db, { ...s, sessionId }, { status: 'queued' });
    const claim = await claimNext(db, {
      ...s,
      sessionId,
      turnId: turn.id,
      owner: 'test',
      lease: { token: randomUUID(), ms: 30_000 },
    });
    const claimed = claim.next!.agent.claimedMemory!;
    expect(claimed).toMatchObject({ settings: { recall: 'fts' }, embedder: null, vectorsModel: null });
    // Newest first, the rewound one left out, sealed titles and contents opened.
    expect(claimed.preferences.map((p) => p.title)).toEqual([
      'Language',
      'Pref 4',
      'Pref 3',
      'Pref 2',
      'Pref 1',
    ]);
    expect(claimed.preferences[0]).toMatchObject({ content: long, totalChars: -1 });
    // Cut and counted as `MemoryStore.preferences` reads it.
    const [direct] = await search.store.preferences({ ...s, limit: 1 });
    expect(preferenceHit(claimed.preferences[0])).toEqual(direct);

    const q = { ...s, sessionId, turnId: turn.id, input: 'when is the deploy window?', hasMemory: true };
    const read = counting(db);
    const ctx = await loadContext(sources(read.runner), { ...q, claimedMemory: claimed });
    expect(ctx.contextPack).toContain('Deploy window');
    expect(ctx.contextPack).toContain('Esperanto');
    expect(ctx.contextPack).not.toContain('Likes nothing');
    // The search alone: no read of the agent's settings, none of its preferences.
    expect(read.n).toBe(1);

    // Without the claim's read, the same context in three statements.
    const unread = counting(db);
    const again = await loadContext(sources(unread.runner), q);
    expect(again.contextPack).toBe(ctx.contextPack);
    expect(unread.n).toBe(3);
  });
});
