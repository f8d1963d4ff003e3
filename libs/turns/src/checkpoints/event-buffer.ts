import { EventType, newId, type EventData } from '@switchboard/contracts';
import type { JournalEvent } from '@switchboard/database';
import type { LiveProgress } from '../live-progress';

/**
 * A turn's events between checkpoints: buffered until the next checkpoint commits them with the
 * state they report. Streamed text since the last event becomes one coalesced text_delta event, in
 * order. Ids are given as events are buffered, so their live copies (ADR 0015) carry the journal
 * row's id.
 */
export class EventBuffer {
  private pending: JournalEvent[] = [];
  private deltas = '';
  /** The id of the text_delta event the streamed text becomes (its ephemeral chunks carry it). */
  private deltaId = '';

  constructor(
    private readonly turnId: string,
    /** The live channel: starts and streamed text go out as they are buffered. */
    private readonly live?: LiveProgress,
  ) {}

  get size(): number {
    return this.pending.length;
  }

  /** Buffered: committed with the next checkpoint, together with the state it reports. */
  emit<T extends EventType>(type: T, data: EventData<T>): void {
    this.bufferDeltas();
    // The round's start is journaled with the round, and delivered live when the call starts.
    const stamped =
      type === EventType.ProviderRoundStarted ? { ...data, startedAt: new Date().toISOString() } : data;
    this.push({ id: newId(), type, turnId: this.turnId, data: stamped });
  }

  textDelta(delta: string): void {
    if (!this.deltas) this.deltaId = newId();
    this.deltas += delta;
    this.live?.delta(this.deltaId, this.pending.length, delta);
  }

  /** Everything buffered (streamed text as one event), then `extra`, each with an id; the buffer empties. */
  take(extra: JournalEvent[] = []): JournalEvent[] {
    this.bufferDeltas();
    const events = [...this.pending, ...extra].map((e) => ({ ...e, id: e.id ?? newId() }));
    this.pending = [];
    return events;
  }

  private bufferDeltas(): void {
    if (!this.deltas) return;
    this.push({
      id: this.deltaId,
      type: EventType.TextDelta,
      turnId: this.turnId,
      data: { text: this.deltas },
    });
    this.deltas = '';
  }

  private push(e: JournalEvent & { id: string }): void {
    this.pending.push(e);
    this.live?.emitted(e.id, e.type, e.data);
  }
}
