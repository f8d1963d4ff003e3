import OpenAI from 'openai';
import {
  createTestEnv,
  crossRealmSafeFetch,
  spawnApp,
  spawnGateway,
  startTestRedisCluster,
  waitFor,
  type AppProcess,
  type TestEnv,
  type TestRedisCluster,
} from '@switchboard/testing';
import { controlChannel } from '@switchboard/live';
import { revocationChannel } from '../../apps/gateway/src/platform/auth/key-revocations';
import { Api, newTenant } from '../support/api';
import { SseClient } from '../support/sse';
import { FIXTURES } from '../support/stack';

/**
 * Switchboard on a Redis Cluster of 3 masters and 3 replicas (docs/adr/0043), started by
 * `scripts/redis-cluster.sh`: two gateways, a harness worker and a hooks worker whose Redis is the
 * cluster (REDIS_CLUSTER_NODES, a hash-tagged QUEUE_PREFIX). Through the public HTTP API: tool turns
 * with wait:true, a turn's SSE stream, a chat completion through the openai client, an API key
 * revoked on one gateway refused by the other (the fan-out), a rate-limit bucket answering 429 on
 * both; then the master holding Switchboard's slot is killed (SIGKILL) with turns in flight: its
 * replica is promoted and every turn completes exactly once. Without redis-server (7+) or when the
 * cluster cannot start here, the file skips.
 *
 * The apps run as processes of their own: a BullMQ worker's close after a failover can wait on the
 * dead node for good (ADR 0043), and a process that does not stop when told is killed, so no client
 * of a stopped cluster is left retrying in the test runner.
 */
jest.setTimeout(120_000);

const ADMIN = 'test-admin-token-0123456789';

const setup = startTestRedisCluster();
if ('skip' in setup) console.warn(`test/e2e/redis-cluster.e2e.spec.ts skipped: ${setup.skip}`);

/** `promise`, or a rejection naming the step when it has not settled within `ms`. */
async function step<T>(what: string, promise: Promise<T>, ms = 15_000): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  try {
    return await Promise.race([
      promise,
      new Promise<never>((_, reject) => {
        timer = setTimeout(() => reject(new Error(`${what} took longer than ${ms} ms`)), ms);
      }),
    ]);
  } finally {
    clearTimeout(timer);
  }
}

/** Resolves when `promise` settles or after `ms`, whichever is first. */
const bounded = (promise: Promise<unknown>, ms: number) =>
  Promise.race([promise.catch(() => undefined), new Promise((resolve) => setTimeout(resolve, ms).unref())]);

interface Running {
  close(): Promise<void>;
}

/** An app process that stops on SIGTERM, or is killed when it has not stopped within 8 s. */
const running = <T extends AppProcess>(p: T): T & Running =>
  Object.assign(p, {
    async close() {
      await bounded(p.kill('SIGTERM'), 8_000);
      await p.kill('SIGKILL');
    },
  });

