import { AppError } from '@switchboard/contracts';
import type { LivePublisher } from '@switchboard/live';
import { LangGraphError } from '@switchboard/protocols';
import { rewindSession, type SqlTransactor } from '@switchboard/store';

/**
 * The rewinds LangGraph's time travel makes (docs/adr/0038, time-travel addendum): a run or
 * updateState from a past checkpoint of the thread's branch rewinds the later runs through the one
 * rewind of docs/adr/0053 (`rewindSession`: one transaction under the session's lock, journaled,
 * audited with the caller as actor), whose `session_rewound` event then goes out live as every
 * journaled event does.
 */
export class LangGraphRewinds {
  constructor(
    private readonly sql: SqlTransactor,
    private readonly live: LivePublisher,
  ) {}

  /** Rewinds `turnId` and every later live turn; a busy or closed thread is a 409 `{detail}`. */
  async rewind(a: { tenantId: string; sessionId: string; turnId: string; actor: string }): Promise<string[]> {
    let result;
    try {
      result = await rewindSession(this.sql, a);
    } catch (err) {
      if (err instanceof AppError && (err.code === 'session_busy' || err.code === 'conflict')) {
        throw new LangGraphError(
          409,
          `thread ${a.sessionId} cannot go back to an earlier checkpoint now: ${err.message}`,
        );
      }
      throw err;
    }
    // Sent at once, never failing the rewind (publish never throws): a live reader that misses it
    // reads the journal.
    void this.live.publish(a.sessionId, result.events);
    return result.rewoundTurnIds;
  }
}
