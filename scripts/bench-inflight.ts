/**
 * In-flight capacity of one harness process (issue 10; not a test). Real processes (a gateway,
 * one harness worker, a hooks worker) on a database of their own, and a fake OpenAI-compatible
 * model server in this process whose every answer streams for `--stream-seconds` in frames
 * `--chunk-ms` apart. One message is admitted on each of `--turns` sessions (one turn per
 * session, so nothing queues behind a session), `--admit-concurrency` POSTs at a time, and
 * every `--sample-ms` the bench samples:
 *   - turns in flight: `running` turns in Postgres (claimed by the harness, not yet finalised),
 *     and provider streams open on the fake server
 *   - the harness's RSS (/proc/<pid>/status VmRSS) and CPU (/proc/<pid>/stat)
 *   - the harness's event-loop delay from its /metrics: `switchboard_event_loop_delay_seconds`,
 *     a cumulative histogram of how late a 20 ms timer ran (libs/observability), so the p99 of any
 *     stretch of the run is read from the difference of two scrapes
 *
 *   npm run bench:inflight -- --turns 2000 --stream-seconds 2
 *   npm run bench:inflight -- --turns 2000 --stream-seconds 30     (holding capacity, not throughput)
 *
 * With a 2 s stream, 2,000 turns in flight at once needs about 1,000 turns/s through admission,
 * claim and finalisation; a longer stream measures what holding 2,000 costs (memory, lag)
 * separately from how fast they come and go.
 */
import { readFileSync } from 'node:fs';
import { loadavg } from 'node:os';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { parseArgs } from 'node:util';
import { Pool } from 'pg';
import { FakeLlmServer, scripted } from '@switchboard/testing';
import { cpuMs, freePort, pool, sleep, startSwitchboard } from './bench-lib';

const { values } = parseArgs({
  options: {
    turns: { type: 'string', default: '2000' },
    'stream-seconds': { type: 'string', default: '2' },
    /** Time between two frames of a provider stream. */
    'chunk-ms': { type: 'string', default: '250' },
    /** HARNESS_CONCURRENCY (default: --turns). */
    concurrency: { type: 'string' },
    'admit-concurrency': { type: 'string', default: '64' },
    'sample-ms': { type: 'string', default: '1000' },
    /** Turns run before measuring (V8 and the pools warm up). */
    warmup: { type: 'string', default: '20' },
    json: { type: 'boolean', default: false },
    /** Node flags for the harness, space-separated (e.g. "--max-semi-space-size=64"). */
    'harness-node-args': { type: 'string', default: '' },
    /** Stop measuring after this long (the report then says `timedOut` and covers what ran). */
    'max-seconds': { type: 'string', default: '900' },
    /** Extra harness environment, comma-separated KEY=VALUE (e.g. "HARNESS_LOOP_DELAY_TARGET_MS=60000"). */
    'harness-env': { type: 'string', default: '' },
    /** Write V8 CPU profiles of every process to <dir>/<process>/. */
    profile: { type: 'string' },
  },
});
const TURNS = Number(values.turns);
const STREAM_MS = Number(values['stream-seconds']) * 1000;
const CHUNK_MS = Number(values['chunk-ms']);
const CONCURRENCY = Number(values.concurrency ?? TURNS);
const ADMIT_CONCURRENCY = Number(values['admit-concurrency']);
const SAMPLE_MS = Number(values['sample-ms']);
const WARMUP = Number(values.warmup);
const LAG_GOAL_MS = 50;
const MAX_SECONDS = Number(values['max-seconds']);

/**
 * A Chat Completions stream has the role frame, the text pieces, the finish frame, the usage frame
 * and `[DONE]`: n + 4 frames, n + 3 intervals, paced `frameIntervalMs` apart.
 */
const INTERVALS = Math.max(4, Math.round(STREAM_MS / CHUNK_MS));
/** Text deltas per answer. */
const PIECES = INTERVALS - 3;

