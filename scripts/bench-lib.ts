/**
 * Shared pieces of the message-path benchmarks (scripts/bench.ts, scripts/bench-peers.ts): a
 * Switchboard made of real processes on a database of its own, a completion watcher, and the
 * meters for the per-turn costs (statements and round trips counted on the wire by proxies that
 * only our processes use, transactions from pg_stat_database, CPU from /proc).
 */
import { readFileSync, mkdtempSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Client } from 'pg';
import IORedis from 'ioredis';
import { ConfigSchema } from '@switchboard/config';
import { AdmitMessageRequest } from '@switchboard/contracts';
import { createTestEnv, spawnApp, startTcpProxy, type AppProcess, type TestEnv } from '@switchboard/testing';
import globalSetup from '../libs/testing/src/global-setup';

export const pct = (xs: number[], p: number): number => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length ? s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))] : NaN;
};

export function freePort(): Promise<number> {
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

export const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

/** Runs `fn` over `items`, at most `limit` at a time. */
export async function pool<T>(
  items: T[],
  limit: number,
  fn: (item: T, i: number) => Promise<void>,
): Promise<void> {
  let next = 0;
  await Promise.all(
    Array.from({ length: Math.min(limit, items.length) }, async () => {
      while (next < items.length) {
        const i = next++;
        await fn(items[i], i);
      }
    }),
  );
}

/** Whether the API has `wait: true` on POST /v1/sessions/:id/messages (issue 9). */
export const admitSupportsWait = (): boolean => 'wait' in AdmitMessageRequest.shape;

/**
 * Watches turns complete with one Postgres query for every pending turn every `intervalMs`, so the
 * client's waiting does not load the gateway being measured. `queries` counts its statements (each
 * one an autocommit transaction on the bench database).
 */
export class CompletionWatcher {
  private readonly pending = new Map<string, { resolve: () => void; reject: (e: Error) => void }>();
  private readonly timer: NodeJS.Timeout;
  private busy = false;
  queries = 0;

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
      this.queries++;
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

// --- wire counters ---------------------------------------------------------------------------------

/** What the Postgres proxy saw clients send. */
export interface PgWire {
  /** Statements executed: simple queries plus extended-protocol Executes (BEGIN/COMMIT included). */
  statements: number;
  /** BEGIN, COMMIT, ROLLBACK among them. */
  control: number;
  /** Explicit transactions (BEGIN) plus statements run outside one (each its own transaction). */
  transactions: number;
  /** Times a client waited for the server: simple queries plus Syncs. */
  roundTrips: number;
  /** Executions by statement text (whitespace collapsed, first 160 characters): where they go. */
  byStatement: Record<string, number>;
}
/** What the Redis proxy saw clients send. */
export interface RedisWire {
  commands: number;
  /** Client writes that reached the proxy (a pipeline written at once is one): ≈ round trips. */
  roundTrips: number;
  byCommand: Record<string, number>;
}

const CONTROL = /^\s*(begin|start\s+transaction|commit|end|rollback)\b/i;
const OPENS = /^\s*(begin|start\s+transaction)\b/i;

/** Parses the frontend side of the Postgres wire protocol (v3) of one connection. */
class PgConnectionCounter {
  private buf: Buffer = Buffer.alloc(0);
  private startup = true;
  private inTx = false;
  constructor(private readonly totals: () => PgWire) {}

  private get total(): PgWire {
    return this.totals();
  }

  feed(chunk: Buffer): void {
    this.buf = this.buf.length ? Buffer.concat([this.buf, chunk]) : chunk;
    let off = 0;
    for (;;) {
      if (this.startup) {
        if (this.buf.length - off < 8) break;
        const len = this.buf.readInt32BE(off);
        if (this.buf.length - off < len) break;
        const code = this.buf.readInt32BE(off + 4);
        // SSLRequest / GSSENCRequest are followed by the real startup message.
        if (code !== 80877103 && code !== 80877104) this.startup = false;
        off += len;
        continue;
      }
      if (this.buf.length - off < 5) break;
      const type = String.fromCharCode(this.buf[off]);
      const len = this.buf.readInt32BE(off + 1);
      if (this.buf.length - off < 1 + len) break;
      const body = this.buf.subarray(off + 5, off + 1 + len);
      if (type === 'Q') {
        this.total.roundTrips++;
        this.statement(body.toString('utf8', 0, Math.max(0, body.length - 1)));
      } else if (type === 'P') {
        // A named statement is parsed once per connection and bound by name afterwards.
        const nameEnd = body.indexOf(0);
        const name = body.toString('utf8', 0, nameEnd);
        this.lastParsed = body.toString('utf8', nameEnd + 1, body.indexOf(0, nameEnd + 1));
        if (name) this.named.set(name, this.lastParsed);
      } else if (type === 'B') {
        const portalEnd = body.indexOf(0);
        const name = body.toString('utf8', portalEnd + 1, body.indexOf(0, portalEnd + 1));
        if (name) this.lastParsed = this.named.get(name) ?? this.lastParsed;
      } else if (type === 'E') {
        this.statement(this.lastParsed);
      } else if (type === 'S') {
        this.total.roundTrips++;
      }
      off += 1 + len;
    }
    this.buf = this.buf.subarray(off);
  }

  private lastParsed = '';
  private readonly named = new Map<string, string>();

  private statement(text: string): void {
    this.total.statements++;
    const key = text.replace(/\s+/g, ' ').trim().slice(0, 160);
    this.total.byStatement[key] = (this.total.byStatement[key] ?? 0) + 1;
    if (CONTROL.test(text)) {
      this.total.control++;
      if (OPENS.test(text)) {
        this.inTx = true;
        this.total.transactions++;
      } else this.inTx = false;
    } else if (!this.inTx) this.total.transactions++;
  }
}

/** Parses RESP commands (and inline ones) a Redis client sends on one connection. */
class RespConnectionCounter {
  private buf: Buffer = Buffer.alloc(0);
  constructor(private readonly totals: () => RedisWire) {}

  private get total(): RedisWire {
    return this.totals();
  }

  feed(chunk: Buffer): void {
    this.total.roundTrips++;
    this.buf = this.buf.length ? Buffer.concat([this.buf, chunk]) : chunk;
    let off = 0;
    for (;;) {
      const next = this.one(off);
      if (next < 0) break;
      off = next;
    }
    this.buf = this.buf.subarray(off);
  }

  private record(name: string): void {
    this.total.commands++;
    this.total.byCommand[name] = (this.total.byCommand[name] ?? 0) + 1;
  }

  /** The offset after one complete command at `off`, or -1 when it is not all here yet. */
  private one(off: number): number {
    const b = this.buf;
    if (off >= b.length) return -1;
    const eol = b.indexOf('\r\n', off);
    if (eol < 0) return -1;
    if (b[off] !== 0x2a) {
      this.record(b.toString('latin1', off, eol).trim().split(/\s+/)[0].toLowerCase());
      return eol + 2;
    }
    const n = Number(b.toString('latin1', off + 1, eol));
    let p = eol + 2;
    let name = '';
    for (let i = 0; i < n; i++) {
      const e = b.indexOf('\r\n', p);
      if (e < 0) return -1;
      const len = Number(b.toString('latin1', p + 1, e));
      const start = e + 2;
      if (start + len + 2 > b.length) return -1;
      if (i === 0) name = b.toString('latin1', start, start + len).toLowerCase();
      p = start + len + 2;
    }
    this.record(name);
    return p;
  }
}

export interface CountingProxy<T> {
  port: number;
  /** `url` with its host and port replaced by the proxy's. */
  rewrite(url: string): string;
  /** Counts since the last reset. */
  read(): T;
  reset(): void;
  close(): Promise<void>;
}

async function countingProxy<T>(
  target: URL,
  fresh: () => T,
  counter: (totals: () => T) => { feed(chunk: Buffer): void },
): Promise<CountingProxy<T>> {
  let total = fresh();
  const proxy = await startTcpProxy(
    { host: target.hostname, port: Number(target.port) },
    {
      tap: () => {
        // Reads the current totals at each use, so a reset() counts open connections into the new ones.
        const parser = counter(() => total);
        return (chunk) => parser.feed(chunk);
      },
    },
  );
  return {
    port: proxy.port,
    rewrite: (url) => proxy.rewrite(url),
    read: () => total,
    reset() {
      total = fresh();
    },
    close: () => proxy.close(),
  };
}

export const pgProxy = (url: string) =>
  countingProxy<PgWire>(
    new URL(url),
    () => ({ statements: 0, control: 0, transactions: 0, roundTrips: 0, byStatement: {} }),
    (totals) => new PgConnectionCounter(totals),
  );
export const redisProxy = (url: string) =>
  countingProxy<RedisWire>(
    new URL(url),
    () => ({ commands: 0, roundTrips: 0, byCommand: {} }),
    (totals) => new RespConnectionCounter(totals),
  );

// --- CPU -------------------------------------------------------------------------------------------

const TICK_MS = 10; // USER_HZ is 100 on Linux

/** utime + stime of a process in ms (0 once it is gone). */
export function cpuMs(pid: number): number {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return (Number(fields[11]) + Number(fields[12])) * TICK_MS;
  } catch {
    return 0;
  }
}

// --- Switchboard as real processes -----------------------------------------------------------------

export interface SwitchboardOptions {
  workers: number;
  /** Gateway processes (default 1), each on a port of its own; turns go to them in turn. */
  gateways?: number;
  /** Hooks worker processes (default 1). */
  hooksWorkers?: number;
  /** Triage worker processes (default 0: the message path does not need one). */
  triageWorkers?: number;
  /** The processes reach Postgres on this port of 127.0.0.1 (e.g. a PgBouncer's) instead of the database's. */
  databasePort?: string;
  modelDelayMs: number;
  harnessConcurrency?: number;
  /** Route the processes' Postgres and Redis connections through counting proxies. */
  count?: boolean;
  /** Node flags for the harness workers (e.g. --cpu-prof). */
  harnessNodeArgs?: string[];
  /** Write a V8 CPU profile of every process into `<dir>/<process name>/`. */
  profileDir?: string;
  /**
   * Run OpenTelemetry as production does with no collector (its auto-instrumentation on, spans
   * dropped). The test environment turns it off (OTEL_SDK_DISABLED=true), and so does the bench
   * unless asked.
   */
  otel?: boolean;
  /** More environment for every process (e.g. a fake provider's URLs, METRICS_PORT). */
  env?: Record<string, string>;
  /**
   * When the server runs with autovacuum off, do not stand in for it (see `AutovacuumStandIn`): the
   * bench database's tables are then never analyzed nor vacuumed, as on this machine before.
   */
  withoutAutovacuum?: boolean;
  /** More environment for the harness workers only (e.g. METRICS_PORT with one worker). */
  harnessEnv?: Record<string, string>;
}

export interface Switchboard {
  base: string;
  env: TestEnv;
  /** The database's name (for pg_stat_database). */
  dbName: string;
  /**
   * Who analyzes and vacuums the bench database's tables: the server's autovacuum, the bench's
   * stand-in for it (the server's is off), or nobody (off, and the stand-in not wanted).
   */
  maintenance: 'autovacuum' | 'bench stand-in' | 'none';
  procs: { name: string; app: AppProcess }[];
  pg?: CountingProxy<PgWire>;
  redis?: CountingProxy<RedisWire>;
  post<T>(path: string, body: unknown, key?: string): Promise<T>;
  /** A tenant with an API key and the two-round bench agent. */
  tenant(): Promise<{ key: string; agentId: string }>;
  /** Sends one message and resolves with its turn id once the turn completed. */
  turn(key: string, sessionId: string, content: string): Promise<string>;
  /** How the client learns that a turn ended. */
  waitMode: 'wait: true' | 'postgres watcher';
  /** Statements the watcher ran on the bench database (each an autocommit transaction). */
  watcherQueries(): number;
  /** Committed transactions on the bench database (stats flushed first). */
  xactCommit(): Promise<number>;
  /** The cluster's WAL position in bytes (cluster-wide: anything else writing counts too). */
  walBytes(): Promise<number>;
  /** Bytes on disk (with indexes and TOAST) of the turn's tables, and the number of turns stored. */
  storage(): Promise<{ turns: number; bytes: Record<string, number> }>;
  /** CPU ms of each process, and of the bench database's Postgres backends together. */
  cpu(): Promise<Record<string, number>>;
  /** Checks every listed turn is completed in Postgres with its transcript and tool call. */
  verifyDurable(turnIds: string[]): Promise<{ ok: number; bad: string[] }>;
  stop(): Promise<void>;
}

export async function startSwitchboard(opts: SwitchboardOptions): Promise<Switchboard> {
  await globalSetup();
  const env = await createTestEnv();
  const dbName = new URL(env.databaseUrl).pathname.slice(1);
  const procs: { name: string; app: AppProcess }[] = [];
  const fixtures = mkdtempSync(path.join(tmpdir(), 'sb-bench-'));
  writeFileSync(
    `${fixtures}/bench.json`,
    JSON.stringify({
      name: 'bench',
      rounds: [
        { toolCalls: [{ name: 'word_count', arguments: { text: '{{input}}' } }], delayMs: opts.modelDelayMs },
        { text: 'counted {{lastToolResult}}', delayMs: opts.modelDelayMs },
      ],
    }),
  );
  const appDatabaseUrl = new URL(env.databaseUrl);
  if (opts.databasePort) appDatabaseUrl.port = opts.databasePort;
  const pg = opts.count ? await pgProxy(appDatabaseUrl.toString()) : undefined;
  const redis = opts.count ? await redisProxy(env.redisUrl) : undefined;
  const admin = new Client({ connectionString: env.databaseUrl });
  await admin.connect();
  const backendCpu = new BackendCpu(admin, dbName);
  const autovacuumOn = (await admin.query<{ on: string }>('SHOW autovacuum')).rows[0].on === 'on';
  const standIn =
    autovacuumOn || opts.withoutAutovacuum ? undefined : await AutovacuumStandIn.start(env.databaseUrl);
  const maintenance = autovacuumOn ? 'autovacuum' : standIn ? 'bench stand-in' : 'none';
  let watcher: CompletionWatcher | undefined;
  const stop = async () => {
    watcher?.stop();
    await standIn?.stop();
    backendCpu.stop();
    await Promise.all(procs.map((p) => p.app.kill('SIGTERM')));
    await admin.end().catch(() => undefined);
    await pg?.close();
    await redis?.close();
    await env.cleanup();
  };
  try {
    const port = await freePort();
    const penv = env.processEnv({
      LOG_LEVEL: 'error',
      PORT: String(port),
      SCRIPTED_FIXTURES_DIR: fixtures,
      HARNESS_CONCURRENCY: String(opts.harnessConcurrency ?? 64),
      SESSION_LEASE_MS: '30000',
      QUEUE_LOCK_MS: '30000',
      QUEUE_STALLED_INTERVAL_MS: '30000',
      // The production default (the test environment publishes each turn's post-turn job alone).
      HOOKS_BATCH_WINDOW_MS: String(ConfigSchema.shape.HOOKS_BATCH_WINDOW_MS.parse(undefined)),
      ...(opts.otel ? { OTEL_SDK_DISABLED: 'false' } : {}),
      DATABASE_URL: pg ? pg.rewrite(appDatabaseUrl.toString()) : appDatabaseUrl.toString(),
      ...(redis ? { REDIS_URL: redis.rewrite(env.redisUrl) } : {}),
      ...opts.env,
    });
    const ports = [port];
    for (let i = 1; i < (opts.gateways ?? 1); i++) ports.push(await freePort());
    const many = (
      n: number,
      app: 'gateway' | 'hooks-worker' | 'harness-worker' | 'triage-worker',
      prefix: string,
    ) =>
      Array.from({ length: n }, (_, i) => ({
        app,
        name: i === 0 && prefix !== 'harness' ? prefix : `${prefix}-${i}`,
      }));
    const apps = [
      ...many(ports.length, 'gateway', 'gateway'),
      ...many(opts.hooksWorkers ?? 1, 'hooks-worker', 'hooks-worker'),
      ...many(opts.triageWorkers ?? 0, 'triage-worker', 'triage-worker'),
      ...many(opts.workers, 'harness-worker', 'harness'),
    ];
    // allSettled: when one fails to start, the others are still collected and stopped.
    const spawned = await Promise.allSettled(
      apps.map(async ({ app, name }, i) => {
        const profile = opts.profileDir
          ? ['--cpu-prof', `--cpu-prof-dir=${path.join(opts.profileDir, name)}`]
          : [];
        const appEnv =
          app === 'harness-worker'
            ? { ...penv, ...opts.harnessEnv }
            : app === 'gateway'
              ? { ...penv, PORT: String(ports[i]) }
              : penv;
        const p = await spawnApp(app, appEnv, {
          nodeArgs: [...profile, ...(app === 'harness-worker' ? (opts.harnessNodeArgs ?? []) : [])],
        });
        procs.push({ name, app: p });
        return p;
      }),
    );
    const failed = spawned.find((r) => r.status === 'rejected');
    if (failed) throw failed.reason;
    procs.sort((a, b) => a.name.localeCompare(b.name));
    const base = `http://127.0.0.1:${port}`;
    const bases = ports.map((p) => `http://127.0.0.1:${p}`);
    let next = 0;
    const post = async <T>(urlPath: string, body: unknown, key?: string, on = base): Promise<T> => {
      const res = await fetch(`${on}${urlPath}`, {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          authorization: `Bearer ${key ?? 'test-admin-token-0123456789'}`,
        },
        body: JSON.stringify(body),
      });
      if (!res.ok) throw new Error(`${urlPath} ${res.status} ${await res.text()}`);
      return (await res.json()) as T;
    };
    const useWait = admitSupportsWait();
    if (!useWait) watcher = new CompletionWatcher(env.db, 10);
    return {
      base,
      env,
      dbName,
      maintenance,
      procs,
      pg,
      redis,
      post,
      waitMode: useWait ? 'wait: true' : 'postgres watcher',
      watcherQueries: () => watcher?.queries ?? 0,
      async tenant() {
        const { apiKey } = await post<{ apiKey: { key: string } }>('/v1/admin/tenants', { name: 'bench' });
        const agent = await post<{ id: string }>(
          '/v1/agents',
          { name: 'bench', model: 'scripted/bench', tools: ['word_count'] },
          apiKey.key,
        );
        return { key: apiKey.key, agentId: agent.id };
      },
      async turn(key, sessionId, content) {
        if (useWait) {
          // 200: the ended turn (as GET /v1/turns/:id, `id`); 202 at the bound: {messageId, turnId, status}.
          const res = await post<{ id?: string; turnId?: string; status?: string }>(
            `/v1/sessions/${sessionId}/messages`,
            { content, wait: true },
            key,
            bases[next++ % bases.length],
          );
          const turnId = res.turnId ?? res.id;
          if (!turnId || res.status !== 'completed') throw new Error(`turn ${turnId} ${res.status}`);
          return turnId;
        }
        const { turnId } = await post<{ turnId: string }>(
          `/v1/sessions/${sessionId}/messages`,
          { content },
          key,
          bases[next++ % bases.length],
        );
        await watcher!.done(turnId);
        return turnId;
      },
      async xactCommit() {
        await admin.query('SELECT pg_stat_force_next_flush()');
        // Other backends flush their counters up to 10 s after going idle: the caller waits for that.
        const r = await admin.query<{ n: string }>(
          'SELECT xact_commit::text AS n FROM pg_stat_database WHERE datname = $1',
          [dbName],
        );
        return Number(r.rows[0].n);
      },
      async walBytes() {
        const r = await admin.query<{ n: string }>(
          "SELECT (pg_current_wal_lsn() - '0/0'::pg_lsn)::text AS n",
        );
        return Number(r.rows[0].n);
      },
      async storage() {
        const tables = ['messages', 'events', 'turns', 'tool_calls', 'ledger_entries', 'hook_runs'];
        const r = await admin.query<{ t: string; n: string }>(
          // A partitioned table (ADR 0044) is the sum of its partitions; a plain one is its own tree.
          `SELECT t, coalesce((SELECT sum(pg_total_relation_size(p.relid)) FROM pg_partition_tree(t::regclass) p),
               pg_total_relation_size(t::regclass))::text AS n
             FROM unnest($1::text[]) AS t`,
          [tables],
        );
        const turns = await admin.query<{ n: string }>('SELECT count(*)::text AS n FROM turns');
        return {
          turns: Number(turns.rows[0].n),
          bytes: Object.fromEntries(r.rows.map((x) => [x.t, Number(x.n)])),
        };
      },
      async cpu() {
        const out: Record<string, number> = {};
        // Gateways and hooks workers summed by kind; harness workers one by one (harness-0, …).
        for (const p of procs) {
          const key = p.name.replace(/^(gateway|hooks-worker|triage-worker)-\d+$/, '$1');
          out[key] = (out[key] ?? 0) + cpuMs(p.app.child.pid!);
        }
        out.postgres = await backendCpu.total();
        return out;
      },
      async verifyDurable(turnIds) {
        const rows = await admin.query<{ id: string; status: string; messages: string; tools: string }>(
          `SELECT t.id, t.status,
                  (SELECT count(*) FROM messages m WHERE m.turn_id = t.id)::text AS messages,
                  (SELECT count(*) FROM tool_calls c WHERE c.turn_id = t.id AND c.status = 'completed')::text AS tools
             FROM turns t WHERE t.id = ANY($1::uuid[])`,
          [turnIds],
        );
        const good = new Set(
          rows.rows
            // user input, assistant tool call, tool result, assistant answer
            .filter((r) => r.status === 'completed' && Number(r.messages) >= 4 && Number(r.tools) === 1)
            .map((r) => r.id),
        );
        const bad = turnIds.filter((id) => !good.has(id));
        return { ok: turnIds.length - bad.length, bad };
      },
      stop,
    };
  } catch (err) {
    await stop();
    throw err;
  }
}

