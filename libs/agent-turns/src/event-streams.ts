import { EventType, isEnded, type EventResponse } from '@switchboard/contracts';
import {
  isEphemeral,
  LiveCursor,
  TERMINAL_EVENT_TYPES,
  type LiveEphemeralEvent,
  type LiveMessage,
  type LiveSubscriber,
  type LiveWatch,
} from '@switchboard/live';
import { journalPage, turnStatus, type Reads, type SqlDb } from '@switchboard/store';

export const EVENT_STREAMS = Symbol('EVENT_STREAMS');

/** A journal event, committed: on SSE a frame with `id: <seq>`. */
export interface JournaledItem {
  kind: 'journaled';
  event: EventResponse;
  /**
   * Its content already went out on this stream as live items (the ephemeral copies before its
   * commit): a client that rendered those skips it. For a text_delta, any text the live items did
   * not carry came as one more live item just before it.
   */
  streamed: boolean;
}

/** An event emitted but not committed yet (docs/adr/0015): a start, or streamed text. No seq. */
export interface LiveItem {
  kind: 'live';
  event: LiveFrame;
}

/** What a live item shows a client (the wire's bookkeeping fields left out). */
export interface LiveFrame {
  ephemeral: true;
  /** The last journal seq committed before it. */
  after: number;
  type: EventType;
  turnId: string | null;
  data: Record<string, unknown>;
  createdAt: string;
}

/** Nothing happened for `idleMs`: time for a heartbeat. */
export interface IdleItem {
  kind: 'idle';
}

export type StreamItem = JournaledItem | LiveItem | IdleItem;

export interface EventStreamOptions {
  sessionId: string;
  /** Only this turn's events; the stream ends after its terminal event (at once if it had ended). */
  turnId?: string;
  /** Journal seq already seen (Last-Event-ID, `?after=`): the stream starts after it. */
  after: number;
  /** The client left, or the caller is done: the iteration ends. */
  signal: AbortSignal;
  /** An `idle` item after this much silence (default 15 s). */
  idleMs?: number;
  /**
   * The session's watch, when the caller opened it earlier (before admitting a message, so its
   * SUBSCRIBE overlaps the admission); closed when the iteration ends either way.
   */
  watch?: LiveWatch;
}

/** Rows per journal read. */
const PAGE = 500;
/** Longest a stream waits for its subscription before it replays the journal anyway. */
const SUBSCRIBE_WAIT_MS = 5_000;
/** Journal ids a stream remembers to recognise stale ephemeral events (a commit's worth, and more). */
const RECENT_IDS = 1024;

/**
 * A session's events as one ordered stream: the journal's history after a seq, then live events,
 * with no gap and no duplicate — the seam behind `GET /v1/turns/:id/stream`,
 * `GET /v1/sessions/:id/stream` and streamed chat completions (docs/adr/0011, 0015).
 *
 * `events()` follows the live channel's reading pattern: it subscribes and waits for Redis to
 * confirm, then reads the journal after `after` (the turn's status first, for a turn stream), then
 * takes live batches, de-duplicated by seq. A live event that skips seqs (a PUBLISH given up, or
 * not sent while nobody listened), an ephemeral one that follows commits past the cursor, or a
 * resync (the subscriber's connection dropped) reads the journal again from the cursor; while Redis
 * is unreachable the journal is read every `idleMs`.
 *
 * Ephemeral live events (a round's start, streamed text, before their commit) are passed on only
 * in order: an ephemeral event is taken when every earlier one of the same commit was (its
 * `index`), and of a text only the characters past those already passed on (a chunk's `offset`).
 * A stream that joins mid-round, or misses a chunk, waits for the round to be published whole
 * (the writer does so when a new reader or a lost PUBLISH may need it, docs/adr/0015) and takes
 * from it what it lacks; failing that, it gets the round whole when it commits. The committed copy
 * of an event that went out ephemerally is recognised by its id and marked `streamed`.
 *
 * Tenancy is the caller's: check the session (or turn) belongs to the tenant before iterating.
 */
export class EventStreams {
  constructor(
    /**
     * Where the journal is read: the primary, or a read replica once it has replayed the primary's
     * WAL position taken just before each read (docs/adr/0042). A read after a live event that skips
     * seqs takes that position after the event's commit, so the page it gets holds every seq below
     * it: a lagging replica can delay a catch-up, never leave a gap.
     */
    private readonly reads: Reads<{ sql: SqlDb }>,
    private readonly live: LiveSubscriber,
    /** Aborted when the gateway begins to shut down: every stream ends. */
    readonly shutdown: AbortSignal,
  ) {}

