import { newId } from '@switchboard/contracts';
import { poolOf } from '@switchboard/database';
import { contextPack, loadContext, type ContextQuery, type ContextSources } from '@switchboard/engine';
import {
  EmbedderRegistry,
  normalize,
  type EmbeddingProvider,
  type EmbeddingRequest,
  type EmbeddingResponse,
} from '@switchboard/providers';
import { forkSession, rewindSession, sqlDbFor, type SqlDb } from '@switchboard/store';
import {
  createTestEnv,
  seedEndedTurn,
  seedTenantSession,
  transcriptMessage,
  type SessionIds,
  type TestEnv,
} from '@switchboard/testing';
import { ToolRegistry, type ToolContext } from '@switchboard/tools';
import { memoryContext } from './context-pack';
import { MemorySearch } from './search';
import { PREFERENCE_TAG } from './store';
import { memoryTools } from './tools';
import type { MemoryWrite } from './types';
import { embedPending } from './vectors';

/**
 * Memory derived from rewound turns (docs/adr/0053): excluded, not deleted. Episodic recall, the
 * context pack's facts and preferences, the memory_search tool and every search path (full-text,
 * vectors, hybrid) leave out a record whose provenance names a rewound turn (`turnId`, or one of the
 * archivist's `turnIds`); the listing still shows it, and a record written after the rewind by a hook
 * that was still running is left out as well.
 */
jest.setTimeout(120_000);

/** Every text about deploys on one axis, anything else on another: a "meaning" the test controls. */
class DeployEmbedder implements EmbeddingProvider {
  readonly name = 'deploys';
  dimensionsOf(model: string): number | undefined {
    return model === 'v1' ? 2 : undefined;
  }
  embed(r: EmbeddingRequest): Promise<EmbeddingResponse> {
    const vectors = r.texts.map((t) =>
      normalize(Float32Array.from(/deploy|ship|release/i.test(t) ? [1, 0.01] : [0.01, 1])),
    );
    return Promise.resolve({ vectors, inputTokens: r.texts.length });
  }
}

