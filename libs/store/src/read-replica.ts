import { isTransientDbError } from '@switchboard/database';
import { sql, type SqlDb } from './sql';

/** The side a read ran on. */
export type ReadTarget = 'primary' | 'replica';

/**
 * Why: the replica had replayed the primary's WAL position (`caught_up`); it had not within the
 * bound (`lagging`); it failed, or recently did (`replica_error`).
 */
export type ReadReason = 'caught_up' | 'lagging' | 'replica_error';

/** A WAL position (`pg_lsn`, `16/B374D848`) as a number of bytes. */
export function parseLsn(lsn: string): bigint {
  const m = /^([0-9A-Fa-f]{1,8})\/([0-9A-Fa-f]{1,8})$/.exec(lsn);
  if (!m) throw new Error(`not a WAL position: ${lsn}`);
  return (BigInt(`0x${m[1]}`) << 32n) + BigInt(`0x${m[2]}`);
}

/** After a replica failure, reads stay on the primary this long before the replica is tried again. */
export const REPLICA_RETRY_MS = 5_000;
/**
 * After a read went to the primary because the replica lagged past the bound, reads during this
 * long check the replica once and do not wait for it: a replica that lags for a while costs each
 * read one cheap replica round trip, not the whole bound.
 */
export const LAGGING_HOLD_MS = 1_000;
/** The longest delay between two checks of the replica's replay position while waiting. */
const MAX_POLL_MS = 20;

/** Where the API's reads run: `read` picks the side and runs the read on its client. */
export interface Reads<C> {
  read<T>(read: (client: C) => Promise<T>): Promise<T>;
}

/** Every read on the primary: no DATABASE_READ_URL. */
export function primaryReads<C>(primary: C): Reads<C> {
  return { read: (read) => read(primary) };
}

export interface ReadRouterOptions<C> {
  primary: C;
  replica: C;
  /** The primary's current WAL position: everything committed before this call lies below it. */
  primaryLsn(): Promise<string>;
  /** How far the replica has replayed the WAL; null when it is not a standby. */
  replayedLsn(): Promise<string | null>;
  /** READ_REPLICA_MAX_WAIT_MS: how long a read waits for the replica to catch up. */
  maxWaitMs: number;
  /** Each read, by the side that served it and why (the `switchboard_db_reads_total` counter). */
  onRead?(target: ReadTarget, reason: ReadReason): void;
  /** The bytes the replica had still to replay at a check (the `switchboard_db_replica_lag_bytes` gauge). */
  onLag?(bytes: number): void;
  /** A replica failure worth the primary's answer instead (default: a transient database error). */
  isReplicaFailure?(err: unknown): boolean;
  now?(): number;
  sleep?(ms: number): Promise<void>;
}

/**
 * Routes a read to a streaming replica when that cannot show older data than the primary would
 * (docs/adr/0042). Before each read it takes the primary's WAL position (one cheap primary round
 * trip, no table touched); the read runs on the replica once the replica has replayed up to it —
 * every transaction committed before the read began, the client's own writes among them, is then
 * visible there — waiting up to `maxWaitMs`, and on the primary otherwise. A replica that fails
 * sends the read (and the next ones, for `REPLICA_RETRY_MS`) to the primary.
 *
 * The highest replay position seen is remembered (replay only moves forward), so a read whose
 * position the replica is known to have reached asks it nothing; concurrent waiting reads share
 * one check at a time. A replica failure forgets it.
 */
export class ReadRouter<C> implements Reads<C> {
  private replayed = -1n;
  private downUntil = 0;
  private laggingUntil = 0;
  private check?: Promise<bigint>;
  private readonly now: () => number;
  private readonly sleep: (ms: number) => Promise<void>;

  constructor(private readonly o: ReadRouterOptions<C>) {
    this.now = o.now ? () => o.now!() : () => Date.now();
    this.sleep = o.sleep ? (ms) => o.sleep!(ms) : (ms) => new Promise((resolve) => setTimeout(resolve, ms));
  }

  /** `read` on the side `route` picks; on the primary instead when the replica fails under it. */
  async read<T>(read: (client: C) => Promise<T>): Promise<T> {
    const { target, reason } = await this.route();
    if (target === 'primary') {
      this.o.onRead?.('primary', reason);
      return read(this.o.primary);
    }
    let result: T;
    try {
      result = await read(this.o.replica);
    } catch (err) {
      if (!(this.o.isReplicaFailure ?? isTransientDbError)(err)) throw err;
      this.replicaFailed();
      this.o.onRead?.('primary', 'replica_error');
      return read(this.o.primary);
    }
    this.o.onRead?.('replica', 'caught_up');
    return result;
  }

  /** Where the next read goes: the replica once it has replayed the primary's current position. */
  async route(): Promise<{ target: ReadTarget; reason: ReadReason }> {
    if (this.now() < this.downUntil) return { target: 'primary', reason: 'replica_error' };
    // A failing primary fails the read, as it would without a replica.
    const target = parseLsn(await this.o.primaryLsn());
    if (this.replayed >= target) return { target: 'replica', reason: 'caught_up' };
    const start = this.now();
    const deadline = start + (start < this.laggingUntil ? 0 : this.o.maxWaitMs);
    let delay = 1;
    for (;;) {
      let replayed: bigint;
      try {
        replayed = await this.replayPosition();
      } catch {
        this.replicaFailed();
        return { target: 'primary', reason: 'replica_error' };
      }
      this.o.onLag?.(replayed >= target ? 0 : Number(target - replayed));
      if (replayed >= target) {
        this.laggingUntil = 0;
        return { target: 'replica', reason: 'caught_up' };
      }
      const left = deadline - this.now();
      if (left <= 0) {
        this.laggingUntil = this.now() + LAGGING_HOLD_MS;
        return { target: 'primary', reason: 'lagging' };
      }
      await this.sleep(Math.min(delay, left));
      delay = Math.min(delay * 2, MAX_POLL_MS);
    }
  }

  /**
   * Reads stay on the primary for a while, and the replay position seen is forgotten: the server
   * that answers next may be another standby (a replacement), behind the one that failed.
   */
  private replicaFailed(): void {
    this.downUntil = this.now() + REPLICA_RETRY_MS;
    this.replayed = -1n;
  }

  /** The replica's replay position now (one check shared by concurrent callers); it must be a standby. */
  private replayPosition(): Promise<bigint> {
    this.check ??= (async () => {
      try {
        const lsn = await this.o.replayedLsn();
        if (lsn === null) throw new Error('the read replica is not a standby: it reports no replay position');
        const replayed = parseLsn(lsn);
        if (replayed > this.replayed) this.replayed = replayed;
        return replayed;
      } finally {
        this.check = undefined;
      }
    })();
    return this.check;
  }
}

/** The primary's current WAL insert position (covers commits made with `synchronous_commit = off` too). */
export async function currentWalLsn(primary: SqlDb): Promise<string> {
  const row = await primary.first<{ lsn: string }>(sql`SELECT pg_current_wal_insert_lsn()::text AS lsn`);
  return row!.lsn;
}

/** How far a standby has replayed the WAL; null on a server that is not one. */
export async function replayedWalLsn(replica: SqlDb): Promise<string | null> {
  const row = await replica.first<{ lsn: string | null }>(sql`SELECT pg_last_wal_replay_lsn()::text AS lsn`);
  return row?.lsn ?? null;
}