  /** Starts listening to a session before something the stream must not miss (an admission). */
  watch(sessionId: string): LiveWatch {
    return this.live.watch(sessionId, { progress: true });
  }

  async *events(o: EventStreamOptions): AsyncGenerator<StreamItem, void, undefined> {
    const signal = AbortSignal.any([o.signal, this.shutdown]);
    const idleMs = o.idleMs ?? 15_000;
    const watch = o.watch ?? this.live.watch(o.sessionId, { progress: true });
    // A waiter's watch handed over: a stream hears the progress channel too (docs/adr/0072).
    watch.follow();
    const reader = new StreamReader(o);
    try {
      // Subscribe first: whatever commits after the confirmation arrives live. Redis away: go on
      // with the journal after a few seconds (read again at every idle interval below).
      await watch.subscribed(Date.now() + Math.min(idleMs, SUBSCRIBE_WAIT_MS), signal);
      if (signal.aborted) return;
      const endedBefore = o.turnId !== undefined && (await this.turnEnded(o.turnId));
      yield* this.readJournal(reader);
      if (reader.done || endedBefore) return;
      let lastYield = Date.now();
      for (;;) {
        const next = await watch.next(lastYield + idleMs, signal);
        if (next === 'aborted' || signal.aborted) return;
        let sent = 0;
        for await (const item of this.wakeUp(next, watch, reader)) {
          sent++;
          yield item;
        }
        // Nothing for idleMs: a heartbeat.
        if (sent === 0 && next === 'timeout') {
          yield { kind: 'idle' };
          sent++;
        }
        if (sent > 0) lastYield = Date.now();
        if (reader.done) return;
      }
    } finally {
      watch.close();
    }
  }

  /**
   * What one wake-up of the watch yields: a batch in order (the journal read first where it skips
   * seqs), or the journal read again after a resync or, while not subscribed, at each interval.
   */
  private async *wakeUp(
    next: LiveMessage[] | 'resync' | 'timeout',
    watch: LiveWatch,
    reader: StreamReader,
  ): AsyncGenerator<StreamItem, void, undefined> {
    if (next === 'resync' || (next === 'timeout' && !watch.subscription.isReady)) {
      yield* this.readJournal(reader);
      return;
    }
    if (next === 'timeout') return;
    for (const m of next) {
      if (reader.isGap(m)) yield* this.readJournal(reader);
      yield* reader.take(m);
    }
  }

  private async turnEnded(turnId: string): Promise<boolean> {
    const status = await this.reads.read(({ sql }) => turnStatus(sql, turnId));
    return status !== undefined && isEnded(status);
  }

  /**
   * The journal after the reader's cursor, page by page. A turn stream reads only the turn's rows
   * and moves its cursor to the session's last seq as that statement saw it (nothing of the turn
   * can be missing below it).
   */
  private async *readJournal(reader: StreamReader): AsyncGenerator<StreamItem, void, undefined> {
    for (;;) {
      const { last, events: rows } = await this.reads.read(({ sql }) =>
        journalPage(sql, {
          sessionId: reader.sessionId,
          after: reader.cursor.last,
          turnId: reader.turnId,
          limit: PAGE,
        }),
      );
      // Page by page: a long history is never held whole.
      for (const r of rows) {
        yield* reader.take(r);
        if (reader.done) return;
      }
      if (rows.length < PAGE) {
        if (reader.turnId && last) reader.cursor.advance(last);
        return;
      }
    }
  }
}

/**
 * One stream's position: the journal cursor, and the ephemeral events it passed on that are not
 * committed yet (by id, with the text they carried).
 */
export class StreamReader {
  readonly cursor: LiveCursor;
  readonly sessionId: string;
  readonly turnId?: string;
  /** The turn stream saw its turn's terminal event. */
  done = false;
  /** The commit the ephemeral events passed on belong to: its turn, `after`, and the next index. */
  private commit?: { turnId: string | null; after: number; next: number };
  private provisional = new Map<string, { text: string }>();
  /** Ids of the journal events taken lately: an ephemeral event whose copy is among them is stale. */
  private readonly recent = new Set<string>();

  constructor(o: Pick<EventStreamOptions, 'sessionId' | 'turnId' | 'after'>) {
    this.cursor = new LiveCursor(o.after);
    this.sessionId = o.sessionId;
    this.turnId = o.turnId;
  }

