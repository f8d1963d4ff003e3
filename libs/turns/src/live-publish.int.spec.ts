import { Admission } from '@switchboard/admission';
import { createDatabase, poolOf } from '@switchboard/database';
import { TurnEngine } from '@switchboard/engine';
import {
  LiveSubscriber,
  RedisLivePublisher,
  type LiveEphemeralEvent,
  type LiveMessage,
  type LivePublisher,
  type LiveTurnDetail,
  type PublishableEvent,
} from '@switchboard/live';
import { Metrics } from '@switchboard/observability';
import {
  ProviderRegistry,
  type ModelProvider,
  type ModelRequest,
  type ModelResponse,
} from '@switchboard/providers';
import { readTurn, sqlDbFor, turnDetailOf, type TurnDetailJson } from '@switchboard/store';
import { ToolRegistry } from '@switchboard/tools';
import {
  countPoolTransactions,
  operatorPrompt,
  seedSession,
  seedTenant,
  startHarness,
  waitFor,
  wordCountTool,
  type HarnessFixture,
  type TestEnv,
} from '@switchboard/testing';
import { TurnRunner } from './runner';

/**
 * What a turn publishes on the live channel (docs/adr/0015) against real Postgres: every event it
 * commits, once, after its commit, with the journal row's id and seq; before each commit the round's
 * start and the streamed text as ephemeral events carrying the same ids; and no transaction more.
 */
jest.setTimeout(120_000);

const USAGE = { inputTokens: 10, outputTokens: 5, cachedTokens: 0 };

/** A word_count call first, then an answer streamed in three chunks. */
class Streaming implements ModelProvider {
  readonly name = 'streaming';
  async complete(request: ModelRequest): Promise<ModelResponse> {
    if (request.messages.at(-1)?.role !== 'tool') {
      return {
        text: '',
        toolCalls: [{ id: 'c1', name: 'word_count', arguments: '{"text":"a b c"}' }],
        usage: USAGE,
        finishReason: 'tool_calls',
      };
    }
    for (const chunk of ['three ', 'words', '.']) {
      request.onTextDelta?.(chunk);
      await new Promise((resolve) => setTimeout(resolve, 5));
    }
    return { text: 'three words.', toolCalls: [], usage: USAGE, finishReason: 'stop' };
  }
}

const isEphemeral = (e: PublishableEvent): e is Omit<LiveEphemeralEvent, 'createdAt'> =>
  'ephemeral' in e && e.ephemeral === true;

/** Every batch, in order; one subscriber hears them. */
class Recorder implements LivePublisher {
  readonly batches: PublishableEvent[][] = [];
  async publish(_: string, events: readonly PublishableEvent[]): Promise<void> {
    this.batches.push([...events]);
  }
  async publishCounted(_: string, events: readonly PublishableEvent[]): Promise<number> {
    this.batches.push([...events]);
    return 1;
  }
}

