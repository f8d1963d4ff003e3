import { classifyHttpError, retryAfterMs } from './errors';
import { ProviderError } from './types';

/** The fields classifyHttpError reads from an openai/anthropic SDK error. */
class FakeApiError extends Error {
  constructor(
    readonly status: number | undefined,
    message: string,
    readonly headers: Headers | Record<string, string> = {},
    readonly code: string | null = null,
    readonly error: { code?: string; type?: string; message?: string } | null = null,
  ) {
    super(message);
    // Like the openai SDK: every class reports name "Error"; only the constructor name differs.
    this.name = 'Error';
  }
}
class APIConnectionTimeoutError extends FakeApiError {}
class APIConnectionError extends FakeApiError {}

const NOW = Date.parse('2025-06-01T12:00:00.000Z');

describe('classifyHttpError', () => {
  afterEach(() => {
    jest.useRealTimers();
  });

  it('returns a ProviderError unchanged', () => {
    const original = new ProviderError('server', 'x');
    expect(classifyHttpError(original, 'openai')).toBe(original);
  });

  it('classifies anything as cancelled once the signal is aborted', () => {
    const controller = new AbortController();
    controller.abort();
    const err = classifyHttpError(new FakeApiError(500, 'boom'), 'openai', controller.signal);
    expect(err.kind).toBe('cancelled');
    expect(err.retryable).toBe(false);
    expect(err.details.provider).toBe('openai');
  });

  it('classifies a stream cut short by the caller’s abort as cancelled, not invalid_response', () => {
    // The SDKs end an aborted stream's iteration quietly; the assembly then reports a missing finish.
    const controller = new AbortController();
    controller.abort();
    const cut = new ProviderError('invalid_response', 'stream ended without a finish reason');
    expect(classifyHttpError(cut, 'openai', controller.signal).kind).toBe('cancelled');
    expect(classifyHttpError(cut, 'openai', new AbortController().signal)).toBe(cut);
  });

  it('does not classify as cancelled when the signal is not aborted', () => {
    const err = classifyHttpError(new FakeApiError(500, 'boom'), 'openai', new AbortController().signal);
    expect(err.kind).toBe('server');
  });

  describe('429', () => {
    it('is rate_limited and retryable, with retry-after in seconds', () => {
      const err = classifyHttpError(
        new FakeApiError(429, 'Too many requests', new Headers({ 'retry-after': '2' })),
        'openai',
      );
      expect(err).toBeInstanceOf(ProviderError);
      expect(err.kind).toBe('rate_limited');
      expect(err.retryable).toBe(true);
      expect(err.message).toBe('Too many requests');
      expect(err.details).toEqual({
        status: 429,
        provider: 'openai',
        retryAfterMs: 2000,
        diagnostics: {
          stage: 'http_status',
          provider: 'openai',
          status: 429,
          sourceChain: ['FakeApiError: Too many requests'],
        },
      });
    });

    it('prefers retry-after-ms over retry-after', () => {
      const err = classifyHttpError(
        new FakeApiError(429, 'slow', { 'retry-after-ms': '1500', 'retry-after': '30' }),
        'openai',
      );
      expect(err.details.retryAfterMs).toBe(1500);
    });

    it('accepts a fractional retry-after in seconds', () => {
      const err = classifyHttpError(new FakeApiError(429, 'slow', { 'retry-after': '0.25' }), 'anthropic');
      expect(err.details.retryAfterMs).toBe(250);
    });

    it('turns a retry-after HTTP date into the milliseconds left', () => {
      jest.useFakeTimers({ now: NOW });
      const at = new Date(NOW + 30_000).toUTCString();
      const err = classifyHttpError(
        new FakeApiError(429, 'slow', new Headers({ 'Retry-After': at })),
        'openai',
      );
      expect(err.kind).toBe('rate_limited');
      expect(err.details.retryAfterMs).toBe(30_000);
    });

    it('clamps a retry-after date in the past to zero', () => {
      jest.useFakeTimers({ now: NOW });
      const at = new Date(NOW - 60_000).toUTCString();
      expect(
        classifyHttpError(new FakeApiError(429, 'slow', { 'retry-after': at }), 'x').details.retryAfterMs,
      ).toBe(0);
    });

    it('has no retryAfterMs without a usable header', () => {
      expect(classifyHttpError(new FakeApiError(429, 'slow'), 'x').details.retryAfterMs).toBeUndefined();
      expect(
        classifyHttpError(new FakeApiError(429, 'slow', { 'retry-after': 'soon' }), 'x').details.retryAfterMs,
      ).toBeUndefined();
    });
  });

  it.each([401, 403])('classifies %i as auth, not retryable', (status) => {
    const err = classifyHttpError(new FakeApiError(status, 'denied'), 'anthropic');
    expect(err.kind).toBe('auth');
    expect(err.retryable).toBe(false);
    expect(err.details).toMatchObject({ status, provider: 'anthropic' });
  });

  it('classifies 408 as a retryable timeout', () => {
    const err = classifyHttpError(new FakeApiError(408, 'request timeout'), 'openai');
    expect(err.kind).toBe('timeout');
    expect(err.retryable).toBe(true);
  });

  describe('context length', () => {
    it('recognises the context_length_exceeded code on a 400', () => {
      const err = classifyHttpError(
        new FakeApiError(400, 'too big', {}, 'context_length_exceeded'),
        'openai',
      );
      expect(err.kind).toBe('context_length');
      expect(err.retryable).toBe(false);
    });

    it('recognises the code in the error body on a 400', () => {
      const err = classifyHttpError(
        new FakeApiError(400, 'bad', {}, null, { code: 'context_length_exceeded' }),
        'openai-chat',
      );
      expect(err.kind).toBe('context_length');
    });

    it.each([
      'prompt is too long: 210000 tokens > 200000 maximum',
      "This model's maximum context length is 128000 tokens",
      'Too many tokens in the request',
    ])('recognises the message "%s" on a 400', (message) => {
      expect(classifyHttpError(new FakeApiError(400, message), 'anthropic').kind).toBe('context_length');
    });

    it('recognises it on a 413 too', () => {
      expect(classifyHttpError(new FakeApiError(413, 'prompt is too long'), 'anthropic').kind).toBe(
        'context_length',
      );
    });

    it('leaves a plain 400 as bad_request', () => {
      const err = classifyHttpError(new FakeApiError(400, 'temperature must be <= 2'), 'openai');
      expect(err.kind).toBe('bad_request');
      expect(err.retryable).toBe(false);
    });
  });

  it.each([500, 502, 503, 504, 529])('classifies %i as a retryable server error', (status) => {
    const err = classifyHttpError(new FakeApiError(status, 'oops'), 'openai');
    expect(err.kind).toBe('server');
    expect(err.retryable).toBe(true);
    expect(err.details.status).toBe(status);
  });

  it('classifies 501 as bad_request, not retryable', () => {
    const err = classifyHttpError(new FakeApiError(501, 'not implemented'), 'openai');
    expect(err.kind).toBe('bad_request');
    expect(err.retryable).toBe(false);
  });

  it.each([404, 409, 413, 422])('classifies other 4xx (%i) as bad_request, not retryable', (status) => {
    const err = classifyHttpError(new FakeApiError(status, 'no'), 'openai');
    expect(err.kind).toBe('bad_request');
    expect(err.retryable).toBe(false);
  });

  it('classifies an error whose constructor is APIConnectionTimeoutError as a retryable timeout', () => {
    const err = classifyHttpError(new APIConnectionTimeoutError(undefined, 'Request timed out.'), 'openai');
    expect(err.kind).toBe('timeout');
    expect(err.retryable).toBe(true);
    expect(err.message).toBe('Request timed out.');
  });

  it('classifies a connection failure without status as a retryable connection error', () => {
    expect(classifyHttpError(new APIConnectionError(undefined, 'Connection error.'), 'openai').kind).toBe(
      'connection',
    );
    const refused = classifyHttpError(new Error('connect ECONNREFUSED 127.0.0.1:1'), 'openai');
    expect(refused.kind).toBe('connection');
    expect(refused.retryable).toBe(true);
  });

  it('classifies an unparsable response as invalid_response, not retryable', () => {
    const syntax = classifyHttpError(new SyntaxError('Unexpected end of input'), 'openai');
    expect(syntax.kind).toBe('invalid_response');
    expect(syntax.retryable).toBe(false);
    expect(classifyHttpError(new Error('Bad JSON in stream'), 'openai').kind).toBe('invalid_response');
  });

  it('copes with a thrown non-object', () => {
    const err = classifyHttpError('socket hang up', 'openai');
    expect(err.kind).toBe('connection');
    expect(err.message).toBe('socket hang up');
    expect(classifyHttpError(undefined, 'openai')).toBeInstanceOf(ProviderError);
  });
});

