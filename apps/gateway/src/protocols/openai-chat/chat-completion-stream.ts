import { Inject, Injectable } from '@nestjs/common';
import type { FastifyReply } from 'fastify';
import type { Config } from '@switchboard/config';
import { EventType } from '@switchboard/contracts';
import type { LiveWatch } from '@switchboard/live';
import type { Logger } from '@switchboard/observability';
import { CONFIG, LOGGER } from '@switchboard/platform';
import {
  ChunkWriter,
  endedTurnError,
  finishReason,
  OpenAiError,
  RoundText,
  sseData,
  sseError,
  usageOf,
} from '@switchboard/protocols';
import {
  AGENT_TURNS,
  EVENT_STREAMS,
  TURN_WAITER,
  type AgentTurns,
  type EventStreams,
  type TurnWaiter,
} from '@switchboard/agent-turns';
import { SseStream } from '../../platform/sse';

export interface StreamOptions {
  tenantId: string;
  sessionId: string;
  turnId: string;
  model: string;
  includeUsage: boolean;
  /**
   * Send only the final answer, in one chunk when the turn ends: a structured answer (docs/adr/0048)
   * is validated first, and a rejected one, or a tool round's text, must not reach the client's parser.
   */
  finalOnly?: boolean;
  /** Journal seq already seen: a resumed turn (docs/adr/0047) streams only what its new run adds. */
  after?: number;
}

/**
 * `stream: true`: the turn as `chat.completion.chunk` SSE frames (docs/adr/0016). The first chunk
 * carries the assistant role; text deltas follow as the provider streams them (the turn's events
 * through the gateway's event-stream seam: live `text_delta`s, or a round's committed text when its
 * live chunks were not seen); when the turn ends, whatever of its final answer was not streamed
 * (a resumed turn streams nothing) is sent as one chunk, then the
 * finish_reason chunk, the usage chunk when asked for, and `data: [DONE]`. A turn that fails ends
 * the stream with OpenAI's streaming error, a `data:` frame holding `{error}` (the openai SDK throws
 * it as an APIError), and no [DONE].
 *
 * The stream is not bounded by WAIT_TIMEOUT_MS (text keeps flowing; a comment line every
 * SSE_HEARTBEAT_MS keeps it alive); it ends when the turn does, when the client leaves, or when the
 * gateway shuts down (an error frame `server_shutting_down`).
 */
@Injectable()
export class ChatCompletionStreamer {
  constructor(
    @Inject(EVENT_STREAMS) private readonly streams: EventStreams,
    @Inject(TURN_WAITER) private readonly waiter: TurnWaiter,
    @Inject(CONFIG) private readonly config: Config,
    @Inject(LOGGER) private readonly logger: Logger,
    @Inject(AGENT_TURNS) private readonly turns: AgentTurns,
  ) {}

  async stream(reply: FastifyReply, watch: LiveWatch, o: StreamOptions): Promise<void> {
    // From here on the route writes the response itself; errors become frames.
    const sse = SseStream.open(reply, { shutdown: this.streams.shutdown });
    const write = (frame: string) => sse.write(frame);
    const chunks = new ChunkWriter(o);
    const text = new RoundText((delta) => write(sseData(chunks.text(delta))));
    try {
      write(sseData(chunks.role()));
      // The turn's events, journal then live (the seam of docs/adr/0015); it ends after the turn's
      // terminal event, or when the client leaves or the gateway shuts down.
      for await (const item of this.streams.events({
        sessionId: o.sessionId,
        turnId: o.turnId,
        after: o.after ?? 0,
        signal: sse.signal,
        idleMs: this.config.SSE_HEARTBEAT_MS,
        watch,
      })) {
        await sse.drained();
        if (item.kind === 'idle') {
          sse.comment('keepalive');
          continue;
        }
        const e = item.event;
        // The turn waits for the client's tools (docs/adr/0047): hand them out and end the stream.
        if (e.type === EventType.ClientToolRequested && item.kind !== 'live') {
          if (await this.handOut(o, chunks, text, write)) return;
          continue;
        }
        if (e.type === EventType.ProviderRoundStarted)
          text.round(typeof e.data.round === 'number' ? e.data.round : 0);
        // A committed text whose live chunks went out already is skipped (its missing tail came live).
        else if (e.type === EventType.TextDelta && !o.finalOnly && (item.kind === 'live' || !item.streamed)) {
          text.add(typeof e.data.text === 'string' ? e.data.text : '');
        }
      }
      if (sse.signal.aborted) return;
      const turn = await this.waiter.ended(o.tenantId, o.turnId);
      if (!turn) {
        write(
          sseError(
            new OpenAiError(
              503,
              'server_shutting_down',
              `the gateway is shutting down; turn ${o.turnId} goes on: GET /v1/turns/${o.turnId} for its answer`,
            ),
          ),
        );
        return;
      }
      const failed = endedTurnError(turn);
      if (failed) {
        write(sseError(failed));
        return;
      }
      text.complete(turn.finalText ?? '');
      write(sseData(chunks.finish(finishReason(turn.stopReason))));
      if (o.includeUsage) write(sseData(chunks.usage(usageOf(turn))));
      write('data: [DONE]\n\n');
    } catch (err) {
      this.logger.error({ err, turnId: o.turnId }, 'chat completion stream failed');
      write(sseError(new OpenAiError(500, 'internal', 'internal error while streaming')));
    } finally {
      sse.close();
    }
  }

  /**
   * When the turn waits for the client's tools: the calls as tool_call deltas, `finish_reason:
   * "tool_calls"`, usage when asked, [DONE]; true then. False when it no longer waits (answered meanwhile).
   */
  private async handOut(
    o: StreamOptions,
    chunks: ChunkWriter,
    text: RoundText,
    write: (frame: string) => void,
  ): Promise<boolean> {
    const turn = await this.waiter.ended(o.tenantId, o.turnId, { paused: false, clientTool: true });
    if (turn?.status !== 'awaiting_client_tool') return false;
    const calls = (await this.turns.clientToolCalls(o.tenantId, o.turnId)).filter(
      (c) => c.status === 'pending',
    );
    text.complete(turn.finalText ?? '');
    for (const chunk of chunks.toolCalls(calls)) write(sseData(chunk));
    write(sseData(chunks.finish('tool_calls')));
    if (o.includeUsage) write(sseData(chunks.usage(usageOf(turn))));
    write('data: [DONE]\n\n');
    return true;
  }
}
