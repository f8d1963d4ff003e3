/**
 * The retry / fail-fast / fallback matrix of seed 002 ("Provider Transport Contract"), through the
 * TurnEngine with the real `openai` and `@anthropic-ai/sdk` clients against one local server that
 * speaks all three wire formats, with scripted failures.
 *
 * Policy under test: 2 retries on the same model for timeout, connection, 429 (honouring
 * retry-after) and eligible 5xx; fail fast on 401/403, other 4xx and invalid responses; then the
 * next fallback model. A context-length error ends the turn with no fallback. Every attempt is on
 * the timeline handed to the checkpoints.
 *
 * No real sleeps: the engine's `sleep` records the backoff it was asked for and resolves at once.
 */
import {
  AnthropicProvider,
  OpenAIChatProvider,
  OpenAIResponsesProvider,
  ProviderRegistry,
  type ModelProvider,
} from '@switchboard/providers';
import { crossRealmSafeFetch, FakeLlmServer, scripted, type ScriptedReply } from '@switchboard/testing';
import { ToolRegistry } from '@switchboard/tools';
import { TurnEngine } from './engine';
import { checkpoints, turnInput } from './test-support';
import type { ProviderAttempt, RoundRecord, TurnOutcome } from './types';

type Kind = 'openai' | 'openai-chat' | 'anthropic';

const ENDPOINT = {
  openai: 'openai.responses',
  'openai-chat': 'openai.chat.completions',
  anthropic: 'anthropic.messages',
} as const;

/** Short enough that a hung connection costs a few hundred ms, long enough for a loaded CI machine. */
const PROVIDER_TIMEOUT_MS = 300;

const USAGE = { input: 40, output: 6, cached: 8 };
const NEUTRAL_USAGE = { inputTokens: 40, outputTokens: 6, cachedTokens: 8, cacheWriteTokens: 0 };

function sdkProviders(server: FakeLlmServer): ModelProvider[] {
  const openai = { apiKey: 'k', baseURL: server.openaiBaseUrl, timeoutMs: PROVIDER_TIMEOUT_MS };
  return [
    new OpenAIResponsesProvider({ ...openai, fetch: crossRealmSafeFetch }),
    new OpenAIChatProvider({ ...openai, fetch: crossRealmSafeFetch }),
    new AnthropicProvider({ apiKey: 'k', baseURL: server.anthropicBaseUrl, timeoutMs: PROVIDER_TIMEOUT_MS }),
  ];
}

/** Builds SDK clients whose own logging is off (both SDKs read their log level when constructed). */
function withQuietSdks<T>(build: () => T): T {
  const saved = { OPENAI_LOG: process.env.OPENAI_LOG, ANTHROPIC_LOG: process.env.ANTHROPIC_LOG };
  process.env.OPENAI_LOG = 'off';
  process.env.ANTHROPIC_LOG = 'off';
  try {
    return build();
  } finally {
    for (const [k, v] of Object.entries(saved)) {
      if (v === undefined) delete process.env[k];
      else process.env[k] = v;
    }
  }
}

interface Run {
  outcome: TurnOutcome;
  /** What recordRound received (a round that produced a response). */
  rounds: RoundRecord[];
  /** What recordFailedAttempts received (a round that produced none). */
  failedAttempts: ProviderAttempt[][];
  /** The timeline of the (single) round, whichever checkpoint received it. */
  timeline: ProviderAttempt[];
  /** Backoffs the engine asked to sleep, in order. */
  sleeps: number[];
  /** `provider/model` of every HTTP request the fake server saw, in order. */
  wire: string[];
}

