import { Inject, Injectable } from '@nestjs/common';
import type { FastifyReply } from 'fastify';
import type { Config } from '@switchboard/config';
import { EventType, type LangGraphStreamMode } from '@switchboard/contracts';
import type { LiveWatch } from '@switchboard/live';
import type { Logger } from '@switchboard/observability';
import { CONFIG, LOGGER } from '@switchboard/platform';
import { EVENT_STREAMS, type EventStreams } from '@switchboard/agent-turns';
import { openEventStream } from '../../http/event-stream';
import { interruptOf, runStatusOf, sseEvent, updatesOf, valuesOf } from './mapping';
import { LangGraphSnapshots, type Snapshot } from './snapshots';

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
]);

/**
 * A run as LangGraph's stream (docs/adr/0038): `metadata`, then per the requested modes `values`
 * (the thread's state at the start, after each step and at the end), `updates` (the step's new
 * messages under the `agent` / `tools` node, `__interrupt__` at a pause), `messages` tuples
 * (`messages-tuple`: each text delta as an AIMessageChunk, each new tool message) or
 * `messages/partial` / `messages/complete` (`messages`), then `end` with the run's status; a failed
 * run sends `error` first. The turn's events come through the gateway's one event-stream seam (the
 * same journal-then-live iteration as streamed chat completions, ADR 0015/0016). The stream ends
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
    const gone = new AbortController();
    const onClose = () => gone.abort();
    reply.raw.once('close', onClose);
    openEventStream(reply);
    const write = (event: string, data: unknown) => {
      if (!reply.raw.destroyed && !reply.raw.writableEnded) reply.raw.write(sseEvent(event, data));
    };
    const { modes } = o;
    const tupleMeta = (node: string) => ({
      run_id: o.turnId,
      thread_id: o.sessionId,
      langgraph_node: node,
      tags: [],
    });
    const known = new Set<string>();
    /** Reads the state; emits `values` and the new messages as `updates` / message events. */
    const step = async (final: boolean): Promise<Snapshot> => {
      const snap = await this.snapshots.read(o.sessionId);
      const fresh = snap.messages.filter((m) => !known.has(m.id));
      for (const m of fresh) known.add(m.id);
      if (modes.has('updates')) {
        for (const u of updatesOf(fresh.filter((m) => m.type !== 'human'))) write('updates', u);
        if (final && snap.pending.length > 0) {
          write('updates', { __interrupt__: snap.pending.map(interruptOf) });
        }
      }
      if (modes.has('messages-tuple')) {
        for (const m of fresh.filter((x) => x.type === 'tool')) write('messages', [m, tupleMeta('tools')]);
      }
      if (modes.has('messages')) {
        for (const m of fresh.filter((x) => x.type === 'ai' || x.type === 'tool'))
          write('messages/complete', [m]);
      }
      if (modes.has('values') && (fresh.length > 0 || final))
        write('values', valuesOf(snap.messages, snap.pending));
      return snap;
    };
    try {
      write('metadata', { run_id: o.turnId, thread_id: o.sessionId, attempt: 1 });
      // The state the run starts from (its human message included: admission committed it). A new
      // run's own answers, should the worker be quicker than this read, are its steps, not its start.
      const read = await this.snapshots.read(o.sessionId);
      const ownLater = (m: { id: string; type: string }) =>
        o.after === 0 && read.turnOf.get(m.id) === o.turnId && m.type !== 'human';
      const start = { ...read, messages: read.messages.filter((m) => !ownLater(m)) };
      for (const m of start.messages) known.add(m.id);
      if (modes.has('values'))
        write(
          'values',
          valuesOf(
            start.messages,
            start.pending.filter((a) => a.turnId !== o.turnId),
          ),
        );

      let round = -1;
      let text = '';
      const messageId = () => `run-${o.turnId}-${round}`;
      let paused = false;
      for await (const item of this.streams.events({
        sessionId: o.sessionId,
        turnId: o.turnId,
        after: o.after,
        signal: gone.signal,
        idleMs: this.config.SSE_HEARTBEAT_MS,
        watch,
      })) {
        if (item.kind === 'idle') {
          if (!reply.raw.destroyed && !reply.raw.writableEnded) reply.raw.write(': heartbeat\n\n');
          continue;
        }
        const e = item.event;
        if (e.type === EventType.ProviderRoundStarted) {
          const n = typeof e.data.round === 'number' ? e.data.round : round + 1;
          if (n > round) {
            round = n;
            text = '';
            if (modes.has('messages')) {
              write('messages/metadata', { [messageId()]: { metadata: tupleMeta('agent') } });
            }
          }
        } else if (e.type === EventType.TextDelta && (item.kind === 'live' || !item.streamed)) {
          const delta = typeof e.data.text === 'string' ? e.data.text : '';
          if (delta === '') continue;
          text += delta;
          const chunk = {
            type: 'AIMessageChunk',
            id: messageId(),
            content: delta,
            tool_calls: [],
            tool_call_chunks: [],
            invalid_tool_calls: [],
            additional_kwargs: {},
            response_metadata: {},
          };
          if (modes.has('messages-tuple')) write('messages', [chunk, tupleMeta('agent')]);
          if (modes.has('messages')) write('messages/partial', [{ ...chunk, type: 'ai', content: text }]);
        } else if (item.kind === 'journaled' && STEP_EVENTS.has(e.type)) {
          if (e.type === EventType.ApprovalRequested) {
            const status = await this.snapshots.turnStatus(o.tenantId, o.turnId);
            if (status === 'awaiting_approval') {
              paused = true;
              break;
            }
          }
          await step(false);
        }
      }
      if (gone.signal.aborted) return 'left';
      const status = await this.snapshots.turnStatus(o.tenantId, o.turnId);
      if (!paused && (status === undefined || !['completed', 'failed', 'cancelled'].includes(status))) {
        write('error', {
          error: 'server_shutting_down',
          message: `the gateway is shutting down; run ${o.turnId} goes on: join it again`,
        });
        return 'done';
      }
      await step(true);
      if (status === 'failed') {
        write('error', {
          error: 'turn_failed',
          message: await this.snapshots.failureOf(o.tenantId, o.turnId),
        });
      }
      write('end', { run_id: o.turnId, status: runStatusOf(status ?? 'failed') });
      return 'done';
    } catch (err) {
      this.logger.error({ err, turnId: o.turnId }, 'langgraph run stream failed');
      write('error', { error: 'internal', message: 'internal error while streaming' });
      return 'done';
    } finally {
      reply.raw.off('close', onClose);
      if (!reply.raw.writableEnded) reply.raw.end();
    }
  }
}