/**
 * The CPU of a database's Postgres backends since this was made, backends that exited included: pools
 * close idle connections and open new ones, so summing the backends alive at two readings would lose
 * the CPU of every backend that left in between. Each backend's CPU is sampled every 200 ms and its
 * last sample kept; a backend that exits loses at most its last 200 ms. `admin`'s own backend is not
 * counted.
 */
export class BackendCpu {
  private readonly last = new Map<number, number>();
  private readonly timer: NodeJS.Timeout;
  private sampling: Promise<void> = Promise.resolve();

  constructor(
    private readonly admin: Client,
    private readonly dbName: string,
  ) {
    this.timer = setInterval(() => void this.sample(), 200);
    this.timer.unref();
  }

  private sample(): Promise<void> {
    this.sampling = this.sampling.then(async () => {
      const r = await this.admin
        .query<{ pid: number }>(
          'SELECT pid FROM pg_stat_activity WHERE datname = $1 AND pid <> pg_backend_pid()',
          [this.dbName],
        )
        .catch(() => ({ rows: [] as { pid: number }[] }));
      for (const { pid } of r.rows) {
        const ms = cpuMs(pid);
        if (ms > 0) this.last.set(pid, Math.max(ms, this.last.get(pid) ?? 0));
      }
    });
    return this.sampling;
  }

