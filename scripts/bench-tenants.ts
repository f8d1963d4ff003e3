/**
 * Noisy neighbour (issue 19; a benchmark, not a test). Real processes on a database and queue prefix
 * of their own (a gateway, `--workers` harness workers, a hooks worker; rate limits off unless
 * `--rate-limits`), an instant scripted model (`scripted/echo`, one round, no tool), and two tenants
 * created through the admin API:
 *
 *   1. B alone: tenant B sends one turn every `--b-interval-ms` (500) with `wait: true`, `--b-turns`
 *      (20) of them, each on a session of its own; the latency of each request is measured.
 *   2. A alone: tenant A admits `--a-turns` (2,000) turns at once over `--a-sessions` (200) sessions,
 *      `--a-concurrency` (50) requests in flight; A's drain throughput is its turns over the time
 *      from the first admission to the moment Postgres shows none of A's turns unfinished.
 *   3. Shared: A admits the same backlog again on new sessions and, while it drains, B sends as in
 *      phase 1 (at least `--b-turns`, until A's backlog is drained).
 *   4. A alone again: phase 2 once more. A's shared throughput is compared with the mean of phases 2
 *      and 4 (alone before and after), so what drifts over the run (the tables grow, the machine's
 *      other load changes) weighs on both sides of the ratio alike.
 *
 * It prints a table (B's latency alone and during A's backlog, A's throughput alone and shared,
 * 429s and other non-2xx answers per tenant), whether the issue's goal holds (B's p90 during A's
 * backlog ≤ 2 × B's unloaded p50 + 250 ms, A's shared throughput ≥ 90% of alone) and one JSON line.
 * It exits 0 whatever the figures; non-zero only on errors.
 *
 *   npm run bench:tenants -- [--workers 2] [--harness-concurrency 32] [--b-turns 20] [--b-interval-ms 500]
 *     [--a-turns 2000] [--a-sessions 200] [--a-concurrency 50] [--warmup 20] [--wait-timeout-s 600]
 *     [--rate-limits] [--model scripted/echo] [--poll-ms 100] [--timeout-s 1800]
 *
 * `--scenario burst-429` (issue 37) runs another shape instead, at production settings
 * (NODE_ENV=production, the default rate limits, OpenTelemetry on, a model server process): B alone,
 * then A's 2,000 messages over 200 sessions as fast as the client sends them (most answered 429)
 * with B's schedule beside them, then a check in Postgres that every admitted message of A completed
 * exactly once; it prints PASS or FAIL (`--fail-on-miss`: exit 3 on FAIL). docs/BENCHMARKS.md.
 *
 * Every flag can also be given as BENCH_TENANTS_<FLAG> in the environment (BENCH_TENANTS_WORKERS=1).
 *
 * The client: undici with keep-alive, one connection pool per tenant (no per-origin connection
 * limit, so B never waits behind A's sockets); A's admissions go `--a-concurrency` at a time (never
 * one by one); B's sends leave on their schedule whatever earlier answers did (the lag behind the
 * schedule is reported). Completion of A's backlog is watched with one Postgres query every
 * `--poll-ms` (no API route gives a tenant's unfinished count), not through the gateway.
 */
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { loadavg } from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { Queue } from 'bullmq';
import IORedis from 'ioredis';
import { Client } from 'pg';
import { Agent, request } from 'undici';
import { ConfigSchema } from '@switchboard/config';
import { QueueName } from '@switchboard/contracts';
import { pct, pool, sleep, startSwitchboard, type Switchboard } from './bench-lib';

const FLAGS = {
  /**
   * `backlog` (the default: the four phases above) or `burst-429` (issue 37: production settings,
   * A's 2,000 messages mostly refused by the default rate limits; see BURST_429 below).
   */
  scenario: 'backlog',
  workers: '2',
  'harness-concurrency': '32',
  /** TENANT_MAX_CONCURRENT_TURNS for the harness workers (0: no cap). */
  'tenant-cap': '0',
  'b-turns': '20',
  'b-interval-ms': '500',
  'a-turns': '2000',
  'a-sessions': '200',
  /** Empty: 50 for `backlog`, 200 (one request in flight per session) for `burst-429`. */
  'a-concurrency': '',
  warmup: '20',
  /** Empty: 600 for `backlog`, the production default (WAIT_TIMEOUT_MS) for `burst-429`. */
  'wait-timeout-s': '',
  /** burst-429: B keeps sending this long after A's admitted turns all ended. */
  'tail-s': '5',
  /** burst-429: the model server's answer delay (0: at once). */
  'model-delay-ms': '0',
  /** Empty: off for `backlog`, on for `burst-429` (production runs it, with no collector here). */
  otel: '',
  /** Empty: `scripted/echo` for `backlog`, the model server's `openai-chat/gpt-4o-mini` for `burst-429`. */
  model: '',
  'poll-ms': '100',
  'timeout-s': '1800',
} as const;
const envOf = (flag: string) => process.env[`BENCH_TENANTS_${flag.toUpperCase().replace(/-/g, '_')}`];
const { values } = parseArgs({
  options: {
    ...(Object.fromEntries(
      Object.entries(FLAGS).map(([k, d]) => [k, { type: 'string', default: envOf(k) ?? d }]),
    ) as Record<keyof typeof FLAGS, { type: 'string'; default: string }>),
    /** The deployment's default rate limits (README) instead of none. */
    'rate-limits': { type: 'boolean', default: ['1', 'true'].includes(envOf('rate-limits') ?? '') },
    /** burst-429: exit 3 when the goal does not hold (a benchmark otherwise exits 0 whatever the figures). */
    'fail-on-miss': { type: 'boolean', default: ['1', 'true'].includes(envOf('fail-on-miss') ?? '') },
    /** Extra settings for every process, `KEY=VALUE`, repeatable (e.g. ADMISSION_CONCURRENCY_PER_TENANT=2). */
    env: { type: 'string', multiple: true, default: [] },
  },
});
const num = (k: keyof typeof FLAGS): number => {
  const n = Number(values[k]);
  if (!Number.isFinite(n) || n < 0) throw new Error(`--${k} must be a number ≥ 0, not ${values[k]}`);
  return n;
};
const SCENARIO = values.scenario;
if (SCENARIO !== 'backlog' && SCENARIO !== 'burst-429')
  throw new Error(`--scenario must be backlog or burst-429, not ${SCENARIO}`);
