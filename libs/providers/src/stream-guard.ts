import { ProviderError } from './types';

/** How long a streamed provider attempt may stay silent, and last, before it is a timeout. */
export interface StreamTimeouts {
  /** Longest silence between two chunks, once the response has started (PROVIDER_STREAM_IDLE_MS). */
  idleMs: number;
  /** Longest a whole attempt may take, headers and stream (PROVIDER_ATTEMPT_TIMEOUT_MS). */
  totalMs: number;
}

export const DEFAULT_STREAM_TIMEOUTS: StreamTimeouts = { idleMs: 60_000, totalMs: 600_000 };

/**
 * Bounds one streamed attempt. The SDKs' own `timeout` covers only the wait for response headers;
 * a stream that stalls after its first chunk would otherwise hang until the turn's deadline. The
 * guard's `signal` goes to the SDK request; when the stream is idle too long, or the attempt lasts
 * too long, it aborts the request, and `timedOut` is the classified `timeout` to throw instead of
 * the SDK's abort error, so the engine retries it like any timeout (seed 002).
 */
export class AttemptGuard {
  readonly signal: AbortSignal;
  private readonly controller = new AbortController();
  private readonly total: NodeJS.Timeout;
  private idle?: NodeJS.Timeout;
  private fired?: ProviderError;

  constructor(
    private readonly provider: string,
    outer: AbortSignal | undefined,
    private readonly timeouts: StreamTimeouts,
  ) {
    this.signal = outer ? AbortSignal.any([outer, this.controller.signal]) : this.controller.signal;
    this.total = setTimeout(
      () => this.fire(`the attempt took longer than ${timeouts.totalMs} ms`),
      timeouts.totalMs,
    );
  }

  /** The stream opened or a chunk arrived: the idle clock starts again. */
  touch(): void {
    if (this.fired) return;
    clearTimeout(this.idle);
    this.idle = setTimeout(
      () => this.fire(`the stream sent nothing for ${this.timeouts.idleMs} ms`),
      this.timeouts.idleMs,
    );
  }

  /** The stream, touching the idle clock at every chunk. */
  async *watch<T>(stream: AsyncIterable<T>): AsyncIterable<T> {
    this.touch();
    for await (const chunk of stream) {
      this.touch();
      yield chunk;
    }
  }

  /** The timeout that cut the attempt off, if one did. */
  get timedOut(): ProviderError | undefined {
    return this.fired;
  }

  /** The error to throw for `err`: the guard's timeout when it fired (and the caller did not abort). */
  errorFor(err: unknown, outer: AbortSignal | undefined): unknown {
    return this.fired && !outer?.aborted ? this.fired : err;
  }

  dispose(): void {
    clearTimeout(this.idle);
    clearTimeout(this.total);
  }

  private fire(message: string): void {
    if (this.fired) return;
    this.fired = new ProviderError('timeout', message, {
      provider: this.provider,
      diagnostics: { stage: 'timeout', provider: this.provider, sourceChain: [`ProviderError: ${message}`] },
    });
    this.controller.abort(this.fired);
  }
}
