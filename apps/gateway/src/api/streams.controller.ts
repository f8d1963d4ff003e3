import {
  applyDecorators,
  Controller,
  createParamDecorator,
  Get,
  Inject,
  Param,
  Query,
  Res,
  type ExecutionContext,
} from '@nestjs/common';
import { ApiHeader, ApiOperation, ApiResponse } from '@nestjs/swagger';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { AppError, EventCursor, notFound, StreamFrameResponse } from '@switchboard/contracts';
import type { Config } from '@switchboard/config';
import type { Logger } from '@switchboard/observability';
import { CONFIG, LOGGER } from '@switchboard/platform';
import { sessionOfTurn, tenantSessionId } from '@switchboard/store';
import { TenantId } from '../platform/auth/guard';
import { StreamQueryDto } from './dto';
import { EVENT_STREAMS, type EventStreams } from '@switchboard/agent-turns';
import { sseFrame } from '../platform/sse-frame';
import { SseStream } from '../platform/sse';
import { ApiErrors, schemaRef, TenantApi } from '../platform/openapi';
import { pathId } from './presenters';
import { GATEWAY_READS, type GatewayReads } from './reads';
import { logRequest } from '../platform/request-log';

export const GATEWAY_SQL = Symbol('GATEWAY_SQL');

/** The `Last-Event-ID` header (an EventSource sends it when it reconnects), validated; undefined when absent. */
const LastEventId = createParamDecorator((_: unknown, ctx: ExecutionContext): number | undefined => {
  const raw = ctx.switchToHttp().getRequest<FastifyRequest>().headers['last-event-id'];
  // An EventSource sends none until it has seen an id; an empty one says the same.
  if (raw === undefined || raw === '') return undefined;
  const parsed = EventCursor.safeParse(typeof raw === 'string' ? raw.trim() : undefined);
  if (!parsed.success)
    throw new AppError('bad_request', 'Last-Event-ID must be a journal seq (a non-negative integer)');
  return parsed.data;
});

const STREAM_DESCRIPTION =
  'Server-Sent Events (text/event-stream). A journaled event is a frame with `id: <seq>`, ' +
  '`event: <type>` and `data: <Event>` (`"streamed": true` when its content already went out ' +
  'live on this stream); an event not committed yet — a round or tool start, text as the provider ' +
  'streams it — is a frame without id whose data has `"ephemeral": true`. Reconnecting with ' +
  '`Last-Event-ID` (or `?after=<seq>`) resumes after that seq with nothing missed. A comment line ' +
  'is sent every SSE_HEARTBEAT_MS while quiet.';

/** OpenAPI for a stream route: its frames' schema under text/event-stream, Last-Event-ID, its errors. */
const StreamDocs = (id: string, summary: string, description: string, ends: string) =>
  applyDecorators(
    ApiOperation({ operationId: id, summary, description }),
    ApiHeader({
      name: 'Last-Event-ID',
      required: false,
      description: 'The last journal seq received: the stream resumes after it (wins over `after`).',
      schema: { type: 'string', pattern: '^\\d{1,10}$' },
    }),
    ApiResponse({
      status: 200,
      description: `${STREAM_DESCRIPTION} ${ends}`,
      content: { 'text/event-stream': { schema: schemaRef(StreamFrameResponse) } },
    }),
    ApiErrors(400, 404),
  );

/**
 * The SSE streams of SPEC §3/§6 (docs/adr/0015): a turn's or a session's events, the journal's
 * history first, then live, through the gateway's one event-stream seam (`EventStreams`).
 */
@TenantApi('streams')
@Controller('v1')
export class StreamsController {
  constructor(
    @Inject(EVENT_STREAMS) private readonly streams: EventStreams,
    @Inject(GATEWAY_READS) private readonly reads: GatewayReads,
    @Inject(CONFIG) private readonly config: Config,
    @Inject(LOGGER) private readonly logger: Logger,
  ) {}

  /** A turn's events; the stream ends after its terminal event (at once, after its history, if it had ended). */
  @Get('turns/:id/stream')
  @StreamDocs(
    'streamTurn',
    "A turn's events (SSE)",
    "The turn's journaled events from the start (or after `Last-Event-ID` / `after`), then live as it runs, " +
      'with the text as the provider streams it; the stream ends after its terminal event, at once for a turn ' +
      'that had ended. Reconnecting with the last seq resumes with nothing missed; 404 for an unknown turn.',
    "Ends after the turn's terminal event.",
  )
  async turn(
    @TenantId() tenantId: string,
    @Param('id') id: string,
    @Query() q: StreamQueryDto,
    @LastEventId() lastEventId: number | undefined,
    @Res() reply: FastifyReply,
  ): Promise<void> {
    const turnId = pathId(id, 'turn');
    const sessionId = await this.reads.read(({ sql }) => sessionOfTurn(sql, tenantId, turnId));
    if (!sessionId) throw notFound('turn');
    await this.serve(reply, { sessionId, turnId: id, after: lastEventId ?? q.after ?? 0 });
  }

  /** A session's events, every turn's; the stream stays open until the client leaves. */
  @Get('sessions/:id/stream')
  @StreamDocs(
    'streamSession',
    "A session's events (SSE)",
    "Every turn's events in the session: the journal from the start (or after `Last-Event-ID` / `after`), then " +
      'live, staying open until the client leaves (or the gateway drains). Reconnecting with the last seq ' +
      'resumes with nothing missed; 404 for an unknown session.',
    'Stays open until the client leaves.',
  )
  async session(
    @TenantId() tenantId: string,
    @Param('id') id: string,
    @Query() q: StreamQueryDto,
    @LastEventId() lastEventId: number | undefined,
    @Res() reply: FastifyReply,
  ): Promise<void> {
    const wanted = pathId(id, 'session');
    const sessionId = await this.reads.read(({ sql }) => tenantSessionId(sql, tenantId, wanted));
    if (!sessionId) throw notFound('session');
    await this.serve(reply, { sessionId, after: lastEventId ?? q.after ?? 0 });
  }

  /**
   * Writes the stream on the raw response (hijacked from Fastify: it is long-lived). It ends when
   * the events do, when the client leaves (which releases the live subscription), or when the
   * gateway begins to shut down.
   */
  private async serve(reply: FastifyReply, o: { sessionId: string; turnId?: string; after: number }) {
    const sse = SseStream.open(reply, { shutdown: this.streams.shutdown });
    // A first comment line gets the headers out at once.
    sse.comment('stream');
    let frames = 0;
    try {
      for await (const item of this.streams.events({
        ...o,
        signal: sse.signal,
        idleMs: this.config.SSE_HEARTBEAT_MS,
      })) {
        if (!sse.writable) break;
        if (item.kind !== 'idle') frames++;
        // A slow client: wait for its socket to drain rather than buffer without bound. Meanwhile live
        // batches queue in the watch, and past its bound collapse into one journal read.
        sse.write(sseFrame(item));
        await sse.drained();
      }
    } catch (err) {
      // Headers are out: a failure can only end the stream; the client resumes with Last-Event-ID.
      // (The client leaving, or the gateway stopping, while its socket was full is no failure.)
      if (!sse.stopped)
        this.logger.error({ err, sessionId: o.sessionId, turnId: o.turnId }, 'event stream failed');
    } finally {
      sse.close();
      // The request's one log line, when the stream ends (by either side).
      logRequest(reply.request, reply, { frames, clientLeft: sse.signal.aborted });
    }
  }
}
