import { randomUUID } from 'node:crypto';
import { isTransientDbError, poolOf, type Db } from '@switchboard/database';
import { SqlDb, TurnStore, type Lease } from '@switchboard/store';
import { retryTransient } from './durable';

/** The harness's store over the pool under a Prisma client made by `createPrisma`. */
export function turnStoreFor(db: Db | TurnStore): TurnStore {
  return db instanceof TurnStore ? db : new TurnStore(new SqlDb(poolOf(db), { component: 'harness' }));
}

/**
 * The session lease: at most one worker runs a session's turns at a time
 * (docs/adr/0003-per-session-ordering.md). It lives in Postgres, the source of
 * truth, so a Redis that restarts empty cannot let two workers into one session.
 *
 * The runner takes it together with the session's next turn (`TurnStore.claimNext`, one
 * statement) using this object's token; `claim` takes it alone. It is itself the `Lease` (token and
 * duration) every statement of the turn is fenced by.
 */
export class SessionLease implements Lease {
  constructor(
    private readonly store: TurnStore,
    readonly sessionId: string,
    readonly ms: number,
    private current: string = randomUUID(),
  ) {}

  /** The token every statement of the turn is fenced by (it changes only by `adopt`). */
  get token(): string {
    return this.current;
  }

  /**
   * Takes over the token of a claim this process made of the same session while the turn still ran
   * under this lease (it expired and was freed; docs/adr/0069): the running turn goes on under it,
   * instead of a second run calling the model again.
   */
  adopt(token: string): void {
    this.current = token;
  }

  static async claim(
    db: Db | TurnStore,
    sessionId: string,
    owner: string,
    ms: number,
  ): Promise<SessionLease | null> {
    const lease = new SessionLease(turnStoreFor(db), sessionId, ms);
    return (await lease.store.claimLease(sessionId, owner, lease)) ? lease : null;
  }

  /** Extends the lease; false when it was lost (expired and taken by another worker). */
  async renew(): Promise<boolean> {
    return this.store.renewLease(this.sessionId, this);
  }

  async release(): Promise<void> {
    await this.store.releaseLease(this.sessionId, this.token);
  }

  /**
   * Releases the lease without throwing. When the database is briefly unreachable (a restart), it
   * keeps trying in the background for as long as the lease would have lasted anyway, so the
   * session is free as soon as the database is back rather than when the lease expires.
   * `onError` hears each failure; `final` says it gave up (the lease then expires on its own).
   * Resolves true when the release committed now (false: it failed or continues in the background).
   */
  async releaseOrRetry(onError: (err: unknown, final: boolean) => void): Promise<boolean> {
    try {
      await this.release();
      return true;
    } catch (err) {
      onError(err, !isTransientDbError(err));
      if (!isTransientDbError(err)) return false;
    }
    void retryTransient(() => this.release(), {
      maxMs: this.ms,
      maxBackoffMs: 1_000,
      unref: true,
    }).catch((err: unknown) => onError(err, true));
    return false;
  }
}
