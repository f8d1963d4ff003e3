/**
 * A session's SSE stream (GET /v1/sessions/:id/stream, docs/adr/0015) folded into what the session
 * page shows: each turn's status and text, the journaled rounds' text plus the text streaming now.
 *
 * Frames come in two kinds:
 * - journaled: `id: <seq>` (the per-session journal seq, contiguous), the event as the journal has it;
 *   `streamed: true` when its content already went out live on this connection;
 * - live: no id, `{ephemeral: true, after, type, turnId, data}`; for text a chunk of the open round
 *   (`data.text`), `after` = the last seq the turn committed before it (0 before its first commit).
 *
 * The rules (ADR 0015's client rule, made safe against frames a reconnect or a bug repeats):
 * - a journaled frame at or below the last seq is a copy and dropped; one that skips seqs is not
 *   applied and asks the caller to reconnect from the last seq (the journal replays what is missing);
 * - live text is provisional: appended to the turn's open round as it comes;
 * - a journaled `text_delta` is the round's whole text: it replaces the provisional text, whether it
 *   was streamed (the live chunks and the tail the gateway sent before it add up to it) or not (the
 *   round re-sent whole, e.g. after this reader missed chunks) — so no text is shown twice;
 * - a live text chunk whose `after` is below the turn's last journaled text is a stale copy of a
 *   round already committed, and dropped;
 * - a live round start (`turn_started`, `provider_round_started`) drops the provisional text: on one
 *   connection a round's start comes before its text, so text still provisional then is from an
 *   attempt that will not commit (the turn re-run by another worker after its worker died);
 * - on reconnect the provisional text is dropped and the stream resumes after the last journaled seq:
 *   the open round comes again from its start (live, or whole at its commit), the rest from the journal.
 *
 * Pure (no I/O, no DOM): the page feeds frames in and renders `turns()`; Jest tests it.
 */

/** One SSE frame as libs/client's `streamSession` yields it. */
export interface Frame {
  id?: string;
  event?: string;
  data: unknown;
}

export type TurnStatus =
  | 'queued'
  | 'running'
  | 'awaiting_approval'
  | 'awaiting_subagent'
  | 'awaiting_client_tool'
  | 'completed'
  | 'failed'
  | 'cancelled';

const ENDED: ReadonlySet<string> = new Set(['completed', 'failed', 'cancelled']);
const TERMINAL_EVENT: Record<string, TurnStatus> = {
  turn_completed: 'completed',
  turn_failed: 'failed',
  turn_cancelled: 'cancelled',
};

export function isEnded(status: TurnStatus): boolean {
  return ENDED.has(status);
}

/** A turn as the stream shows it. */
export interface StreamTurn {
  turnId: string;
  status: TurnStatus;
  /** Text of its committed rounds, in order. */
  rounds: string[];
  /** Text of the open round streamed so far (not committed yet). */
  provisional: string;
  /** The tool running now (a live or journaled `tool_call_started` not completed yet). */
  runningTool: string | null;
  /** The stop reason of its terminal event. */
  stopReason: string | null;
  /** Seq of its last journaled text_delta: a live chunk from before it is stale. */
  textSeq: number;
  /** Seq of its first journaled event (order of turns). */
  firstSeq: number;
}

/** What applying a frame did. */
export type Applied =
  | 'applied'
  /** A copy (seq already seen), a stale live chunk, a heartbeat or a frame not understood. */
  | 'ignored'
  /** A journaled frame skipped seqs: reconnect with `after` = lastSeq. */
  | 'gap';

/** Turns kept: a long session's stream must not grow memory without bound (the transcript has the rest). */
const MAX_TURNS = 50;

export class SessionStream {
  private last: number;
  private readonly byId = new Map<string, StreamTurn>();
  /** Bumped by every journaled frame that changes the transcript (the page refetches it). */
  transcriptVersion = 0;

  constructor(after = 0) {
    this.last = after;
  }

  /** The last journaled seq received: a reconnect resumes after it. */
  get lastSeq(): number {
    return this.last;
  }

