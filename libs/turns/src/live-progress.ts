import { EventType } from '@switchboard/contracts';
import { redact } from '@switchboard/database';
import {
  SETTLING_EVENT_TYPES,
  type LiveTurnDetail,
  type LivePublisher,
  type PublishableEvent,
} from '@switchboard/live';
import type { CommittedEvent } from '@switchboard/store';

/** How often a streaming round's text goes out live at most (LIVE_DELTA_FLUSH_MS; docs/adr/0015). */
export const DEFAULT_DELTA_FLUSH_MS = 30;
/** Buffered text past this size goes out at once, whatever the interval. */
const DELTA_FLUSH_BYTES = 16 * 1024;
/**
 * While the last PUBLISH reached nobody, how often a round that is still open is probed (its first
 * event published again, docs/adr/0015): a probe that reaches a reader has the round go out whole.
 */
export const DEFAULT_REPROBE_MS = 500;

/**
 * Events whose commit waits for slow work (a provider call, a read-only tool): they go out live
 * before it — a round's start at once, a tool's start when the tool is still running a flush
 * interval later (a fast tool's result commits first and carries it).
 */
const STARTS: ReadonlySet<string> = new Set([EventType.ProviderRoundStarted, EventType.ToolCallStarted]);
/**
 * A commit with one of these ends the run (or makes it wait): it goes out whether anyone watches or
 * not, on the session's channel that waiters hear (SETTLING_EVENT_TYPES, docs/adr/0072).
 */
const ENDS: ReadonlySet<string> = SETTLING_EVENT_TYPES;

interface Provisional {
  id: string;
  type: string;
  data: Record<string, unknown>;
}

/**
 * A running turn's live channel (libs/live, docs/adr/0011 and 0015): every committed step's events
 * after its commit, and before a commit what the client should not wait for — the round's start,
 * a tool's start, the text as the provider streams it — as _ephemeral_ events.
 *
 * An ephemeral event carries the id its journal row will have, `after` (the last seq this turn
 * committed; 0 before its first commit) and `index` (its place among the events the next commit
 * journals), and a text chunk its `offset` in the round's text: a reader takes one only when it has
 * every earlier one, and recognises the committed copies by id (the gateway's event stream).
 *
 * Cost: one PUBLISH per commit, one at each round's start, and for a streaming round one per
 * `flushMs` at most — while someone watches. Every PUBLISH of progress is also a probe: it goes out
 * on the session's progress channel, which only streams subscribe to (a waiter holding a `wait`
 * hears the session's channel alone), so its answer is how many processes watch the session
 * (docs/adr/0072). While the last one reached nobody, the round's text and tools' starts are not
 * sent as they come and its commits are not published, only a commit that settles the turn (it
 * ends, or waits for an approval or the client's tools: SETTLING_EVENT_TYPES, on the session's
 * channel, whatever the count); instead, while the round is open, its first event alone is
 * published again `reprobeMs` after its start, then at twice the interval each time (at most
 * 16 × `reprobeMs`) as a probe, and once a probe reaches a reader the round goes out **whole** at
 * once (everything provisional from index 0, the text from offset 0). A reader that subscribed
 * meanwhile (late, or slowed by load) thus hears the round from its start within about the round's
 * age, and its text as it comes from then on, rather than nothing until the turn ends; a turn nobody
 * watches pays one small PUBLISH per round (a round shorter than `reprobeMs`), a few for a long one,
 * and one for its end — never its text. The round is also published whole at the next flush when a
 * PUBLISH reached more processes than the one before (a reader elsewhere joined mid-round) or failed
 * (readers may have missed a chunk). A reader takes each event and each character of text once, so
 * a whole copy only fills what it missed.
 * Publishing never fails or delays the turn: each PUBLISH is sent at once and not awaited.
 */
