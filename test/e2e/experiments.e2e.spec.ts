import { execFile } from 'node:child_process';
import path from 'node:path';
import { DATASET_ITEM_MAX_BYTES } from '@switchboard/contracts';
import {
  createTestEnv,
  freePort,
  FakeLlmServer,
  scripted,
  spawnApp,
  waitFor,
  type AppProcess,
  type RecordedRequest,
  type TestEnv,
} from '@switchboard/testing';
import { newTenant, type Api } from '../support/api';

jest.setTimeout(240_000);

const ADMIN = 'test-admin-token-0123456789';
const ROOT = path.resolve(__dirname, '../..');
const ITEMS = 20;

type Chat = { role: string; content: unknown };
const messagesOf = (r: RecordedRequest): Chat[] => (r.body as { messages: Chat[] }).messages;
const text = (c: unknown) => (typeof c === 'string' ? c : JSON.stringify(c));
const lastUser = (r: RecordedRequest) =>
  text([...messagesOf(r)].reverse().find((m) => m.role === 'user')?.content ?? '');
const systemOf = (r: RecordedRequest) => text(messagesOf(r).find((m) => m.role === 'system')?.content ?? '');

/**
 * Datasets and experiments (docs/adr/0063) through real processes (a gateway, a harness worker, a
 * hooks worker, the fake LLM as the agent): 20 items with expected answers, run on two versions of an
 * agent of which only version 2 answers right; every (item, version) runs in a session pinned to that
 * version at background priority with sourceRefs; the experiment completes when every turn ended and
 * its hooks settled; the CLI gate (`npm run admin -- eval run`) exits 1 under the bar or on a timeout
 * and 0 over it. Bad input is a 4xx that writes nothing.
 */
