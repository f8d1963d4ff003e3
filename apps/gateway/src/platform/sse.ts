import { once } from 'node:events';
import type { FastifyReply } from 'fastify';

/**
 * The client leaving, as an AbortSignal: it aborts when the response's connection closes (the
 * response sent in full, or the client gone first). `release` stops listening (call it when done).
 */
export interface ClientGone {
  readonly signal: AbortSignal;
  release(): void;
}

export function clientGone(reply: FastifyReply): ClientGone {
  const gone = new AbortController();
  const onClose = () => gone.abort();
  reply.raw.once('close', onClose);
  return { signal: gone.signal, release: () => reply.raw.off('close', onClose) };
}

export interface SseOptions {
  /** A `ClientGone` the caller already holds (it stays the caller's to release); else the stream makes its own. */
  gone?: ClientGone;
  /** The gateway shutting down: it also ends a wait for a slow client's socket to drain. */
  shutdown?: AbortSignal;
}

/**
 * One Server-Sent Events response (docs/adr/0015), the one way every stream of the gateway writes
 * (the /v1 journal streams, chat completions, Responses, LangGraph runs, A2A): `open` takes the
 * response over from Fastify (a stream is long-lived and written by the route itself) and sends the
 * SSE headers at once; `write` sends a frame (nothing once the response is closed); `drained` waits
 * for a slow client's socket to drain rather than buffer without bound; `comment` is a heart-beat;
 * `close` ends the response. `signal` aborts when the client leaves.
 */
export class SseStream {
  private readonly ownsGone: boolean;
  private readonly gone: ClientGone;
  /** The client gone or the gateway stopping: nothing more to wait for. */
  private readonly stop: AbortSignal;

  private constructor(
    private readonly reply: FastifyReply,
    o: SseOptions,
  ) {
    this.ownsGone = o.gone === undefined;
    this.gone = o.gone ?? clientGone(reply);
    this.stop = o.shutdown ? AbortSignal.any([this.gone.signal, o.shutdown]) : this.gone.signal;
  }

  static open(reply: FastifyReply, o: SseOptions = {}): SseStream {
    const sse = new SseStream(reply, o);
    reply.hijack();
    reply.raw.writeHead(200, {
      ...(reply.getHeaders() as Record<string, string>),
      'content-type': 'text/event-stream; charset=utf-8',
      'cache-control': 'no-cache',
      connection: 'keep-alive',
      // Proxies (nginx) must not buffer the stream.
      'x-accel-buffering': 'no',
    });
    return sse;
  }

  /** Aborts when the client leaves. */
  get signal(): AbortSignal {
    return this.gone.signal;
  }

  /** The client left or the gateway is stopping. */
  get stopped(): boolean {
    return this.stop.aborted;
  }

  /** The response can still be written to. */
  get writable(): boolean {
    return !this.reply.raw.destroyed && !this.reply.raw.writableEnded;
  }

  /** Sends a frame as is (already framed); false when it was not sent or the socket's buffer is full. */
  write(frame: string): boolean {
    return this.writable && this.reply.raw.write(frame);
  }

  /** A `data:` frame holding `data` as JSON (with `event:` its name when given). */
  data(data: unknown, event?: string): boolean {
    return this.write(`${event === undefined ? '' : `event: ${event}\n`}data: ${JSON.stringify(data)}\n\n`);
  }

  /** A comment line (`: <text>`): a heart-beat while quiet, or the first bytes out. */
  comment(text: string): boolean {
    return this.write(`: ${text}\n\n`);
  }

  /**
   * Resolves once the socket can take more (at once when it can). A slow client is waited for rather
   * than buffered without bound; the client leaving or the gateway stopping ends the wait.
   */
  async drained(): Promise<void> {
    if (!this.writable || !this.reply.raw.writableNeedDrain) return;
    try {
      await once(this.reply.raw, 'drain', { signal: this.stop });
    } catch (err) {
      if (!this.stop.aborted) throw err;
    }
  }

  /** Stops listening for the client and ends the response (when it is not ended already). */
  close(): void {
    if (this.ownsGone) this.gone.release();
    if (!this.reply.raw.writableEnded) this.reply.raw.end();
  }
}
