import { Inject, Injectable } from '@nestjs/common';
import type { FastifyReply } from 'fastify';
import { isEphemeral, TERMINAL_EVENT_TYPES, type LiveMessage, type LiveWatch } from '@switchboard/live';
import type { Logger } from '@switchboard/observability';
import { LOGGER } from '@switchboard/platform';
import {
  ChunkWriter,
  endedTurnError,
  finishReason,
  OpenAiError,
  sseData,
  sseError,
  usageOf,
} from './chat-completions';
import { TURN_WAITER, type TurnWaiter } from './turn-waiter';

/** A comment line every so often keeps proxies from closing a quiet stream (and re-reads Postgres). */
const KEEPALIVE_MS = 15_000;

export interface StreamOptions {
  tenantId: string;
  sessionId: string;
  turnId: string;
  model: string;
  includeUsage: boolean;
  /** The channel was subscribed before the turn was admitted: nothing can have been missed. */
  subscribedBeforeAdmission: boolean;
}

/**
 * `stream: true`: the turn as `chat.completion.chunk` SSE frames (docs/adr/0016). The first chunk
 * carries the assistant role; text deltas follow as the provider streams them (ephemeral live
 * `text_delta` events of the turn); when the turn ends, whatever of its final answer was not streamed
 * (a resumed turn streams nothing; a resync may lose deltas) is sent as one chunk, then the
 * finish_reason chunk, the usage chunk when asked for, and `data: [DONE]`. A turn that fails ends
 * the stream with OpenAI's streaming error, a `data:` frame holding `{error}` (the openai SDK throws
 * it as an APIError), and no [DONE].
 *
 * The stream is not bounded by WAIT_TIMEOUT_MS (text keeps flowing); it ends when the turn does,
 * when the client leaves, or when the gateway shuts down (an error frame `server_shutting_down`).
 */
@Injectable()
export class ChatCompletionStreamer {
  constructor(
    @Inject(TURN_WAITER) private readonly waiter: TurnWaiter,
    @Inject(LOGGER) private readonly logger: Logger,
  ) {}

  async stream(reply: FastifyReply, watch: LiveWatch, o: StreamOptions): Promise<void> {
    const gone = new AbortController();
    const onClose = () => gone.abort();
    reply.raw.once('close', onClose);
    const signal = AbortSignal.any([gone.signal, this.waiter.shutdown]);
    // From here on the route writes the response itself; errors become frames.
    reply.hijack();
    reply.raw.writeHead(200, {
      ...(reply.getHeaders() as Record<string, string>),
      'content-type': 'text/event-stream; charset=utf-8',
      'cache-control': 'no-cache',
      connection: 'keep-alive',
      'x-accel-buffering': 'no',
    });
    const write = (frame: string) => {
      if (!reply.raw.destroyed && !reply.raw.writableEnded) reply.raw.write(frame);
    };
    const chunks = new ChunkWriter(o);
    try {
      write(sseData(chunks.role()));
      const followed = await this.follow(watch, o, signal, {
        delta: (delta) => write(sseData(chunks.text(delta))),
        idle: () => write(': keepalive\n\n'),
      });
      if (gone.signal.aborted) return;
      if (followed === 'stopped') {
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
      const { turn, streamed, earlier } = followed;
      const failed = endedTurnError(turn);
      if (failed) {
        write(sseError(failed));
        return;
      }
      const final = turn.finalText ?? '';
      // What of the final answer the deltas did not carry: all of it, or the tail a resync lost.
      if (final.startsWith(streamed) && final.length > streamed.length) {
        const separator = streamed === '' && earlier ? '\n\n' : '';
        write(sseData(chunks.text(separator + final.slice(streamed.length))));
      }
      write(sseData(chunks.finish(finishReason(turn.stopReason))));
      if (o.includeUsage) write(sseData(chunks.usage(usageOf(turn))));
      write('data: [DONE]\n\n');
    } catch (err) {
      this.logger.error({ err, turnId: o.turnId }, 'chat completion stream failed');
      write(sseError(new OpenAiError(500, 'internal', 'internal error while streaming')));
    } finally {
      reply.raw.off('close', onClose);
      if (!reply.raw.writableEnded) reply.raw.end();
    }
  }

  /**
   * Follows the session's live channel until the turn has ended, handing on the turn's text deltas.
   * Returns the ended turn with the text streamed in its last round (and whether an earlier round
   * streamed text), or `stopped` when the client left or the gateway is shutting down.
   */
  private async follow(
    watch: LiveWatch,
    o: StreamOptions,
    signal: AbortSignal,
    on: { delta: (text: string) => void; idle: () => void },
  ) {
    const round = { n: -1, text: '' };
    let earlier = false;
    const ended = async () => this.waiter.ended(o.tenantId, o.turnId);
    // Without a subscription (Redis away) the loop still reads Postgres at every keepalive.
    const subscribed = await watch.subscribed(Date.now() + KEEPALIVE_MS, signal);
    if (signal.aborted) return 'stopped' as const;
    let read = !subscribed || !o.subscribedBeforeAdmission;
    for (;;) {
      if (read) {
        const turn = await ended();
        if (turn) return { turn, streamed: round.text, earlier };
      }
      const next = await watch.next(Date.now() + KEEPALIVE_MS, signal);
      if (next === 'aborted') return 'stopped' as const;
      if (next === 'timeout' || next === 'resync') {
        if (next === 'timeout') on.idle();
        // A quiet channel or a dropped subscription: Postgres says whether the turn ended meanwhile.
        read = true;
        continue;
      }
      read = false;
      for (const e of next) {
        if (e.turnId !== o.turnId) continue;
        if (e.type === 'provider_round_started') {
          const n = roundOf(e);
          if (n > round.n) {
            // Rounds after one that said something are set apart.
            if (round.text !== '') earlier = true;
            round.n = n;
            round.text = '';
          }
        } else if (e.type === 'text_delta' && isEphemeral(e)) {
          const delta = typeof e.data.text === 'string' ? e.data.text : '';
          if (delta === '') continue;
          if (round.text === '' && earlier) on.delta('\n\n');
          round.text += delta;
          on.delta(delta);
        } else if (!isEphemeral(e) && TERMINAL_EVENT_TYPES.has(e.type)) {
          read = true;
        }
      }
    }
  }
}

const roundOf = (e: LiveMessage): number => (typeof e.data.round === 'number' ? e.data.round : 0);
