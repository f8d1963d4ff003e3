/**
 * Benchmark of the message path (not a test). Drives N concurrent sessions
 * through the HTTP API against real processes (a gateway, K harness workers, a
 * hooks worker) with the scripted provider, on a database of its own, and reports:
 *   - turns/s
 *   - platform latency before the model: admission committed → first provider request
 *   - platform latency after the model: last provider byte → turn completed
 *   - end to end as the client sees it: POST → turn completed observed
 *   - per turn: SQL statements, Postgres transactions, Postgres and Redis round trips,
 *     Redis commands, and CPU ms of every process (with --count; see bench-lib.ts)
 *
 *   npm run bench -- --sessions 50 --turns 10 --workers 2 --model-delay 0 [--count]
 *   npm run bench -- --sessions 1,16 --workers 1,2,4 --count    (every combination, one table)
 *   npm run bench -- --gateways 2 --hooks-workers 2 --pgbouncer    (several processes of a kind;
 *       every process's Postgres connections through a transaction-pooling PgBouncer, ADR 0041)
 *   npm run bench -- --env KEY=VALUE [--env …]                      (more settings for every process)
 *   npm run bench -- --without-autovacuum    (on a server with autovacuum off, do not stand in for it:
 *                                             the tables are never analyzed; see bench-lib.ts)
 *   npm run bench -- --otel-compare --reps 3 --count    (telemetry with no exporter vs disabled, alternately)
 *   npm run bench -- --redis-cluster    (on a local 3-master Redis Cluster, scripts/redis-cluster.sh;
 *                                        Redis CPU is then the sum over its six nodes; not with --count)
 *
 * The timings before and after the model come from the turn's own records
 * (admission time, provider attempt timeline, completion time), all taken on
 * this machine, so they exclude the client's waiting.
 */
import { execFileSync } from 'node:child_process';
import { rmSync } from 'node:fs';
import path from 'node:path';
import { randomBytes } from 'node:crypto';
import { parseArgs } from 'node:util';
import { startTestRedisCluster, type TestRedisCluster } from '@switchboard/testing';
import { QueueName } from '@switchboard/contracts';
import { pct, redisCpuMs, sleep, startSwitchboard } from './bench-lib';
import { writeProfileWindow } from './cpu-profile-summary';
import { commandStats, monitor, statsDelta } from './bench-redis-stats';

const { values } = parseArgs({
  options: {
    sessions: { type: 'string', default: '50' },
    turns: { type: 'string', default: '10' },
    workers: { type: 'string', default: '2' },
    concurrency: { type: 'string', default: '64' },
    'model-delay': { type: 'string', default: '0' },
    /** Turns run before measuring (V8, Prisma and pools warm up), in sessions of their own. */
    warmup: { type: 'string', default: '20' },
    /** Count statements, transactions, round trips and CPU per turn (proxies in front of Postgres and Redis). */
    count: { type: 'boolean', default: false },
    json: { type: 'boolean', default: false },
    /** On a server with autovacuum off, leave the tables unanalyzed and unvacuumed (no stand-in). */
    'without-autovacuum': { type: 'boolean', default: false },
    /** Write V8 CPU profiles of every process (gateway, hooks worker, harness workers) to <dir>/<process>/. */
    profile: { type: 'string' },
    /** Run with OpenTelemetry on as in production (no collector: spans made, then dropped). */
    otel: { type: 'boolean', default: false },
    /**
     * Each combination with OpenTelemetry at its production default (no exporter configured) and
     * with OTEL_SDK_DISABLED=true, alternately `--reps` times, then CPU per turn side by side (ADR 0072).
     */
    'otel-compare': { type: 'boolean', default: false },
    reps: { type: 'string', default: '1' },
    /** Gateway processes; the client sends turns to them in turn. */
    gateways: { type: 'string', default: '1' },
    'hooks-workers': { type: 'string', default: '1' },
    /** Every process's Postgres connections through a PgBouncer in transaction mode (scripts/pgbouncer.sh). */
    pgbouncer: { type: 'boolean', default: false },
    /** KEY=VALUE settings for every process (repeatable). */
    env: { type: 'string', multiple: true, default: [] },
    /** Run on a Redis Cluster of 3 masters and 3 replicas started for the run (ADR 0043). */
    'redis-cluster': { type: 'boolean', default: false },
    /**
     * With --count: attribute every Redis command (and each BullMQ script's internal calls) to the
     * script and the queue or key family through MONITOR (slows Redis: for attribution, not timing).
     */
    monitor: { type: 'boolean', default: false },
  },
});
if (values['redis-cluster'] && values.count) throw new Error('--redis-cluster does not combine with --count');
const EXTRA_ENV: Record<string, string> = Object.fromEntries(
  values.env.map((kv) => {
    const at = kv.indexOf('=');
    if (at < 1) throw new Error(`--env wants KEY=VALUE, got ${kv}`);
    return [kv.slice(0, at), kv.slice(at + 1)];
  }),
);