  /**
   * The connection dropped: forget the provisional text (what is past the last journaled seq comes
   * again) and resume after the last seq.
   */
  reconnect(): number {
    for (const t of this.byId.values()) {
      t.provisional = '';
      if (!isEnded(t.status)) t.runningTool = null;
    }
    return this.last;
  }

  apply(frame: Frame): Applied {
    const data = record(frame.data);
    if (!data) return 'ignored';
    if (frame.id !== undefined) return this.journaled(Number(frame.id), data);
    if (data.ephemeral === true) return this.live(data);
    return 'ignored';
  }

  /** Turns in journal order (oldest first). */
  turns(): StreamTurn[] {
    return [...this.byId.values()].sort((a, b) => a.firstSeq - b.firstSeq);
  }

  turn(turnId: string): StreamTurn | undefined {
    return this.byId.get(turnId);
  }

  /** The newest turn that has not ended, else the newest. */
  current(): StreamTurn | undefined {
    const all = this.turns();
    return all.filter((t) => !isEnded(t.status)).pop() ?? all.pop();
  }

  private journaled(seq: number, e: Record<string, unknown>): Applied {
    if (!Number.isSafeInteger(seq) || seq <= this.last) return 'ignored';
    if (seq > this.last + 1) return 'gap';
    this.last = seq;
    const type = typeof e.type === 'string' ? e.type : undefined;
    const turnId = typeof e.turnId === 'string' ? e.turnId : null;
    const data = record(e.data) ?? {};
    if (type === 'message_admitted') this.transcriptVersion++;
    if (!type || !turnId) return 'applied';
    const t = this.ensure(turnId, seq);
    switch (type) {
      case 'message_admitted':
        break;
      case 'turn_started':
      case 'provider_round_started':
        if (!isEnded(t.status)) t.status = 'running';
        break;
      case 'text_delta': {
        const text = typeof data.text === 'string' ? data.text : '';
        // The round's whole text: it stands for every live chunk of the round (streamed or not).
        t.rounds.push(text);
        t.provisional = '';
        t.textSeq = seq;
        break;
      }
      case 'tool_call_started':
        t.runningTool = typeof data.name === 'string' ? data.name : 'tool';
        break;
      case 'tool_call_completed':
        t.runningTool = null;
        break;
      case 'approval_requested':
        if (!isEnded(t.status)) t.status = 'awaiting_approval';
        this.transcriptVersion++;
        break;
      case 'approval_decided':
        if (!isEnded(t.status)) t.status = 'running';
        break;
      // The client runs the call (docs/adr/0047); a person's approval in the same round outranks it.
      case 'client_tool_requested':
        if (!isEnded(t.status) && t.status !== 'awaiting_approval') t.status = 'awaiting_client_tool';
        break;
      case 'client_tool_answered':
        if (t.status === 'awaiting_client_tool') t.status = 'running';
        break;
      case 'subagent_spawned':
        if (!isEnded(t.status) && data.blocking !== false) t.status = 'awaiting_subagent';
        break;
      case 'subagent_completed':
        if (!isEnded(t.status)) t.status = 'running';
        break;
      default: {
        const ended = TERMINAL_EVENT[type];
        if (ended) {
          t.status = ended;
          t.provisional = '';
          t.runningTool = null;
          t.stopReason = typeof data.stopReason === 'string' ? data.stopReason : null;
          this.transcriptVersion++;
        }
      }
    }
    return 'applied';
  }

  private live(e: Record<string, unknown>): Applied {
    const turnId = typeof e.turnId === 'string' ? e.turnId : null;
    const type = typeof e.type === 'string' ? e.type : undefined;
    const after = typeof e.after === 'number' ? e.after : 0;
    if (!turnId || !type) return 'ignored';
    const known = this.byId.get(turnId);
    if (known && isEnded(known.status)) return 'ignored';
    const data = record(e.data) ?? {};
    if (type === 'text_delta') {
      if (typeof data.text !== 'string') return 'ignored';
      // Its round committed since (this reader has the journaled text): a stale copy.
      if (known && after < known.textSeq) return 'ignored';
      const t = known ?? this.ensure(turnId, this.last + 0.5);
      t.provisional += data.text;
      if (t.status === 'queued') t.status = 'running';
      return 'applied';
    }
    const t = known ?? this.ensure(turnId, this.last + 0.5);
    if (type === 'turn_started' || type === 'provider_round_started') {
      if (t.status === 'queued') t.status = 'running';
      // A round starts: text still provisional belongs to an attempt that will never commit (its
      // worker died; the turn runs the round again from its start) — the new round's text replaces it.
      t.provisional = '';
    } else if (type === 'tool_call_started') {
      t.runningTool = typeof data.name === 'string' ? data.name : 'tool';
    }
    return 'applied';
  }

