import { ProviderError, type TransportDiagnostics } from './types';

interface HttpishError {
  status?: number;
  headers?: Headers | Record<string, string | null | undefined>;
  code?: string | null;
  message?: string;
  name?: string;
  requestID?: string | null;
  error?: { code?: string; type?: string; message?: string } | null;
}

function header(h: HttpishError['headers'], name: string): string | undefined {
  if (!h) return undefined;
  if (typeof (h as Headers).get === 'function') return (h as Headers).get(name) ?? undefined;
  const v = (h as Record<string, string | null | undefined>)[name];
  return v ?? undefined;
}

/** `retry-after-ms`, else `retry-after` as seconds or an HTTP date. */
export function retryAfterMs(h: HttpishError['headers']): number | undefined {
  const ms = Number(header(h, 'retry-after-ms'));
  if (Number.isFinite(ms) && ms >= 0 && header(h, 'retry-after-ms') !== undefined) return ms;
  const raw = header(h, 'retry-after');
  if (raw === undefined) return undefined;
  const secs = Number(raw);
  if (Number.isFinite(secs)) return Math.max(0, secs * 1000);
  const date = Date.parse(raw);
  return Number.isFinite(date) ? Math.max(0, date - Date.now()) : undefined;
}

const CONTEXT_LENGTH = /context[_ ]length|maximum context|prompt is too long|too many tokens/i;

/** The error and its `cause`s, outermost first, as `Name: message` (at most five). */
export function sourceChain(err: unknown): string[] {
  const chain: string[] = [];
  let e: unknown = err;
  for (let i = 0; i < 5 && e !== undefined && e !== null; i++) {
    if (e instanceof Error) {
      chain.push(`${e.constructor?.name ?? e.name}: ${e.message}`.slice(0, 300));
      e = (e as { cause?: unknown }).cause;
    } else {
      chain.push((typeof e === 'string' ? e : (JSON.stringify(e) ?? typeof e)).slice(0, 300));
      break;
    }
  }
  return chain;
}

/** Maps an SDK error (openai or anthropic share the shape) to a classified ProviderError. */
export function classifyHttpError(err: unknown, provider: string, signal?: AbortSignal): ProviderError {
  const diagnostics = (stage: TransportDiagnostics['stage'], extra: Partial<TransportDiagnostics> = {}) => ({
    stage,
    provider,
    ...extra,
    sourceChain: sourceChain(err),
  });
  // A stream the caller aborted can end as if cut short (the SDKs end the iteration quietly on
  // abort, and `assemble` reports the missing finish as invalid_response): the caller's abort wins.
  if (signal?.aborted && !(err instanceof ProviderError && err.kind === 'cancelled')) {
    return new ProviderError('cancelled', 'request aborted', {
      provider,
      diagnostics: diagnostics('aborted'),
    });
  }
  if (err instanceof ProviderError) return err;
  const e = (err ?? {}) as HttpishError;
  const message = e.message ?? String(err);
  // openai's error classes all report name "Error"; their constructor names are exact.
  const name = `${e.name ?? ''} ${(err as object | null)?.constructor?.name ?? ''}`;
  if (name.includes('Timeout')) {
    return new ProviderError('timeout', message, { provider, diagnostics: diagnostics('timeout') });
  }
  if (name.includes('Connection') || e.status === undefined) {
    if (err instanceof SyntaxError || /JSON|Unexpected token/i.test(message)) {
      return new ProviderError('invalid_response', message, { provider, diagnostics: diagnostics('decode') });
    }
    return new ProviderError('connection', message, { provider, diagnostics: diagnostics('connect') });
  }
  const status = e.status;
  const code = e.code ?? e.error?.code ?? e.error?.type ?? '';
  const requestId = e.requestID ?? undefined;
  const details = {
    status,
    provider,
    retryAfterMs: retryAfterMs(e.headers),
    ...(requestId ? { requestId } : {}),
    diagnostics: diagnostics('http_status', { status, ...(requestId ? { requestId } : {}) }),
  };
  if (status === 429) return new ProviderError('rate_limited', message, details);
  if (status === 401 || status === 403) return new ProviderError('auth', message, details);
  if (status === 408) return new ProviderError('timeout', message, details);
  if (
    (status === 400 || status === 413) &&
    (code === 'context_length_exceeded' || CONTEXT_LENGTH.test(message))
  ) {
    return new ProviderError('context_length', message, details);
  }
  if (status >= 500 && status !== 501) return new ProviderError('server', message, details);
  return new ProviderError('bad_request', message, details);
}

/** How long to wait before retrying a failed provider call (seed 002 "Provider Transport Contract"). */
export interface RetryPolicy {
  /** Retries on the same model for retryable failures (seed 002: 2). */
  maxRetries: number;
  /** Upper bound for a single backoff, whatever retry-after says. */
  maxBackoffMs: number;
  sleep: (ms: number, signal?: AbortSignal) => Promise<void>;
}

/**
 * The wait before retry `attempt + 1` after a retryable failure on attempt `attempt` (from 1): the
 * provider's Retry-After when it sent one, else 500 ms doubling per attempt; capped at `maxBackoffMs`.
 */
export function retryBackoffMs(error: ProviderError, attempt: number, maxBackoffMs: number): number {
  return Math.min(maxBackoffMs, error.details.retryAfterMs ?? 500 * 2 ** (attempt - 1));
}

export const abortableSleep = (ms: number, signal?: AbortSignal): Promise<void> =>
  new Promise<void>((resolve) => {
    const t = setTimeout(resolve, ms);
    signal?.addEventListener('abort', () => (clearTimeout(t), resolve()), { once: true });
  });

/**
 * Runs a provider call with the provider layer's retry policy: a retryable ProviderError (timeout,
 * connection, rate limit, server error) is retried up to `maxRetries` times after
 * {@link retryBackoffMs}; anything else, or an aborted signal, fails at once. (The engine's model
 * rounds follow the same policy with fallback models and the timeline on top: classifyAttempt.)
 */
export async function withRetries<T>(
  call: (attempt: number) => Promise<T>,
  policy: RetryPolicy,
  signal?: AbortSignal,
): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await call(attempt);
    } catch (err) {
      if (
        !(err instanceof ProviderError) ||
        !err.retryable ||
        attempt > policy.maxRetries ||
        signal?.aborted
      ) {
        throw err;
      }
      await policy.sleep(retryBackoffMs(err, attempt, policy.maxBackoffMs), signal);
      if (signal?.aborted) throw new ProviderError('cancelled', 'request aborted', err.details);
    }
  }
}
