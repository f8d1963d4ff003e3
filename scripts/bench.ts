/**
 * Benchmark of the message path (not a test). Drives N concurrent sessions
 * through the HTTP API against real processes (a gateway, K harness workers, a
 * hooks worker) with the scripted provider, on a database of its own, and reports:
 *   - turns/s
 *   - platform latency before the model: admission committed → first provider request
 *   - platform latency after the model: last provider byte → turn completed
 *   - end to end as the client sees it: POST → turn completed observed (watched in Postgres)
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
import { createTestEnv, spawnApp, type AppProcess, type TestEnv } from '@switchboard/testing';

const { values } = parseArgs({
  options: {
    sessions: { type: 'string', default: '50' },
    turns: { type: 'string', default: '10' },
    workers: { type: 'string', default: '2' },
    concurrency: { type: 'string', default: '64' },
    'model-delay': { type: 'string', default: '0' },
    'poll-ms': { type: 'string', default: '10' },
    json: { type: 'boolean', default: false },
    /** Write V8 CPU profiles of the harness workers to this directory. */
    profile: { type: 'string' },
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

class CompletionWatcher {
  private readonly pending = new Map<string, { resolve: () => void; reject: (e: Error) => void }>();
  private readonly timer: NodeJS.Timeout;
  private busy = false;

  constructor(
    private readonly db: TestEnv['db'],
    intervalMs: number,
  ) {
    this.timer = setInterval(() => void this.tick(), intervalMs);
  }

  done(turnId: string): Promise<void> {
    return new Promise((resolve, reject) => this.pending.set(turnId, { resolve, reject }));
  }

  stop(): void {
    clearInterval(this.timer);
  }

  private async tick(): Promise<void> {
    if (this.busy || this.pending.size === 0) return;
    this.busy = true;
    try {
      const rows = await this.db.turn.findMany({
        where: { id: { in: [...this.pending.keys()] }, status: { in: ['completed', 'failed', 'cancelled'] } },
        select: { id: true, status: true },
      });
      for (const r of rows) {
        const waiter = this.pending.get(r.id);
        this.pending.delete(r.id);
        if (r.status === 'completed') waiter?.resolve();
        else waiter?.reject(new Error(`turn ${r.id} ${r.status}`));
      }
    } finally {
      this.busy = false;
    }
  }
}

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
    const nodeArgs = values.profile ? ['--cpu-prof', `--cpu-prof-dir=${values.profile}`] : [];
    // allSettled: when one fails to start, the others are still collected and stopped below.
    const spawned = await Promise.allSettled(
      apps.map(async (app) => {
        const p = await spawnApp(app, penv, { nodeArgs: app === 'harness-worker' ? nodeArgs : [] });
        procs.push(p);
        return p;
      }),
    );
    const failed = spawned.find((r) => r.status === 'rejected');
    if (failed) throw failed.reason;
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

    // Completion is watched in Postgres with one query for every pending turn, so the
    // client's waiting does not load the gateway it is measuring.
    const watcher = new CompletionWatcher(env.db, POLL_MS);
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
          await watcher.done(turnId);
          clientLatency.push(performance.now() - sent);
        }
      }),
    );
    const wall = (performance.now() - t0) / 1000;
    watcher.stop();

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
