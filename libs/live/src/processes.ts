import type { Logger } from '@switchboard/observability';
import type { RedisConnection } from '@switchboard/queue';

/** The harness workers' kind in the process list. */
export const HARNESS_PROCESS_KIND = 'harness';

/** What a harness process reports of itself in each heartbeat. */
export interface ProcessLoad {
  /** Turns the process runs now. */
  turnsInFlight: number;
  /** Permits in use and the adaptive limit (TurnPermits, docs/adr/0029). */
  permitsInUse: number;
  permitLimit: number;
  /** HARNESS_CONCURRENCY. */
  maxConcurrency: number;
}

/** A live process as its last heartbeat left it. */
export interface ProcessBeat extends ProcessLoad {
  processId: string;
  hostname: string;
  pid: number;
  startedAt: string;
  lastSeenAt: string;
}

/**
 * The two keys of a kind of process: a hash of each process's last beat (JSON) and a sorted set of
 * its expiry (ms). Both under the deployment's prefix, which on a Redis Cluster carries the hash
 * tag (`{sb}`, docs/adr/0043): the scripts below touch both keys in one slot.
 */
export const processKeys = (prefix: string, kind: string) => ({
  beats: `${prefix}:processes:${kind}:beats`,
  expiries: `${prefix}:processes:${kind}:expiries`,
});

/** Redis' own clock, so hosts whose clocks differ agree on what expired. */
const NOW_MS = `local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)`;

/** KEYS: beats, expiries. ARGV: process id, beat JSON without lastSeenAt, ttl ms. */
const BEAT = `${NOW_MS}
local beat = cjson.decode(ARGV[2])
beat['lastSeenAt'] = now
redis.call('HSET', KEYS[1], ARGV[1], cjson.encode(beat))
redis.call('ZADD', KEYS[2], now + tonumber(ARGV[3]), ARGV[1])
return now`;

/** KEYS: beats, expiries. The live beats, oldest process first; the expired ones removed. */
const LIST = `${NOW_MS}
local gone = redis.call('ZRANGEBYSCORE', KEYS[2], '-inf', now)
for _, id in ipairs(gone) do redis.call('HDEL', KEYS[1], id) end
redis.call('ZREMRANGEBYSCORE', KEYS[2], '-inf', now)
local live = redis.call('ZRANGEBYSCORE', KEYS[2], '(' .. now, '+inf')
if #live == 0 then return {} end
return redis.call('HMGET', KEYS[1], unpack(live))`;

/**
 * Lists the live processes of a kind (the gateway's GET /v1/admin/processes): those whose last
 * heartbeat is younger than their TTL. A killed process is gone once its TTL passes; one that shut
 * down cleanly said so at once (`ProcessHeartbeat.stop`). Expired entries are removed on the way.
 */
export async function liveProcesses(
  redis: RedisConnection,
  prefix: string,
  kind: string,
): Promise<ProcessBeat[]> {
  const keys = processKeys(prefix, kind);
  const raw = (await redis.eval(LIST, 2, keys.beats, keys.expiries)) as (string | null)[];
  return raw
    .filter((r): r is string => typeof r === 'string')
    .map((r) => {
      const beat = JSON.parse(r) as Omit<ProcessBeat, 'lastSeenAt'> & { lastSeenAt: number };
      return { ...beat, lastSeenAt: new Date(beat.lastSeenAt).toISOString() };
    })
    .sort((a, b) => a.startedAt.localeCompare(b.startedAt) || a.processId.localeCompare(b.processId));
}

export interface ProcessHeartbeatOptions {
  redis: RedisConnection;
  /** The deployment's key prefix (QUEUE_PREFIX). */
  prefix: string;
  /** The kind of process (`harness`). */
  kind: string;
  processId: string;
  hostname: string;
  pid: number;
  /** How often to beat (HARNESS_HEARTBEAT_MS). */
  intervalMs: number;
  /** How long a beat keeps the process listed (HARNESS_HEARTBEAT_TTL_MS). */
  ttlMs: number;
  /** The process's load at the moment of each beat. */
  load: () => ProcessLoad;
  logger: Logger;
}

/**
 * A process's heartbeat in Redis: every `intervalMs` one script writes its load and pushes its
 * expiry to now + `ttlMs`. A failed beat is logged and the next one tries again (a Redis away must
 * not stop the process); `stop` removes the process at once.
 */
export class ProcessHeartbeat {
  private timer?: NodeJS.Timeout;
  private readonly startedAt = new Date().toISOString();
  private warned = false;

  constructor(private readonly o: ProcessHeartbeatOptions) {}

  start(): void {
    void this.beat();
    this.timer = setInterval(() => void this.beat(), this.o.intervalMs);
    this.timer.unref();
  }

  async beat(): Promise<void> {
    const { redis, processId } = this.o;
    const keys = processKeys(this.o.prefix, this.o.kind);
    const beat = {
      processId,
      hostname: this.o.hostname,
      pid: this.o.pid,
      startedAt: this.startedAt,
      ...this.o.load(),
    };
    try {
      await redis.eval(BEAT, 2, keys.beats, keys.expiries, processId, JSON.stringify(beat), this.o.ttlMs);
      this.warned = false;
    } catch (err) {
      // Once per outage: a Redis that is away would otherwise log a line per beat.
      if (!this.warned) this.o.logger.warn({ err, processId }, 'process heartbeat not written');
      this.warned = true;
    }
  }

  async stop(): Promise<void> {
    clearInterval(this.timer);
    const keys = processKeys(this.o.prefix, this.o.kind);
    try {
      await this.o.redis
        .multi()
        .hdel(keys.beats, this.o.processId)
        .zrem(keys.expiries, this.o.processId)
        .exec();
    } catch {
      // It expires by itself.
    }
  }
}