  private ensure(turnId: string, seq: number): StreamTurn {
    let t = this.byId.get(turnId);
    if (!t) {
      t = {
        turnId,
        status: 'queued',
        rounds: [],
        provisional: '',
        runningTool: null,
        stopReason: null,
        textSeq: 0,
        firstSeq: seq,
      };
      this.byId.set(turnId, t);
      this.trim();
    }
    return t;
  }

  /** Forget the oldest ended turns past MAX_TURNS. */
  private trim(): void {
    if (this.byId.size <= MAX_TURNS) return;
    for (const t of this.turns()) {
      if (this.byId.size <= MAX_TURNS) break;
      if (isEnded(t.status)) this.byId.delete(t.turnId);
    }
  }
}

/** A turn's text as shown: its committed rounds, then what streams now. */
export function turnText(t: StreamTurn): string {
  return [...t.rounds, t.provisional].filter((s) => s.length > 0).join('\n\n');
}

function record(v: unknown): Record<string, unknown> | undefined {
  return typeof v === 'object' && v !== null && !Array.isArray(v)
    ? (v as Record<string, unknown>)
    : undefined;
}

/** Why `follow` stopped for good (the page shows it), or null while it goes on. */
export type FollowEnd = { status: number; message: string };

export interface FollowOptions {
  /** Opens the stream after a seq (libs/client's `streamSession`); throws `{status}` when refused. */
  open: (after: number, signal: AbortSignal) => AsyncIterable<Frame>;
  signal: AbortSignal;
  /** Something changed: render (the caller throttles). */
  onChange: () => void;
  onState: (state: 'live' | 'reconnecting') => void;
  /** Waits between reconnects (ms), resolving early when `signal` aborts. */
  pause: (ms: number) => Promise<void>;
  maxBackoffMs?: number;
}

/**
 * Follows a session's stream into `stream` until `signal` aborts or the gateway refuses it (a 4xx:
 * returned, so the page can sign out on a 401 or show the error). A dropped connection, a stream the
 * gateway ended (it drains on shutdown) or a journaled frame that skips seqs reconnects after the
 * last journaled seq, with the provisional text dropped (`reconnect`), backing off from 250 ms.
 */
export async function follow(stream: SessionStream, o: FollowOptions): Promise<FollowEnd | null> {
  const maxBackoff = o.maxBackoffMs ?? 5_000;
  let backoff = 250;
  while (!o.signal.aborted) {
    // One controller per connection: a gap ends this connection only (at once, not when the
    // generator's clean-up gets round to cancelling the body).
    const connection = new AbortController();
    const stop = () => connection.abort();
    o.signal.addEventListener('abort', stop);
    try {
      for await (const frame of o.open(stream.lastSeq, connection.signal)) {
        o.onState('live');
        backoff = 250;
        if (stream.apply(frame) === 'gap') break;
        o.onChange();
      }
    } catch (e) {
      const status = (e as { status?: unknown } | null)?.status;
      if (!o.signal.aborted && typeof status === 'number' && status >= 400 && status < 500) {
        return { status, message: e instanceof Error ? e.message : String(e) };
      }
    } finally {
      o.signal.removeEventListener('abort', stop);
      connection.abort();
    }
    if (o.signal.aborted) break;
    stream.reconnect();
    o.onState('reconnecting');
    o.onChange();
    await o.pause(backoff);
    backoff = Math.min(backoff * 2, maxBackoff);
  }
  return null;
}