describe('datasets and experiments', () => {
  let env: TestEnv;
  let llm: FakeLlmServer;
  let url: string;
  let api: Api;
  let other: Api;
  let key: string;
  let agentId: string;
  let datasetId: string;
  const workers: AppProcess[] = [];

  beforeAll(async () => {
    env = await createTestEnv();
    llm = await FakeLlmServer.start();
    // Version 2's instructions make the agent right: "question N" → "answer N"; version 1 is wrong.
    llm.setDefault((r) => {
      const q = /question (\d+)/.exec(lastUser(r));
      if (!q) return scripted.text('ok');
      return scripted.text(systemOf(r).includes('VERSION-TWO') ? `answer ${q[1]}` : `no idea about ${q[1]}`);
    });
    const port = await freePort();
    const processEnv = env.processEnv({
      ...llm.providerEnv,
      PORT: String(port),
      HOST: '127.0.0.1',
      // The hooks reconcile settles ended turns (turns.hooks_settled_at): soon, in a test.
      RECONCILE_INTERVAL_MS: '500',
      HOOKS_RECONCILE_GRACE_MS: '200',
    });
    workers.push(await spawnApp('gateway', processEnv));
    workers.push(await spawnApp('harness-worker', processEnv));
    workers.push(await spawnApp('hooks-worker', processEnv));
    url = `http://127.0.0.1:${port}`;
    const tenant = await newTenant(url, ADMIN, 'experiments');
    api = tenant.api;
    key = tenant.api.key!;
    ({ api: other } = await newTenant(url, ADMIN, 'experiments-other'));
    expect((await api.patch('/v1/settings', { archivist: { mode: 'off' } })).status).toBe(200);

    const agent = await api.post('/v1/agents', {
      name: 'quiz',
      model: 'openai-chat/chat-mini',
      instructions: 'You are VERSION-ONE.',
    });
    expect(agent.status).toBe(201);
    agentId = agent.body.id;
    const v2 = await api.patch(`/v1/agents/${agentId}`, { instructions: 'You are VERSION-TWO.' });
    expect(v2.body.version).toBe(2);

    const dataset = await api.post('/v1/datasets', { name: 'quiz-set', description: 'twenty questions' });
    expect(dataset.status).toBe(201);
    datasetId = dataset.body.id;
    // Half as a JSON batch, half as an NDJSON file.
    const batch = await api.post(`/v1/datasets/${datasetId}/items`, {
      items: Array.from({ length: ITEMS / 2 }, (_, i) => ({
        input: `question ${i}`,
        expected: `answer ${i}`,
      })),
    });
    expect(batch.status).toBe(201);
    expect(batch.body.data).toHaveLength(ITEMS / 2);
    const ndjson = Array.from({ length: ITEMS / 2 }, (_, j) =>
      JSON.stringify({ input: `question ${j + ITEMS / 2}`, expected: `answer ${j + ITEMS / 2}` }),
    ).join('\n');
    const file = await api.request('POST', `/v1/datasets/${datasetId}/items`, {
      raw: `${ndjson}\n\n`,
      headers: { 'content-type': 'application/x-ndjson' },
    });
    expect(file.status).toBe(201);
    expect(file.body.data).toHaveLength(ITEMS / 2);
    expect((await api.get(`/v1/datasets/${datasetId}`)).body.itemCount).toBe(ITEMS);
  });

  afterAll(async () => {
    await Promise.all(workers.map((w) => w.kill('SIGKILL')));
    await llm?.close();
    await env?.cleanup();
  });

  const cli = (...args: string[]) =>
    new Promise<{ code: number; stdout: string; stderr: string }>((resolve) => {
      execFile(
        process.execPath,
        ['-r', '@swc-node/register', path.join('scripts', 'admin.ts'), ...args],
        {
          cwd: ROOT,
          env: { ...env.processEnv(), SWITCHBOARD_URL: url, SWITCHBOARD_API_KEY: key },
          timeout: 200_000,
        },
        (err, stdout, stderr) =>
          resolve({ code: err ? (typeof err.code === 'number' ? err.code : 1) : 0, stdout, stderr }),
      );
    });

  /** Starts an experiment of the dataset and waits until GET shows it completed. */
  async function experiment(versions: number[]) {
    const created = await api.post('/v1/experiments', { datasetId, agentId, versions });
    expect(created.status).toBe(201);
    expect(created.body.status).toBe('running');
    return waitFor(
      async () => {
        const r = await api.get(`/v1/experiments/${created.body.id}`);
        return r.body.status === 'completed' ? r.body : undefined;
      },
      { timeoutMs: 180_000, intervalMs: 250, what: 'the experiment to complete' },
    );
  }

  it('runs every item on each version in a pinned session at background priority, and completes', async () => {
    const done = await experiment([1, 2]);
    expect(done.completedAt).not.toBeNull();
    expect(done.items).toHaveLength(ITEMS);
    for (const r of done.results) expect(r).toMatchObject({ runs: ITEMS, failed: 0 });

    // Each run's turn ran on its version, answered as that version does, and carries its sourceRefs.
    const item = done.items[0];
    for (const version of [1, 2]) {
      const run = item.byVersion[String(version)];
      expect(run.status).toBe('completed');
      const turn = await api.get(`/v1/turns/${run.turnId}`);
      expect(turn.body.agentVersion).toBe(version);
      expect(turn.body.priority).toBe('background');
      expect(turn.body.finalText).toMatch(version === 2 ? /^answer \d+$/ : /^no idea about \d+$/);
      const messages = await api.get(`/v1/sessions/${turn.body.sessionId}/messages`);
      const input = messages.body.data.find((m: { role: string }) => m.role === 'user');
      expect(input.sourceRefs).toMatchObject({ experimentId: done.id, datasetItemId: item.datasetItemId });
      expect(input.priority).toBe('background');
      const session = await api.get(`/v1/sessions/${turn.body.sessionId}`);
      expect(session.body.agentVersion).toBe(version);
    }

    const listed = await api.get(`/v1/experiments?datasetId=${datasetId}`);
    expect(listed.body.data.map((e: { id: string }) => e.id)).toContain(done.id);
    expect((await other.get(`/v1/experiments/${done.id}`)).status).toBe(404);
  });

  it('refuses bad input with a 4xx and writes nothing', async () => {
    const before = (await api.get(`/v1/experiments`)).body.data.length;
    // Another tenant's agent or dataset: 404; a version the agent does not have: 400.
    const theirs = await other.post('/v1/agents', { name: 'theirs', model: 'openai-chat/chat-mini' });
    const theirSet = await other.post('/v1/datasets', { name: 'theirs' });
    await other.post(`/v1/datasets/${theirSet.body.id}/items`, { input: 'q' });
    expect(
      (await api.post('/v1/experiments', { datasetId, agentId: theirs.body.id, versions: [1] })).status,
    ).toBe(404);
    expect(
      (await api.post('/v1/experiments', { datasetId: theirSet.body.id, agentId, versions: [1] })).status,
    ).toBe(404);
    const unknown = await api.post('/v1/experiments', { datasetId, agentId, versions: [1, 7] });
    expect(unknown.status).toBe(400);
    expect(unknown.body.error.message).toContain('7');
    expect((await api.post('/v1/experiments', { datasetId, agentId, versions: [] })).status).toBe(400);
    expect((await api.post('/v1/experiments', { datasetId, agentId, versions: [1, 1] })).status).toBe(400);
    expect((await api.get(`/v1/experiments`)).body.data.length).toBe(before);

    // Items: too large (400 item_too_large), a batch with one bad item, an NDJSON line that is not JSON,
    // another tenant's dataset: nothing added.
    const big = await api.post(`/v1/datasets/${datasetId}/items`, {
      items: [{ input: 'fine' }, { input: 'q', expected: 'x'.repeat(DATASET_ITEM_MAX_BYTES) }],
    });
    expect(big.status).toBe(400);
    expect(big.body.error.code).toBe('item_too_large');
    expect(
      (
        await api.post(`/v1/datasets/${datasetId}/items`, {
          items: [{ input: 'ok' }, { expected: 'no input' }],
        })
      ).status,
    ).toBe(400);
    const badLine = await api.request('POST', `/v1/datasets/${datasetId}/items`, {
      raw: '{"input": "ok"}\n{not json\n',
      headers: { 'content-type': 'application/x-ndjson' },
    });
    expect(badLine.status).toBe(400);
    expect(badLine.body.error.code).toBe('invalid_json');
    expect(badLine.body.error.message).toContain('line 2');
    const elsewhere = await api.request('POST', '/v1/datasets', {
      raw: '{"name": "x"}\n',
      headers: { 'content-type': 'application/x-ndjson' },
    });
    expect(elsewhere.status).toBe(415);
    expect((await other.post(`/v1/datasets/${datasetId}/items`, { input: 'q' })).status).toBe(404);
    expect((await other.get(`/v1/datasets/${datasetId}`)).status).toBe(404);
    expect((await api.get(`/v1/datasets/${datasetId}`)).body.itemCount).toBe(ITEMS);
    // A second dataset of the same name: 409.
    expect((await api.post('/v1/datasets', { name: 'quiz-set' })).status).toBe(409);
    // From a turn: another tenant's turn is a 404.
    const session = await other.post('/v1/sessions', { agentId: theirs.body.id });
    const said = await other.post(`/v1/sessions/${session.body.id}/messages`, { content: 'hello', wait: 60 });
    expect(said.status).toBe(200);
    expect(
      (await api.post(`/v1/datasets/${datasetId}/items/from-turn`, { turnId: said.body.id })).status,
    ).toBe(404);
    expect((await api.get(`/v1/datasets/${datasetId}`)).body.itemCount).toBe(ITEMS);
  });

  it('the CLI gate exits 2 on bad arguments and 1 on a timeout or a version under the bar', async () => {
    const usage = await cli('eval', 'run', '--dataset', 'quiz-set', '--agent', 'quiz', '--min-score', '0.8');
    expect(usage.code).toBe(2);
    expect(usage.stderr).toContain('--version');
    // Version 1 answers wrong: under any bar (unscored counts as under it too).
    const under = await cli(
      'eval',
      'run',
      '--dataset',
      'quiz-set',
      '--agent',
      'quiz',
      '--version',
      '1',
      '--min-score',
      '0.8',
    );
    expect(under.code).toBe(1);
    expect(under.stdout).toMatch(/^version\s+meanScore/m);
    expect(under.stderr).toContain('under --min-score 0.8: version 1');
    const timedOut = await cli(
      'eval',
      'run',
      '--dataset',
      datasetId,
      '--agent',
      agentId,
      '--version',
      '2',
      '--min-score',
      '0',
      '--timeout-s',
      '0.001',
    );
    expect(timedOut.code).toBe(1);
    expect(timedOut.stderr).toContain('timed out');
  });

  describe('scored by the scoring hook (docs/adr/0062)', () => {
    it('reports the better version: mean score, pass rate and the winner of every item', async () => {
      const done = await experiment([1, 2]);
      const v1 = done.results.find((r: { version: number }) => r.version === 1);
      const v2 = done.results.find((r: { version: number }) => r.version === 2);
      expect(v2).toMatchObject({ meanScore: 1, passRate: 1, scored: ITEMS, runs: ITEMS, failed: 0 });
      expect(v1).toMatchObject({ meanScore: 0, passRate: 0, scored: ITEMS, runs: ITEMS, failed: 0 });
      expect(done.items.map((i: { winner: number | null }) => i.winner)).toEqual(Array(ITEMS).fill(2));
    });

    it('the CLI gate exits 0 when every listed version is over the bar, 1 when one is under', async () => {
      const over = await cli(
        'eval',
        'run',
        '--dataset',
        'quiz-set',
        '--agent',
        'quiz',
        '--version',
        '2',
        '--min-score',
        '0.8',
      );
      expect({ code: over.code, stderr: over.stderr }).toMatchObject({ code: 0 });
      expect(over.stdout).toMatch(/^2\s+1\.000\s+1\.000/m);
      const both = await cli(
        'eval',
        'run',
        '--dataset',
        'quiz-set',
        '--agent',
        'quiz',
        '--version',
        '1',
        '--version',
        '2',
        '--min-score',
        '0.8',
        '--json',
      );
      expect(both.code).toBe(1);
      expect(JSON.parse(both.stdout)).toMatchObject({ status: 'completed', passed: false, timedOut: false });
    });
  });
});
