/**
 * Benchmark of the message path (not a test). Drives N concurrent sessions
 * through the HTTP API against real processes (a gateway, K harness workers, a
 * hooks worker) with the scripted provider, on a database of its own, and reports:
 *   - turns/s
 *   - platform latency before the model: admission committed → first provider request
 *   - platform latency after the model: last provider byte → turn completed
 *   - end to end as the client sees it: POST → turn completed observed
 *
 *   npm run bench -- --sessions 50 --turns 10 --workers 2 --model-delay 0
 *
 * The timings before and after the model come from the turn's own records
 * (admission time, provider attempt timeline, completion time), all taken on
 * this machine, so they exclude the client's polling.
 */
import { createServer } from 'node:net';
import { parseArgs } from 'node:util';
import globalSetup from '../libs/testing/src/global-setup';
import { createTestEnv, spawnApp, type AppProcess } from '@switchboard/testing';

const { values } = parseArgs({
  options: {
    sessions: { type: 'string', default: '50' },
    turns: { type: 'string', default: '10' },
    workers: { type: 'string', default: '2' },
    concurrency: { type: 'string', default: '64' },
    'model-delay': { type: 'string', default: '0' },
    'poll-ms': { type: 'string', default: '50' },
    json: { type: 'boolean', default: false },
  },
});
const SESSIONS = Number(values.sessions);
const TURNS = Number(values.turns);
const WORKERS = Number(values.workers);
const MODEL_DELAY = Number(values['model-delay']);
const POLL_MS = Number(values['poll-ms']);

const pct = (xs: number[], p: number) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length ? s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))] : NaN;
};
const fmt = (xs: number[]) => `p50 ${pct(xs, 50).toFixed(1)} ms  p99 ${pct(xs, 99).toFixed(1)} ms`;

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      server.close(() =>
        typeof address === 'object' && address ? resolve(address.port) : reject(new Error('no port')),
      );
    });
  });
}

async function main() {
  await globalSetup();
  const env = await createTestEnv();
  const procs: AppProcess[] = [];
  const fixtures = await import('node:fs').then((fs) => {
    const dir = fs.mkdtempSync('/tmp/sb-bench-');
    fs.writeFileSync(
      `${dir}/bench.json`,
      JSON.stringify({
        name: 'bench',
        rounds: [
          { toolCalls: [{ name: 'word_count', arguments: { text: '{{input}}' } }], delayMs: MODEL_DELAY },
          { text: 'counted {{lastToolResult}}', delayMs: MODEL_DELAY },
        ],
      }),
    );
    return dir;
  });
  try {
    const port = await freePort();
    const penv = env.processEnv({
      LOG_LEVEL: 'error',
      PORT: String(port),
      SCRIPTED_FIXTURES_DIR: fixtures,
      HARNESS_CONCURRENCY: values.concurrency,
      SESSION_LEASE_MS: '30000',
      QUEUE_LOCK_MS: '30000',
      QUEUE_STALLED_INTERVAL_MS: '30000',
    });
    const apps: Parameters<typeof spawnApp>[0][] = [
      'gateway',
      'hooks-worker',
      ...Array.from({ length: WORKERS }, () => 'harness-worker' as const),
    ];
    await Promise.all(apps.map(async (app) => procs.push(await spawnApp(app, penv))));
    const base = `http://127.0.0.1:${port}`;
    const post = async <T>(path: string, body: unknown, key?: string): Promise<T> => {
      const res = await fetch(`${base}${path}`, {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          authorization: `Bearer ${key ?? 'test-admin-token-0123456789'}`,
        },
        body: JSON.stringify(body),
      });
      if (!res.ok) throw new Error(`${path} ${res.status} ${await res.text()}`);
      return (await res.json()) as T;
    };
    const { apiKey } = await post<{ apiKey: { key: string } }>('/v1/admin/tenants', { name: 'bench' });
    const key = apiKey.key;
    const agent = await post<{ id: string }>('/v1/agents', { name: 'bench', model: 'scripted/bench' }, key);
    const sessions: string[] = await Promise.all(
      Array.from(
        { length: SESSIONS },
        async () => (await post<{ id: string }>('/v1/sessions', { agentId: agent.id }, key)).id,
      ),
    );

    const clientLatency: number[] = [];
    const t0 = performance.now();
    await Promise.all(
      sessions.map(async (s, i) => {
        for (let t = 0; t < TURNS; t++) {
          const sent = performance.now();
          const { turnId } = await post<{ turnId: string }>(
            `/v1/sessions/${s}/messages`,
            { content: `session ${i} turn ${t} words` },
            key,
          );
          for (;;) {
            const r = await fetch(`${base}/v1/turns/${turnId}`, {
              headers: { authorization: `Bearer ${key}` },
            });
            const turn = (await r.json()) as { status: string };
            if (turn.status === 'completed') break;
            if (turn.status === 'failed') throw new Error(`turn ${turnId} failed`);
            await new Promise((res) => setTimeout(res, POLL_MS));
          }
          clientLatency.push(performance.now() - sent);
        }
      }),
    );
    const wall = (performance.now() - t0) / 1000;

    const turns = await env.db.turn.findMany({ where: { status: 'completed' } });
    const before: number[] = [];
    const after: number[] = [];
    for (const t of turns) {
      const attempts = t.attempts as { startedAt: string; durationMs: number }[];
      const first = Date.parse(attempts[0].startedAt);
      const lastEnd = Math.max(...attempts.map((a) => Date.parse(a.startedAt) + a.durationMs));
      before.push(first - t.createdAt.getTime());
      after.push(t.completedAt!.getTime() - lastEnd);
    }
    const result = {
      sessions: SESSIONS,
      turnsPerSession: TURNS,
      harnessWorkers: WORKERS,
      modelDelayMs: MODEL_DELAY,
      turns: turns.length,
      wallSeconds: Number(wall.toFixed(2)),
      turnsPerSecond: Number((turns.length / wall).toFixed(1)),
      admitToFirstProviderRequestMs: { p50: pct(before, 50), p99: pct(before, 99) },
      lastProviderByteToCompletedMs: { p50: pct(after, 50), p99: pct(after, 99) },
      clientPostToCompletedMs: {
        p50: Number(pct(clientLatency, 50).toFixed(1)),
        p99: Number(pct(clientLatency, 99).toFixed(1)),
      },
    };
    if (values.json) console.log(JSON.stringify(result, null, 2));
    else {
      console.log(`
${turns.length} turns (${SESSIONS} sessions × ${TURNS}, ${WORKERS} harness workers, model delay ${MODEL_DELAY} ms) in ${wall.toFixed(2)} s
  throughput                          ${result.turnsPerSecond} turns/s
  admit → first provider request      ${fmt(before)}
  last provider byte → turn completed ${fmt(after)}
  client POST → completed observed    ${fmt(clientLatency)}`);
    }
  } finally {
    await Promise.all(procs.map((p) => p.kill('SIGTERM')));
    await env.cleanup();
  }
}

main().then(
  () => process.exit(0),
  (err: unknown) => {
    console.error(err instanceof Error ? err.stack : err);
    process.exit(1);
  },
);
