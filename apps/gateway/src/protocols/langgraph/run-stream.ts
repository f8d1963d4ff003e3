import { Inject, Injectable } from '@nestjs/common';
import type { FastifyReply } from 'fastify';
import type { Config } from '@switchboard/config';
import { EventType, type LangGraphStreamMode } from '@switchboard/contracts';
import type { LiveWatch } from '@switchboard/live';
import type { Logger } from '@switchboard/observability';
import { CONFIG, LOGGER } from '@switchboard/platform';
import {
  EVENT_STREAMS,
  type EventStreams,
  type JournaledItem,
  type LiveItem,
} from '@switchboard/agent-turns';
import { SseStream } from '../../platform/sse';
import {
  checkpointEventOf,
  interruptOf,
  runStatusOf,
  sseEvent,
  stateOf,
  updatesOf,
  valuesOf,
} from '@switchboard/protocols';
import { LangGraphSnapshots } from './snapshots';

export interface RunStreamOptions {
  tenantId: string;
  sessionId: string;
  turnId: string;
  /** Journal seq already behind the run (a resumed run starts after its pause). */
  after: number;
  modes: Set<LangGraphStreamMode>;
}

/** Journaled events after which the thread's state may have changed: values and updates are read again. */
const STEP_EVENTS = new Set<string>([
  EventType.ProviderRoundCompleted,
  EventType.ToolCallCompleted,
  EventType.ApprovalRequested,
  EventType.ClientToolRequested,
]);

/** The turn statuses of a run paused at an interrupt: an approval, or the client's tools (docs/adr/0047). */
const PAUSED = new Set(['awaiting_approval', 'awaiting_client_tool']);

/** The run's states at which the stream ends with `end` (any other: the gateway is stopping). */
const ENDED = new Set(['completed', 'failed', 'cancelled']);

/**
 * A run as LangGraph's stream (docs/adr/0038): `metadata`, then per the requested modes `values`
 * (the thread's state at the start, after each step and at the end), `updates` (the step's new
 * messages under the `agent` / `tools` node, `__interrupt__` at a pause), `messages` tuples
 * (`messages-tuple`: each text delta as an AIMessageChunk, each new tool message) or
 * `messages/partial` / `messages/complete` (`messages`), then `end` with the run's status; a failed
 * run sends `error` first, `checkpoints` the run's checkpoint (the state at its end) before `end`.
 * The turn's events come through the gateway's one event-stream seam (the same journal-then-live
 * iteration as streamed chat completions, ADR 0015/0016). The stream ends
 * when the turn ends or pauses for approval (LangGraph's interrupt), the client leaves, or the
 * gateway shuts down.
 */
@Injectable()
export class LangGraphRunStreamer {
  constructor(
    @Inject(EVENT_STREAMS) private readonly streams: EventStreams,
    @Inject(LangGraphSnapshots) private readonly snapshots: LangGraphSnapshots,
    @Inject(CONFIG) private readonly config: Config,
    @Inject(LOGGER) private readonly logger: Logger,
  ) {}

  /** Streams the run; `left` when the client went away before it ended. */
  async stream(reply: FastifyReply, watch: LiveWatch, o: RunStreamOptions): Promise<'left' | 'done'> {
    const sse = SseStream.open(reply, { shutdown: this.streams.shutdown });
    const run = new RunFrames(sse, this.snapshots, o);
    try {
      await run.start();
      const { sessionId, turnId, after } = o;
      const idleMs = this.config.SSE_HEARTBEAT_MS;
      let paused = false;
      const events = this.streams.events({ sessionId, turnId, after, signal: sse.signal, idleMs, watch });
      for await (const item of events) {
        await sse.drained();
        if (item.kind === 'idle') sse.comment('heartbeat');
        else paused = await run.event(item);
        if (paused) break;
      }
      if (sse.signal.aborted) return 'left';
      await run.end(paused);
    } catch (err) {
      this.logger.error({ err, turnId: o.turnId }, 'langgraph run stream failed');
      run.write('error', { error: 'internal', message: 'internal error while streaming' });
    } finally {
      sse.close();
    }
    return 'done';
  }
}

/** One run's frames: what it has shown so far (messages, the round and its text) and how to map the next event. */
class RunFrames {
  private readonly known = new Set<string>();
  private round = -1;
  private text = '';

  constructor(
    private readonly sse: SseStream,
    private readonly snapshots: LangGraphSnapshots,
    private readonly o: RunStreamOptions,
  ) {}

  write(event: string, data: unknown): void {
    this.sse.write(sseEvent(event, data));
  }

  private has(mode: LangGraphStreamMode): boolean {
    return this.o.modes.has(mode);
  }

  private tupleMeta(node: string) {
    return { run_id: this.o.turnId, thread_id: this.o.sessionId, langgraph_node: node, tags: [] };
  }

  private get messageId(): string {
    return `run-${this.o.turnId}-${this.round}`;
  }

