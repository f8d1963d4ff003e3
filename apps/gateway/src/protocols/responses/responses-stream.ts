import { Inject, Injectable } from '@nestjs/common';
import type { FastifyReply } from 'fastify';
import type { Config } from '@switchboard/config';
import {
  EventType,
  isEnded,
  type ResponseObject,
  type ToolCallResponse,
  type TurnResponse,
} from '@switchboard/contracts';
import type { Db } from '@switchboard/database';
import type { LiveWatch } from '@switchboard/live';
import type { Logger } from '@switchboard/observability';
import { CONFIG, DB, LOGGER } from '@switchboard/platform';
import { journalPage, type SqlDb } from '@switchboard/store';
import { GATEWAY_SQL } from '../../api/streams.controller';
import { AGENT_TURNS, EVENT_STREAMS, type AgentTurns, type EventStreams } from '@switchboard/agent-turns';
import { SseStream } from '../../platform/sse';
import { presentToolCall } from '../../api/presenters';
import {
  ResponseBuilder,
  responseIdOf,
  statusOf,
  type ResponseMeta,
  type ResponseStreamEvent,
} from '@switchboard/protocols';
import { TURN_WAITER, type TurnWaiter } from '@switchboard/agent-turns';

/** Where a response's events go: an SSE stream or a WebSocket (WebSocket mode). */
export interface ResponseEventSink {
  /** Aborts when the client left. */
  signal: AbortSignal;
  write(e: ResponseStreamEvent): void;
  /** Nothing happened for SSE_HEARTBEAT_MS. */
  idle(): void;
  /** Resolves when the client has taken what was written (back-pressure). */
  drained(): Promise<void>;
}

/** Journal rows per read when a response is rebuilt from its turn's events. */
const PAGE = 500;

/** One semantic event as an SSE frame (`event:` its type, `data:` the event). */
export const responseFrame = (e: ResponseStreamEvent): string =>
  `event: ${e.type}\ndata: ${JSON.stringify(e)}\n\n`;

/**
 * The Responses adapter's I/O over the gateway's seams (docs/adr/0035): a response is rebuilt from
 * its turn's journal (the same builder a stream uses, so a retrieved response and a streamed one
 * agree), and a stream is the turn's events through `EventStreams` (journal, then live: ADR 0015)
 * turned into the semantic events. `POST /v1/responses` with `stream: true` and
 * `GET /v1/responses/{id}?stream=true` are the same stream; `starting_after` resumes it.
 */
@Injectable()
export class ResponsesStreamer {
  constructor(
    @Inject(EVENT_STREAMS) private readonly streams: EventStreams,
    @Inject(TURN_WAITER) private readonly waiter: TurnWaiter,
    @Inject(GATEWAY_SQL) private readonly sql: SqlDb,
    @Inject(DB) private readonly db: Db,
    @Inject(CONFIG) private readonly config: Config,
    @Inject(LOGGER) private readonly logger: Logger,
    @Inject(AGENT_TURNS) private readonly turns: AgentTurns,
  ) {}

  /** The response of a turn as it stands: its journal so far through the builder. */
  async present(tenantId: string, meta: ResponseMeta, turn: TurnResponse): Promise<ResponseObject> {
    const builder = new ResponseBuilder(meta);
    let after = meta.after ?? 0;
    for (;;) {
      const { events } = await journalPage(this.sql, {
        sessionId: meta.sessionId,
        after,
        turnId: meta.turnId,
        limit: PAGE,
      });
      for (const e of events) builder.event(e);
      if (events.length < PAGE) break;
      after = events[events.length - 1].seq;
    }
    if (isEnded(turn.status)) return builder.finish(turn);
    if (turn.status === 'awaiting_client_tool')
      return builder.waiting(turn, await this.pendingCalls(tenantId, turn.id));
    return builder.snapshot(statusOf(turn), turn);
  }

  /** The client tool calls a waiting turn hands out (docs/adr/0047). */
  private async pendingCalls(tenantId: string, turnId: string) {
    return (await this.turns.clientToolCalls(tenantId, turnId)).filter((c) => c.status === 'pending');
  }