  /** CPU ms of every backend seen so far (sampled now). */
  async total(): Promise<number> {
    await this.sample();
    let sum = 0;
    for (const ms of this.last.values()) sum += ms;
    return sum;
  }

  stop(): void {
    clearInterval(this.timer);
  }
}

/**
 * Autovacuum's work on the bench database, for a server that runs with it off (this machine's
 * Postgres does: a CI setting). With it off no table is ever analyzed, so a statement planned on the
 * empty tables of a fresh bench database keeps plans made for empty tables (sequential scans) while
 * they grow, and no dead row is ever pruned: a long run then measures a database no production
 * server is (docs/BENCHMARKS.md, "A turn's cost and its session's length"). Every
 * `autovacuum_naptime` (the server's, 1 min by default: autovacuum's own schedule for one database)
 * this does what autovacuum would with the server's thresholds: ANALYZE a table with more rows
 * changed since its last analyze than `autovacuum_analyze_threshold` +
 * `autovacuum_analyze_scale_factor` × its rows, VACUUM one with more dead (or, PG 13+, inserted) rows
 * than the vacuum thresholds. Its connection is a backend of the bench database, so its CPU counts as
 * Postgres' (as autovacuum's workers' would), and so do the plans an ANALYZE invalidates.
 */
class AutovacuumStandIn {
  private stopped = false;
  private readonly loop: Promise<void>;