function streamReply() {
  const intervals = INTERVALS;
  const pieces = PIECES;
  // Fixed-width words, so each piece is exactly one word.
  const text = Array.from({ length: pieces }, (_, i) => `w${String(i % 1000).padStart(3, '0')} `).join('');
  return scripted.text(text, {
    textPieces: pieces,
    frameIntervalMs: STREAM_MS / intervals,
    usage: { input: 50, output: pieces },
  });
}

function rssMiB(pid: number): number {
  const m = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  return m ? Number(m[1]) / 1024 : NaN;
}

/** Cumulative bucket counts of the event-loop delay histogram, by upper bound in ms (+Inf last). */
type Buckets = [number, number][];

function lagBuckets(body: string): Buckets {
  const re = /^switchboard_event_loop_delay_seconds_bucket\{le="([^"]+)"[^}]*\} ([0-9.eE+-]+)$/gm;
  return [...body.matchAll(re)].map((m) => [m[1] === '+Inf' ? Infinity : Number(m[1]) * 1000, Number(m[2])]);
}

const minus = (a: Buckets, b: Buckets): Buckets => a.map(([le, n], i) => [le, n - (b[i]?.[1] ?? 0)]);
const plus = (a: Buckets, b: Buckets): Buckets => a.map(([le, n], i) => [le, n + (b[i]?.[1] ?? 0)]);

/** A quantile from cumulative buckets, linear within its bucket (as Prometheus' histogram_quantile). */
function quantile(b: Buckets, q: number): number {
  const total = b.at(-1)?.[1] ?? 0;
  if (!total) return NaN;
  const rank = q * total;
  let lower = 0;
  let below = 0;
  for (const [le, n] of b) {
    if (n >= rank)
      return le === Infinity ? lower : lower + ((le - lower) * (rank - below)) / (n - below || 1);
    lower = le;
    below = n;
  }
  return lower;
}

/** Share of samples later than `ms` (a bucket bound). */
function over(b: Buckets, ms: number): number {
  const total = b.at(-1)?.[1] ?? 0;
  const upTo = b.find(([le]) => le === ms)?.[1] ?? 0;
  return total ? (total - upTo) / total : NaN;
}

function lagSummary(b: Buckets) {
  return {
    samples: b.at(-1)?.[1] ?? 0,
    p50: Number(quantile(b, 0.5).toFixed(1)),
    p99: Number(quantile(b, 0.99).toFixed(1)),
    [`over${LAG_GOAL_MS}msPercent`]: Number((over(b, LAG_GOAL_MS) * 100).toFixed(2)),
  };
}

interface Sample {
  t: number;
  running: number;
  queued: number;
  ended: number;
  streams: number;
  rssMiB: number;
  cpuMs: number;
  /** The harness's CPU over the window since the previous sample, % of one core. */
  cpuPercent: number;
  /** Harness CPU (ms) and wall time (s) since the previous sample. */
  cpuDeltaMs: number;
  dtSeconds: number;
  heapUsedMiB: number;
  /** Event-loop delay samples in the window since the previous sample (not cumulative). */
  lag: Buckets;
  lagP99Ms: number;
}

