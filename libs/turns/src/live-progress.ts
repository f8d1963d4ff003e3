import { EventType } from '@switchboard/contracts';
import { redact } from '@switchboard/database';
import type { LivePublisher, PublishableEvent } from '@switchboard/live';
import type { CommittedEvent } from '@switchboard/store';

/** How often a streaming round's text goes out live at most (LIVE_DELTA_FLUSH_MS; docs/adr/0015). */
export const DEFAULT_DELTA_FLUSH_MS = 30;
/** Buffered text past this size goes out at once, whatever the interval. */
const DELTA_FLUSH_BYTES = 16 * 1024;

/**
 * Events whose commit waits for slow work (a provider call, a read-only tool): they go out live
 * before it — a round's start at once, a tool's start when the tool is still running a flush
 * interval later (a fast tool's result commits first and carries it).
 */
const STARTS: ReadonlySet<string> = new Set([EventType.ProviderRoundStarted, EventType.ToolCallStarted]);
/** A commit with one of these ends the run (or makes it wait): it goes out whether anyone listened or not. */
const ENDS: ReadonlySet<string> = new Set([
  EventType.TurnCompleted,
  EventType.TurnFailed,
  EventType.TurnCancelled,
  EventType.ApprovalRequested,
]);

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
 * `flushMs` at most. The round's start is also the probe: when its PUBLISH reached no subscriber,
 * the round's text, its tools' starts and its commits are not published, only a commit that ends
 * the turn (a reader that joins later takes no ephemeral event of a list whose start it missed,
 * and reads the journal when the next commit it hears skips seqs).
 * Publishing never fails or delays the turn: each PUBLISH is sent at once and not awaited.
 */
export class LiveProgress {
  private after = 0;
  /** The uncommitted events, in the order the next commit journals them. */
  private list: Provisional[] = [];
  /** How many of `list` went out live. */
  private published = 0;
  /** The round's text: its future event's id and index, what went out, what waits. */
  private text?: { id: string; index: number; sent: number; pending: string };
  private timer?: NodeJS.Timeout;
  private due = 0;
  private lastFlush = 0;
  /** The last PUBLISH reached a subscriber (unknown counts as yes). */
  private listening = true;

  constructor(
    private readonly live: LivePublisher,
    private readonly sessionId: string,
    private readonly turnId: string,
    private readonly flushMs = DEFAULT_DELTA_FLUSH_MS,
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
    if (type === EventType.ProviderRoundStarted) this.flush(true);
    else if (STARTS.has(type) && this.listening) this.schedule(this.flushMs);
  }

  /** Streamed text of the event at `index` (its id fixed by the checkpoints when the text began). */
  delta(id: string, index: number, text: string): void {
    if (!this.text || this.text.id !== id) this.text = { id, index, sent: 0, pending: '' };
    this.text.pending += text;
    if (!this.listening) return;
    // The first chunk goes out at once (time to first token); later ones at most every flushMs.
    if (this.text.sent === 0 || Buffer.byteLength(this.text.pending) >= DELTA_FLUSH_BYTES) this.schedule(0);
    else this.schedule(Math.max(0, this.lastFlush + this.flushMs - Date.now()));
  }

  /** A step committed: its events go out as journaled, and nothing provisional is left. */
  committed(events: readonly CommittedEvent[] | undefined): void {
    clearTimeout(this.timer);
    this.timer = undefined;
    this.list = [];
    this.published = 0;
    this.text = undefined;
    if (!events || events.length === 0) return;
    this.after = events[events.length - 1].seq;
    // While nobody listened at the last probe, only the end goes out: a reader that subscribed since
    // sees the next published commit skip seqs and reads the journal.
    if (this.listening || events.some((e) => ENDS.has(e.type))) this.send(events);
  }

  close(): void {
    clearTimeout(this.timer);
    this.timer = undefined;
  }

  private schedule(ms: number): void {
    const due = Date.now() + ms;
    if (this.timer && this.due <= due) return;
    clearTimeout(this.timer);
    this.due = due;
    this.timer = setTimeout(() => {
      this.timer = undefined;
      this.flush(false);
    }, ms);
  }

  /** Sends what is provisional and not yet out, in order; `probe` sends even when nobody listened. */
  private flush(probe: boolean): void {
    clearTimeout(this.timer);
    this.timer = undefined;
    if (!probe && !this.listening) return;
    const now = new Date().toISOString();
    const out: PublishableEvent[] = [];
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
    if (t && t.pending && t.index === this.list.length) {
      out.push({
        ephemeral: true,
        id: t.id,
        after: this.after,
        index: t.index,
        offset: t.sent,
        type: EventType.TextDelta,
        turnId: this.turnId,
        data: { text: t.pending },
        createdAt: now,
      });
      t.sent += t.pending.length;
      t.pending = '';
    }
    if (out.length === 0) return;
    this.lastFlush = Date.now();
    this.send(out);
  }

  private send(events: readonly PublishableEvent[]): void {
    if (!this.live.publishCounted) {
      void this.live.publish(this.sessionId, events);
      return;
    }
    void this.live.publishCounted(this.sessionId, events).then((receivers) => {
      if (receivers !== undefined) this.listening = receivers > 0;
    });
  }
}