describe('provider retry / fail-fast / fallback matrix (real SDKs, fake wire)', () => {
  let server: FakeLlmServer;
  let engine: TurnEngine;
  let sleeps: number[];

  const makeEngine = () =>
    new TurnEngine({
      // Extra providers replace the registry's defaults of the same name.
      providers: new ProviderRegistry({}, sdkProviders(server)),
      tools: new ToolRegistry(),
      sleep: async (ms) => {
        sleeps.push(ms);
      },
    });

  beforeEach(async () => {
    server = await FakeLlmServer.start();
    sleeps = [];
    engine = makeEngine();
  });

  afterEach(async () => {
    await server.close();
  });

  const wireName = (endpoint: string | null): string =>
    Object.entries(ENDPOINT).find(([, e]) => e === endpoint)?.[0] ?? `?${endpoint}`;

  async function run(model: string, fallbackModels: string[], ...replies: ScriptedReply[]): Promise<Run> {
    server.enqueue(...replies);
    const rounds: RoundRecord[] = [];
    const failedAttempts: ProviderAttempt[][] = [];
    const outcome = await engine.run(
      turnInput({ model, fallbackModels }),
      checkpoints({
        recordRound: async (r) => void rounds.push(r),
        recordFailedAttempts: async (a) => void failedAttempts.push(a.map((x) => ({ ...x }))),
      }),
      new AbortController().signal,
    );
    // Every scripted reply was consumed: no attempt was skipped, none was added.
    expect(server.pendingReplies).toBe(0);
    const wire = server.requests.map((r) => `${wireName(r.endpoint)}/${(r.body as { model: string }).model}`);
    const timeline = rounds[0]?.attempts ?? failedAttempts[0] ?? [];
    expect(rounds.length + failedAttempts.length).toBe(1);
    // One HTTP request per attempt on the timeline, in the same order.
    expect(wire).toEqual(timeline.map((a) => a.model));
    for (const a of timeline) {
      expect(a.round).toBe(0);
      expect(Number.isNaN(Date.parse(a.startedAt))).toBe(false);
      expect(a.durationMs).toBeGreaterThanOrEqual(0);
      if (a.outcome !== 'succeeded') expect(a.message).toEqual(expect.any(String));
    }
    return { outcome, rounds, failedAttempts, timeline, sleeps: [...sleeps], wire };
  }

  const ok = (text = 'done') => scripted.text(text, { usage: USAGE });
  const slim = (t: ProviderAttempt[]) =>
    t.map(({ model, attempt, failureKind, status, backoffMs }) => ({
      model,
      attempt,
      kind: failureKind ?? 'ok',
      status,
      backoffMs,
    }));

  describe.each<Kind>(['openai', 'openai-chat', 'anthropic'])('%s', (kind) => {
    const primary = `${kind}/primary`;
    const backup = `${kind}/backup`;

    it('429 with retry-after: retried on the same model after exactly that backoff, then completed', async () => {
      const r = await run(primary, [backup], scripted.rateLimited(7), ok('after the wait'));
      expect(r.outcome).toMatchObject({ status: 'completed', finalText: 'after the wait' });
      expect(slim(r.timeline)).toEqual([
        { model: primary, attempt: 1, kind: 'rate_limited', status: 429, backoffMs: 7000 },
        { model: primary, attempt: 2, kind: 'ok', status: undefined, backoffMs: undefined },
      ]);
      expect(r.sleeps).toEqual([7000]);
      expect(r.timeline[1].usage).toEqual(NEUTRAL_USAGE);
      expect(r.rounds[0]).toMatchObject({
        model: primary,
        provider: kind,
        response: { usage: NEUTRAL_USAGE },
      });
      expect(r.failedAttempts).toEqual([]);
    });

    it('500 three times: two retries on the primary, then the fallback answers', async () => {
      const r = await run(
        primary,
        [backup],
        scripted.error(500),
        scripted.error(500),
        scripted.error(500),
        ok('from the backup'),
      );
      expect(r.outcome).toMatchObject({ status: 'completed', finalText: 'from the backup' });
      expect(slim(r.timeline)).toEqual([
        { model: primary, attempt: 1, kind: 'server', status: 500, backoffMs: 500 },
        { model: primary, attempt: 2, kind: 'server', status: 500, backoffMs: 1000 },
        // Retries exhausted: no backoff before moving on to the fallback.
        { model: primary, attempt: 3, kind: 'server', status: 500, backoffMs: undefined },
        { model: backup, attempt: 1, kind: 'ok', status: undefined, backoffMs: undefined },
      ]);
      expect(r.sleeps).toEqual([500, 1000]);
      expect(r.timeline[3].usage).toEqual(NEUTRAL_USAGE);
      expect(r.rounds[0]).toMatchObject({ model: backup, provider: kind });
    });

    it.each([401, 403, 400, 404])(
      '%i fails fast: one attempt, no retry, then the fallback',
      async (status) => {
        const r = await run(primary, [backup], scripted.error(status), ok());
        expect(r.outcome).toMatchObject({ status: 'completed', finalText: 'done' });
        expect(slim(r.timeline)).toEqual([
          {
            model: primary,
            attempt: 1,
            kind: status === 401 || status === 403 ? 'auth' : 'bad_request',
            status,
            backoffMs: undefined,
          },
          { model: backup, attempt: 1, kind: 'ok', status: undefined, backoffMs: undefined },
        ]);
        expect(r.sleeps).toEqual([]);
      },
    );

    it('a hung connection times out and is retried on the same model', async () => {
      const r = await run(primary, [backup], scripted.hang(), ok('after the hang'));
      expect(r.outcome).toMatchObject({ status: 'completed', finalText: 'after the hang' });
      expect(slim(r.timeline)).toEqual([
        { model: primary, attempt: 1, kind: 'timeout', status: undefined, backoffMs: 500 },
        { model: primary, attempt: 2, kind: 'ok', status: undefined, backoffMs: undefined },
      ]);
      // The attempt lasted as long as the provider timeout, not longer.
      expect(r.timeline[0].durationMs).toBeGreaterThanOrEqual(PROVIDER_TIMEOUT_MS - 20);
      expect(r.timeline[0].durationMs).toBeLessThan(PROVIDER_TIMEOUT_MS + 2000);
      expect(r.sleeps).toEqual([500]);
      expect(r.timeline[0]).toMatchObject({
        outcome: 'retrying',
        transportDiagnostics: { stage: 'timeout' },
      });
      expect(r.timeline[1]).toMatchObject({
        outcome: 'succeeded',
        usage: { inputTokens: 40, outputTokens: 6 },
      });
    });

    it('a malformed response is an invalid response: no retry on the same model, straight to the fallback', async () => {
      // The SDKs' stream parsers log the unparsable frame before they throw: quiet clients for this case.
      engine = withQuietSdks(makeEngine);
      const r = await run(primary, [backup], scripted.malformed(), ok());
      expect(r.outcome).toMatchObject({ status: 'completed', finalText: 'done' });
      expect(slim(r.timeline)).toEqual([
        { model: primary, attempt: 1, kind: 'invalid_response', status: undefined, backoffMs: undefined },
        { model: backup, attempt: 1, kind: 'ok', status: undefined, backoffMs: undefined },
      ]);
      expect(r.sleeps).toEqual([]);
      expect(r.timeline[0]).toMatchObject({
        outcome: 'fail_fast_aborted',
        disposition: 'fail_fast',
        advancedToFallback: true,
        transportDiagnostics: { stage: 'decode' },
      });
    });

    it('context length exceeded ends the turn as failed, with a brief and no fallback', async () => {
      const tooLong =
        kind === 'anthropic' ? scripted.anthropicPromptTooLong() : scripted.openAiContextLengthExceeded();
      const r = await run(primary, [backup], tooLong);
      expect(r.outcome).toMatchObject({ status: 'failed', stopReason: 'context_length_exceeded' });
      expect(r.outcome.failure).toMatchObject({ kind: 'context_length_exceeded', model: primary });
      expect(r.outcome.failure?.brief).toContain(primary);
      expect(r.outcome.failure?.message).toMatch(/context length|prompt is too long/);
      expect(slim(r.timeline)).toEqual([
        { model: primary, attempt: 1, kind: 'context_length', status: 400, backoffMs: undefined },
      ]);
      expect(r.wire).toEqual([primary]);
      expect(r.rounds).toEqual([]);
      expect(r.sleeps).toEqual([]);
    });

    it('everything fails: a provider_error naming the models, with every attempt on the timeline', async () => {
      const r = await run(
        primary,
        [backup],
        scripted.error(500),
        scripted.error(500),
        scripted.error(500),
        scripted.error(401),
      );
      expect(r.outcome).toMatchObject({ status: 'failed', stopReason: 'provider_error', finalText: '' });
      expect(r.outcome.failure).toMatchObject({
        kind: 'provider_error',
        category: 'transport',
        failureKind: 'auth',
        provider: kind,
        status: 401,
        model: backup,
        sourceChain: [expect.any(String)],
      });
      // The failed round's whole timeline travels with the artifact.
      expect(r.outcome.failure?.attempts).toEqual(r.timeline);
      expect(r.outcome.failure?.brief).toContain(primary);
      expect(r.outcome.failure?.brief).toContain(backup);
      expect(slim(r.timeline)).toEqual([
        { model: primary, attempt: 1, kind: 'server', status: 500, backoffMs: 500 },
        { model: primary, attempt: 2, kind: 'server', status: 500, backoffMs: 1000 },
        { model: primary, attempt: 3, kind: 'server', status: 500, backoffMs: undefined },
        { model: backup, attempt: 1, kind: 'auth', status: 401, backoffMs: undefined },
      ]);
      expect(r.rounds).toEqual([]);
      expect(r.failedAttempts).toHaveLength(1);
      expect(r.sleeps).toEqual([500, 1000]);
      // The timeline says what the engine decided after each attempt, and who served it.
      expect(r.timeline.map((a) => [a.outcome, a.disposition, a.advancedToFallback])).toEqual([
        ['retrying', 'retryable', false],
        ['retrying', 'retryable', false],
        ['retries_exhausted', 'retryable', true],
        ['fail_fast_aborted', 'fail_fast', false],
      ]);
      expect(r.timeline.every((a) => a.provider === kind && a.maxAttempts === 3)).toBe(true);
      // Transport diagnostics tell where each attempt failed, with the SDK's error chain.
      expect(r.timeline[0].transportDiagnostics).toMatchObject({
        stage: 'http_status',
        provider: kind,
        status: 500,
        sourceChain: [expect.stringMatching(/Error: /)],
      });
      // The brief tells each model's story: retry exhaustion stays visible though auth failed last.
      expect(r.outcome.failure?.brief).toContain(
        `${primary}: retries exhausted after 3 attempts (server, HTTP 500)`,
      );
      expect(r.outcome.failure?.brief).toContain(`${backup}: failed fast after 1 attempt (auth, HTTP 401)`);
    });
  });

  it.each<[Kind, Kind]>([
    ['openai', 'anthropic'],
    ['anthropic', 'openai-chat'],
  ])('falls back across providers: %s primary 401 → %s fallback answers', async (from, to) => {
    const r = await run(`${from}/primary`, [`${to}/backup`], scripted.error(401), ok('other vendor'));
    expect(r.outcome).toMatchObject({ status: 'completed', finalText: 'other vendor' });
    expect(slim(r.timeline)).toEqual([
      { model: `${from}/primary`, attempt: 1, kind: 'auth', status: 401, backoffMs: undefined },
      { model: `${to}/backup`, attempt: 1, kind: 'ok', status: undefined, backoffMs: undefined },
    ]);
    expect(server.requests.map((q) => q.endpoint)).toEqual([ENDPOINT[from], ENDPOINT[to]]);
    expect(r.rounds[0]).toMatchObject({
      model: `${to}/backup`,
      provider: to,
      response: { usage: NEUTRAL_USAGE },
    });
    // Both SDKs stream.
    expect(server.requests.every((q) => q.stream)).toBe(true);
  });
});
