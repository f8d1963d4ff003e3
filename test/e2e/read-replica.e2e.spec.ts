import { spawnSync, execFileSync } from 'node:child_process';
import { rmSync } from 'node:fs';
import path from 'node:path';
import { Client } from 'pg';
import type { Metrics } from '@switchboard/observability';
import { METRICS } from '@switchboard/platform';
import { createTestEnv, waitFor, type TestEnv } from '@switchboard/testing';
import { Api, newTenant } from '../support/api';
import { SseClient } from '../support/sse';
import { FIXTURES, startGateway, startHarness, startHooks, type Running } from '../support/stack';

/**
 * Switchboard with a streaming read replica (docs/adr/0042): a hot standby of the test's Postgres made
 * by `scripts/pg-replica.sh` (pg_basebackup + standby), the gateway's DATABASE_READ_URL pointing at it.
 * Through the public HTTP API: a turn run with wait:true is seen at once by GET of the turn, the
 * transcript and the journal (read-your-writes); with the standby's replay paused (lag injected) the
 * same reads are answered by the primary after READ_REPLICA_MAX_WAIT_MS, with nothing lost or
 * duplicated, and an SSE catch-up delivers every event once and in order; after replay resumes the
 * reads come from the replica again; with the standby stopped, from the primary. Which side served
 * is read from the gateway's switchboard_db_reads_total counter. Skips when no standby can be made
 * (no pg_basebackup, or a primary that refuses replication: scripts/pg-replica.sh check says why).
 */
jest.setTimeout(60_000);

const SCRIPT = path.resolve(__dirname, '../../scripts/pg-replica.sh');
const ADMIN = 'test-admin-token-0123456789';

const check = spawnSync(SCRIPT, ['check'], { encoding: 'utf8', timeout: 20_000 });
const available = check.status === 0;
if (!available) {
  console.warn(
    `test/e2e/read-replica.e2e.spec.ts skipped: no local standby can be made: ${(check.stderr || check.error?.message || '').trim()}`,
  );
}

function replica(...args: string[]): string {
  return execFileSync(SCRIPT, args, { encoding: 'utf8', timeout: 30_000 }).trim();
}