  /** `metadata`, then the state the run starts from. */
  async start(): Promise<void> {
    const { o } = this;
    this.write('metadata', { run_id: o.turnId, thread_id: o.sessionId, attempt: 1 });
    // The state the run starts from (its human message included: admission committed it). A new
    // run's own answers, should the worker be quicker than this read, are its steps, not its start.
    const read = await this.snapshots.read(o.sessionId);
    const ownLater = (m: { id: string; type: string }) =>
      o.after === 0 && read.turnOf.get(m.id) === o.turnId && m.type !== 'human';
    const messages = read.messages.filter((m) => !ownLater(m));
    for (const m of messages) this.known.add(m.id);
    if (this.has('values')) {
      this.write(
        'values',
        valuesOf(
          messages,
          read.pending.filter((a) => a.turnId !== o.turnId),
        ),
      );
    }
  }

  /** One of the turn's events as frames; true when the run paused at an interrupt (the stream ends). */
  async event(item: JournaledItem | LiveItem): Promise<boolean> {
    const e = item.event;
    if (e.type === EventType.ProviderRoundStarted) {
      this.roundStarted(typeof e.data.round === 'number' ? e.data.round : this.round + 1);
    } else if (e.type === EventType.TextDelta && (item.kind === 'live' || !item.streamed)) {
      this.textDelta(typeof e.data.text === 'string' ? e.data.text : '');
    } else if (item.kind === 'journaled' && STEP_EVENTS.has(e.type)) {
      if (
        (e.type === EventType.ApprovalRequested || e.type === EventType.ClientToolRequested) &&
        PAUSED.has((await this.snapshots.turnStatus(this.o.tenantId, this.o.turnId)) ?? '')
      ) {
        return true;
      }
      await this.step(false);
    }
    return false;
  }

  private roundStarted(n: number): void {
    if (n <= this.round) return;
    this.round = n;
    this.text = '';
    if (this.has('messages')) {
      this.write('messages/metadata', { [this.messageId]: { metadata: this.tupleMeta('agent') } });
    }
  }

  private textDelta(delta: string): void {
    if (delta === '') return;
    this.text += delta;
    const chunk = {
      type: 'AIMessageChunk',
      id: this.messageId,
      content: delta,
      tool_calls: [],
      tool_call_chunks: [],
      invalid_tool_calls: [],
      additional_kwargs: {},
      response_metadata: {},
    };
    if (this.has('messages-tuple')) this.write('messages', [chunk, this.tupleMeta('agent')]);
    if (this.has('messages')) this.write('messages/partial', [{ ...chunk, type: 'ai', content: this.text }]);
  }

  /** Reads the state; emits `values` and the new messages as `updates` / message events. */
  private async step(final: boolean): Promise<void> {
    const snap = await this.snapshots.read(this.o.sessionId);
    const fresh = snap.messages.filter((m) => !this.known.has(m.id));
    for (const m of fresh) this.known.add(m.id);
    if (this.has('updates')) {
      for (const u of updatesOf(fresh.filter((m) => m.type !== 'human'))) this.write('updates', u);
      if (final && snap.pending.length > 0) {
        this.write('updates', { __interrupt__: snap.pending.map(interruptOf) });
      }
    }
    if (this.has('messages-tuple')) {
      for (const m of fresh.filter((x) => x.type === 'tool'))
        this.write('messages', [m, this.tupleMeta('tools')]);
    }
    if (this.has('messages')) {
      for (const m of fresh.filter((x) => x.type === 'ai' || x.type === 'tool'))
        this.write('messages/complete', [m]);
    }
    if (this.has('values') && (fresh.length > 0 || final)) {
      this.write('values', valuesOf(snap.messages, snap.pending));
    }
  }

  /** The run's last frames: the final step, `error` for a failed run, `end`; or the gateway stopping. */
  async end(paused: boolean): Promise<void> {
    const { tenantId, turnId } = this.o;
    const status = await this.snapshots.turnStatus(tenantId, turnId);
    if (!paused && (status === undefined || !ENDED.has(status))) {
      this.write('error', {
        error: 'server_shutting_down',
        message: `the gateway is shutting down; run ${turnId} goes on: join it again`,
      });
      return;
    }
    await this.step(true);
    // `checkpoints`: the run's checkpoints, with the ids `getState` and `getHistory` give them: the
    // state once its input was in, then the state at its end (or pause), whose id is the run's.
    if (this.has('checkpoints')) {
      const [session, snaps] = await Promise.all([
        this.snapshots.session(this.o.sessionId),
        this.snapshots.ofRun(this.o.sessionId, turnId),
      ]);
      for (const snap of session ? snaps : []) {
        this.write('checkpoints', checkpointEventOf(stateOf(session!, snap)));
      }
    }
    if (status === 'failed') {
      this.write('error', {
        error: 'turn_failed',
        message: await this.snapshots.failureOf(tenantId, turnId),
      });
    }
    this.write('end', { run_id: turnId, status: runStatusOf(status ?? 'failed') });
  }
}