const BURST_429 = SCENARIO === 'burst-429';
/** A flag whose empty default means "the scenario's". */
const orScenario = (k: keyof typeof FLAGS, backlog: number, burst: number) =>
  values[k] === '' ? (BURST_429 ? burst : backlog) : num(k);
const WORKERS = num('workers');
const HARNESS_CONCURRENCY = num('harness-concurrency');
const TENANT_CAP = num('tenant-cap');
const B_TURNS = num('b-turns');
const B_INTERVAL_MS = num('b-interval-ms');
const A_TURNS = num('a-turns');
const A_SESSIONS = Math.max(1, num('a-sessions'));
const A_CONCURRENCY = Math.max(1, orScenario('a-concurrency', 50, 200));
const WARMUP = num('warmup');
const WAIT_TIMEOUT_MS =
  values['wait-timeout-s'] === ''
    ? BURST_429
      ? ConfigSchema.shape.WAIT_TIMEOUT_MS.parse(undefined)
      : 600_000
    : num('wait-timeout-s') * 1000;
const TAIL_MS = num('tail-s') * 1000;
const MODEL_DELAY_MS = num('model-delay-ms');
const OTEL = values.otel === '' ? BURST_429 : ['1', 'true', 'on'].includes(values.otel);
const POLL_MS = Math.max(10, num('poll-ms'));
const TIMEOUT_MS = num('timeout-s') * 1000;
/** burst-429's agents use the model server's OpenAI wire (a process of its own). */
const MODEL = values.model || (BURST_429 ? 'openai-chat/gpt-4o-mini' : 'scripted/echo');
const RATE_LIMITS = values['rate-limits'] || BURST_429;
const EXTRA_ENV = Object.fromEntries(
  values.env.map((kv) => {
    const at = kv.indexOf('=');
    if (at < 1) throw new Error(`--env takes KEY=VALUE, not ${kv}`);
    return [kv.slice(0, at), kv.slice(at + 1)];
  }),
);
/** The README's defaults (ADR 0028), per tenant and minute. */
/** A B result's medians of where the time went, as one cell. */
const partsOf = (r: { parts: Record<string, number> }) =>
  `${r.parts.admitMs} / ${r.parts.queueMs} / ${r.parts.runMs} / ${r.parts.answerMs} ms`;
/** A numeric setting's default (config.ts), as the environment gives it. */
const configDefault = (
  k:
    | 'RATE_LIMIT_ADMISSION_PER_MIN'
    | 'RATE_LIMIT_READS_PER_MIN'
    | 'RATE_LIMIT_WRITES_PER_MIN'
    | 'RATE_LIMIT_WEBHOOKS_PER_MIN'
    | 'RECONCILE_INTERVAL_MS'
    | 'LEASE_SWEEP_MS'
    | 'SHUTDOWN_GRACE_MS',
): string => String(ConfigSchema.shape[k].parse(undefined));
const DEFAULT_LIMITS = Object.fromEntries(
  (
    [
      'RATE_LIMIT_ADMISSION_PER_MIN',
      'RATE_LIMIT_READS_PER_MIN',
      'RATE_LIMIT_WRITES_PER_MIN',
      'RATE_LIMIT_WEBHOOKS_PER_MIN',
    ] as const
  ).map((k) => [k, configDefault(k)]),
);
/**
 * burst-429 runs the processes as production does: what the test environment (libs/testing env.ts)
 * sets for tests back at the defaults (the rate limits above, the reconcile and lease sweeps), and
 * NODE_ENV=production. The lease, lock and stall times are bench-lib's, which are the defaults.
 */
const PRODUCTION_ENV = {
  NODE_ENV: 'production',
  ...DEFAULT_LIMITS,
  RECONCILE_INTERVAL_MS: configDefault('RECONCILE_INTERVAL_MS'),
  LEASE_SWEEP_MS: configDefault('LEASE_SWEEP_MS'),
  SHUTDOWN_GRACE_MS: configDefault('SHUTDOWN_GRACE_MS'),
};
const ADMIN_TOKEN = 'test-admin-token-0123456789'; // the test environment's (libs/testing env.ts)
const TERMINAL = ['completed', 'failed', 'cancelled'];

/** A and B are measured; W (burst-429 only) warms the processes up, so A's quota is unspent. */
type Tenant = 'A' | 'B' | 'W';
type Measured = 'A' | 'B';
type Phase = 'alone' | 'shared' | 'again';

/** What a tenant's requests were answered in one phase. */
class Tally {
  statuses: Record<string, number> = {};
  add(status: number | 'error'): void {
    this.statuses[status] = (this.statuses[status] ?? 0) + 1;
  }
  get rateLimited(): number {
    return this.statuses['429'] ?? 0;
  }
  /** Non-2xx answers other than 429, and requests that got no answer at all. */
  get otherNon2xx(): number {
    return Object.entries(this.statuses)
      .filter(([s]) => s !== '429' && !/^2\d\d$/.test(s))
      .reduce((n, [, c]) => n + c, 0);
  }
}

interface Answer {
  status: number;
  body: Record<string, unknown>;
  headers: Record<string, string | string[] | undefined>;
}

/** One tenant's HTTP client: its own keep-alive connection pool. */
class Api {
  readonly agent: Agent;
  constructor(
    private readonly base: string,
    private readonly key: string,
  ) {
    this.agent = new Agent({
      keepAliveTimeout: 60_000,
      // A `wait: true` answer may take up to WAIT_TIMEOUT_MS; undici's default gives up at 300 s.
      headersTimeout: WAIT_TIMEOUT_MS + 60_000,
      bodyTimeout: WAIT_TIMEOUT_MS + 60_000,
    });
  }