('skip' in setup ? describe.skip : describe)('Switchboard on a Redis Cluster', () => {
  const cluster = setup as TestRedisCluster;
  const { ports, cli } = cluster;
  let env: TestEnv;
  const apps: Running[] = [];
  let urls: [string, string];
  let api: Api;
  let tenantId: string;
  let counter: string;
  let prefix: string;
  let processEnv: NodeJS.ProcessEnv;
  let harness: Running;
  let hooksWorker: Running;

  beforeAll(async () => {
    env = await createTestEnv();
    prefix = `{${env.queuePrefix}}`;
    processEnv = env.processEnv({
      REDIS_CLUSTER_NODES: ports.map((p) => `127.0.0.1:${p}`).join(','),
      QUEUE_PREFIX: prefix,
      SCRIPTED_FIXTURES_DIR: FIXTURES,
      // Turns whose job a failover lost are found in Postgres and enqueued again (ADR 0043).
      RECONCILE_INTERVAL_MS: '1000',
      HOOKS_RECONCILE_GRACE_MS: '2000',
      API_KEY_CACHE_MS: '600000',
    });
    const [a, b, h, hooks] = await Promise.all([
      spawnGateway(processEnv).then(running),
      spawnGateway(processEnv).then(running),
      spawnApp('harness-worker', processEnv).then(running),
      spawnApp('hooks-worker', processEnv).then(running),
    ]);
    harness = h;
    hooksWorker = hooks;
    apps.push(a, b, harness, hooks);
    urls = [a.url, b.url];
    ({ api, tenantId } = await newTenant(a.url, ADMIN));
    const agent = await api.post('/v1/agents', {
      name: 'counter',
      instructions: 'Count words.',
      tools: ['word_count'],
    });
    expect(agent.status).toBe(201);
    counter = agent.body.id;
  });

  afterAll(async () => {
    try {
      // Workers first so nothing is mid-flight when the connections go; bounded, as a close after a
      // failover can hang in BullMQ (see the last test).
      const gateways = apps.filter((app): boolean => 'url' in app);
      await Promise.all(
        apps.filter((app) => !gateways.includes(app)).map((app) => bounded(app.close(), 8_000)),
      );
      await Promise.all(gateways.map((app) => bounded(app.close(), 8_000)));
    } finally {
      cluster.stop();
      await env?.cleanup();
    }
  }, 60_000);

  /** The master that serves Switchboard's hash slot now, and its process id. */
  const slotOwner = () => cluster.slotOwner(prefix);

  /** Subscribers of a classic channel across the cluster (each node counts its own clients). */
  function subscribers(channel: string): number {
    let total = 0;
    for (const p of ports) {
      try {
        total += Number(cli(p, 'pubsub', 'numsub', channel).split('\n')[1] ?? 0);
      } catch {
        // A node that is down has none.
      }
    }
    return total;
  }

  /** Harness control channels subscribed across the cluster (one per harness process). */
  function controlChannels(): number {
    let total = 0;
    for (const p of ports) {
      try {
        total += cli(p, 'pubsub', 'channels', controlChannel(prefix, '*')).split('\n').filter(Boolean).length;
      } catch {
        // A node that is down has none.
      }
    }
    return total;
  }

  const newSession = async (agentId = counter) => {
    const res = await api.post('/v1/sessions', { agentId });
    expect(res.status).toBe(201);
    return res.body.id as string;
  };

  async function expectTurnWithToolCall(turnId: string, words: number) {
    const turn = (await api.get(`/v1/turns/${turnId}`)).body;
    expect(turn).toMatchObject({ status: 'completed', stopReason: 'final_answer' });
    expect(turn.finalText).toContain(`"words":${words}`);
    expect(turn.toolCalls).toEqual([
      expect.objectContaining({
        name: 'word_count',
        status: 'completed',
        result: expect.objectContaining({ words }),
      }),
    ]);
  }

  /** A session's turns, each once and completed, with their rows and events each once. */
  async function expectSessionOnce(sessionId: string, turnIds: string[]) {
    const rows = await env.db.turn.findMany({ where: { sessionId } });
    expect(rows.map((t) => t.id).sort()).toEqual([...turnIds].sort());
    expect(rows.every((t) => t.status === 'completed')).toBe(true);
    // Each turn: the user's message, the call, its result, the answer.
    expect(await env.db.message.count({ where: { sessionId } })).toBe(turnIds.length * 4);
    expect(await env.db.toolCall.count({ where: { turnId: { in: turnIds } } })).toBe(turnIds.length);
    const events = (await api.get(`/v1/sessions/${sessionId}/events?limit=500`)).body.data as {
      seq: number;
      type: string;
    }[];
    expect(events.map((e) => e.seq)).toEqual(events.map((_, i) => i + 1));
    for (const type of ['message_admitted', 'turn_started', 'turn_completed']) {
      expect(events.filter((e) => e.type === type)).toHaveLength(turnIds.length);
    }
  }

  const hookRuns = (turnIds: string[]) =>
    env.db.hookRun.count({ where: { turnId: { in: turnIds }, hook: 'cost-log' } });

  it('keeps every key of the deployment in its hash slot on one master', async () => {
    // Words no later turn repeats: memory recall (the archivist's records) would add to a later count.
    const sessionId = await newSession();
    const res = await api.post(`/v1/sessions/${sessionId}/messages`, {
      content: 'alpha beta gamma',
      wait: true,
    });
    expect(res.status).toBe(200);
    expect(res.body.status).toBe('completed');
    const owner = slotOwner();
    const slot = cli(owner.port, 'cluster', 'keyslot', prefix);
    expect(Number(cli(owner.port, 'cluster', 'countkeysinslot', slot))).toBeGreaterThan(0);
    // BullMQ's keys of the turns queue are there, under the tagged prefix.
    expect(cli(owner.port, 'exists', `${prefix}:turns:meta`)).toBe('1');
  });

  it('runs tool turns with wait:true, streams a turn over SSE and answers a chat completion', async () => {
    const sessionId = await newSession();
    const first = await api.post(`/v1/sessions/${sessionId}/messages`, {
      content: 'one two three four',
      wait: true,
    });
    expect(first.status).toBe(200);
    await expectTurnWithToolCall(first.body.id, 4);

    // The turn's live events over SSE, from the second gateway.
    const admitted = await new Api(urls[1], api.key).post(`/v1/sessions/${sessionId}/messages`, {
      content: 'five six',
    });
    expect(admitted.status).toBe(202);
    const stream = await SseClient.open(`${urls[1]}/v1/turns/${admitted.body.turnId}/stream`, {
      key: api.key,
    });
    expect(stream.status).toBe(200);
    await stream.ended;
    const types = stream.journaled.map((f) => f.event);
    expect(types.filter((t) => t === 'turn_started')).toHaveLength(1);
    expect(types.at(-1)).toBe('turn_completed');
    expect(types).toContain('tool_call_completed');
    await expectTurnWithToolCall(admitted.body.turnId, 2);
    await expectSessionOnce(sessionId, [first.body.id, admitted.body.turnId]);

    const client = new OpenAI({
      baseURL: `${urls[0]}/v1`,
      apiKey: api.key!,
      fetch: crossRealmSafeFetch,
      maxRetries: 0,
    });
    const completion = await client.chat.completions.create({
      model: 'counter',
      messages: [{ role: 'user', content: 'seven eight nine' }],
    });
    expect(completion.object).toBe('chat.completion');
    expect(completion.choices[0].message.content).toContain('"words":3');

    await waitFor(async () => (await hookRuns([first.body.id, admitted.body.turnId])) === 2, {
      what: 'the cost-log hook of both turns',
    });
  });

  it('refuses a key revoked on one gateway at the other at once (the fan-out)', async () => {
    // Both gateways subscribed to the revocation channel, wherever their subscriber connections are.
    await waitFor(() => subscribers(revocationChannel(prefix)) === 2, { what: 'both gateways subscribed' });
    // The harness's control channel (cancels, interjections) too.
    await waitFor(() => controlChannels() === 1, { what: "the harness's control channel subscribed" });
    const created = await api.post('/v1/api-keys', { name: 'temp' });
    expect(created.status).toBe(201);
    const onB = new Api(urls[1], created.body.key);
    expect((await onB.get('/v1/agents')).status).toBe(200);
    // Gateway b caches the key for ten minutes: only the published eviction can refuse it this soon.
    expect((await api.delete(`/v1/api-keys/${created.body.id}`)).status).toBe(200);
    await waitFor(async () => (await onB.get('/v1/agents')).status === 401, {
      what: 'the revoke to reach gateway b',
      timeoutMs: 5_000,
    });
  });

  it('counts a rate-limit bucket across both gateways and answers 429', async () => {
    const limited = await newTenant(urls[0], ADMIN, 'limited');
    const set = await new Api(urls[0], ADMIN).patch(`/v1/admin/tenants/${limited.tenantId}/limits`, {
      reads: 3,
    });
    expect(set.status).toBe(200);
    const statuses: number[] = [];
    for (const url of [urls[0], urls[1], urls[0], urls[1]]) {
      statuses.push((await new Api(url, limited.api.key).get('/v1/agents')).status);
    }
    expect(statuses).toEqual([200, 200, 200, 429]);
    // Another tenant's count is its own.
    expect((await api.get('/v1/agents')).status).toBe(200);
    expect(tenantId).not.toBe(limited.tenantId);
  });

  it('completes every turn exactly once across a failover of the master (SIGKILL) under load', async () => {
    const sessions = await Promise.all([1, 2, 3, 4, 5, 6].map(() => newSession()));
    const admitted = new Map<string, string[]>(sessions.map((s) => [s, []]));
    const admit = async (sessionId: string, content: string) => {
      const res = await api.post(`/v1/sessions/${sessionId}/messages`, { content });
      expect(res.status).toBe(202);
      admitted.get(sessionId)!.push(res.body.turnId);
    };
    // Turns in flight: two per session, queued and running when the master dies.
    await Promise.all(sessions.map((s, i) => admit(s, 'w '.repeat(i + 1).trim())));
    // A client waiting on a turn through the live channel while the failover happens.
    const waiting = api.post(`/v1/sessions/${sessions[0]}/messages`, { content: 'waiting here', wait: 30 });
    await Promise.all(sessions.slice(1).map((s) => admit(s, 'again and again')));

    const before = slotOwner();
    cluster.kill(before.port);
    // Its replica is promoted once the others mark it failed (cluster-node-timeout 2 s).
    const after = await waitFor(
      () => {
        try {
          const owner = slotOwner();
          return owner.port !== before.port ? owner : undefined;
        } catch {
          return undefined;
        }
      },
      { what: "the replica promoted to the slot's master", timeoutMs: 30_000 },
    );
    expect(after.port).not.toBe(before.port);

    const waited = await waiting;
    // 200 with the completed turn; a 202 when the wait outlasted its bound is no loss either.
    expect([200, 202]).toContain(waited.status);
    admitted.get(sessions[0])!.push(waited.body.id ?? waited.body.turnId);

    const all = [...admitted.values()].flat();
    await waitFor(
      async () =>
        (await env.db.turn.count({ where: { id: { in: all }, status: 'completed' } })) === all.length,
      { what: 'every admitted turn completed after the failover', timeoutMs: 40_000 },
    );
    for (const [sessionId, turnIds] of admitted) await expectSessionOnce(sessionId, turnIds);
    await waitFor(async () => (await hookRuns(all)) === all.length, {
      what: 'one cost-log hook run per turn',
      timeoutMs: 20_000,
    });

    // After the failover: a new turn waits through the live channel, and the fan-out still works.
    const next = await api.post(`/v1/sessions/${sessions[1]}/messages`, {
      content: 'after the failover',
      wait: true,
    });
    expect(next.status).toBe(200);
    expect(next.body.status).toBe('completed');
    await waitFor(() => subscribers(revocationChannel(prefix)) === 2, {
      what: 'both gateways subscribed again',
    });
    await waitFor(() => controlChannels() === 1, { what: "the harness's control channel subscribed again" });

    // The killed node comes back and rejoins as the new master's replica (the next test needs one).
    cluster.restart(before.port);
    await waitFor(() => cluster.replicaOf(after.port), {
      what: 'the old master in sync as the new one’s replica',
      timeoutMs: 30_000,
    });
  });

  it('runs turns whose jobs the failover lost once, found in Postgres by the reconcile', async () => {
    // Loss made certain: the slot's replica stops replicating (it cannot log in to its master any
    // more), turns are admitted while no harness runs (their jobs are on the master only), then the
    // master is killed and the stale replica takes over.
    const owner = slotOwner();
    const replica = cluster.replicaOf(owner.port)!;
    expect(replica).toBeDefined();
    cli(replica, 'config', 'set', 'masteruser', 'nobody');
    cli(replica, 'config', 'set', 'masterauth', 'wrong');
    cli(replica, 'client', 'kill', 'type', 'master');
    await waitFor(() => cli(replica, 'info', 'replication').includes('master_link_status:down'), {
      what: 'the replica cut off from its master',
    });
    // The workers that lived through the first failover stop here and fresh ones start after this one.
    // After a failover BullMQ's Worker.close() can wait on a connection to the dead node for good
    // (ADR 0043, Consequences); it stops taking jobs first, which is all this test needs: the
    // turns below stay queued (asserted) until the new harness runs them. The hooks worker is
    // replaced too: one that lived through both failovers was seen taking no job after the second
    // (a fresh-clone CI run: its last job before the kill, none of the 15 hook jobs the new
    // harness's reconcile re-published after it; ADR 0043, Consequences).
    for (const app of [harness, hooksWorker]) apps.splice(apps.indexOf(app), 1);
    await Promise.all([bounded(harness.close(), 8_000), bounded(hooksWorker.close(), 8_000)]);

    const sessionId = await newSession();
    const admitted: string[] = [];
    for (const content of ['lost one', 'lost one two', 'lost one two three']) {
      const res = await step('an admission', api.post(`/v1/sessions/${sessionId}/messages`, { content }));
      expect(res.status).toBe(202);
      admitted.push(res.body.turnId);
    }
    for (const turnId of admitted) expect(cli(owner.port, 'exists', `${prefix}:turns:${turnId}`)).toBe('1');

    cluster.kill(owner.port);
    await waitFor(
      () => {
        try {
          return slotOwner().port === replica;
        } catch {
          return false;
        }
      },
      { what: 'the stale replica promoted', timeoutMs: 30_000 },
    );
    // The jobs are gone: the promoted replica never received them.
    for (const turnId of admitted) expect(cli(replica, 'exists', `${prefix}:turns:${turnId}`)).toBe('0');
    expect(await env.db.turn.count({ where: { id: { in: admitted }, status: 'queued' } })).toBe(3);

    // A harness starts; its reconcile finds the queued turns in Postgres and enqueues them again.
    [harness, hooksWorker] = await step(
      'starting a harness and a hooks worker',
      Promise.all([
        spawnApp('harness-worker', processEnv).then(running),
        spawnApp('hooks-worker', processEnv).then(running),
      ]),
      60_000,
    );
    apps.push(harness, hooksWorker);
    await waitFor(
      async () =>
        (await env.db.turn.count({ where: { id: { in: admitted }, status: 'completed' } })) ===
        admitted.length,
      { what: 'the lost turns completed', timeoutMs: 30_000 },
    );
    await expectSessionOnce(sessionId, admitted);
    await waitFor(async () => (await hookRuns(admitted)) === admitted.length, {
      what: 'one cost-log hook run per recovered turn',
      timeoutMs: 20_000,
    }).catch(async (error: Error) => {
      // Once seen in CI (not reproduced here): say what the hooks had written, so the next one tells.
      const runs = await env.db.hookRun.findMany({
        where: { turnId: { in: admitted } },
        select: { turnId: true, hook: true, status: true },
      });
      const turns = await env.db.turn.findMany({
        where: { id: { in: admitted } },
        select: { id: true, status: true, completedAt: true, hooksSettledAt: true },
      });
      throw new Error(`${error.message}; hook runs ${JSON.stringify(runs)}; turns ${JSON.stringify(turns)}`);
    });
  });
});