export class LiveProgress {
  private after = 0;
  /** The uncommitted events, in the order the next commit journals them. */
  private list: Provisional[] = [];
  /** How many of `list` went out live. */
  private published = 0;
  /** The round's text: its future event's id and index, the text so far, how much of it went out. */
  private text?: { id: string; index: number; text: string; sent: number };
  private timer?: NodeJS.Timeout;
  private due = 0;
  private lastFlush = 0;
  /** The last PUBLISH reached a subscriber (unknown counts as yes). */
  private listening = true;
  /** How many processes the last PUBLISH reached. */
  private receivers = 0;
  /** The next flush sends the round whole (a PUBLISH failed, or reached a process new to it). */
  private whole = false;
  private closed = false;
  /** Probes sent since the open round started: each waits twice as long as the one before. */
  private probes = 0;
  /** When the last PUBLISH of progress (each one a probe) was sent. */
  private probedAt = 0;

  constructor(
    private readonly live: LivePublisher,
    private readonly sessionId: string,
    private readonly turnId: string,
    private readonly flushMs = DEFAULT_DELTA_FLUSH_MS,
    private readonly reprobeMs = DEFAULT_REPROBE_MS,
  ) {}

  /**
   * An event the checkpoints buffered for the next commit, at its place in that commit; the round's
   * text too, when the next event closes it (its chunks went out already, the rest is in the commit).
   */
  emitted(id: string, type: string, data: Record<string, unknown>): void {
    const e = { id, type, data: redact(data) as Record<string, unknown> };
    const t = this.text;
    if (t && t.id === id) {
      this.text = undefined;
      this.list.push(e);
      // Its chunks went out only after everything before it: the list is out up to here.
      if (t.sent > 0) this.published = this.list.length;
      return;
    }
    this.list.push(e);
    if (type === EventType.ProviderRoundStarted) {
      // Nobody watched at a probe less than `reprobeMs` ago (the round before, a fast tool between):
      // this round is probed when that interval is up, not at once (docs/adr/0072).
      const since = Date.now() - this.probedAt;
      if (!this.listening && since < this.reprobeMs) return this.schedule(this.reprobeMs - since);
      this.flush();
      this.probes = 0;
    } else if (STARTS.has(type)) this.schedule(this.listening ? this.flushMs : this.reprobeDelay);
  }

  /** Streamed text of the event at `index` (its id fixed by the checkpoints when the text began). */
  delta(id: string, index: number, text: string): void {
    if (!this.text || this.text.id !== id) this.text = { id, index, text: '', sent: 0 };
    this.text.text += text;
    // Nobody heard the last PUBLISH: the round goes out whole at the next probe.
    if (!this.listening) return this.schedule(this.reprobeDelay);
    // The first chunk goes out at once (time to first token); later ones at most every flushMs.
    const pending = this.text.text.slice(this.text.sent);
    if (this.text.sent === 0 || Buffer.byteLength(pending) >= DELTA_FLUSH_BYTES) this.schedule(0);
    else this.schedule(Math.max(0, this.lastFlush + this.flushMs - Date.now()));
  }

  /** A step committed: its events go out as journaled, and nothing provisional is left. */
  committed(events: readonly (CommittedEvent & { turn?: LiveTurnDetail })[] | undefined): void {
    clearTimeout(this.timer);
    this.timer = undefined;
    this.list = [];
    this.published = 0;
    this.text = undefined;
    this.probes = 0;
    if (!events || events.length === 0) return;
    this.after = events[events.length - 1].seq;
    // While nobody listened at the last probe, only the end goes out: a reader that subscribed since
    // sees the next published commit skip seqs and reads the journal.
    if (events.some((e) => ENDS.has(e.type))) this.send(events, true, false);
    else if (this.listening) this.send(events);
  }

  close(): void {
    clearTimeout(this.timer);
    this.timer = undefined;
    this.closed = true;
  }

