/**
 * The live channel: a copy of a session's journal events, pushed over Redis pub/sub to whichever
 * gateway process holds a listener for that session (docs/adr/0011-live-channel.md).
 *
 * Postgres stays the truth. Pub/sub delivers at most once and only to processes subscribed at the
 * moment of the PUBLISH, so a reader that must not miss anything follows **subscribe, then read**:
 *
 * 1. subscribe to the session's channel and wait until Redis confirms the subscription;
 * 2. read what it needs from Postgres (the journal after its cursor, or a turn's status);
 * 3. take live events only past what it read, de-duplicated by the session `seq` (`LiveCursor`);
 * 4. on `resync` (the subscriber's connection dropped and came back; events may have been
 *    published meanwhile) read Postgres again from its cursor.
 *
 * An event committed before step 1 is in Postgres by step 2; one committed after step 1 arrives
 * live; one committed in between may arrive both ways, and the seq drops the second copy.
 */

/** A journal event as committed: the same fields as the API's Event (`GET /v1/sessions/:id/events`). */
export interface LiveEvent {
  /** The session's journal seq. */
  seq: number;
  type: string;
  turnId: string | null;
  data: Record<string, unknown>;
  /** ISO time; the publisher stamps the publishing time when the caller has none. */
  createdAt: string;
  /** The journal row's id: a reader recognises the committed copy of an ephemeral event by it. */
  id?: string;
  /**
   * On a turn's terminal event only (docs/adr/0071): the turn as GET /v1/turns/:id reads it, for a
   * request waiting on it, or why it is not here (the waiter then reads Postgres). Not part of the
   * journal row: readers that present events leave it out.
   */
  turn?: LiveTurnDetail;
}

/**
 * What a terminal event says of its turn's body: `row`, the turn row as `readTurn` reads it (its
 * JSON form, libs/store `TurnDetailJson`), or `read` with the reason to read it from Postgres — the
 * turn spawned sub-agent tasks (their list is read apart), the row is larger than a PUBLISH should
 * carry, or a step after the end's commit may have changed it.
 */
export type LiveTurnDetail =
  { row: Record<string, unknown> } | { read: 'spawned' | 'too_large' | 'changed' | 'unavailable' };

/**
 * Not a journal row (yet): an event a running turn has emitted but not committed — a round's or a
 * tool's start, text as the provider streams it (docs/adr/0015). It carries `after`, the seq of the
 * last journal event the turn committed before it, so a reader that already read past that point
 * drops it; `id`, the id its journal row will have; `index`, its place among the events the turn's
 * next commit journals; and for a text chunk `offset`, where it starts in that event's text. A
 * reader takes one only when it has every earlier one of the same `after`.
 */
export interface LiveEphemeralEvent {
  ephemeral: true;
  after: number;
  type: string;
  turnId: string | null;
  data: Record<string, unknown>;
  createdAt: string;
  id?: string;
  index?: number;
  offset?: number;
}

export type LiveMessage = LiveEvent | LiveEphemeralEvent;

export const isEphemeral = (e: LiveMessage): e is LiveEphemeralEvent =>
  (e as LiveEphemeralEvent).ephemeral === true;

/** Terminal journal event types of a turn (SPEC §6). */
export const TERMINAL_EVENT_TYPES: ReadonlySet<string> = new Set([
  'turn_completed',
  'turn_failed',
  'turn_cancelled',
]);

/**
 * Journal event types that settle a turn's hold: it ended, or it waits for someone (a person's
 * approval, the client's tools). A batch with one of them goes out on the session's channel, which
 * every reader hears; any other batch on its progress channel, which only streams hear
 * (docs/adr/0072).
 */
export const SETTLING_EVENT_TYPES: ReadonlySet<string> = new Set([
  ...TERMINAL_EVENT_TYPES,
  'approval_requested',
  'client_tool_requested',
]);

/** True when a batch settles a turn's hold (it goes out on the session's channel). */
export const settles = (events: readonly { type: string; ephemeral?: boolean }[]): boolean =>
  events.some((e) => e.ephemeral !== true && SETTLING_EVENT_TYPES.has(e.type));

/**
 * The session's channel name, under the deployment's key prefix (QUEUE_PREFIX) so deployments and
 * test files sharing one Redis never hear each other. It carries the batches that settle a turn
 * (SETTLING_EVENT_TYPES): every reader subscribes to it, a waiter (`wait: true`) only to it.
 */
export function sessionChannel(prefix: string, sessionId: string): string {
  return `${prefix}:live:session:${sessionId}`;
}

/**
 * The session's progress channel: every other batch — commits that do not settle a turn, and the
 * ephemeral events of an open round. Only streams subscribe to it, so a PUBLISH on it answers how
 * many processes _watch_ the session (a waiter is not watching; docs/adr/0072).
 */
export function progressChannel(prefix: string, sessionId: string): string {
  return `${prefix}:live:progress:${sessionId}`;
}

/** The channel a batch goes out on. */
export function channelFor(
  prefix: string,
  sessionId: string,
  events: readonly { type: string; ephemeral?: boolean }[],
): string {
  return settles(events) ? sessionChannel(prefix, sessionId) : progressChannel(prefix, sessionId);
}

/** What travels in one PUBLISH: one commit's events, in seq order. */
interface Wire {
  v: 1;
  sessionId: string;
  events: LiveMessage[];
}

export function encode(sessionId: string, events: readonly LiveMessage[]): string {
  const wire: Wire = { v: 1, sessionId, events: [...events] };
  return JSON.stringify(wire);
}

/** The batch in a message, or undefined for anything this version does not understand. */
export function decode(raw: string): { sessionId: string; events: LiveMessage[] } | undefined {
  let parsed: unknown;
  try {
    parsed = JSON.parse(raw);
  } catch {
    return undefined;
  }
  const w = parsed as Partial<Wire> | null;
  if (!w || w.v !== 1 || typeof w.sessionId !== 'string' || !Array.isArray(w.events)) return undefined;
  const events = w.events.filter(
    (e): e is LiveMessage =>
      !!e &&
      typeof e === 'object' &&
      typeof e.type === 'string' &&
      (isEphemeral(e) ? Number.isInteger(e.after) : Number.isInteger(e.seq)),
  );
  return { sessionId: w.sessionId, events };
}

/**
 * De-duplication by seq for a subscribe-then-read reader: `advance` with what it read from
 * Postgres, then `accept` each live event; an event at or below the cursor was already read.
 */
export class LiveCursor {
  constructor(private seq = 0) {}

  /** The highest journal seq seen so far. */
  get last(): number {
    return this.seq;
  }

  /** Records events read from the journal. */
  advance(seq: number): void {
    if (seq > this.seq) this.seq = seq;
  }

  /**
   * True when a journal event skips seqs this reader has not seen: events that were committed but
   * not published live (a PUBLISH given up), or lost while the subscriber's connection was down. A reader that needs every event reads the journal from
   * `last` before taking it.
   */
  isGap(e: LiveMessage): boolean {
    return !isEphemeral(e) && e.seq > this.seq + 1;
  }

  /**
   * True when a live event is new to this reader (and moves the cursor for a journal event). An
   * ephemeral event is new while nothing after its `after` seq has been seen.
   */
  accept(e: LiveMessage): boolean {
    if (isEphemeral(e)) return e.after >= this.seq;
    if (e.seq <= this.seq) return false;
    this.seq = e.seq;
    return true;
  }
}