  private constructor(
    private readonly client: Client,
    private readonly naptimeMs: number,
  ) {
    this.loop = this.run();
  }

  static async start(databaseUrl: string): Promise<AutovacuumStandIn> {
    const client = new Client({ connectionString: databaseUrl });
    await client.connect();
    const r = await client.query<{ s: string }>(
      "SELECT setting AS s FROM pg_settings WHERE name = 'autovacuum_naptime'",
    );
    return new AutovacuumStandIn(client, Number(r.rows[0].s) * 1000);
  }

  private async run(): Promise<void> {
    for (;;) {
      const until = Date.now() + this.naptimeMs;
      while (!this.stopped && Date.now() < until) await sleep(100);
      if (this.stopped) return;
      await this.pass().catch(() => undefined);
    }
  }

  private async pass(): Promise<void> {
    const due = await this.client.query<{ rel: string; vacuum: boolean; analyze: boolean }>(`
      SELECT format('%I.%I', schemaname, relname) AS rel,
        n_dead_tup > current_setting('autovacuum_vacuum_threshold')::float8
            + current_setting('autovacuum_vacuum_scale_factor')::float8 * n_live_tup
          OR n_ins_since_vacuum > current_setting('autovacuum_vacuum_insert_threshold')::float8
            + current_setting('autovacuum_vacuum_insert_scale_factor')::float8 * n_live_tup AS vacuum,
        n_mod_since_analyze > current_setting('autovacuum_analyze_threshold')::float8
            + current_setting('autovacuum_analyze_scale_factor')::float8 * n_live_tup AS analyze
      FROM pg_stat_user_tables`);
    for (const t of due.rows) {
      if (this.stopped) return;
      if (t.vacuum) await this.client.query(`VACUUM ${t.analyze ? '(ANALYZE) ' : ''}${t.rel}`);
      else if (t.analyze) await this.client.query(`ANALYZE ${t.rel}`);
    }
  }

  async stop(): Promise<void> {
    this.stopped = true;
    await this.loop;
    await this.client.end().catch(() => undefined);
  }
}

/** Redis's own CPU (shared with anything else using it) in ms. */
export async function redisCpuMs(url: string): Promise<number> {
  const r = new IORedis(url, { lazyConnect: true });
  try {
    await r.connect();
    const info = await r.info('cpu');
    const get = (k: string) => Number(new RegExp(`${k}:([0-9.]+)`).exec(info)?.[1] ?? 0);
    return (get('used_cpu_sys') + get('used_cpu_user')) * 1000;
  } finally {
    r.disconnect();
  }
}