(available ? describe : describe.skip)('Switchboard with a streaming read replica', () => {
  let env: TestEnv;
  let dir: string | undefined;
  let standbyUrl: string;
  const apps: Running[] = [];
  let metrics: Metrics;
  let api: Api;
  let agentId: string;
  let sessionId: string;
  const turnIds: string[] = [];

  beforeAll(async () => {
    // The test's database first: the base backup then holds it.
    env = await createTestEnv();
    const started = /^port=(\d+) dir=(.+)$/.exec(replica('start'));
    if (!started) throw new Error('scripts/pg-replica.sh start printed no port');
    dir = started[2];
    const url = new URL(env.databaseUrl);
    url.port = started[1];
    standbyUrl = url.toString();
    const config = env.config({
      DATABASE_READ_URL: standbyUrl,
      READ_REPLICA_MAX_WAIT_MS: '300',
      SCRIPTED_FIXTURES_DIR: FIXTURES,
    });
    const gateway = await startGateway(config);
    apps.push(gateway, await startHarness(config), await startHooks(config));
    metrics = gateway.app.get<Metrics>(METRICS);
    ({ api } = await newTenant(gateway.url, ADMIN));
    const agent = await api.post('/v1/agents', {
      name: 'counter',
      instructions: 'Count words.',
      tools: ['word_count'],
    });
    expect(agent.status).toBe(201);
    agentId = agent.body.id;
    sessionId = (await api.post('/v1/sessions', { agentId })).body.id;
  });

  afterAll(async () => {
    // Workers first so nothing is mid-flight when the connections go; the standby before the
    // database it copies is dropped.
    for (const app of apps.reverse()) await app.close();
    if (dir) {
      replica('stop', dir);
      rmSync(dir, { recursive: true, force: true });
    }
    await env?.cleanup();
  });

  /** The gateway's routed reads so far, by `target:reason`. */
  async function reads(): Promise<Record<string, number>> {
    const counts: Record<string, number> = {};
    for (const v of (await metrics.dbReads.get()).values)
      counts[`${v.labels.target}:${v.labels.reason}`] = v.value;
    return counts;
  }

  /** Whether the standby shows the turn (the replica's own view, asked directly). */
  async function onStandby(turnId: string): Promise<boolean> {
    const client = new Client({ connectionString: standbyUrl });
    await client.connect();
    try {
      return (await client.query('SELECT 1 FROM turns WHERE id = $1', [turnId])).rowCount === 1;
    } finally {
      await client.end();
    }
  }

  /** One message with wait:true: the turn it ran, completed. */
  async function say(content: string): Promise<string> {
    const res = await api.post(`/v1/sessions/${sessionId}/messages`, { content, wait: true });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ status: 'completed' });
    turnIds.push(res.body.id);
    return res.body.id as string;
  }

  /** GET of the turn, right after it ended: completed, with its word_count call. */
  async function expectTurn(turnId: string, words: number) {
    const turn = await api.get(`/v1/turns/${turnId}`);
    expect(turn.status).toBe(200);
    expect(turn.body).toMatchObject({ id: turnId, status: 'completed', stopReason: 'final_answer' });
    expect(turn.body.finalText).toContain(`"words":${words}`);
    expect(turn.body.toolCalls).toEqual([
      expect.objectContaining({ name: 'word_count', status: 'completed' }),
    ]);
  }

  /** Transcript and journal through the API: every turn so far, each row once, seqs 1..n. */
  async function expectHistory() {
    const transcript = await api.get(`/v1/sessions/${sessionId}/messages?limit=200`);
    expect(transcript.status).toBe(200);
    expect(transcript.body.data.map((m: { role: string }) => m.role)).toEqual(
      turnIds.flatMap(() => ['user', 'assistant', 'tool', 'assistant']),
    );
    const ids = transcript.body.data.map((m: { id: string }) => m.id);
    expect(new Set(ids).size).toBe(ids.length);

    const events = await api.get(`/v1/sessions/${sessionId}/events?limit=500`);
    expect(events.status).toBe(200);
    const data = events.body.data as { seq: number; type: string; turnId: string | null }[];
    const journal = await env.db.event.findMany({ where: { sessionId }, orderBy: { seq: 'asc' } });
    expect(data.map((e) => e.seq)).toEqual(journal.map((e) => e.seq));
    expect(data.map((e) => e.seq)).toEqual(data.map((_, i) => i + 1));
    for (const turnId of turnIds) {
      expect(data.filter((e) => e.type === 'turn_completed' && e.turnId === turnId)).toHaveLength(1);
    }
  }

  it('reads a turn, its transcript and its journal at once after wait:true, from the replica', async () => {
    const turnId = await say('one two three four');
    await expectTurn(turnId, 4);
    await expectHistory();
    // A streaming standby on this machine replays within the bound: the replica served reads.
    await waitFor(
      async () => {
        const before = (await reads())['replica:caught_up'] ?? 0;
        expect((await api.get(`/v1/turns/${turnId}`)).status).toBe(200);
        return ((await reads())['replica:caught_up'] ?? 0) > before;
      },
      { what: 'a GET of the turn served by the replica', timeoutMs: 20_000 },
    );
  });

  it('with replay paused (a lagging replica), answers from the primary: nothing stale, lost or duplicated', async () => {
    replica('pause', dir!);
    const before = await reads();
    const first = await say('five six');
    const second = await say('seven eight nine');
    // The lag is real: the standby has not seen the turns.
    expect(await onStandby(first)).toBe(false);
    await expectTurn(first, 2);
    await expectTurn(second, 3);
    await expectHistory();
    const after = await reads();
    expect(after['replica:caught_up'] ?? 0).toBe(before['replica:caught_up'] ?? 0);
    expect((after['primary:lagging'] ?? 0) - (before['primary:lagging'] ?? 0)).toBeGreaterThanOrEqual(4);
    expect((await metrics.replicaLagBytes.get()).values[0].value).toBeGreaterThan(0);
  });

  it('with replay paused, an SSE catch-up then live delivers every event once and in order', async () => {
    // Still paused: the catch-up (after seq 3) reads the journal on the primary.
    const stream = await SseClient.open(`${api.baseUrl}/v1/sessions/${sessionId}/stream`, {
      key: api.key,
      lastEventId: '3',
    });
    try {
      const admitted = await api.post(`/v1/sessions/${sessionId}/messages`, { content: 'ten eleven' });
      expect(admitted.status).toBe(202);
      const turnId = admitted.body.turnId as string;
      turnIds.push(turnId);
      await stream.until(
        (c) => c.journaled.some((f) => f.event === 'turn_completed' && f.data.turnId === turnId),
        'the live turn to complete on the stream',
      );
      const seqs = stream.journaled.map((f) => Number(f.id));
      const last = seqs[seqs.length - 1];
      // Every journaled seq after 3 up to the last one received (the turn's end): none missing,
      // none twice, in order.
      const journal = await env.db.event.findMany({
        where: { sessionId, seq: { gt: 3, lte: last } },
        orderBy: { seq: 'asc' },
      });
      expect(seqs).toEqual(journal.map((e) => e.seq));
      expect(seqs).toEqual(seqs.map((_, i) => i + 4));
      expect(journal.some((e) => e.type === 'turn_completed' && e.turnId === turnId)).toBe(true);
    } finally {
      stream.close();
      await stream.ended;
    }
    expect(await onStandby(turnIds[turnIds.length - 1])).toBe(false);
  });

  it('after replay resumes, reads come from the replica again, and see everything', async () => {
    replica('resume', dir!);
    await waitFor(() => onStandby(turnIds[turnIds.length - 1]), { what: 'the standby to replay the turns' });
    const before = (await reads())['replica:caught_up'] ?? 0;
    await waitFor(
      async () => {
        await expectHistory();
        return ((await reads())['replica:caught_up'] ?? 0) >= before + 2;
      },
      { what: 'the transcript and journal served by the replica', timeoutMs: 20_000 },
    );
    // A fresh SSE catch-up from the start, from the replica: the whole journal once, in order.
    const stream = await SseClient.open(`${api.baseUrl}/v1/turns/${turnIds[0]}/stream`, { key: api.key });
    await stream.ended;
    const own = await env.db.event.findMany({ where: { turnId: turnIds[0] }, orderBy: { seq: 'asc' } });
    expect(stream.journaled.map((f) => Number(f.id))).toEqual(own.map((e) => e.seq));
  });

  it('with the replica down, answers from the primary', async () => {
    replica('stop', dir!);
    const before = await reads();
    const turnId = await say('twelve thirteen fourteen fifteen');
    await expectTurn(turnId, 4);
    await expectHistory();
    const usage = await api.get('/v1/usage?groupBy=session');
    expect(usage.status).toBe(200);
    expect(usage.body.totals.entries).toBeGreaterThan(0);
    const after = await reads();
    expect(after['replica:caught_up'] ?? 0).toBe(before['replica:caught_up'] ?? 0);
    expect(
      (after['primary:replica_error'] ?? 0) - (before['primary:replica_error'] ?? 0),
    ).toBeGreaterThanOrEqual(4);
  });
});