  /**
   * The journal has events this reader has not seen: a journaled event skips seqs, or an ephemeral
   * one of the followed turn follows commits past the cursor (the writer published nothing while
   * nobody listened, ADR 0015).
   */
  isGap(m: LiveMessage): boolean {
    if (!isEphemeral(m)) return this.cursor.isGap(m);
    return (!this.turnId || m.turnId === this.turnId) && m.after > this.cursor.last;
  }

  /** What a message becomes on the stream: nothing (a copy, another turn's), or one or two items. */
  take(m: LiveMessage): StreamItem[] {
    if (this.done) return [];
    if (isEphemeral(m)) return this.takeEphemeral(m);
    if (!this.cursor.accept(m)) return [];
    if (m.id) this.remember(m.id);
    if (this.turnId && m.turnId !== this.turnId) return [];
    const event = {
      seq: m.seq,
      type: m.type,
      turnId: m.turnId,
      data: m.data,
      // Writers hand on Postgres' JSON time (+00:00); the API shows ISO with Z, as the journal does.
      createdAt: new Date(m.createdAt).toISOString(),
    } as EventResponse;
    const items: StreamItem[] = [];
    const sent = m.id ? this.provisional.get(m.id) : undefined;
    let streamed = false;
    if (sent && m.id) {
      this.provisional.delete(m.id);
      const text =
        m.type === EventType.TextDelta && typeof m.data.text === 'string' ? m.data.text : undefined;
      if (text === undefined) streamed = true;
      else if (text.startsWith(sent.text)) {
        streamed = true;
        // The tail the live chunks did not carry (their last flush was overtaken by the commit).
        if (text.length > sent.text.length) {
          items.push(this.liveItem(m.type, m.turnId, { text: text.slice(sent.text.length) }, m.createdAt));
        }
      }
    }
    items.push({ kind: 'journaled', event, streamed });
    if (this.turnId && TERMINAL_EVENT_TYPES.has(m.type)) this.done = true;
    return items;
  }

  private takeEphemeral(m: LiveEphemeralEvent): StreamItem[] {
    if (this.turnId && m.turnId !== this.turnId) return [];
    // Already read as committed, or from a publisher that does not say where it belongs.
    if (m.id === undefined || m.index === undefined || this.recent.has(m.id)) return [];
    const c = this.commit;
    if (!c || c.turnId !== m.turnId || c.after !== m.after) {
      if (c && c.turnId === m.turnId && m.after < c.after) return [];
      this.commit = { turnId: m.turnId, after: m.after, next: 0 };
      this.provisional.clear();
    }
    const commit = this.commit!;
    const text = m.type === EventType.TextDelta && typeof m.data.text === 'string' ? m.data.text : undefined;
    const offset = m.offset ?? 0;
    if (m.index === 0 && offset === 0 && commit.next > 0 && !this.provisional.has(m.id)) {
      // The same step begun again under new ids: the worker running it died and another resumed the
      // turn from what it had committed. The dead attempt's events will never commit; take the new
      // attempt from its start (a client replaces the dead attempt's text at its round's start).
      commit.next = 0;
      this.provisional.clear();
    }
    const earlier = this.provisional.get(m.id);
    if (earlier) {
      // More of a text this stream is carrying: the part past what it passed on (a chunk that
      // continues it, or a copy of the round published whole after this stream missed a chunk).
      const have = earlier.text.length;
      if (text === undefined || offset > have || offset + text.length <= have) return [];
      const more = text.slice(have - offset);
      earlier.text += more;
      return [this.liveItem(m.type, m.turnId, { ...m.data, text: more }, m.createdAt, m.after)];
    }
    if (m.index !== commit.next || offset !== 0) return [];
    commit.next++;
    this.provisional.set(m.id, { text: text ?? '' });
    return [this.liveItem(m.type, m.turnId, m.data, m.createdAt, m.after)];
  }

  private remember(id: string): void {
    this.recent.add(id);
    if (this.recent.size > RECENT_IDS) this.recent.delete(this.recent.values().next().value!);
  }

  private liveItem(
    type: string,
    turnId: string | null,
    data: Record<string, unknown>,
    createdAt: string,
    after = this.cursor.last,
  ): LiveItem {
    return {
      kind: 'live',
      event: { ephemeral: true, after, type: type as EventType, turnId, data, createdAt },
    };
  }
}