describe('retryAfterMs', () => {
  it('is undefined without headers', () => {
    expect(retryAfterMs(undefined)).toBeUndefined();
    expect(retryAfterMs({})).toBeUndefined();
  });

  it('reads Headers case-insensitively', () => {
    expect(retryAfterMs(new Headers({ 'Retry-After-Ms': '42' }))).toBe(42);
  });

  it('falls back to retry-after when retry-after-ms is not a number', () => {
    expect(retryAfterMs({ 'retry-after-ms': 'abc', 'retry-after': '3' })).toBe(3000);
  });
});

describe('transport diagnostics', () => {
  it('names the stage and keeps the cause chain, outermost first', () => {
    const refused = Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:1'), { code: 'ECONNREFUSED' });
    const fetchFailed = new TypeError('fetch failed', { cause: refused });
    const sdk = Object.assign(new APIConnectionError(undefined, 'Connection error.'), { cause: fetchFailed });
    const err = classifyHttpError(sdk, 'anthropic');
    expect(err.kind).toBe('connection');
    expect(err.details.diagnostics).toEqual({
      stage: 'connect',
      provider: 'anthropic',
      sourceChain: [
        'APIConnectionError: Connection error.',
        'TypeError: fetch failed',
        'Error: connect ECONNREFUSED 127.0.0.1:1',
      ],
    });
  });

  it('tells a timeout, a bad body and an aborted request apart', () => {
    expect(
      classifyHttpError(new APIConnectionTimeoutError(undefined, 'timed out'), 'openai').details.diagnostics,
    ).toMatchObject({ stage: 'timeout' });
    expect(
      classifyHttpError(new SyntaxError('Unexpected token <'), 'openai').details.diagnostics,
    ).toMatchObject({
      stage: 'decode',
    });
    const aborted = new AbortController();
    aborted.abort();
    expect(classifyHttpError(new Error('x'), 'openai', aborted.signal).details.diagnostics).toMatchObject({
      stage: 'aborted',
    });
  });

  it('carries the provider request id of an HTTP error', () => {
    const e = Object.assign(new FakeApiError(500, 'oops'), { requestID: 'req_123' });
    const err = classifyHttpError(e, 'openai');
    expect(err.details.requestId).toBe('req_123');
    expect(err.details.diagnostics).toMatchObject({
      stage: 'http_status',
      status: 500,
      requestId: 'req_123',
    });
  });
});