/** A PgBouncer for the run (scripts/pgbouncer.sh), or none. */
function startBouncer(): { port: string; stop(): void } | undefined {
  if (!values.pgbouncer) return undefined;
  const script = path.resolve(__dirname, 'pgbouncer.sh');
  const out = execFileSync(script, ['start'], { encoding: 'utf8' }).trim();
  const m = /^port=(\d+) dir=(.+)$/.exec(out);
  if (!m) throw new Error(`scripts/pgbouncer.sh start printed ${out}`);
  return {
    port: m[1],
    stop() {
      execFileSync(script, ['stop', m[2]]);
      rmSync(m[2], { recursive: true, force: true });
    },
  };
}
const list = (s: string) => s.split(',').map(Number);
const TURNS = Number(values.turns);
const MODEL_DELAY = Number(values['model-delay']);
const WARMUP = Number(values.warmup);
// An idle Postgres backend flushes its statistics up to 10 s late (PGSTAT_IDLE_INTERVAL in
// Postgres 15); pg_stat_force_next_flush() only flushes the calling backend's.
const STATS_FLUSH_MS = 11_000;

type Result = Awaited<ReturnType<typeof run>>;

async function run(sessionsN: number, workers: number, otel = values.otel) {
  const bouncer = startBouncer();
  let cluster: TestRedisCluster | undefined;
  if (values['redis-cluster']) {
    const started = startTestRedisCluster();
    if ('skip' in started) throw new Error(`no Redis Cluster: ${started.skip}`);
    cluster = started;
  }
  const sb = await startSwitchboard({
    workers,
    gateways: Number(values.gateways),
    hooksWorkers: Number(values['hooks-workers']),
    databasePort: bouncer?.port,
    modelDelayMs: MODEL_DELAY,
    harnessConcurrency: Number(values.concurrency),
    count: values.count,
    profileDir: values.profile,
    otel,
    withoutAutovacuum: values['without-autovacuum'],
    env: {
      ...(bouncer ? { DATABASE_PREPARED_STATEMENTS: 'false' } : {}),
      ...(cluster
        ? {
            REDIS_CLUSTER_NODES: cluster.nodes.map((n) => `${n.host}:${n.port}`).join(','),
            QUEUE_PREFIX: `{bench_${randomBytes(4).toString('hex')}}`,
          }
        : {}),
      ...EXTRA_ENV,
    },
  }).catch((err: unknown) => {
    cluster?.stop();
    bouncer?.stop();
    throw err;
  });
  // On a cluster: the CPU of every node (masters, replicas, the cluster bus's pub/sub forwarding).
  const redisCpu = async () =>
    cluster
      ? (await Promise.all(cluster.ports.map((p) => redisCpuMs(`redis://127.0.0.1:${p}`)))).reduce(
          (a, b) => a + b,
          0,
        )
      : redisCpuMs(sb.env.redisUrl);
  try {
    const { key, agentId } = await sb.tenant();
    const newSession = async () => (await sb.post<{ id: string }>('/v1/sessions', { agentId }, key)).id;

    // Warm-up in sessions of its own, not measured.
    const warm = await Promise.all(Array.from({ length: Math.min(5, WARMUP) }, newSession));
    await Promise.all(
      warm.map(async (s, i) => {
        for (let t = i; t < WARMUP; t += warm.length) await sb.turn(key, s, `warm ${t} up words`);
      }),
    );
    const sessions = await Promise.all(Array.from({ length: sessionsN }, newSession));

    // Redis's own counts (INFO commandstats, Lua-internal calls included); the idle rate over the
    // stats-flush wait says what the processes run with nothing to do (blocking pops, stalled checks).
    const idleRedis0 = values.count ? await commandStats(sb.env.redisUrl) : undefined;
    const idle0 = performance.now();
    await sleep(STATS_FLUSH_MS);
    const idleSeconds = (performance.now() - idle0) / 1000;
    const idleRedis = idleRedis0 ? statsDelta(idleRedis0, await commandStats(sb.env.redisUrl)) : undefined;
    const tap = values.monitor
      ? await monitor(sb.env.redisUrl, new Set(Object.values(QueueName)))
      : undefined;
    const redisStats0 = values.count ? await commandStats(sb.env.redisUrl) : undefined;
    tap?.start();
    const x0 = await sb.xactCommit();
    const wal0 = await sb.walBytes();
    const w0 = sb.watcherQueries();
    const cpu0 = await sb.cpu();
    const r0 = await redisCpu();
    const client0 = process.cpuUsage();
    sb.pg?.reset();
    sb.redis?.reset();

    const ids: string[] = [];
    const clientLatency: number[] = [];
    const t0 = performance.now();
    const window0 = process.hrtime.bigint();
    await Promise.all(
      sessions.map(async (s, i) => {
        for (let t = 0; t < TURNS; t++) {
          const sent = performance.now();
          ids.push(await sb.turn(key, s, `session ${i} turn ${t} words`));
          clientLatency.push(performance.now() - sent);
        }
      }),
    );
    const wall = (performance.now() - t0) / 1000;
    // The measured turns' interval on the monotonic clock V8's profiler stamps its samples with, so
    // scripts/cpu-profile-summary.ts can leave out start-up, warm-up and the idle waits.
    if (values.profile) writeProfileWindow(values.profile, window0, process.hrtime.bigint(), ids.length);
    const pgWire = sb.pg ? { ...sb.pg.read() } : undefined;
    const redisWire = sb.redis ? { ...sb.redis.read() } : undefined;
    const cpu1 = await sb.cpu();
    const r1 = await redisCpu();
    const client = process.cpuUsage(client0);
    const w1 = sb.watcherQueries();
    const redisStatsEnd = values.count ? await commandStats(sb.env.redisUrl) : undefined;
    const activeSeconds = wall;
    await sleep(STATS_FLUSH_MS);
    const x1 = await sb.xactCommit();
    // After the flush wait: the post-turn work (hooks batches) has run too.
    const redisStats1 = values.count ? await commandStats(sb.env.redisUrl) : undefined;
    const attribution = await tap?.stop();
    // Our own statements on the bench database between the two readings: the watcher's, the
    // first reading's SELECT, the WAL position, cpu()'s two pg_stat_activity queries, the flush call.
    const xacts = x1 - x0 - (w1 - w0) - 5;
    const wal = (await sb.walBytes()) - wal0;
    const stored = await sb.storage();

    const turns = await sb.env.db.turn.findMany({ where: { id: { in: ids } } });
    const durable = await sb.verifyDurable(ids);
    const before: number[] = [];
    const after: number[] = [];
    for (const t of turns) {
      const attempts = t.attempts as { startedAt: string; durationMs: number }[];
      const first = Date.parse(attempts[0].startedAt);
      const lastEnd = Math.max(...attempts.map((a) => Date.parse(a.startedAt) + a.durationMs));
      before.push(first - t.createdAt.getTime());
      after.push(t.completedAt!.getTime() - lastEnd);
    }
    const n = ids.length;
    const per = (x: number) => Number((x / n).toFixed(1));
    const cpuPerTurn: Record<string, number> = {};
    for (const k of Object.keys(cpu1)) cpuPerTurn[k] = per(cpu1[k] - (cpu0[k] ?? 0));
    cpuPerTurn.redis = per(r1 - r0);
    cpuPerTurn['bench client (+proxies)'] = per((client.user + client.system) / 1000);
    const total = Object.entries(cpuPerTurn)
      .filter(([k]) => !k.startsWith('bench client'))
      .reduce((s, [, v]) => s + v, 0);
    return {
      sessions: sessionsN,
      turnsPerSession: TURNS,
      harnessWorkers: workers,
      modelDelayMs: MODEL_DELAY,
      waitMode: sb.waitMode,
      /** Who analyzed and vacuumed the tables during the run (bench-lib.ts, AutovacuumStandIn). */
      maintenance: sb.maintenance,
      otel: Boolean(otel),
      turns: n,
      durable: durable.ok,
      wallSeconds: Number(wall.toFixed(2)),
      turnsPerSecond: Number((n / wall).toFixed(1)),
      admitToFirstProviderRequestMs: { p50: pct(before, 50), p99: pct(before, 99) },
      lastProviderByteToCompletedMs: { p50: pct(after, 50), p99: pct(after, 99) },
      clientPostToCompletedMs: {
        p50: Number(pct(clientLatency, 50).toFixed(1)),
        p99: Number(pct(clientLatency, 99).toFixed(1)),
      },
      perTurn: {
        postgresTransactions: per(xacts),
        ...(pgWire
          ? {
              sqlStatements: per(pgWire.statements - pgWire.control),
              sqlStatementsWithBeginCommit: per(pgWire.statements),
              postgresTransactionsOnTheWire: per(pgWire.transactions),
              postgresRoundTrips: per(pgWire.roundTrips),
              /** The statements run at least once per 10 turns, most frequent first. */
              sqlByStatement: Object.fromEntries(
                Object.entries(pgWire.byStatement)
                  .filter(([, v]) => v / n >= 0.1)
                  .sort((a, b) => b[1] - a[1])
                  .map(([k, v]) => [k, per(v)]),
              ),
            }
          : {}),
        ...(redisWire
          ? {
              redisCommands: per(redisWire.commands),
              redisRoundTrips: per(redisWire.roundTrips),
              redisByCommand: Object.fromEntries(
                Object.entries(redisWire.byCommand)
                  .sort((a, b) => b[1] - a[1])
                  .map(([k, v]) => [k, per(v)]),
              ),
            }
          : {}),
        ...(redisStats0 && redisStats1 && redisStatsEnd && idleRedis
          ? (() => {
              const skip = (k: string) => k === 'info' || k === 'monitor';
              const sum = (r: Record<string, number>) =>
                Object.entries(r)
                  .filter(([k]) => !skip(k))
                  .reduce((t, [, v]) => t + v, 0);
              const all = statsDelta(redisStats0, redisStats1);
              const idlePerSecond = sum(idleRedis) / idleSeconds;
              const windowSeconds = activeSeconds + STATS_FLUSH_MS / 1000;
              const sorted = (r: Record<string, number>) =>
                Object.fromEntries(
                  Object.entries(r)
                    .filter(([k, v]) => !skip(k) && v / n >= 0.05)
                    .sort((a, b) => b[1] - a[1])
                    .map(([k, v]) => [k, per(v)]),
                );
              return {
                /** INFO commandstats: every command Redis ran, Lua-internal ones included, post-turn work too. */
                redisServerCommands: per(sum(all)),
                /** The same until the last turn was observed completed (before the post-turn window). */
                redisServerCommandsToLastCompletion: per(sum(statsDelta(redisStats0, redisStatsEnd))),
                /** What idle processes ran over the measuring window (idle rate × window), per turn. */
                redisServerIdleShare: per(idlePerSecond * windowSeconds),
                redisServerByCommand: sorted(all),
                ...(attribution
                  ? {
                      redisMonitorCalls: sorted(attribution.calls),
                      redisMonitorScriptInternal: sorted(attribution.internal),
                    }
                  : {}),
              };
            })()
          : {}),
        walBytes: Math.round(wal / n),
        /** Table bytes (with indexes) over every turn stored, warm-up included. */
        storedBytes: Object.fromEntries(
          Object.entries(stored.bytes).map(([k, v]) => [k, Math.round(v / stored.turns)]),
        ),
        cpuMs: cpuPerTurn,
        cpuMsTotal: Number(total.toFixed(1)),
      },
    };
  } finally {
    await sb.stop();
    bouncer?.stop();
    cluster?.stop();
  }
}

