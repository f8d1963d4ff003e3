import { newId } from '@switchboard/contracts';
import { poolOf } from '@switchboard/database';
import { MemoryStore } from '@switchboard/memory';
import { sqlDbFor } from '@switchboard/store';
import {
  createTestEnv,
  hookContext,
  hookJob,
  seedEndedTurn,
  seedTenantSession,
  seedTurn,
  transcriptMessage,
  type EndedTurnSeed,
  type SessionIds,
  type TestEnv,
} from '@switchboard/testing';
import { SNAPSHOT_BOUNDS } from './archivist-snapshot';
import { runEpisodicIndex } from './episodic';

/** The episodic-index hook on real Postgres: one searchable `episode` record per ended turn, once. */
jest.setTimeout(120_000);

describe('runEpisodicIndex', () => {
  let env: TestEnv;

  beforeAll(async () => {
    env = await createTestEnv();
  });

  afterAll(async () => {
    await env?.cleanup();
  });

  const tenant = () => seedTenantSession(env.db, `t-${newId()}`);

  async function turn(t: SessionIds, opts: EndedTurnSeed) {
    const row = await seedEndedTurn(env.db, t, opts);
    await env.db.message.createMany({
      data: [
        transcriptMessage(t, row, 0, 'user', opts.input),
        ...(opts.partial ? [transcriptMessage(t, row, 1, 'assistant', opts.partial)] : []),
        ...(opts.answer ? [transcriptMessage(t, row, 2, 'assistant', opts.answer)] : []),
      ],
    });
    return row.id;
  }

  const run = (turnId: string, tenantId: string) =>
    runEpisodicIndex(hookContext(env), hookJob('episodic-index', turnId, tenantId));
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
    const { id: running } = await seedTurn(env.db, owner, { status: 'running' });
    await expect(run(running, owner.tenantId)).resolves.toBe('skipped');
    expect(await env.db.hookRun.count({ where: { turnId: { in: [turnId, running] } } })).toBe(0);
    expect(
      await env.db.memoryRecord.count({ where: { tenantId: { in: [owner.tenantId, other.tenantId] } } }),
    ).toBe(0);
  });
});
