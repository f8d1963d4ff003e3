/**
 * Timeouts that bound a streamed attempt, not only its headers: a stream that stalls after its
 * first chunks, or one that keeps trickling past the attempt's total, is cut off, recorded as a
 * `timeout` on the attempt timeline and retried on the same model (seed 002), through the real
 * `openai` and `@anthropic-ai/sdk` clients against the local fake server.
 */
import {
  AnthropicProvider,
  OpenAIChatProvider,
  OpenAIResponsesProvider,
  ProviderRegistry,
  type ModelProvider,
  type StreamTimeouts,
} from '@switchboard/providers';
import { crossRealmSafeFetch, FakeLlmServer, scripted } from '@switchboard/testing';
import { ToolRegistry } from '@switchboard/tools';
import { TurnEngine } from './engine';
import { checkpoints, turnInput } from './test-support';
import type { RoundRecord } from './types';

type Kind = 'openai' | 'openai-chat' | 'anthropic';

function providers(server: FakeLlmServer, streamTimeouts: StreamTimeouts): ModelProvider[] {
  const openai = { apiKey: 'k', baseURL: server.openaiBaseUrl, timeoutMs: 5_000, streamTimeouts };
  return [
    new OpenAIResponsesProvider({ ...openai, fetch: crossRealmSafeFetch }),
    new OpenAIChatProvider({ ...openai, fetch: crossRealmSafeFetch }),
    new AnthropicProvider({
      apiKey: 'k',
      baseURL: server.anthropicBaseUrl,
      timeoutMs: 5_000,
      streamTimeouts,
    }),
  ];
}

describe.each<Kind>(['openai', 'openai-chat', 'anthropic'])('%s stream timeouts', (kind) => {
  let server: FakeLlmServer;
  const saved = { OPENAI_LOG: process.env.OPENAI_LOG, ANTHROPIC_LOG: process.env.ANTHROPIC_LOG };

  beforeAll(() => {
    process.env.OPENAI_LOG = 'off';
    process.env.ANTHROPIC_LOG = 'off';
  });
  afterAll(() => {
    for (const [k, v] of Object.entries(saved)) {
      if (v === undefined) delete process.env[k];
      else process.env[k] = v;
    }
  });
  beforeEach(async () => {
    server = await FakeLlmServer.start();
  });
  afterEach(async () => {
    await server.close();
  });

  async function run(timeouts: StreamTimeouts) {
    const sleeps: number[] = [];
    const engine = new TurnEngine({
      providers: new ProviderRegistry({}, providers(server, timeouts)),
      tools: new ToolRegistry(),
      sleep: async (ms) => void sleeps.push(ms),
    });
    const rounds: RoundRecord[] = [];
    const started = Date.now();
    const outcome = await engine.run(
      turnInput({ model: `${kind}/m` }),
      checkpoints({ recordRound: async (r) => void rounds.push(r) }),
      new AbortController().signal,
    );
    return { outcome, rounds, sleeps, elapsedMs: Date.now() - started };
  }

  it('cuts off a stream that stalls after its first chunk, records a timeout and retries', async () => {
    server.enqueue(
      { ...scripted.text('this answer never finishes'), stallAfterFrames: 2 },
      scripted.text('second try'),
    );
    const r = await run({ idleMs: 300, totalMs: 20_000 });

    expect(r.outcome).toMatchObject({ status: 'completed', finalText: 'second try' });
    const attempts = r.rounds[0].attempts;
    expect(attempts.map((a) => [a.attempt, a.outcome, a.failureKind])).toEqual([
      [1, 'retrying', 'timeout'],
      [2, 'succeeded', undefined],
    ]);
    expect(attempts[0]).toMatchObject({
      disposition: 'retryable',
      transportDiagnostics: { stage: 'timeout', provider: kind },
    });
    expect(attempts[0].message).toMatch(/sent nothing for 300 ms/);
    // Cut off near the idle bound, not left to hang.
    expect(attempts[0].durationMs).toBeLessThan(5_000);
    expect(r.sleeps).toEqual([500]);
    expect(server.requests).toHaveLength(2);
  });

  it('cuts off a live stream that runs past the attempt total', async () => {
    server.enqueue(
      // 20 text frames 300 ms apart: 6 s, well past the total on every wire; the second answer has
      // the same 2 s, which a loaded machine still meets (600 ms did not always).
      { ...scripted.text('a b c d e f g h i j k l m n o p'), textPieces: 20, frameIntervalMs: 300 },
      scripted.text('in time'),
    );
    const r = await run({ idleMs: 3_000, totalMs: 2_000 });

    expect(r.outcome).toMatchObject({ status: 'completed', finalText: 'in time' });
    const [first, second] = r.rounds[0].attempts;
    expect(first).toMatchObject({ outcome: 'retrying', failureKind: 'timeout' });
    expect(first.message).toMatch(/longer than 2000 ms/);
    expect(first.durationMs).toBeLessThan(5_000);
    expect(second.outcome).toBe('succeeded');
  });

  it('leaves a stream that keeps sending within its bounds alone', async () => {
    server.enqueue({ ...scripted.text('slow but steady words here'), frameIntervalMs: 50 });
    const r = await run({ idleMs: 1_000, totalMs: 20_000 });
    expect(r.outcome).toMatchObject({ status: 'completed', finalText: 'slow but steady words here' });
    expect(r.rounds[0].attempts.map((a) => a.outcome)).toEqual(['succeeded']);
  });
});
