import { isEnded, type TurnResponse } from '@switchboard/contracts';
import {
  isEphemeral,
  TERMINAL_EVENT_TYPES,
  type LiveMessage,
  type LiveSubscriber,
  type LiveWatch,
} from '@switchboard/live';
import { readTurn, turnDetailOf, type SqlDb, type TurnDetailJson } from '@switchboard/store';
import type { TurnDetail } from './turn-detail';

export const TURN_WAITER = Symbol('TURN_WAITER');

/**
 * Holds a request until a turn ends, without polling: it listens on the session's live channel
 * (libs/live, one subscriber connection per gateway process) and reads Postgres only when it must:
 *
 * - subscribe first, then read the turn's status (subscribe-then-read: a turn that ended before the
 *   subscription is seen in Postgres, one that ends after it is heard);
 * - a terminal event of the turn answers from the turn it carries (docs/adr/0071: the row the end's
 *   statement read back, presented as GET /v1/turns/:id presents it); one that carries none (the
 *   turn spawned sub-agent tasks, was too large, or changed after its end), another event of the
 *   turn that settles the wait, or a resync after the subscriber's connection dropped, reads again;
 * - at the deadline one last read, so a lost publish costs latency, never a wrong answer.
 *
 * The subscription is opened before the admission (`watch`), so its SUBSCRIBE overlaps the admission
 * statement; when the session's channel was already subscribed before the admission began (another
 * waiter, or one lingering from this client's previous turn), the first read is skipped: whatever
 * the turn commits is published after the admission committed, hence after the subscription.
 */
export class TurnWaiter {
  /** Waits answered from the turn their end event carried, without a read (docs/adr/0071). */
  fromLive = 0;

  /** Aborted when the gateway shuts down: waiting requests answer 202 at once instead of holding the drain. */
  private readonly stopping = new AbortController();

  constructor(
    private readonly sqlDb: SqlDb,
    private readonly live: LiveSubscriber,
    /** The turn as GET /v1/turns/:id presents it (with its sub-agent tasks): the same body either way. */
    private readonly detail: TurnDetail,
  ) {}

  /** Ends every wait in progress (each answers as at its bound, without the last read). */
  stop(): void {
    this.stopping.abort();
  }

  /** Aborted when the gateway begins to shut down (streams end then, as waits do). */
  get shutdown(): AbortSignal {
    return this.stopping.signal;
  }

  /** Starts listening to the session; close the watch when done (a disconnect included). */
  watch(sessionId: string): LiveWatch {
    return this.live.watch(sessionId);
  }

  /**
   * The turn as GET /v1/turns/:id presents it once it has ended, or undefined when the deadline
   * passed (or the signal fired: the client went away) first.
   */
  async untilEnded(
    watch: LiveWatch,
    o: {
      tenantId: string;
      turnId: string;
      deadline: number;
      signal?: AbortSignal;
      /** The channel was subscribed before the turn was admitted: nothing can have been missed. */
      subscribedBeforeAdmission: boolean;
      /**
       * Also answer when the turn pauses for approval (docs/adr/0013): it will not end before a
       * person decides, so holding the request to the bound would only delay the news.
       */
      orPaused?: boolean;
      /**
       * Also answer when the turn waits for the client's tools (docs/adr/0047): the client must run
       * them and send their results before it can go on.
       */
      orClientTool?: boolean;
    },
  ): Promise<TurnResponse | undefined> {
    const paused: Settles = { paused: o.orPaused ?? false, clientTool: o.orClientTool ?? false };
    const signal = o.signal ? AbortSignal.any([o.signal, this.stopping.signal]) : this.stopping.signal;
    let read = !o.subscribedBeforeAdmission;
    if (!(await watch.subscribed(o.deadline, signal))) {
      // Redis unreachable for the whole bound (or the client left): one look at Postgres.
      return signal.aborted ? undefined : this.ended(o.tenantId, o.turnId, paused);
    }
    for (;;) {
      if (read) {
        const turn = await this.ended(o.tenantId, o.turnId, paused);
        if (turn) return turn;
      }
      const next = await watch.next(o.deadline, signal);
      if (next === 'aborted') return undefined;
      if (next === 'timeout') return this.ended(o.tenantId, o.turnId, paused);
      const carried = next === 'resync' ? undefined : carriedTurn(next, o.turnId);
      if (carried) {
        this.fromLive++;
        return this.detail(o.tenantId, turnDetailOf(carried));
      }
      read =
        next === 'resync' ||
        next.some(
          (e) =>
            !isEphemeral(e) &&
            e.turnId === o.turnId &&
            (TERMINAL_EVENT_TYPES.has(e.type) ||
              (paused.paused && e.type === 'approval_requested') ||
              (paused.clientTool && e.type === 'client_tool_requested')),
        );
    }
  }

  /** The turn as GET /v1/turns/:id presents it when it has ended; undefined while it has not. */
  async ended(
    tenantId: string,
    turnId: string,
    orPaused: boolean | Settles = false,
  ): Promise<TurnResponse | undefined> {
    const turn = await readTurn(this.sqlDb, tenantId, turnId);
    if (!turn || !settled(turn.status, orPaused)) return undefined;
    return this.detail(tenantId, turn);
  }
}

/** The turn a terminal event of the turn carries (docs/adr/0071), when it carries it. */
function carriedTurn(events: readonly LiveMessage[], turnId: string): TurnDetailJson | undefined {
  for (const e of events) {
    if (isEphemeral(e) || e.turnId !== turnId || !TERMINAL_EVENT_TYPES.has(e.type)) continue;
    const t = e.turn;
    if (
      t &&
      'row' in t &&
      t.row &&
      (t.row as { id?: unknown }).id === turnId &&
      isEnded(String(t.row.status))
    )
      return t.row as unknown as TurnDetailJson;
  }
  return undefined;
}

/** Which waits, besides the end, settle a hold. */
interface Settles {
  paused: boolean;
  clientTool: boolean;
}

/** Ended, or (when asked) waiting for approval or for the client's tools. */
function settled(status: string, o: boolean | Settles): boolean {
  const { paused, clientTool } = typeof o === 'boolean' ? { paused: o, clientTool: false } : o;
  return (
    isEnded(status) ||
    (paused && status === 'awaiting_approval') ||
    (clientTool && status === 'awaiting_client_tool')
  );
}
