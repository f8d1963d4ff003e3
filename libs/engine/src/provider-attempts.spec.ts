import { ProviderError, type ProviderErrorKind } from '@switchboard/providers';
import { classifyAttempt, type AttemptContext, type AttemptVerdict } from './provider-attempts';

const err = (kind: ProviderErrorKind, retryAfterMs?: number) =>
  new ProviderError(kind, `${kind} failure`, retryAfterMs === undefined ? {} : { retryAfterMs });

/** The second of three attempts on the turn's model, with a fallback model after it. */
const mid: AttemptContext = {
  stage: 'call',
  attempt: 2,
  maxAttempts: 3,
  hasNextModel: true,
  aborted: false,
  maxBackoffMs: 30_000,
};
const last = { ...mid, attempt: 3 };
const lastModel = { ...mid, hasNextModel: false };

const retrying = (backoffMs: number): AttemptVerdict => ({
  outcome: 'retrying',
  disposition: 'retryable',
  advancedToFallback: false,
  next: 'retry',
  backoffMs,
});
const failFast = (advancedToFallback: boolean): AttemptVerdict => ({
  outcome: 'fail_fast_aborted',
  disposition: 'fail_fast',
  advancedToFallback,
  next: 'next_model',
});
const exhausted = (advancedToFallback: boolean): AttemptVerdict => ({
  outcome: 'retries_exhausted',
  disposition: 'retryable',
  advancedToFallback,
  next: 'next_model',
});
const cancelled = (next: 'stop' | 'next_model'): AttemptVerdict => ({
  outcome: 'fail_fast_aborted',
  disposition: 'cancelled',
  advancedToFallback: false,
  next,
});
const terminal: AttemptVerdict = {
  outcome: 'fail_fast_aborted',
  disposition: 'terminal',
  advancedToFallback: false,
  next: 'end_turn',
};

const rows: [string, ProviderError, AttemptContext, AttemptVerdict][] = [
  // Retryable kinds: the same model again, 500 ms doubling per attempt.
  ['timeout, first attempt', err('timeout'), { ...mid, attempt: 1 }, retrying(500)],
  ['connection, second attempt', err('connection'), mid, retrying(1000)],
  ['server, third of five', err('server'), { ...mid, attempt: 3, maxAttempts: 5 }, retrying(2000)],
  ['rate_limited without Retry-After', err('rate_limited'), mid, retrying(1000)],
  ['retryable on the last model: still retried', err('server'), lastModel, retrying(1000)],
  // Retry-After wins over the exponential backoff; the cap wins over both.
  ['rate_limited with Retry-After', err('rate_limited', 7000), mid, retrying(7000)],
  ['Retry-After shorter than the backoff', err('rate_limited', 100), mid, retrying(100)],
  ['Retry-After 0', err('rate_limited', 0), mid, retrying(0)],
  ['Retry-After above the cap', err('rate_limited', 120_000), mid, retrying(30_000)],
  [
    'exponential backoff above the cap',
    err('timeout'),
    { ...mid, attempt: 8, maxAttempts: 9 },
    retrying(30_000),
  ],
  ['a small cap', err('timeout'), { ...mid, attempt: 1, maxBackoffMs: 10 }, retrying(10)],
  // The model's last attempt: on to the next model, when there is one.
  ['retryable, last attempt, a fallback left', err('timeout'), last, exhausted(true)],
  [
    'retryable, last attempt, the last model',
    err('server'),
    { ...last, hasNextModel: false },
    exhausted(false),
  ],
  ['rate_limited with Retry-After, last attempt', err('rate_limited', 7000), last, exhausted(true)],
  ['no retries configured', err('timeout'), { ...mid, attempt: 1, maxAttempts: 1 }, exhausted(true)],
  // Not retryable: the next model at once, whatever attempt it was.
  ['auth', err('auth'), { ...mid, attempt: 1 }, failFast(true)],
  ['bad_request', err('bad_request'), mid, failFast(true)],
  ['invalid_response', err('invalid_response'), mid, failFast(true)],
  ['not retryable on the last model', err('auth'), lastModel, failFast(false)],
  ['not retryable on the last attempt', err('bad_request'), last, failFast(true)],
  // The model reference names no provider: the next model, never a retry.
  ['no provider for the model', err('bad_request'), { ...mid, stage: 'resolve', attempt: 1 }, failFast(true)],
  [
    'no provider, the last model',
    err('bad_request'),
    { ...lastModel, stage: 'resolve', attempt: 1 },
    failFast(false),
  ],
  [
    'no provider while the turn is stopping',
    err('bad_request'),
    { ...mid, stage: 'resolve', attempt: 1, aborted: true },
    failFast(true),
  ],
  // The context window: ends the turn, another model would only hide it.
  ['context_length', err('context_length'), { ...mid, attempt: 1 }, terminal],
  ['context_length on the last model', err('context_length'), lastModel, terminal],
  ['context_length on the last attempt', err('context_length'), last, terminal],
  // The turn's signal aborted: no further attempt, whatever the error says.
  ['aborted: cancelled', err('cancelled'), { ...mid, aborted: true }, cancelled('stop')],
  ['aborted: a retryable error', err('timeout'), { ...mid, aborted: true }, cancelled('stop')],
  [
    'aborted: rate_limited with Retry-After',
    err('rate_limited', 5000),
    { ...mid, aborted: true },
    cancelled('stop'),
  ],
  ['aborted: context_length', err('context_length'), { ...mid, aborted: true }, cancelled('stop')],
  ['aborted: not retryable', err('auth'), { ...lastModel, aborted: true }, cancelled('stop')],
  // A provider that reports cancelled while the turn goes on: the model is given up, the next tried.
  ['cancelled without the turn aborting', err('cancelled'), mid, cancelled('next_model')],
  ['cancelled without aborting, the last model', err('cancelled'), lastModel, cancelled('next_model')],
];

describe('classifyAttempt', () => {
  it.each(rows)('%s', (_, error, at, expected) => {
    expect(classifyAttempt(error, at)).toEqual(expected);
  });

  it('has a backoff only when it retries', () => {
    for (const [, error, at] of rows) {
      const v = classifyAttempt(error, at);
      expect('backoffMs' in v).toBe(v.next === 'retry');
    }
  });

  it('the table covers every disposition, outcome and next step', () => {
    const seen = rows.map(([, error, at]) => classifyAttempt(error, at));
    expect(new Set(seen.map((v) => v.disposition))).toEqual(
      new Set(['retryable', 'fail_fast', 'terminal', 'cancelled']),
    );
    expect(new Set(seen.map((v) => v.outcome))).toEqual(
      new Set(['retrying', 'retries_exhausted', 'fail_fast_aborted']),
    );
    expect(new Set(seen.map((v) => v.next))).toEqual(new Set(['retry', 'next_model', 'stop', 'end_turn']));
    const kinds: ProviderErrorKind[] = [
      'timeout',
      'connection',
      'rate_limited',
      'server',
      'auth',
      'bad_request',
      'context_length',
      'invalid_response',
      'cancelled',
    ];
    expect(new Set(rows.map(([, error]) => error.kind))).toEqual(new Set(kinds));
  });
});