function print(r: Result): void {
  const ms = (x: { p50: number; p99: number }) => `p50 ${x.p50.toFixed(1)} ms  p99 ${x.p99.toFixed(1)} ms`;
  const p = r.perTurn;
  console.log(`
${r.turns} turns (${r.sessions} sessions × ${r.turnsPerSession}, ${r.harnessWorkers} harness workers, model delay ${r.modelDelayMs} ms; client waits by ${r.waitMode}; OpenTelemetry ${r.otel ? 'on' : 'off'}; tables analyzed and vacuumed by ${r.maintenance}) in ${r.wallSeconds} s
  throughput                          ${r.turnsPerSecond} turns/s   (${r.durable}/${r.turns} durably persisted)
  admit → first provider request      ${ms(r.admitToFirstProviderRequestMs)}
  last provider byte → turn completed ${ms(r.lastProviderByteToCompletedMs)}
  client POST → completed observed    ${ms(r.clientPostToCompletedMs)}
  per turn: Postgres transactions ${p.postgresTransactions} (pg_stat_database)${
    p.sqlStatements !== undefined
      ? `, ${p.postgresTransactionsOnTheWire} (on the wire); SQL statements ${p.sqlStatements} (+BEGIN/COMMIT: ${p.sqlStatementsWithBeginCommit}); Postgres round trips ${p.postgresRoundTrips}
            Redis commands ${p.redisCommands}, round trips ≈ ${p.redisRoundTrips}: ${Object.entries(
              p.redisByCommand ?? {},
            )
              .map(([k, v]) => `${k} ${v}`)
              .join(', ')}`
      : ''
  }
${
  p.redisServerCommands !== undefined
    ? `  Redis server commands per turn (INFO commandstats, Lua included, post-turn window too): ${p.redisServerCommands} (to the last completion: ${p.redisServerCommandsToLastCompletion}; idle processes' share ≈ ${p.redisServerIdleShare})
            ${Object.entries(p.redisServerByCommand ?? {})
              .map(([k, v]) => `${k} ${v}`)
              .join(', ')}
`
    : ''
}${
    p.redisMonitorCalls
      ? `  MONITOR per turn, calls by family · command/script:\n${Object.entries(p.redisMonitorCalls)
          .map(
            ([k, v]) =>
              `    ${k}: ${v}${p.redisMonitorScriptInternal?.[k] !== undefined ? ` (+${p.redisMonitorScriptInternal[k]} inside)` : ''}`,
          )
          .join('\n')}\n`
      : ''
  }  WAL bytes per turn ≈ ${p.walBytes} (cluster-wide); stored bytes per turn: ${Object.entries(p.storedBytes)
    .map(([k, v]) => `${k} ${v}`)
    .join(', ')}
  CPU ms per turn: ${Object.entries(p.cpuMs)
    .map(([k, v]) => `${k} ${v}`)
    .join(', ')}; total ${p.cpuMsTotal} (without the bench client)`);
}

function table(rs: Result[]): string {
  const head =
    '| sessions × turns | harness workers | turns/s | admit → first provider request p50 / p99 | last byte → completed p50 / p99 | client POST → completed p50 / p99 | Postgres xacts / turn | SQL statements / turn | Redis commands / round trips per turn | CPU ms / turn (total; harness, Postgres, gateway, hooks, Redis) |\n' +
    '| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |';
  const rows = rs.map((r) => {
    const p = r.perTurn;
    const harness = Object.entries(p.cpuMs)
      .filter(([k]) => k.startsWith('harness'))
      .reduce((s, [, v]) => s + v, 0);
    return `| ${r.sessions} × ${r.turnsPerSession} | ${r.harnessWorkers} | ${r.turnsPerSecond} | ${r.admitToFirstProviderRequestMs.p50} / ${r.admitToFirstProviderRequestMs.p99} ms | ${r.lastProviderByteToCompletedMs.p50} / ${r.lastProviderByteToCompletedMs.p99} ms | ${r.clientPostToCompletedMs.p50} / ${r.clientPostToCompletedMs.p99} ms | ${p.postgresTransactions} | ${p.sqlStatements ?? '–'} | ${p.redisCommands ?? '–'} / ${p.redisRoundTrips ?? '–'} | ${p.cpuMsTotal}; ${harness.toFixed(1)}, ${p.cpuMs.postgres}, ${p.cpuMs.gateway}, ${p.cpuMs['hooks-worker']}, ${p.cpuMs.redis} |`;
  });
  return [head, ...rows].join('\n');
}

/** CPU ms per turn with telemetry at its default (no exporter) and disabled: the mean, and each run. */
async function otelCompare(): Promise<void> {
  const rows: string[] = [];
  for (const workers of list(values.workers))
    for (const sessions of list(values.sessions)) {
      const on: Result[] = [];
      const off: Result[] = [];
      for (let rep = 0; rep < Number(values.reps); rep++) {
        // Alternately, so a machine whose load drifts weighs on both alike.
        for (const otel of rep % 2 === 0 ? [false, true] : [true, false]) {
          const r = await run(sessions, workers, otel);
          (otel ? on : off).push(r);
          if (!values.json) print(r);
        }
      }
      const mean = (rs: Result[], f: (r: Result) => number) => rs.reduce((a, r) => a + f(r), 0) / rs.length;
      const harness = (r: Result) =>
        Object.entries(r.perTurn.cpuMs)
          .filter(([k]) => k.startsWith('harness'))
          .reduce((a, [, v]) => a + v, 0);
      const cols = (rs: Result[]) =>
        [
          (r: Result) => r.perTurn.cpuMsTotal,
          harness,
          (r: Result) => r.perTurn.cpuMs.gateway,
          (r: Result) => r.perTurn.cpuMs['hooks-worker'],
          (r: Result) => r.turnsPerSecond,
        ]
          .map((f) => `${mean(rs, f).toFixed(1)} (${rs.map((r) => f(r).toFixed(1)).join(', ')})`)
          .join(' | ');
      rows.push(`| ${sessions} × ${TURNS}, ${workers} worker(s) | OTEL_SDK_DISABLED=true | ${cols(off)} |`);
      rows.push(`| ${sessions} × ${TURNS}, ${workers} worker(s) | default, no exporter | ${cols(on)} |`);
      if (values.json) console.log(JSON.stringify({ sessions, workers, on, off }, null, 2));
    }
  console.log(
    [
      '| run | telemetry | CPU ms / turn, total: mean (runs) | harness | gateway | hooks worker | turns/s |',
      '| --- | --- | --- | --- | --- | --- | --- |',
      ...rows,
    ].join('\n'),
  );
}

async function main() {
  if (values['otel-compare']) return otelCompare();
  const results: Result[] = [];
  for (const workers of list(values.workers))
    for (const sessions of list(values.sessions)) {
      const r = await run(sessions, workers);
      results.push(r);
      if (!values.json) print(r);
    }
  if (values.json) console.log(JSON.stringify(results.length === 1 ? results[0] : results, null, 2));
  else console.log(`\n${table(results)}`);
  const lost = results.filter((r) => r.durable !== r.turns);
  if (lost.length) throw new Error(`turns not durably persisted in ${lost.length} run(s)`);
}

main().then(
  () => process.exit(0),
  (err: unknown) => {
    console.error(err instanceof Error ? err.stack : err);
    process.exit(1);
  },
);