async function main() {
  const fake = await FakeLlmServer.start();
  fake.setDefault(() => streamReply());
  const metricsPort = await freePort();
  const sb = await startSwitchboard({
    workers: 1,
    modelDelayMs: 0,
    harnessConcurrency: CONCURRENCY,
    env: { ...fake.providerEnv },
    harnessEnv: {
      METRICS_PORT: String(metricsPort),
      ...Object.fromEntries(
        values['harness-env']
          .split(',')
          .filter(Boolean)
          .map((kv) => [kv.slice(0, kv.indexOf('=')), kv.slice(kv.indexOf('=') + 1)]),
      ),
    },
    profileDir: values.profile,
    harnessNodeArgs: values['harness-node-args'].split(' ').filter(Boolean),
  });
  // A pool, not one client: a connection another process's test terminates is replaced.
  const pg = new Pool({ connectionString: sb.env.databaseUrl, max: 2 });
  pg.on('error', () => undefined);
  try {
    const harness = sb.procs.find((p) => p.name.startsWith('harness'))!.app.child.pid!;
    const { apiKey } = await sb.post<{ apiKey: { key: string } }>('/v1/admin/tenants', { name: 'bench' });
    const key = apiKey.key;
    const agent = await sb.post<{ id: string }>(
      '/v1/agents',
      { name: 'stream', model: 'openai-chat/gpt-4o-mini' },
      key,
    );
    const newSession = async () =>
      (await sb.post<{ id: string }>('/v1/sessions', { agentId: agent.id }, key)).id;
    const counts = async () => {
      const r = await pg.query<{ status: string; n: number }>(
        'SELECT status, count(*)::int AS n FROM turns GROUP BY status',
      );
      const by = Object.fromEntries(r.rows.map((x) => [x.status, x.n]));
      const ended = (by.completed ?? 0) + (by.failed ?? 0) + (by.cancelled ?? 0);
      return { running: by.running ?? 0, queued: by.queued ?? 0, ended, by };
    };
    /** Waits until `n` turns ended; past `timeoutMs` it answers what it has (`timedOut`), or throws (`orThrow`). */
    const waitEnded = async (n: number, timeoutMs: number, orThrow = true) => {
      const until = Date.now() + timeoutMs;
      for (;;) {
        const c = await counts();
        if (c.ended >= n) return { ...c, timedOut: false };
        if (Date.now() > until) {
          if (orThrow) throw new Error(`only ${c.ended} of ${n} turns ended: ${JSON.stringify(c.by)}`);
          return { ...c, timedOut: true };
        }
        await sleep(200);
      }
    };

    // Warm-up, not measured: a few streams end to end.
    const warm = await Promise.all(Array.from({ length: WARMUP }, newSession));
    await pool(warm, ADMIT_CONCURRENCY, async (s, i) => {
      await sb.post(`/v1/sessions/${s}/messages`, { content: `warm up ${i}` }, key);
    });
    await waitEnded(WARMUP, STREAM_MS + 60_000);

    const sessions: string[] = [];
    await pool(Array.from({ length: TURNS }), ADMIT_CONCURRENCY, async () => {
      sessions.push(await newSession());
    });

    const samples: Sample[] = [];
    const scrape = async () => {
      const body = await (await fetch(`http://127.0.0.1:${metricsPort}/metrics`)).text();
      const heap = /^nodejs_heap_size_used_bytes(?:\{[^}]*\})? ([0-9.eE+-]+)$/m.exec(body);
      return { lag: lagBuckets(body), heapUsedMiB: heap ? Number(heap[1]) / 2 ** 20 : NaN };
    };
    const first = await scrape();
    let lastLag = first.lag;
    const heap0 = first.heapUsedMiB;
    let lastCpu = { ms: cpuMs(harness), at: performance.now() };
    const t0 = performance.now();
    const load0 = loadavg()[0];
    let sampling = true;
    const sampler = (async () => {
      while (sampling) {
        await sleep(SAMPLE_MS);
        const [c, scraped] = await Promise.all([counts(), scrape()]);
        const lag = minus(scraped.lag, lastLag);
        lastLag = scraped.lag;
        const cpuNow = { ms: cpuMs(harness), at: performance.now() };
        const cpuPercent = ((cpuNow.ms - lastCpu.ms) / (cpuNow.at - lastCpu.at)) * 100;
        const cpuDeltaMs = cpuNow.ms - lastCpu.ms;
        const dtSeconds = (cpuNow.at - lastCpu.at) / 1000;
        lastCpu = cpuNow;
        samples.push({
          t: (performance.now() - t0) / 1000,
          running: c.running,
          queued: c.queued,
          ended: c.ended - WARMUP,
          streams: fake.openResponseCount,
          rssMiB: rssMiB(harness),
          cpuMs: cpuNow.ms,
          cpuPercent,
          cpuDeltaMs,
          dtSeconds,
          heapUsedMiB: scraped.heapUsedMiB,
          lag,
          lagP99Ms: quantile(lag, 0.99),
        });
      }
    })();
    // This process is the fake provider: its own delays stretch the streams.
    const eld = monitorEventLoopDelay({ resolution: 10 });
    eld.enable();
    const rss0 = rssMiB(harness);
    const cpu0 = cpuMs(harness);

    const admitted: number[] = [];
    await pool(sessions, ADMIT_CONCURRENCY, async (s, i) => {
      await sb.post(`/v1/sessions/${s}/messages`, { content: `turn ${i}` }, key);
      admitted.push(performance.now() - t0);
    });
    const admitSeconds = (performance.now() - t0) / 1000;
    const final = await waitEnded(WARMUP + TURNS, MAX_SECONDS * 1000, false);
    const wall = (performance.now() - t0) / 1000;
    sampling = false;
    await sampler;
    const cpu = cpuMs(harness) - cpu0;
    eld.disable();

    const peak = Math.max(...samples.map((s) => s.running));
    const peakStreams = Math.max(...samples.map((s) => s.streams));
    // The plateau: samples with at least 90% of the peak in flight.
    const plateau = samples.filter((s) => s.running >= 0.9 * peak);
    const busy = samples.filter((s) => s.running > 0);
    // Holding: every turn admitted and claimed, none ended yet (a stream longer than the ramp).
    const holding = samples.filter((s) => s.queued === 0 && s.ended === 0 && s.running > 0);
    const reruns = await pg.query<{ n: number }>('SELECT count(*)::int AS n FROM turns WHERE run_count > 1');
    const modelCalls = fake.requests.length;
    // The measured turns the model server was asked for at least once (their message is `turn <i>`).
    const askedTurns = new Set(
      fake.requests
        .map((r) => {
          // The last user message (recalled memories may quote other turns' messages earlier).
          const messages = (r.body as { messages?: { role: string; content?: unknown }[] }).messages ?? [];
          const last = messages.filter((m) => m.role === 'user').at(-1);
          // Its last `turn <i>`: recalled memories of other turns may come before it in the message.
          return [...JSON.stringify(last?.content ?? '').matchAll(/turn (\d+)/g)].at(-1)?.[1];
        })
        .filter(Boolean),
    ).size;
    const t1 = samples.find((x) => x.queued === 0 && x.running + x.ended >= TURNS)?.t;
    const allStreaming = samples.find((x) => x.streams >= TURNS)?.t;
    const idleRss = rss0;
    const peakSample = samples.reduce((a, b) => (b.streams > a.streams ? b : a), samples[0]);
    // Holding: CPU per streamed delta over the samples where every admitted turn was claimed and none ended.
    const holdingDeltas = holding.reduce(
      (x, h) => x + (h.streams * PIECES * h.dtSeconds) / (STREAM_MS / 1000),
      0,
    );
    const holdingCpuMs = holding.reduce((x, h) => x + h.cpuDeltaMs, 0);
    const failed = await pg.query<{ stop_reason: string | null; n: number }>(
      "SELECT stop_reason, count(*)::int AS n FROM turns WHERE status <> 'completed' GROUP BY stop_reason",
    );
    const result = {
      turns: TURNS,
      streamSeconds: STREAM_MS / 1000,
      chunkMs: CHUNK_MS,
      harnessConcurrency: CONCURRENCY,
      harnessNodeArgs: values['harness-node-args'],
      harnessEnv: values['harness-env'],
      /** The machine's 1-minute load average at the first admission and at the end (2 cores, shared). */
      loadAverage: [Number(load0.toFixed(1)), Number(loadavg()[0].toFixed(1))],
      admitConcurrency: ADMIT_CONCURRENCY,
      admitSeconds: Number(admitSeconds.toFixed(1)),
      admitPerSecond: Number((TURNS / admitSeconds).toFixed(0)),
      wallSeconds: Number(wall.toFixed(1)),
      turnsPerSecond: Number((TURNS / wall).toFixed(1)),
      timedOut: final.timedOut,
      completed: (final.by.completed ?? 0) - WARMUP,
      /** Requests at the model server for the measured turns (one per turn: none paid twice). */
      modelCalls: modelCalls - WARMUP,
      repeatedModelCalls: modelCalls - WARMUP - askedTurns,
      /** Turns claimed more than once (a lease lost or renewed late; adopted claims make no second call). */
      turnsClaimedAgain: reruns.rows[0]?.n ?? 0,
      /** Seconds from the first admission until every turn was claimed, and until all streamed at once. */
      rampSeconds: { allClaimed: t1, allStreaming },
      /** Harness RSS and V8 heap growth per stream open, at the sample with the most streams open. */
      memoryPerTurnKiB: peakSample
        ? {
            streams: peakSample.streams,
            rss: Math.round(((peakSample.rssMiB - idleRss) * 1024) / Math.max(1, peakSample.streams)),
            heap: Math.round(((peakSample.heapUsedMiB - heap0) * 1024) / Math.max(1, peakSample.streams)),
          }
        : undefined,
      /** Harness CPU per text delta streamed while holding (µs), every admitted turn claimed, none ended. */
      holdingCpuPerDeltaUs: holdingDeltas
        ? Number(((holdingCpuMs * 1000) / holdingDeltas).toFixed(1))
        : undefined,
      deltasPerAnswer: PIECES,
      notCompleted: Object.fromEntries(failed.rows.map((r) => [r.stop_reason ?? 'none', r.n])),
      inFlightPeak: peak,
      providerStreamsPeak: peakStreams,
      plateauSeconds: Number((plateau.length * (SAMPLE_MS / 1000)).toFixed(1)),
      holdingSeconds: Number((holding.length * (SAMPLE_MS / 1000)).toFixed(1)),
      /** Harness CPU (% of one core) while holding. */
      holdingCpuPercent: holding.length
        ? Math.round(holding.reduce((x, h) => x + h.cpuPercent, 0) / holding.length)
        : undefined,
      rssMiB: {
        idle: Math.round(rss0),
        peak: Math.round(Math.max(...samples.map((s) => s.rssMiB))),
        heapUsedPeak: Math.round(Math.max(...samples.map((s) => s.heapUsedMiB))),
        atPeakInFlight: Math.round(plateau.length ? Math.max(...plateau.map((s) => s.rssMiB)) : NaN),
      },
      /** The harness's event-loop delay (ms) over every sample while turns ran, and over the plateau. */
      eventLoopDelayMs: {
        whileRunning: lagSummary(busy.map((x) => x.lag).reduce(plus)),
        plateau: lagSummary(plateau.map((x) => x.lag).reduce(plus)),
        holding: holding.length ? lagSummary(holding.map((x) => x.lag).reduce(plus)) : undefined,
        windowP99Max: Number(Math.max(...busy.map((x) => x.lagP99Ms).filter(Number.isFinite)).toFixed(1)),
      },
      benchProcessEventLoopDelayMs: {
        p50: Number((eld.percentile(50) / 1e6 - 10).toFixed(1)),
        p99: Number((eld.percentile(99) / 1e6 - 10).toFixed(1)),
        max: Number((eld.max / 1e6 - 10).toFixed(1)),
      },
      harnessCpuPercent: Number(((cpu / (wall * 1000)) * 100).toFixed(0)),
      harnessCpuMsPerTurn: Number((cpu / TURNS).toFixed(1)),
      samples,
    };
    if (values.json) console.log(JSON.stringify(result, null, 2));
    else {
      console.log('   t s  running queued ended streams  RSS MiB  heap MiB  CPU %  lag p99 ms (this window)');
      for (const s of samples)
        console.log(
          `${s.t.toFixed(1).padStart(6)} ${String(s.running).padStart(8)} ${String(s.queued).padStart(6)} ${String(s.ended).padStart(5)} ${String(s.streams).padStart(7)} ${s.rssMiB.toFixed(0).padStart(8)} ${s.heapUsedMiB.toFixed(0).padStart(9)} ${s.cpuPercent.toFixed(0).padStart(6)}  ${s.lagP99Ms.toFixed(1)}`,
        );
      console.log(JSON.stringify({ ...result, samples: undefined }, null, 2));
    }
  } finally {
    await pg.end().catch(() => undefined);
    await sb.stop();
    await fake.close();
  }
}

main().then(
  () => process.exit(0),
  (err: unknown) => {
    console.error(err instanceof Error ? err.stack : err);
    process.exit(1);
  },
);