  /**
   * The response as Server-Sent Events, from the first event (or after `startingAfter`) until the
   * turn ends, the client leaves, or the gateway shuts down (an `error` event `server_shutting_down`).
   * Not bounded by WAIT_TIMEOUT_MS; a comment line every SSE_HEARTBEAT_MS keeps it alive.
   */
  async stream(
    reply: FastifyReply,
    o: { tenantId: string; meta: ResponseMeta; startingAfter?: number; watch?: LiveWatch },
  ): Promise<void> {
    const sse = SseStream.open(reply, { shutdown: this.streams.shutdown });
    try {
      await this.follow(
        {
          signal: sse.signal,
          write: (e) => sse.write(responseFrame(e)),
          idle: () => sse.comment('keepalive'),
          drained: () => sse.drained(),
        },
        o,
      );
    } finally {
      sse.close();
    }
  }

  /**
   * The semantic events of a response, written to `sink` (an SSE stream, or a WebSocket in WebSocket
   * mode) until the turn ends, `sink.signal` aborts, or the gateway shuts down. Returns the terminal
   * response, or undefined when it did not end here.
   */
  async follow(
    sink: ResponseEventSink,
    o: { tenantId: string; meta: ResponseMeta; startingAfter?: number; watch?: LiveWatch },
  ): Promise<ResponseObject | undefined> {
    const { meta } = o;
    const builder = new ResponseBuilder(meta, o.startingAfter ?? -1);
    const flush = () => {
      for (const e of builder.take()) sink.write(e);
    };
    try {
      builder.start();
      flush();
      for await (const item of this.streams.events({
        sessionId: meta.sessionId,
        turnId: meta.turnId,
        after: meta.after ?? 0,
        signal: sink.signal,
        idleMs: this.config.SSE_HEARTBEAT_MS,
        watch: o.watch,
      })) {
        await sink.drained();
        if (item.kind === 'idle') {
          sink.idle();
          continue;
        }
        const e = item.event;
        // The turn waits for the client's tools (docs/adr/0047): hand them out; the response completes.
        if (e.type === EventType.ClientToolRequested && item.kind !== 'live') {
          const turn = await this.waiter.ended(o.tenantId, meta.turnId, { paused: false, clientTool: true });
          if (turn?.status === 'awaiting_client_tool') {
            const response = builder.waiting(turn, await this.pendingCalls(o.tenantId, meta.turnId));
            flush();
            return response;
          }
          continue;
        }
        // A committed text whose live chunks went out already is skipped (its missing tail came live).
        if (e.type === EventType.TextDelta && item.kind === 'journaled' && item.streamed) continue;
        if (e.type === EventType.ToolCallCompleted) {
          const callId = String(e.data.callId);
          const call = await this.toolCall(meta.turnId, callId, e.data.ok !== false);
          builder.event(e, () => call);
        } else {
          builder.event(e);
        }
        flush();
      }
      if (sink.signal.aborted) return undefined;
      const turn = await this.waiter.ended(o.tenantId, meta.turnId);
      if (!turn) {
        builder.error(
          'server_shutting_down',
          `the gateway is shutting down; the response goes on: GET /v1/responses/${responseIdOf(meta.turnId)} for it`,
        );
        flush();
        return undefined;
      }
      const response = builder.finish(turn);
      flush();
      return response;
    } catch (err) {
      this.logger.error({ err, turnId: meta.turnId }, 'responses stream failed');
      builder.error('internal', 'internal error while streaming');
      flush();
      return undefined;
    }
  }

  /**
   * A tool call of the turn as recorded (its arguments and result). Its completion is journaled
   * before its row is final: a row not ended yet gives the arguments, the event the outcome.
   */
  private async toolCall(turnId: string, callId: string, ok: boolean): Promise<ToolCallResponse | undefined> {
    const row = await this.db.toolCall.findFirst({ where: { turnId, callId } });
    if (!row) return undefined;
    const call = presentToolCall(row);
    if (call.status === 'completed' || call.status === 'failed') return call;
    return { ...call, status: ok ? 'completed' : 'failed' };
  }
}