describe('live publishing of a turn', () => {
  let h: HarnessFixture;
  let env: TestEnv;
  const tools = new ToolRegistry([wordCountTool]);

  beforeAll(async () => {
    h = await startHarness();
    env = h.env;
  });

  afterAll(() => h?.close());

  it('publishes every committed event once, after its commit, and the round starts and text before', async () => {
    const { tenantId, agentId } = await seedTenant(env.db, 'live', {
      model: 'streaming/m',
      tools: ['word_count'],
    });
    const sessionId = await seedSession(env.db, tenantId, agentId);
    const admissionLive = new Recorder();
    const { turnId } = await new Admission(env.db, h.turnsQueue, h.logger, { live: admissionLive }).admit(
      operatorPrompt({ tenantId, sessionId }, 'count a b c'),
    );

    const live = new Recorder();
    const { prisma, pool } = createDatabase(env.databaseUrl, { poolSize: 2 });
    const sent = countPoolTransactions(pool);
    try {
      const runner = new TurnRunner({
        ...h.runnerDeps({ db: prisma, metrics: new Metrics('live'), workerId: 'live' }),
        engine: new TurnEngine({ providers: new ProviderRegistry({}, [new Streaming()]), tools }),
        tools,
        defaultModel: 'streaming/m',
        live,
        liveDeltaFlushMs: 0,
      });
      expect(await runner.handle({ turnId, sessionId, tenantId, trace: {} })).toBe('done');
    } finally {
      await prisma.$disconnect();
    }
    // Publishing costs no transaction: the commits return their events.
    expect(sent.transactions).toBeLessThanOrEqual(4);

    const journal = await env.db.event.findMany({ where: { sessionId }, orderBy: { seq: 'asc' } });
    const row = (e: { id: string; seq: number; type: string; turnId: string | null; data: unknown }) => ({
      id: e.id,
      seq: e.seq,
      type: e.type,
      turnId: e.turnId,
      data: e.data,
    });
    // The admission's event from the gateway side, the turn's from the harness: the journal, once each.
    const committed = [...admissionLive.batches, ...live.batches].flat().filter((e) => !isEphemeral(e));
    expect(committed.map((e) => row(e as Parameters<typeof row>[0]))).toEqual(journal.map(row));

    // Before each commit, its round's start and the streamed text, carrying the ids of their rows.
    const ephemeral = live.batches.flat().filter(isEphemeral);
    const byId = new Map(journal.map((e) => [e.id, e]));
    const starts = ephemeral.filter((e) => e.type === 'provider_round_started');
    expect(starts).toHaveLength(2);
    for (const e of ephemeral) expect(byId.get(e.id!)?.type).toBe(e.type);
    const text = ephemeral.filter((e) => e.type === 'text_delta');
    expect(text.map((e) => e.data.text).join('')).toBe('three words.');
    expect(text.map((e) => e.offset)).toEqual([0, 6, 11].slice(0, text.length));
    // Each ephemeral event went out before the batch that committed it.
    const batchOf = (id: string, ephemeralCopy: boolean) =>
      live.batches.findIndex((b) => b.some((e) => e.id === id && isEphemeral(e) === ephemeralCopy));
    for (const e of ephemeral) expect(batchOf(e.id!, true)).toBeLessThan(batchOf(e.id!, false));
    // The end carries the turn as `readTurn` reads it (docs/adr/0071): a waiting request needs no read.
    const end = live.batches.flat().find((e) => e.type === 'turn_completed') as { turn?: LiveTurnDetail };
    expect(end.turn && 'row' in end.turn).toBe(true);
    const carried = turnDetailOf((end.turn as { row: TurnDetailJson }).row);
    const read = await readTurn(sqlDbFor(poolOf(env.db), 'test'), tenantId, turnId);
    expect(JSON.stringify(carried)).toBe(JSON.stringify(read));
    expect(carried.toolCalls).toHaveLength(1);
    // provider_round_started is journaled with the round, and says when the call started.
    const journaledStart = journal.find((e) => e.type === 'provider_round_started')!;
    expect(new Date((journaledStart.data as { startedAt: string }).startedAt).getTime()).toBeLessThanOrEqual(
      journaledStart.createdAt.getTime(),
    );
  });

  it('an end whose finalisation step failed (recorded on the turn after the commit) says to read the turn', async () => {
    const { tenantId, agentId } = await seedTenant(env.db, 'live-step', {
      model: 'streaming/m',
      tools: ['word_count'],
    });
    const sessionId = await seedSession(env.db, tenantId, agentId);
    const { turnId } = await h.admission.admit(operatorPrompt({ tenantId, sessionId }, 'count a b c'));
    const live = new Recorder();
    const runner = new TurnRunner({
      ...h.runnerDeps(),
      engine: new TurnEngine({ providers: new ProviderRegistry({}, [new Streaming()]), tools }),
      tools,
      defaultModel: 'streaming/m',
      live,
      finalisationSteps: [
        {
          name: 'broken',
          run: async () => {
            throw new Error('step exploded');
          },
        },
      ],
    });
    expect(await runner.handle({ turnId, sessionId, tenantId, trace: {} })).toBe('done');
    const end = live.batches.flat().find((e) => e.type === 'turn_completed') as { turn?: LiveTurnDetail };
    expect(end.turn).toEqual({ read: 'changed' });
  });

  it('a reader that subscribes after the round started (late, as under load) hears the round whole at the next probe, then its text as it comes, before the commit', async () => {
    const { tenantId, agentId } = await seedTenant(env.db, 'late-reader', { model: 'late/m' });
    const sessionId = await seedSession(env.db, tenantId, agentId);
    const { turnId } = await h.admission.admit(operatorPrompt({ tenantId, sessionId }, 'talk slowly'));

    // The real channel; the first PUBLISH's answer (the round start: nobody subscribed) is awaited
    // before the reader subscribes — the delay load put between a turn's start and its stream's.
    const redis = new RedisLivePublisher(h.connection, { prefix: env.queuePrefix, logger: h.logger });
    const probed: Promise<number | undefined>[] = [];
    const publisher: LivePublisher = {
      publish: (id, events) => redis.publish(id, events),
      publishCounted: (id, events) => {
        const answer = redis.publishCounted(id, events);
        probed.push(answer);
        return answer;
      },
    };
    const subscriber = LiveSubscriber.connect(env.redisUrl, { prefix: env.queuePrefix, logger: h.logger });
    const heard: { at: number; events: LiveMessage[] }[] = [];
    const chunks = Array.from({ length: 12 }, (_, i) => `word${i} `);
    let streamedAt = 0;
    const provider: ModelProvider = {
      name: 'late',
      async complete(request: ModelRequest): Promise<ModelResponse> {
        expect(await probed[0]).toBe(0);
        const subscription = subscriber.listen(sessionId, {
          onEvents: (events) => heard.push({ at: Date.now(), events }),
          onResync: () => undefined,
        });
        expect(await subscription.ready).toBe(true);
        // Twelve chunks over 1.2 s, as a model streams them.
        for (const chunk of chunks) {
          request.onTextDelta?.(chunk);
          await new Promise((resolve) => setTimeout(resolve, 100));
        }
        streamedAt = Date.now();
        return { text: chunks.join(''), toolCalls: [], usage: USAGE, finishReason: 'stop' };
      },
    };
    try {
      const runner = new TurnRunner({
        ...h.runnerDeps(),
        engine: new TurnEngine({ providers: new ProviderRegistry({}, [provider]), tools }),
        tools,
        defaultModel: 'late/m',
        live: publisher,
      });
      expect(await runner.handle({ turnId, sessionId, tenantId, trace: {} })).toBe('done');
      await waitFor(() => heard.some((b) => b.events.some((e) => e.type === 'turn_completed')), {
        what: 'the end on the channel',
      });
    } finally {
      await subscriber.close();
    }

    // What the late reader heard before the commit: the round from its start (a probe carries it
    // whole, index 0 and offset 0), then the text as it came. A reader takes each character once.
    const commit = heard.findIndex((b) => b.events.some((e) => !('ephemeral' in e)));
    const before = heard.slice(0, commit);
    const text = before
      .flatMap((b) => b.events)
      .filter((e): e is LiveEphemeralEvent => 'ephemeral' in e && e.type === 'text_delta');
    expect(text.length).toBeGreaterThan(0);
    let shown = '';
    for (const e of text) {
      const chunk = e.data.text as string;
      const offset = e.offset ?? 0;
      expect(offset).toBeLessThanOrEqual(shown.length);
      shown += chunk.slice(shown.length - offset);
    }
    expect(chunks.join('')).toContain(shown);
    expect(shown.length).toBeGreaterThan(chunks.slice(0, 6).join('').length);
    // Live, not at the end: the first text reached the reader while the model was still streaming.
    const firstText = before.find((b) => b.events.some((e) => e.type === 'text_delta'))!;
    expect(firstText.at).toBeLessThan(streamedAt - 300);
    expect(before.flatMap((b) => b.events)[0]).toMatchObject({
      ephemeral: true,
      index: 0,
      type: 'turn_started',
    });
  });
});