describe('memory of rewound turns', () => {
  let env: TestEnv;
  let db: SqlDb;
  const embedders = new EmbedderRegistry();
  embedders.register(new DeployEmbedder());

  beforeAll(async () => {
    env = await createTestEnv();
    db = sqlDbFor(poolOf(env.db), 'test');
  });

  afterAll(async () => {
    await env?.cleanup();
  });

  const rec = (
    s: SessionIds,
    title: string,
    content: string,
    over: Partial<MemoryWrite> = {},
  ): MemoryWrite => ({
    tenantId: s.tenantId,
    agentId: s.agentId,
    kind: 'fact',
    title,
    content,
    dedupeKey: `${title}:${newId()}`,
    provenance: { source: 'api' },
    ...over,
  });

  /** A session of three ended turns, with records distilled from each and one added over the API. */
  async function seeded(name: string, embedder: string | null) {
    const s = await seedTenantSession(env.db, name);
    if (embedder) await env.db.agent.update({ where: { id: s.agentId }, data: { embedder } });
    const turns = [];
    for (let n = 1; n <= 3; n++) {
      const turn = await seedEndedTurn(env.db, s, { status: 'completed', input: `q${n}`, answer: `a${n}` });
      const { inputMessageId } = await env.db.turn.findUniqueOrThrow({ where: { id: turn.id } });
      await env.db.message.create({
        data: { ...transcriptMessage(s, turn, 0, 'user', `q${n}`), id: inputMessageId },
      });
      turns.push(turn);
    }
    const [t1, t2, t3] = turns;
    const from = (turnId: string, extra: Record<string, unknown> = {}) => ({
      provenance: { source: 'episodic' as const, turnId, sessionId: s.sessionId, ...extra },
    });
    await new MemorySearch(db, embedders).store.write([
      rec(s, 'Deploy episode one', 'We talked about the deploy of billing.', {
        kind: 'episode',
        ...from(t1.id),
      }),
      rec(s, 'Deploy episode two', 'We talked about the deploy of search.', {
        kind: 'episode',
        ...from(t2.id),
      }),
      // The archivist's distillation of turns 1 and 3: it names the last as turnId and both in turnIds.
      rec(s, 'Deploy window', 'Deploys happen on Thursdays.', {
        provenance: {
          source: 'archivist',
          turnId: t3.id,
          sessionId: s.sessionId,
          turnIds: [t1.id, t3.id],
        } as never,
      }),
      rec(s, 'Deploy freeze', 'No deploy on Fridays.', {
        provenance: {
          source: 'archivist',
          turnId: t1.id,
          sessionId: s.sessionId,
          turnIds: [t1.id, t2.id],
        } as never,
      }),
      rec(s, 'Deploy approvals', 'Every deploy is announced in #ops.', {
        tags: [PREFERENCE_TAG],
        ...from(t3.id),
      }),
      rec(s, 'Deploy language', 'Deploy notes are written in English.', {
        tags: [PREFERENCE_TAG],
        ...from(t1.id),
      }),
      rec(s, 'Deploy owner', 'Deploys are owned by the platform team.', { kind: 'note' }),
    ]);
    if (embedder)
      expect((await embedPending(db, embedders, s, { batchSize: 20, maxBatches: 5 })).done).toBe(true);
    return { s, t1, t2, t3 };
  }

  const sources = (): ContextSources => {
    const m = memoryContext(new MemorySearch(db, embedders, { embedTimeoutMs: 1_000 }), {
      limit: 10,
      timeoutMs: 5_000,
    });
    return { memory: m.episodic, contextPack: contextPack({ memory: m.pack, workItems: async () => null }) };
  };
  // Recall leaves out records of its own session (their turns are in the history): ask from another.
  const query = (s: SessionIds, input: string): ContextQuery => ({
    tenantId: s.tenantId,
    agentId: s.agentId,
    sessionId: newId(),
    turnId: newId(),
    input,
  });
  const toolCtx = (s: SessionIds): ToolContext => ({
    tenantId: s.tenantId,
    agentId: s.agentId,
    sessionId: newId(),
    turnId: newId(),
    callId: 'c1',
    idempotencyKey: 'k',
    signal: new AbortController().signal,
    resumed: false,
    writeGate: { isOpen: () => true },
  });
  const titlesOfSearch = async (s: SessionIds, mode: 'fts' | 'vector' | 'hybrid') =>
    (await new MemorySearch(db, embedders).search({ ...s, query: 'deploy', limit: 20, mode })).hits
      .map((h) => h.title)
      .sort();
  const KEPT = ['Deploy episode one', 'Deploy language', 'Deploy owner'];
  const ALL = [
    'Deploy approvals',
    'Deploy episode one',
    'Deploy episode two',
    'Deploy freeze',
    'Deploy language',
    'Deploy owner',
    'Deploy window',
  ];

  for (const embedder of [null, 'deploys/v1']) {
    it(`leaves them out of recall, the context pack, memory_search and search (${embedder ? 'hybrid' : 'full-text'})`, async () => {
      const { s, t2 } = await seeded(`rewound-${embedder ?? 'fts'}`, embedder);
      const modes = embedder ? (['fts', 'vector', 'hybrid'] as const) : (['fts'] as const);
      for (const mode of modes) expect(await titlesOfSearch(s, mode)).toEqual(ALL);

      await rewindSession(db, { tenantId: s.tenantId, sessionId: s.sessionId, turnId: t2.id });

      for (const mode of modes) expect(await titlesOfSearch(s, mode)).toEqual(KEPT);
      const ctx = await loadContext(sources(), query(s, 'how do we deploy'));
      const seen = `${ctx.memory ?? ''}\n${ctx.contextPack ?? ''}`;
      for (const title of KEPT) expect(seen).toContain(title);
      for (const title of ALL.filter((t) => !KEPT.includes(t))) expect(seen).not.toContain(title);
      expect(ctx.contextPack).toContain('Deploy language');
      expect(ctx.contextPack).not.toContain('Deploy approvals');

      const tools = new ToolRegistry(memoryTools(new MemorySearch(db, embedders)));
      const found = (await tools
        .get('memory_search')
        ?.execute({ query: 'deploy', limit: 20 }, toolCtx(s))) as {
        results: { title: string }[];
      };
      expect(found.results.map((r) => r.title).sort()).toEqual(KEPT);

      // Excluded, not deleted: the listing still shows every record, with its provenance.
      const listed = await new MemorySearch(db, embedders).store.list({ ...s, limit: 50 });
      expect(listed.items.map((i) => i.title).sort()).toEqual(ALL);
    });
  }

  it('leaves out a record a hook writes after the rewind, and nothing of another agent', async () => {
    const { s, t3 } = await seeded('rewound-late', null);
    await rewindSession(db, { tenantId: s.tenantId, sessionId: s.sessionId, turnId: t3.id });
    // The episodic hook of turn 3 ends after the rewind: its record is written, and left out.
    await new MemorySearch(db, embedders).store.write([
      rec(s, 'Deploy episode three', 'We talked about the deploy of mail.', {
        kind: 'episode',
        provenance: { source: 'episodic', turnId: t3.id, sessionId: s.sessionId },
      }),
    ]);
    const titles = await titlesOfSearch(s, 'fts');
    expect(titles).not.toContain('Deploy episode three');
    expect(titles).toContain('Deploy episode one');
    // Another agent's record naming a turn id of this one is the other agent's business: a rewound
    // turn is matched among the record's own agent's turns only.
    const other = await seedTenantSession(env.db, 'rewound-other');
    await new MemorySearch(db, embedders).store.write([
      rec(other, 'Foreign deploy', 'Their deploy window.', {
        provenance: { source: 'episodic', turnId: t3.id, sessionId: s.sessionId },
      }),
    ]);
    expect(await titlesOfSearch(other, 'fts')).toEqual(['Foreign deploy']);
  });

  it('recalls in a fork nothing distilled from the sessions it was forked from; other sessions as before', async () => {
    const { s, t1, t3 } = await seeded('fork-recall', null);
    const fork = await forkSession(db, {
      tenantId: s.tenantId,
      sessionId: s.sessionId,
      turnId: t1.id,
      position: 'after',
    });
    const forkOfFork = await forkSession(db, {
      tenantId: s.tenantId,
      sessionId: fork.sessionId,
      turnId: (await env.db.turn.findFirstOrThrow({ where: { sessionId: fork.sessionId } })).id,
      position: 'after',
    });
    const recalled = async (sessionId: string) => {
      const ctx = await loadContext(sources(), { ...query(s, 'how do we deploy'), sessionId });
      return `${ctx.memory ?? ''}\n${ctx.contextPack ?? ''}`;
    };
    // Recall finds only the note added over the API (no session) in the fork and in its fork: turn 1's
    // records are in their history, turn 2's and 3's are the parent's later branch. The preferences
    // are the user's standing ones: shown in every session whatever it was distilled from (ADR 0052).
    const preferences = ['Deploy approvals', 'Deploy language'];
    for (const sessionId of [fork.sessionId, forkOfFork.sessionId, s.sessionId]) {
      const seen = await recalled(sessionId);
      for (const title of ['Deploy owner', ...preferences]) expect(seen).toContain(title);
      for (const title of ALL.filter((t) => t !== 'Deploy owner' && !preferences.includes(t))) {
        expect(seen).not.toContain(title);
      }
    }
    // Another session of the agent recalls them all.
    const elsewhere = await recalled(newId());
    for (const title of ALL) expect(elsewhere).toContain(title);
    expect(t3.id).not.toBe(t1.id);
  });
});