  /**
   * How long until the open round is probed again while nobody watches: `reprobeMs`, then twice as
   * long after each probe (at most 16 times `reprobeMs`), so a long round nobody watches costs a
   * handful of PUBLISHes, not one per `reprobeMs` (docs/adr/0072).
   */
  private get reprobeDelay(): number {
    return this.reprobeMs * 2 ** Math.min(this.probes, 4);
  }

  /** Something provisional is not committed yet: a round (or a tool) is open. */
  private get open(): boolean {
    return !this.closed && (this.list.length > 0 || this.text !== undefined);
  }

  private schedule(ms: number): void {
    const due = Date.now() + ms;
    if (this.timer && this.due <= due) return;
    clearTimeout(this.timer);
    this.due = due;
    this.timer = setTimeout(() => {
      this.timer = undefined;
      this.flush();
    }, ms);
  }

  /**
   * Sends what is provisional and not yet out, in order. While nobody listened (a probe), or after
   * a failed PUBLISH or a new receiver, it sends the round whole: everything provisional from index
   * 0, the text from offset 0.
   */
  private flush(): void {
    clearTimeout(this.timer);
    this.timer = undefined;
    if (!this.listening && !this.whole && this.list.length > 0) return this.probe();
    if (this.whole || !this.listening) {
      this.published = 0;
      if (this.text) this.text.sent = 0;
    }
    this.whole = false;
    const now = new Date().toISOString();
    const out: PublishableEvent[] = [];
    const wholeRound = this.published === 0 && (!this.text || this.text.sent === 0);
    for (let i = this.published; i < this.list.length; i++) {
      const e = this.list[i];
      out.push({
        ephemeral: true,
        id: e.id,
        after: this.after,
        index: i,
        type: e.type,
        turnId: this.turnId,
        data: e.data,
        createdAt: now,
      });
    }
    this.published = this.list.length;
    const t = this.text;
    if (t && t.text.length > t.sent && t.index === this.list.length) {
      out.push({
        ephemeral: true,
        id: t.id,
        after: this.after,
        index: t.index,
        offset: t.sent,
        type: EventType.TextDelta,
        turnId: this.turnId,
        data: { text: t.text.slice(t.sent) },
        createdAt: now,
      });
      t.sent = t.text.length;
    }
    if (out.length === 0) return;
    this.lastFlush = Date.now();
    this.send(out, wholeRound);
  }

  /**
   * While nobody listens: the round's first event alone (its start, a few hundred bytes), not the
   * round — a turn nobody watches costs a few small PUBLISHes per round, whatever its text. When
   * it reaches a reader, `send` has the round go out whole at once.
   */
  private probe(): void {
    this.probes++;
    const e = this.list[0];
    const probe: PublishableEvent = {
      ephemeral: true,
      id: e.id,
      after: this.after,
      index: 0,
      type: e.type,
      turnId: this.turnId,
      data: e.data,
      createdAt: new Date().toISOString(),
    };
    this.send([probe], false);
  }

  /**
   * One PUBLISH, not awaited. Its answer says whether anyone listens: nobody → the open round is
   * probed again (whole) after `reprobeDelay`; more processes than the last answer, after a batch that
   * was not the whole round, or a failure → the round goes out whole at once.
   */
  private send(events: readonly PublishableEvent[], wholeRound = true, probe = true): void {
    // A settling commit goes out on the session's channel, whose count includes waiters (not watchers).
    if (!this.live.publishCounted || !probe) {
      void this.live.publish(this.sessionId, events);
      return;
    }
    this.probedAt = Date.now();
    void this.live.publishCounted(this.sessionId, events).then((receivers) => {
      if (receivers === undefined) {
        // Given up (Redis away or slow): a reader may have missed this batch; the next one is whole.
        this.whole = true;
        return;
      }
      const joined = receivers > this.receivers && !wholeRound;
      this.receivers = receivers;
      this.listening = receivers > 0;
      if (!this.open) return;
      if (!this.listening) this.schedule(this.reprobeDelay);
      else if (joined) {
        this.whole = true;
        this.schedule(0);
      }
    });
  }
}
