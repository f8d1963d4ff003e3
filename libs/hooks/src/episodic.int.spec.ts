import { newId } from '@switchboard/contracts';
import { poolOf } from '@switchboard/database';
import { MemoryStore } from '@switchboard/memory';
import { createLogger, Metrics } from '@switchboard/observability';
import { sqlDbFor } from '@switchboard/store';
import { createTestEnv, seedSession, seedTenant, type TestEnv } from '@switchboard/testing';
import { SNAPSHOT_BOUNDS } from './archivist-snapshot';
import type { HookContext } from './context';
import { runEpisodicIndex } from './episodic';

/** The episodic-index hook on real Postgres: one searchable `episode` record per ended turn, once. */
jest.setTimeout(30_000);

describe('runEpisodicIndex', () => {
  let env: TestEnv;
  let seq = 0;
  const logger = createLogger({ service: 'test', level: 'silent' });

  beforeAll(async () => {
    env = await createTestEnv();
  });

  afterAll(async () => {
    await env?.cleanup();
  });

  const ctx = (): HookContext => {
    const metrics = new Metrics('test');
    return { db: env.db, sql: sqlDbFor(poolOf(env.db), 'hooks', metrics), logger, metrics };
  };

  async function tenant() {
    const ids = await seedTenant(env.db, `t-${newId()}`);
    const sessionId = await seedSession(env.db, ids.tenantId, ids.agentId);
    return { ...ids, sessionId };
  }
  type T = Awaited<ReturnType<typeof tenant>>;

  const message = (t: T, turnId: string, turnSeq: number, position: number, role: string, text: string) => ({
    id: newId(),
    tenantId: t.tenantId,
    agentId: t.agentId,
    sessionId: t.sessionId,
    turnId,
    turnSeq,
    position,
    role,
    kind: role === 'user' ? 'user_message' : 'assistant_message',
    origin: { type: 'api' },
    trust: 'trusted',
    authorityClass: role === 'user' ? 'user_direct' : 'runtime',
    body: { type: 'text', text },
  });

  async function turn(
    t: T,
    opts: { status: 'completed' | 'cancelled' | 'failed'; input: string; answer?: string; partial?: string },
  ) {
    const id = newId();
    const s = ++seq;
    await env.db.turn.create({
      data: {
        id,
        tenantId: t.tenantId,
        sessionId: t.sessionId,
        agentId: t.agentId,
        seq: s,
        inputMessageId: newId(),
        status: opts.status,
        finalText: opts.answer ?? null,
        completedAt: new Date(),
      },
    });
    await env.db.message.createMany({
      data: [
        message(t, id, s, 0, 'user', opts.input),
        ...(opts.partial ? [message(t, id, s, 1, 'assistant', opts.partial)] : []),
        ...(opts.answer ? [message(t, id, s, 2, 'assistant', opts.answer)] : []),
      ],
    });
    return id;
  }

  const run = (turnId: string, tenantId: string) =>
    runEpisodicIndex(ctx(), { turnId, tenantId, hook: 'episodic-index', trace: {} });
  const memoryOf = (agentId: string) => env.db.memoryRecord.findMany({ where: { agentId } });

  it('indexes a completed turn as one episode with provenance, searchable; a re-run writes nothing', async () => {
    const t = await tenant();
    const turnId = await turn(t, {
      status: 'completed',
      input: 'Which region hosts the billing service?\nAsking for the runbook.',
      answer: 'The billing service runs in eu-central-1.',
    });

    await expect(run(turnId, t.tenantId)).resolves.toBe('written');
    const [episode, ...more] = await memoryOf(t.agentId);
    expect(more).toEqual([]);
    expect(episode).toMatchObject({
      tenantId: t.tenantId,
      kind: 'episode',
      title: 'Which region hosts the billing service?',
      content:
        'User: Which region hosts the billing service?\nAsking for the runbook.\n\n' +
        'Assistant: The billing service runs in eu-central-1.',
      dedupeKey: `episode:${turnId}`,
    });
    expect(episode.provenance).toEqual({
      source: 'episodic',
      hook: 'episodic-index',
      turnId,
      sessionId: t.sessionId,
      messageSeqs: [0, 2],
    });
    const hits = await new MemoryStore(sqlDbFor(poolOf(env.db), 'test')).search({
      tenantId: t.tenantId,
      agentId: t.agentId,
      query: 'billing region',
    });
    expect(hits.map((h) => [h.kind, h.title])).toEqual([
      ['episode', 'Which region hosts the billing service?'],
    ]);

    await expect(run(turnId, t.tenantId)).resolves.toBe('already_done');
    expect(await memoryOf(t.agentId)).toHaveLength(1);
    expect(await env.db.hookRun.count({ where: { turnId, hook: 'episodic-index' } })).toBe(1);
  });

  it('indexes a cancelled turn with what it said so far', async () => {
    const t = await tenant();
    const turnId = await turn(t, {
      status: 'cancelled',
      input: 'Rotate the staging TLS certificate',
      partial: 'Rotating the certificate for staging.example.com now.',
    });
    await expect(run(turnId, t.tenantId)).resolves.toBe('written');
    const [episode] = await memoryOf(t.agentId);
    expect(episode.content).toBe(
      'User: Rotate the staging TLS certificate\n\n' +
        'Assistant (partial, the turn was cancelled): Rotating the certificate for staging.example.com now.',
    );
    expect(episode.provenance).toMatchObject({ messageSeqs: [0, 1] });
  });

  it('bounds a huge input and answer', async () => {
    const t = await tenant();
    const turnId = await turn(t, {
      status: 'completed',
      input: 'x'.repeat(50_000),
      answer: 'y'.repeat(50_000),
    });
    await expect(run(turnId, t.tenantId)).resolves.toBe('written');
    const [episode] = await memoryOf(t.agentId);
    expect(episode.title.length).toBeLessThanOrEqual(121);
    expect(episode.content.length).toBeLessThan(SNAPSHOT_BOUNDS.input + SNAPSHOT_BOUNDS.assistant + 100);
  });

  it('skips a failed turn and records the skip', async () => {
    const t = await tenant();
    const turnId = await turn(t, { status: 'failed', input: 'do the thing' });
    await expect(run(turnId, t.tenantId)).resolves.toBe('skipped');
    await expect(run(turnId, t.tenantId)).resolves.toBe('already_done');
    expect(await memoryOf(t.agentId)).toEqual([]);
    expect((await env.db.hookRun.findFirstOrThrow({ where: { turnId } })).output).toMatchObject({
      skipped: 'turn_failed',
    });
  });

  it('refuses another tenant’s turn and one that has not ended: nothing written', async () => {
    const owner = await tenant();
    const other = await tenant();
    const turnId = await turn(owner, { status: 'completed', input: 'secret plan', answer: 'ok' });
    await expect(run(turnId, other.tenantId)).resolves.toBe('skipped');
    const running = newId();
    await env.db.turn.create({
      data: {
        id: running,
        tenantId: owner.tenantId,
        sessionId: owner.sessionId,
        agentId: owner.agentId,
        seq: ++seq,
        inputMessageId: newId(),
        status: 'running',
      },
    });
    await expect(run(running, owner.tenantId)).resolves.toBe('skipped');
    expect(await env.db.hookRun.count({ where: { turnId: { in: [turnId, running] } } })).toBe(0);
    expect(
      await env.db.memoryRecord.count({ where: { tenantId: { in: [owner.tenantId, other.tenantId] } } }),
    ).toBe(0);
  });
});