  async call(method: 'GET' | 'POST', path: string, body?: unknown): Promise<Answer> {
    const res = await request(`${this.base}${path}`, {
      method,
      dispatcher: this.agent,
      headers: {
        authorization: `Bearer ${this.key}`,
        ...(body === undefined ? {} : { 'content-type': 'application/json' }),
      },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const text = await res.body.text();
    let parsed: Record<string, unknown> = {};
    try {
      parsed = text ? (JSON.parse(text) as Record<string, unknown>) : {};
    } catch {
      parsed = { text };
    }
    return { status: res.statusCode, body: parsed, headers: res.headers };
  }

  /** Setup requests (not measured): retried after a 429's Retry-After; anything else non-2xx throws. */
  async setup<T>(path: string, body: unknown, tally?: Tally): Promise<T> {
    for (let attempt = 0; ; attempt++) {
      const res = await this.call('POST', path, body);
      tally?.add(res.status);
      if (res.status >= 200 && res.status < 300) return res.body as T;
      if (res.status === 429 && attempt < 100) {
        await sleep(Math.max(100, Number(res.headers['retry-after'] ?? 1) * 1000));
        continue;
      }
      throw new Error(`POST ${path} ${res.status} ${JSON.stringify(res.body)}`);
    }
  }

  close(): Promise<void> {
    return this.agent.close();
  }
}

/**
 * Sessions made ahead of use, so a send on B's schedule never waits for one: refilled in the
 * background when fewer than `low` are left; `inline` counts the sends that had to make one anyway.
 */
class SessionPool {
  private readonly ready: string[] = [];
  private filling?: Promise<void>;
  private failure?: Error;
  inline = 0;
  constructor(
    private readonly create: () => Promise<string>,
    private readonly low: number,
  ) {}

  async fill(n: number): Promise<void> {
    await pool(Array.from({ length: n }), 5, async () => {
      this.ready.push(await this.create());
    });
  }

  async take(): Promise<string> {
    if (this.failure) throw this.failure;
    const s = this.ready.shift();
    if (this.ready.length < this.low && !this.filling)
      this.filling = this.fill(this.low * 2)
        .catch((err: unknown) => {
          this.failure = err instanceof Error ? err : new Error(String(err));
        })
        .finally(() => {
          this.filling = undefined;
        });
    if (s) return s;
    this.inline++;
    return this.create();
  }

  async idle(): Promise<void> {
    await this.filling;
    if (this.failure) throw this.failure;
  }
}

interface BSample {
  /** Send → answer, ms. A lower bound when `timedOut` (the gateway's wait bound passed first). */
  ms: number;
  status: number | 'error';
  turnStatus?: string;
  timedOut: boolean;
  /** How late the send left after its slot on the schedule, ms. */
  lagMs: number;
  /** Send → admitted, admitted → started, started → ended, ended → answered (ms). */
  parts?: Record<'admitMs' | 'queueMs' | 'runMs' | 'answerMs', number>;
  /** Sent while the load was on (burst-429: before A's admitted turns had all ended). */
  loaded?: boolean;
  /** When it was sent, ms since the Unix epoch. */
  sentAt?: number;
}

interface BResult {
  /** Medians of where B's time went: admission, queue, run, answer (ms). */
  parts: Record<string, number>;
  /** The 90th percentile of each part. */
  partsP90: Record<string, number>;
  /** The three slowest answers: their latency and parts. */
  slowest: Record<string, number>[];
  sent: number;
  answered: number;
  p50: number;
  p90: number;
  p99: number;
  max: number;
  /** The same over the sends made while the load was on (burst-429), when they are not all. */
  loaded?: { sent: number; p50: number; p90: number; p99: number; max: number };
  /** Requests whose wait bound passed (202): their latency is a lower bound. */
  waitTimeouts: number;
  /** 200s whose turn did not complete. */
  turnsNotCompleted: number;
  sendLagMaxMs: number;
  sessionsMadeInline: number;
  latenciesMs: number[];
  /** Every answered send: when it left (epoch ms), its latency and parts. */
  timeline: Record<string, number>[];
}

interface AResult {
  admitted: number;
  /** Seconds from the first admission to the last answer of the burst. */
  admitSeconds: number;
  /** Seconds from the first admission to Postgres showing none of A's turns unfinished. */
  drainSeconds: number;
  turnsPerSecond: number;
  /** The same from the turns' own timestamps: first created_at to last completed_at. */
  dbSpanSeconds: number;
  dbTurnsPerSecond: number;
  byStatus: Record<string, number>;
  /** This process's CPU over the phase, % of one core (it shares the machine with the system). */
  clientCpuPercent: number;
  /** When the burst started and when its last 429 and last 202 were answered (epoch ms). */
  startedAt: number;
  last429At: number;
  last202At: number;
}

const round = (x: number, d = 1) => (Number.isFinite(x) ? Number(x.toFixed(d)) : NaN);

function gitCommit(): string {
  try {
    return execFileSync('git', ['rev-parse', '--short', 'HEAD'], { encoding: 'utf8' }).trim();
  } catch {
    return 'unknown';
  }
}

/** A markdown table with padded columns. */
function table(rows: string[][]): string {
  const widths = rows[0].map((_, c) => Math.max(...rows.map((r) => r[c].length)));
  const line = (r: string[]) => `| ${r.map((x, c) => x.padEnd(widths[c])).join(' | ')} |`;
  return [
    line(rows[0]),
    `| ${widths.map((w) => '-'.repeat(w)).join(' | ')} |`,
    ...rows.slice(1).map(line),
  ].join('\n');
}

const progress = (msg: string) => process.stderr.write(`[bench:tenants] ${msg}\n`);

async function run(sb: Switchboard, closers: (() => Promise<unknown>)[]): Promise<boolean> {
  const pg = new Client({ connectionString: sb.env.databaseUrl });
  await pg.connect();
  closers.push(() => pg.end());
  const redis = new IORedis(sb.env.redisUrl, { maxRetriesPerRequest: null });
  closers.push(async () => redis.disconnect());
  const queues = [QueueName.Turns, QueueName.PostTurn].map(
    (name) => new Queue(name, { connection: redis, prefix: sb.env.queuePrefix }),
  );
  closers.push(() => Promise.all(queues.map((q) => q.close())));

  const admin = new Api(sb.base, ADMIN_TOKEN);
  closers.push(() => admin.close());
  const tenants = {} as Record<Tenant, { id: string; api: Api; agentId: string }>;
  for (const t of (BURST_429 ? ['A', 'B', 'W'] : ['A', 'B']) as Tenant[]) {
    const made = await admin.setup<{ tenant: { id: string }; apiKey: { key: string } }>('/v1/admin/tenants', {
      name: `bench-${t}`,
    });
    const api = new Api(sb.base, made.apiKey.key);
    closers.push(() => api.close());
    const agent = await api.setup<{ id: string }>('/v1/agents', { name: `echo-${t}`, model: MODEL });
    tenants[t] = { id: made.tenant.id, api, agentId: agent.id };
  }
  const setupTally: Record<Tenant, Tally> = { A: new Tally(), B: new Tally(), W: new Tally() };
  const newSession = (t: Tenant) => async () =>
    (
      await tenants[t].api.setup<{ id: string }>(
        '/v1/sessions',
        { agentId: tenants[t].agentId },
        setupTally[t],
      )
    ).id;
  const tallies: Record<Phase, Record<Measured, Tally>> = {
    alone: { A: new Tally(), B: new Tally() },
    shared: { A: new Tally(), B: new Tally() },
    again: { A: new Tally(), B: new Tally() },
  };

  const unfinished = async (tenantId?: string): Promise<number> => {
    const r = await pg.query<{ n: number }>(
      `SELECT count(*)::int AS n FROM turns WHERE status <> ALL($1::text[])${tenantId ? ' AND tenant_id = $2' : ''}`,
      tenantId ? [TERMINAL, tenantId] : [TERMINAL],
    );
    return r.rows[0].n;
  };

  /**
   * Waits until no turn is unfinished and the turn and post-turn queues are empty (the hooks of the
   * last phase would otherwise take CPU from the next), then 1 s more; with rate limits on, also
   * for the quotas to renew.
   */
  const settle = async (renewQuotas = true) => {
    const until = Date.now() + 300_000;
    for (;;) {
      const counts = await Promise.all(queues.map((q) => q.getJobCounts('waiting', 'active', 'prioritized')));
      const queued = counts.reduce((n, c) => n + c.waiting + c.active + c.prioritized, 0);
      const open = await unfinished();
      if (queued === 0 && open === 0) break;
      if (Date.now() > until) {
        progress(`not settled after 300 s (${open} turns unfinished, ${queued} jobs queued); going on`);
        break;
      }
      await sleep(250);
    }
    // Fixed one-minute windows (ADR 0028): the next phase starts with every tenant's quota unspent.
    if (RATE_LIMITS && renewQuotas) {
      progress('rate limits on: waiting 61 s for the quotas to renew');
      await sleep(61_000);
    }
    await sleep(1000);
  };

  /** One B turn: wait: true on a fresh session. */
  const bTurn = async (session: string, i: number, tally: Tally, lagMs: number): Promise<BSample> => {
    const t0 = performance.now();
    const sentAt = Date.now();
    try {
      const res = await tenants.B.api.call('POST', `/v1/sessions/${session}/messages`, {
        content: `b ${i}`,
        wait: true,
      });
      const ms = performance.now() - t0;
      tally.add(res.status);
      const turnStatus = typeof res.body.status === 'string' ? res.body.status : undefined;
      // Where the time went (server timestamps, same clock): admitted, queued, ran, answered.
      const at = (k: string) => (typeof res.body[k] === 'string' ? Date.parse(res.body[k]) : NaN);
      const [created, started, completed] = [at('createdAt'), at('startedAt'), at('completedAt')];
      const parts = {
        admitMs: created - sentAt,
        queueMs: started - created,
        runMs: completed - started,
        answerMs: Date.now() - completed,
      };
      return { ms, status: res.status, turnStatus, timedOut: res.status === 202, lagMs, parts, sentAt };
    } catch (err) {
      tally.add('error');
      progress(`B request failed: ${(err as Error).message}`);
      return { ms: performance.now() - t0, status: 'error', timedOut: false, lagMs };
    }
  };

  /**
   * B's open loop: send i leaves at start + i × interval whatever earlier answers did; stops after
   * `min` sends once `more()` says no.
   */
  const runB = async (
    sessions: SessionPool,
    tally: Tally,
    min: number,
    more: () => boolean,
    loaded?: () => boolean,
  ) => {
    const samples: Promise<BSample>[] = [];
    const start = performance.now();
    for (let i = 0; ; i++) {
      const due = start + i * B_INTERVAL_MS;
      const wait = due - performance.now();
      if (wait > 0) await sleep(wait);
      if (i >= min && !more()) break;
      const session = await sessions.take();
      const under = loaded?.();
      samples.push(bTurn(session, i, tally, performance.now() - due).then((x) => ({ ...x, loaded: under })));
    }
    return summariseB(await Promise.all(samples), sessions.inline);
  };

  const summariseB = (samples: BSample[], inline: number): BResult => {
    const answered = samples.filter((s) => s.status !== 'error');
    const ms = answered.map((s) => s.ms);
    const withParts = answered.flatMap((x) => (x.parts ? [x.parts] : []));
    const parts = Object.fromEntries(
      (['admitMs', 'queueMs', 'runMs', 'answerMs'] as const).map((k) => [
        k,
        round(pct(withParts.map((p) => p[k]).filter(Number.isFinite), 50)),
      ]),
    );
    const partsP90 = Object.fromEntries(
      (['admitMs', 'queueMs', 'runMs', 'answerMs'] as const).map((k) => [
        k,
        round(pct(withParts.map((p) => p[k]).filter(Number.isFinite), 90)),
      ]),
    );
    // Where the slowest three answers spent their time (an outlier's cause, not a median's).
    const slowest = [...answered]
      .sort((a, b) => b.ms - a.ms)
      .slice(0, 3)
      .map((x) => ({ ms: round(x.ms), ...x.parts }));
    return {
      parts,
      partsP90,
      slowest,
      sent: samples.length,
      answered: answered.length,
      p50: round(pct(ms, 50)),
      p90: round(pct(ms, 90)),
      p99: round(pct(ms, 99)),
      max: round(ms.length ? Math.max(...ms) : NaN),
      ...(answered.some((x) => x.loaded === false)
        ? (() => {
            const under = answered.filter((x) => x.loaded).map((x) => x.ms);
            return {
              loaded: {
                sent: samples.filter((x) => x.loaded).length,
                p50: round(pct(under, 50)),
                p90: round(pct(under, 90)),
                p99: round(pct(under, 99)),
                max: round(under.length ? Math.max(...under) : NaN),
              },
            };
          })()
        : {}),
      waitTimeouts: samples.filter((s) => s.timedOut).length,
      turnsNotCompleted: samples.filter((s) => s.status === 200 && s.turnStatus !== 'completed').length,
      sendLagMaxMs: round(Math.max(0, ...samples.map((s) => s.lagMs))),
      sessionsMadeInline: inline,
      latenciesMs: ms.map((x) => round(x)),
      timeline: answered.map((x) => ({ sentAt: x.sentAt ?? NaN, ms: round(x.ms), ...x.parts })),
    };
  };

  /**
   * A's burst: every turn admitted at once over fresh sessions (turn i on session i mod n, so the
   * requests in flight are on different sessions), then watched until none is unfinished.
   */
  const runA = async (
    phase: Phase,
    on: {
      start?: () => void;
      drained?: () => void;
      /** Filled with A's sessions and the turn id of every admission answered 202. */
      collect?: { sessions: string[]; turnIds: string[] };
    } = {},
  ): Promise<AResult> => {
    const sessions: string[] = on.collect?.sessions ?? [];
    await pool(Array.from({ length: A_SESSIONS }), 10, async () => {
      sessions.push(await newSession('A')());
    });
    const tally = tallies[phase].A;
    let admitted = 0;
    let admissionsOver = false;
    const t0 = performance.now();
    const startedAt = Date.now();
    let last429At = NaN;
    let last202At = NaN;
    const cpu0 = process.cpuUsage();
    on.start?.();
    const admissions = pool(
      Array.from({ length: A_TURNS }, (_, i) => sessions[i % sessions.length]),
      A_CONCURRENCY,
      async (session, i) => {
        try {
          const res = await tenants.A.api.call('POST', `/v1/sessions/${session}/messages`, {
            content: `a ${phase} ${i}`,
          });
          tally.add(res.status);
          if (res.status === 429) last429At = Date.now();
          if (res.status === 202) {
            last202At = Date.now();
            admitted++;
            if (typeof res.body.turnId === 'string') on.collect?.turnIds.push(res.body.turnId);
          }
        } catch (err) {
          tally.add('error');
          if (tally.statuses.error === 1) progress(`A request failed: ${(err as Error).message}`);
        }
      },
    ).then(() => {
      admissionsOver = true;
    });
    let admitSeconds = NaN;
    void admissions.then(() => {
      admitSeconds = (performance.now() - t0) / 1000;
    });
    let lastReport = performance.now();
    for (;;) {
      const over = admissionsOver; // read before the count, so a late admission is not missed
      const open = await unfinished(tenants.A.id);
      if (over && open === 0) break;
      if (performance.now() - t0 > TIMEOUT_MS)
        throw new Error(`A's backlog (${phase}) not drained in ${TIMEOUT_MS / 1000} s: ${open} unfinished`);
      if (performance.now() - lastReport > 5000) {
        progress(`${phase}: A admitted ${admitted}/${A_TURNS}, unfinished ${open}`);
        lastReport = performance.now();
      }
      await sleep(POLL_MS);
    }
    const drainSeconds = (performance.now() - t0) / 1000;
    const cpu = process.cpuUsage(cpu0);
    on.drained?.();
    await admissions;
    const db = await pg.query<{ status: string; n: number; span: number }>(
      `SELECT status, count(*)::int AS n,
              extract(epoch FROM (max(max(completed_at)) OVER () - min(min(created_at)) OVER ()))::float8 AS span
         FROM turns WHERE session_id = ANY($1::uuid[]) GROUP BY status`,
      [sessions],
    );
    const span = db.rows[0]?.span ?? NaN;
    return {
      admitted,
      admitSeconds: round(admitSeconds),
      drainSeconds: round(drainSeconds, 2),
      turnsPerSecond: admitted ? round(admitted / drainSeconds) : 0,
      dbSpanSeconds: round(span, 2),
      dbTurnsPerSecond: admitted ? round(admitted / span) : 0,
      byStatus: Object.fromEntries(db.rows.map((r) => [r.status, r.n])),
      clientCpuPercent: round((cpu.user + cpu.system) / 10 / drainSeconds / 1000),
      startedAt,
      last429At,
      last202At,
    };
  };

  /**
   * burst-429 (issue 37): B alone, then A's 2,000 messages as fast as the client sends them with
   * B's schedule running beside them, from A's first send until `--tail-s` after A's admitted turns
   * all ended; then the check in Postgres that every admitted message of A ran exactly once.
   */
  const burst429 = async (): Promise<boolean> => {
    const load0 = loadavg()[0];
    progress(`phase 1: B alone, ${B_TURNS} turns every ${B_INTERVAL_MS} ms`);
    const bAlonePool = new SessionPool(newSession('B'), 0);
    await bAlonePool.fill(B_TURNS);
    const bAlone = await runB(bAlonePool, tallies.alone.B, B_TURNS, () => false);
    await settle(false);

    progress(
      `phase 2: A sends ${A_TURNS} messages over ${A_SESSIONS} sessions, ${A_CONCURRENCY} in flight; B every ${B_INTERVAL_MS} ms`,
    );
    const bPool = new SessionPool(newSession('B'), 20);
    await bPool.fill(40);
    let stopAt = Infinity;
    let bRun: Promise<BResult> | undefined;
    const collect = { sessions: [] as string[], turnIds: [] as string[] };
    const cpu0 = await sb.cpu();
    const a = await runA('shared', {
      collect,
      start: () => {
        bRun = runB(
          bPool,
          tallies.shared.B,
          B_TURNS,
          () => performance.now() < stopAt,
          () => stopAt === Infinity,
        );
      },
      drained: () => {
        stopAt = performance.now() + TAIL_MS;
      },
    });
    const b = await bRun!;
    const cpu1 = await sb.cpu();
    await bPool.idle();
    await settle(false);
    const load1 = loadavg()[0];

    // Nothing lost, nothing twice: A's sessions hold exactly the admitted messages, each with one
    // turn that completed once; a 429 left nothing behind.
    const v = (
      await pg.query<Record<string, number>>(
        `SELECT
           (SELECT count(*)::int FROM messages WHERE session_id = ANY($1::uuid[]) AND role = 'user') AS "userMessages",
           (SELECT count(*)::int FROM turns WHERE session_id = ANY($1::uuid[])) AS turns,
           (SELECT count(DISTINCT input_message_id)::int FROM turns WHERE session_id = ANY($1::uuid[])) AS "turnInputs",
           (SELECT count(*)::int FROM turns WHERE id = ANY($2::uuid[]) AND status = 'completed') AS "admittedCompleted",
           (SELECT count(*)::int FROM events WHERE session_id = ANY($1::uuid[]) AND type = 'turn_completed') AS "completedEvents",
           (SELECT count(DISTINCT turn_id)::int FROM events
             WHERE session_id = ANY($1::uuid[]) AND type = 'turn_completed' AND turn_id = ANY($2::uuid[])) AS "admittedWithEvent"`,
        [collect.sessions, collect.turnIds],
      )
    ).rows[0];
    const admitted = a.admitted;
    const distinctIds = new Set(collect.turnIds).size;
    const aIntact =
      distinctIds === admitted &&
      Object.values(v).every((n) => n === admitted) &&
      a.admitted + (tallies.shared.A.statuses['429'] ?? 0) + tallies.shared.A.otherNon2xx === A_TURNS;
    const bAllAnswered = (r: BResult, t: Tally) =>
      r.answered === r.sent &&
      r.waitTimeouts === 0 &&
      r.turnsNotCompleted === 0 &&
      (t.statuses['200'] ?? 0) === r.sent;
    const bIntact = bAllAnswered(bAlone, tallies.alone.B) && bAllAnswered(b, tallies.shared.B);
    const bound = round(2 * bAlone.p50 + 250);
    const latencyHolds = b.p90 <= bound;
    const pass = latencyHolds && aIntact && bIntact;

    const statuses = (t: Tally) => `${t.statuses['202'] ?? 0} / ${t.rateLimited} / ${t.otherNon2xx}`;
    const bCounts = (t: Tally, r: BResult) => `${t.rateLimited} / ${t.otherNon2xx} (${r.waitTimeouts})`;
    const four = (x: { p50: number; p90: number; p99: number; max: number }) =>
      `${x.p50} / ${x.p90} / ${x.p99} / ${x.max} ms`;
    const cpuSeconds = Object.fromEntries(
      Object.keys(cpu1).map((k) => [k, round((cpu1[k] - (cpu0[k] ?? 0)) / 1000, 2)]),
    );
    const header = `Burst past the rate limits (issue 37), commit ${gitCommit()}: NODE_ENV=production, default rate limits (admission ${DEFAULT_LIMITS.RATE_LIMIT_ADMISSION_PER_MIN}/min per tenant), ${WORKERS} harness worker(s) × HARNESS_CONCURRENCY ${HARNESS_CONCURRENCY}${TENANT_CAP ? `, TENANT_MAX_CONCURRENT_TURNS ${TENANT_CAP}` : ''}, OpenTelemetry ${OTEL ? 'on (no collector)' : 'off'}, model ${MODEL}${MODEL.startsWith('scripted/') ? ' (in the harness)' : ` from the model server (a process, OpenAI wire) answering ${MODEL_DELAY_MS ? `after ${MODEL_DELAY_MS} ms` : 'at once'}`}, WAIT_TIMEOUT_MS ${WAIT_TIMEOUT_MS}${values.env.length ? `, ${values.env.join(' ')}` : ''}; load average ${load0.toFixed(2)} → ${load1.toFixed(2)}`;
    console.log(`\n${header}\n`);
    console.log(
      table([
        [
          `tenant B: one message every ${B_INTERVAL_MS} ms, wait: true`,
          'alone',
          "during A's burst (+ tail)",
          'sent before A drained',
        ],
        [
          'sent / answered 200 completed',
          `${bAlone.sent} / ${bAlone.answered - bAlone.turnsNotCompleted}`,
          `${b.sent} / ${b.answered - b.turnsNotCompleted}`,
          String(b.loaded?.sent ?? b.sent),
        ],
        ['latency p50 / p90 / p99 / max', four(bAlone), four(b), b.loaded ? four(b.loaded) : four(b)],
        ['median admit / queue / run / answer', partsOf(bAlone), partsOf(b), ''],
        [
          'p90 admit / queue / run / answer',
          partsOf({ parts: bAlone.partsP90 }),
          partsOf({ parts: b.partsP90 }),
          '',
        ],
        [
          '429s / other non-2xx (wait timeouts)',
          bCounts(tallies.alone.B, bAlone),
          bCounts(tallies.shared.B, b),
          '',
        ],
        ['send lag behind the schedule, max', `${bAlone.sendLagMaxMs} ms`, `${b.sendLagMaxMs} ms`, ''],
      ]),
    );
    console.log('');
    console.log(
      table([
        [`tenant A: ${A_TURNS} messages over ${A_SESSIONS} sessions, ${A_CONCURRENCY} in flight`, ''],
        ['202 / 429 / other', statuses(tallies.shared.A)],
        ['all answered after', `${a.admitSeconds} s`],
        ['admitted turns all ended after', `${a.drainSeconds} s (${a.turnsPerSecond} turns/s)`],
        [
          'in Postgres: user messages / turns / distinct inputs / admitted completed / turn_completed events',
          `${v.userMessages} / ${v.turns} / ${v.turnInputs} / ${v.admittedCompleted} / ${v.completedEvents}`,
        ],
        ['CPU s over the burst by process', JSON.stringify(cpuSeconds)],
        ["the bench client's own CPU (one core = 100%)", `${a.clientCpuPercent}%`],
      ]),
    );
    console.log(`
Goal (issue 37):
  B's p90 during A's burst ${b.p90} ms ≤ 2 × ${bAlone.p50} + 250 = ${bound} ms: ${latencyHolds ? 'holds' : 'does not hold'}${b.loaded ? ` (over the ${b.loaded.sent} sends before A drained: p90 ${b.loaded.p90} ms)` : ''}
  A: every admitted message completed exactly once, nothing from a 429: ${aIntact ? 'yes' : 'NO'} (${admitted} admitted)
  B: every message answered 200 with its completed turn: ${bIntact ? 'yes' : 'NO'}
${pass ? 'PASS' : 'FAIL'}`);
    console.log(
      JSON.stringify({
        bench: 'tenants',
        scenario: SCENARIO,
        commit: gitCommit(),
        config: {
          harnessWorkers: WORKERS,
          harnessConcurrency: HARNESS_CONCURRENCY,
          tenantCap: TENANT_CAP,
          model: MODEL,
          otel: OTEL,
          modelDelayMs: MODEL_DELAY_MS,
          waitTimeoutMs: WAIT_TIMEOUT_MS,
          bIntervalMs: B_INTERVAL_MS,
          aTurns: A_TURNS,
          aSessions: A_SESSIONS,
          aConcurrency: A_CONCURRENCY,
          tailMs: TAIL_MS,
          env: EXTRA_ENV,
        },
        loadAverage: [round(load0, 2), round(load1, 2)],
        b: {
          alone: { ...bAlone, statuses: tallies.alone.B.statuses },
          burst: { ...b, statuses: tallies.shared.B.statuses },
        },
        a: { ...a, statuses: tallies.shared.A.statuses, postgres: v },
        cpuSeconds,
        goal: { bP90Ms: b.p90, bBoundMs: bound, latencyHolds, aIntact, bIntact, pass },
      }),
    );
    return pass;
  };

  // Warm-up (not measured): V8, Prisma and the pools of every process, both tenants.
  if (WARMUP > 0) {
    progress(`warm-up: ${WARMUP} turns per tenant`);
    const warm = new Tally();
    for (const t of (BURST_429 ? ['W', 'B'] : ['A', 'B']) as Tenant[]) {
      const sessions: string[] = [];
      await pool(Array.from({ length: WARMUP }), 5, async () => {
        sessions.push(await newSession(t)());
      });
      await pool(sessions, 5, async (s, i) => {
        const res = await tenants[t].api.call('POST', `/v1/sessions/${s}/messages`, {
          content: `warm ${i}`,
          wait: true,
        });
        warm.add(res.status);
      });
    }
    if (warm.otherNon2xx) progress(`warm-up answers: ${JSON.stringify(warm.statuses)}`);
    await settle(false);
  }

  if (BURST_429) return burst429();

  const load0 = loadavg()[0];
  progress(`phase 1: B alone, ${B_TURNS} turns every ${B_INTERVAL_MS} ms`);
  const bAlonePool = new SessionPool(newSession('B'), 0);
  await bAlonePool.fill(B_TURNS);
  const bAlone = await runB(bAlonePool, tallies.alone.B, B_TURNS, () => false);
  await settle();

  progress(`phase 2: A alone, ${A_TURNS} turns over ${A_SESSIONS} sessions, ${A_CONCURRENCY} in flight`);
  const aAlone = await runA('alone');
  progress(`phase 2: ${aAlone.turnsPerSecond} turns/s`);
  await settle();

  progress(`phase 3: A's backlog again, B every ${B_INTERVAL_MS} ms until it drains`);
  const bSharedPool = new SessionPool(newSession('B'), 20);
  await bSharedPool.fill(40);
  let aDrained = false;
  let bShared: Promise<BResult> | undefined;
  const aShared = await runA('shared', {
    start: () => {
      bShared = runB(bSharedPool, tallies.shared.B, B_TURNS, () => !aDrained);
    },
    drained: () => {
      aDrained = true;
    },
  });
  const bSharedResult = await bShared!;
  await bSharedPool.idle();
  await settle();

  progress(`phase 4: A alone again (the ratio's other bracket)`);
  const aAgain = await runA('again');
  progress(`phase 4: ${aAgain.turnsPerSecond} turns/s`);
  const load1 = loadavg()[0];

  // --- report -------------------------------------------------------------------------------------
  const aloneMean = round((aAlone.turnsPerSecond + aAgain.turnsPerSecond) / 2);
  const ratio = aShared.turnsPerSecond / aloneMean;
  const bBound = 2 * bAlone.p50 + 250;
  const bLowerBound = bSharedResult.waitTimeouts > 0;
  const goal = {
    bP90SharedMs: bSharedResult.p90,
    bBoundMs: round(bBound),
    bHolds: !bLowerBound && bSharedResult.p90 <= bBound,
    aRatio: round(ratio, 3),
    aHolds: ratio >= 0.9,
  };
  const ge = bLowerBound ? '≥ ' : '';
  const msTriple = (b: BResult, lower = '') => `${lower}${b.p50} / ${lower}${b.p90} / ${lower}${b.max} ms`;
  const counts = (t: Tally, extra = '') => `${t.rateLimited} / ${t.otherNon2xx}${extra}`;
  const header = `Noisy neighbour (issue 19), commit ${gitCommit()}: ${WORKERS} harness worker(s) × HARNESS_CONCURRENCY ${HARNESS_CONCURRENCY}, TENANT_MAX_CONCURRENT_TURNS ${TENANT_CAP}, model ${MODEL}, rate limits ${RATE_LIMITS ? 'on (defaults)' : 'off'}${values.env.length ? `, ${values.env.join(' ')}` : ''}, WAIT_TIMEOUT_MS ${WAIT_TIMEOUT_MS}; load average ${load0.toFixed(1)} → ${load1.toFixed(1)}`;
  console.log(`\n${header}\n`);
  console.log(
    table([
      [`tenant B: one turn every ${B_INTERVAL_MS} ms, wait: true`, 'alone', "during A's backlog"],
      [
        'turns sent / answered',
        `${bAlone.sent} / ${bAlone.answered}`,
        `${bSharedResult.sent} / ${bSharedResult.answered}`,
      ],
      ['latency p50 / p90 / max', msTriple(bAlone), msTriple(bSharedResult, ge)],
      ['median admit / queue / run / answer', partsOf(bAlone), partsOf(bSharedResult)],
      [
        'p90 admit / queue / run / answer',
        partsOf({ parts: bAlone.partsP90 }),
        partsOf({ parts: bSharedResult.partsP90 }),
      ],
      [
        '429s / other non-2xx (wait timeouts)',
        counts(tallies.alone.B, ` (${bAlone.waitTimeouts})`),
        counts(tallies.shared.B, ` (${bSharedResult.waitTimeouts})`),
      ],
      ['send lag behind the schedule, max', `${bAlone.sendLagMaxMs} ms`, `${bSharedResult.sendLagMaxMs} ms`],
    ]),
  );
  console.log('');
  console.log(
    table([
      [
        `tenant A: ${A_TURNS} turns at once over ${A_SESSIONS} sessions, ${A_CONCURRENCY} in flight`,
        'alone',
        'shared',
        'alone again',
        'shared / mean alone',
      ],
      ['turns admitted', String(aAlone.admitted), String(aShared.admitted), String(aAgain.admitted), ''],
      [
        'admission burst',
        `${aAlone.admitSeconds} s`,
        `${aShared.admitSeconds} s`,
        `${aAgain.admitSeconds} s`,
        '',
      ],
      [
        'drained after',
        `${aAlone.drainSeconds} s`,
        `${aShared.drainSeconds} s`,
        `${aAgain.drainSeconds} s`,
        '',
      ],
      [
        'drain throughput',
        `${aAlone.turnsPerSecond} turns/s`,
        `${aShared.turnsPerSecond} turns/s`,
        `${aAgain.turnsPerSecond} turns/s`,
        `${round(ratio * 100)}%`,
      ],
      [
        '429s / other non-2xx',
        counts(tallies.alone.A),
        counts(tallies.shared.A),
        counts(tallies.again.A),
        '',
      ],
      [
        "the bench client's own CPU (one core = 100%)",
        `${aAlone.clientCpuPercent}%`,
        `${aShared.clientCpuPercent}%`,
        `${aAgain.clientCpuPercent}%`,
        '',
      ],
    ]),
  );
  console.log(`
Goal (issue 19):
  B's p90 during A's backlog ${ge}${bSharedResult.p90} ms ≤ 2 × ${bAlone.p50} + 250 = ${round(bBound)} ms: ${goal.bHolds ? 'holds' : 'does not hold'}${bLowerBound ? ` (${bSharedResult.waitTimeouts} of B's requests passed the wait bound: their latency is a lower bound)` : ''}
  A's shared throughput ${aShared.turnsPerSecond} ≥ 90% of ${aloneMean} turns/s, the mean of alone before and after (${round(0.9 * aloneMean)}): ${goal.aHolds ? 'holds' : 'does not hold'} (${round(ratio * 100)}%)`);
  const notes: string[] = [];
  if (bAlone.turnsNotCompleted + bSharedResult.turnsNotCompleted)
    notes.push(
      `${bAlone.turnsNotCompleted + bSharedResult.turnsNotCompleted} of B's turns ended not completed`,
    );
  for (const [name, a] of [
    ['alone', aAlone],
    ['shared', aShared],
    ['alone again', aAgain],
  ] as const)
    if ((a.byStatus.completed ?? 0) !== a.admitted)
      notes.push(`A ${name}: turns by status ${JSON.stringify(a.byStatus)} of ${a.admitted} admitted`);
  if (bSharedResult.sessionsMadeInline)
    notes.push(`${bSharedResult.sessionsMadeInline} of B's sends made their session inline`);
  if (setupTally.A.rateLimited + setupTally.B.rateLimited)
    notes.push(
      `setup requests answered 429 (retried): A ${setupTally.A.rateLimited}, B ${setupTally.B.rateLimited}`,
    );
  for (const n of notes) console.log(`  note: ${n}`);

  console.log(
    JSON.stringify({
      bench: 'tenants',
      commit: gitCommit(),
      config: {
        harnessWorkers: WORKERS,
        harnessConcurrency: HARNESS_CONCURRENCY,
        tenantCap: TENANT_CAP,
        model: MODEL,
        rateLimits: RATE_LIMITS,
        waitTimeoutMs: WAIT_TIMEOUT_MS,
        bTurns: B_TURNS,
        bIntervalMs: B_INTERVAL_MS,
        aTurns: A_TURNS,
        aSessions: A_SESSIONS,
        aConcurrency: A_CONCURRENCY,
        warmup: WARMUP,
        env: EXTRA_ENV,
      },
      loadAverage: [round(load0, 2), round(load1, 2)],
      b: {
        alone: { ...bAlone, statuses: tallies.alone.B.statuses },
        shared: { ...bSharedResult, statuses: tallies.shared.B.statuses },
      },
      a: {
        alone: { ...aAlone, statuses: tallies.alone.A.statuses },
        shared: { ...aShared, statuses: tallies.shared.A.statuses },
        again: { ...aAgain, statuses: tallies.again.A.statuses },
        aloneMean,
        sharedOverAlone: round(ratio, 3),
      },
      goal,
    }),
  );
  return goal.bHolds && goal.aHolds;
}

/** The model server (scripts/bench-model-server.ts) as a process of its own; its provider settings. */
async function startModelServer(closers: (() => Promise<unknown>)[]): Promise<Record<string, string>> {
  const child: ChildProcess = spawn(
    process.execPath,
    [
      '-r',
      '@swc-node/register',
      path.join(__dirname, 'bench-model-server.ts'),
      '--delay-ms',
      String(MODEL_DELAY_MS),
    ],
    { cwd: path.join(__dirname, '..'), stdio: ['ignore', 'pipe', 'inherit'] },
  );
  closers.push(
    () =>
      new Promise<void>((resolve) => {
        if (child.exitCode !== null) return resolve();
        child.once('exit', () => resolve());
        child.kill('SIGTERM');
      }),
  );
  const url = await new Promise<string>((resolve, reject) => {
    let out = '';
    child.stdout!.on('data', (chunk: Buffer) => {
      out += chunk.toString();
      const m = /MODEL_SERVER (\S+)/.exec(out);
      if (m) resolve(m[1]);
    });
    child.once('exit', (code) => reject(new Error(`the model server exited (${code}) before it listened`)));
  });
  return {
    OPENAI_BASE_URL: `${url}/v1`,
    OPENAI_API_KEY: 'sk-test',
    ANTHROPIC_BASE_URL: url,
    ANTHROPIC_API_KEY: 'sk-ant-test',
  };
}

async function main(): Promise<boolean> {
  const closers: (() => Promise<unknown>)[] = [];
  let sb: Switchboard | undefined;
  let stopping: Promise<void> | undefined;
  const stop = () =>
    (stopping ??= (async () => {
      for (const close of closers.reverse()) await close().catch(() => undefined);
      await sb?.stop();
    })());
  for (const signal of ['SIGINT', 'SIGTERM'] as const)
    process.once(signal, () => {
      progress(`${signal}: stopping`);
      void stop().finally(() => process.exit(130));
    });
  try {
    const modelEnv = BURST_429 ? await startModelServer(closers) : {};
    progress(`starting a gateway, ${WORKERS} harness worker(s) and a hooks worker (scenario ${SCENARIO})`);
    sb = await startSwitchboard({
      workers: WORKERS,
      modelDelayMs: 0,
      harnessConcurrency: HARNESS_CONCURRENCY,
      // As production runs the harness (package.json start:harness-worker, docker-compose.yml).
      harnessNodeArgs: ['--max-semi-space-size=64'],
      otel: OTEL,
      env: {
        WAIT_TIMEOUT_MS: String(WAIT_TIMEOUT_MS),
        TENANT_MAX_CONCURRENT_TURNS: String(TENANT_CAP),
        ...(RATE_LIMITS ? DEFAULT_LIMITS : {}),
        ...(BURST_429 ? { ...PRODUCTION_ENV, ...modelEnv } : {}),
        ...EXTRA_ENV,
      },
    });
    progress(`database ${sb.dbName}, queue prefix ${sb.env.queuePrefix}, gateway ${sb.base}`);
    return await run(sb, closers);
  } finally {
    await stop();
  }
}

main().then(
  (holds) => process.exit(!holds && values['fail-on-miss'] ? 3 : 0),
  (err: unknown) => {
    console.error(err instanceof Error ? err.stack : err);
    process.exit(1);
  },
);
