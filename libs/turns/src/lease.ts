import { randomUUID } from 'node:crypto';
import { isTransientDbError, type Db } from '@switchboard/database';
import { retryTransient } from './durable';

/**
 * The session lease: at most one worker runs a session's turns at a time
 * (docs/adr/0003-per-session-ordering.md). It lives in Postgres, the source of
 * truth, so a Redis that restarts empty cannot let two workers into one session.
 */
export class SessionLease {
  private constructor(
    private readonly db: Db,
    readonly sessionId: string,
    readonly token: string,
    readonly ms: number,
  ) {}

  static async claim(db: Db, sessionId: string, owner: string, ms: number): Promise<SessionLease | null> {
    const token = randomUUID();
    const n = await db.$executeRaw`
      UPDATE sessions SET lease_owner = ${owner}, lease_token = ${token}::uuid,
        lease_expires_at = now() + (${ms} * interval '1 millisecond')
      WHERE id = ${sessionId}::uuid AND (lease_token IS NULL OR lease_expires_at < now())`;
    return n === 1 ? new SessionLease(db, sessionId, token, ms) : null;
  }

  /** Extends the lease; false when it was lost (expired and taken by another worker). */
  async renew(): Promise<boolean> {
    const n = await this.db.$executeRaw`
      UPDATE sessions SET lease_expires_at = now() + (${this.ms} * interval '1 millisecond')
      WHERE id = ${this.sessionId}::uuid AND lease_token = ${this.token}::uuid`;
    return n === 1;
  }

  async release(): Promise<void> {
    await this.db.$executeRaw`
      UPDATE sessions SET lease_owner = NULL, lease_token = NULL, lease_expires_at = NULL
      WHERE id = ${this.sessionId}::uuid AND lease_token = ${this.token}::uuid`;
  }

  /**
   * Releases the lease without throwing. When the database is briefly unreachable (a restart), it
   * keeps trying in the background for as long as the lease would have lasted anyway, so the
   * session is free as soon as the database is back rather than when the lease expires.
   * `onError` hears each failure; `final` says it gave up (the lease then expires on its own).
   */
  async releaseOrRetry(onError: (err: unknown, final: boolean) => void): Promise<void> {
    try {
      await this.release();
      return;
    } catch (err) {
      onError(err, !isTransientDbError(err));
      if (!isTransientDbError(err)) return;
    }
    void retryTransient(() => this.release(), {
      maxMs: this.ms,
      maxBackoffMs: 1_000,
      unref: true,
    }).catch((err: unknown) => onError(err, true));
  }

  get fence() {
    return { token: this.token, ms: this.ms };
  }
}
