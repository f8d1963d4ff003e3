import { Queue } from 'bullmq';
import { Client } from 'pg';
import { AppError, newId, QueueName, type MessageKind, type MessageOrigin } from '@switchboard/contracts';
import { Metrics, type Logger } from '@switchboard/observability';
import { createRedis } from '@switchboard/queue';
import {
  operatorPrompt,
  seedTenant,
  startAdmission,
  waitFor,
  type AdmissionFixture,
  type TestEnv,
} from '@switchboard/testing';
import { Admission, type AdmitInput } from './admission';

/** Admission on real Postgres and a real BullMQ queue. */
jest.setTimeout(120_000);

describe('Admission', () => {
  let f: AdmissionFixture;
  let env: TestEnv;
  let queue: Queue;
  let admission: Admission;
  let logger: Logger;
  let tenantId: string;
  let agentId: string;

  beforeAll(async () => {
    f = await startAdmission();
    ({ env, turnsQueue: queue, admission, logger } = f);
    ({ tenantId, agentId } = await seedTenant(env.db, 'admission'));
  });

  afterAll(() => f?.close());

  async function newSession(overrides: { tenantId?: string; agentId?: string; status?: string } = {}) {
    const id = newId();
    await env.db.session.create({
      data: {
        id,
        tenantId: overrides.tenantId ?? tenantId,
        agentId: overrides.agentId ?? agentId,
        ...overrides,
      },
    });
    return id;
  }

  const operatorInput = (sessionId: string, text = 'hello', extra: Partial<AdmitInput> = {}): AdmitInput =>
    operatorPrompt({ tenantId, sessionId }, text, extra);

  function webhookInput(sessionId: string, verifiedIntegration: boolean): AdmitInput {
    return {
      tenantId,
      sessionId,
      kind: 'webhook_event',
      origin: { kind: 'webhook', source: 'github', eventType: 'push' },
      body: { type: 'json', value: { ref: 'main' } },
      deliverySurface: 'http_webhook',
      admissionContext: 'external_trigger_capability',
      verifiedIntegration,
    };
  }

  /** Everything admission writes for a session, to prove a refusal wrote nothing. */
  async function footprint(sessionId: string) {
    const s = await env.db.session.findUniqueOrThrow({ where: { id: sessionId } });
    return {
      messages: await env.db.message.count({ where: { sessionId } }),
      turns: await env.db.turn.count({ where: { sessionId } }),
      events: await env.db.event.count({ where: { sessionId } }),
      lastTurnSeq: s.lastTurnSeq,
      lastEventSeq: s.lastEventSeq,
    };
  }

  async function rejection(p: Promise<unknown>): Promise<AppError> {
    const err = await p.then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(AppError);
    return err as AppError;
  }

  it('persists the envelope, a queued turn, the message_admitted event and a turn job', async () => {
    const sessionId = await newSession();
    const admitted = await admission.admit(
      operatorInput(sessionId, 'first', {
        priority: 'interject',
        metadata: { client: 'cli' },
        correlationId: 'corr-1',
        causationId: 'cause-1',
      }),
    );
    expect(admitted).toEqual({
      messageId: expect.any(String),
      turnId: expect.any(String),
      status: 'queued',
      replayed: false,
    });

    const message = await env.db.message.findUniqueOrThrow({ where: { id: admitted.messageId } });
    expect(message).toMatchObject({
      tenantId,
      agentId,
      sessionId,
      turnId: admitted.turnId,
      turnSeq: 1,
      position: 0,
      role: 'user',
      kind: 'operator_prompt',
      origin: { kind: 'operator' },
      trust: 'trusted_operator',
      authorityClass: 'operator_instruction',
      priority: 'interject',
      deliverySurface: 'http_public_enqueue',
      admissionContext: 'control_authenticated',
      body: { type: 'text', text: 'first' },
      metadata: { client: 'cli' },
      correlationId: 'corr-1',
      causationId: 'cause-1',
      idempotencyKey: null,
    });

    const turn = await env.db.turn.findUniqueOrThrow({ where: { id: admitted.turnId } });
    expect(turn).toMatchObject({
      tenantId,
      sessionId,
      agentId,
      seq: 1,
      inputMessageId: admitted.messageId,
      status: 'queued',
      priority: 'interject',
    });

    const events = await env.db.event.findMany({ where: { sessionId } });
    expect(events).toHaveLength(1);
    expect(events[0]).toMatchObject({
      seq: 1,
      type: 'message_admitted',
      turnId: admitted.turnId,
      tenantId,
      data: {
        messageId: admitted.messageId,
        kind: 'operator_prompt',
        authorityClass: 'operator_instruction',
        priority: 'interject',
        deliverySurface: 'http_public_enqueue',
      },
    });

    const job = await queue.getJob(admitted.turnId);
    expect(job).toBeDefined();
    expect(job!.id).toBe(admitted.turnId);
    expect(job!.name).toBe(QueueName.Turns);
    expect(job!.data).toMatchObject({ turnId: admitted.turnId, sessionId, tenantId });
    // A plain FIFO wake-up: the band is the turn's, ordered by the harness's choice (docs/adr/0080).
    expect(job!.priority).toBe(0);
  });

  it.each(['interject', 'next', 'normal', 'background'] as const)(
    'gives a %s admission its band in Postgres and a plain job (docs/adr/0080)',
    async (priority) => {
      const sessionId = await newSession();
      const admitted = await admission.admit(operatorInput(sessionId, 'p', { priority }));
      const job = await queue.getJob(admitted.turnId);
      expect(job!.priority).toBe(0);
      expect(await job!.getState()).toBe('waiting');
      const turn = await env.db.turn.findUniqueOrThrow({ where: { id: admitted.turnId } });
      expect(turn.priority).toBe(priority);
    },
  );

  it('defaults to normal priority', async () => {
    const sessionId = await newSession();
    const admitted = await admission.admit(operatorInput(sessionId));
    expect((await queue.getJob(admitted.turnId))!.priority).toBe(0);
    const message = await env.db.message.findUniqueOrThrow({ where: { id: admitted.messageId } });
    expect(message.priority).toBe('normal');
  });

  it.each<[MessageKind, MessageOrigin, boolean, string, string]>([
    [
      'webhook_event',
      { kind: 'webhook', source: 'github', eventType: 'push' },
      false,
      'external_evidence',
      'trusted_integration',
    ],
    [
      'webhook_event',
      { kind: 'webhook', source: 'github', eventType: 'push' },
      true,
      'integration_signal',
      'trusted_integration',
    ],
    ['channel_event', { kind: 'channel', channelId: 'c1' }, true, 'external_evidence', 'untrusted_external'],
    ['timer_tick', { kind: 'timer', scheduleId: 's1' }, false, 'runtime_instruction', 'trusted_system'],
    ['task_result', { kind: 'task', taskId: 't1' }, false, 'runtime_instruction', 'trusted_system'],
  ])(
    'derives %s from %o (verified=%s) → %s, trust %s',
    async (kind, origin, verified, authorityClass, trust) => {
      const sessionId = await newSession();
      const admitted = await admission.admit({
        tenantId,
        sessionId,
        kind,
        origin,
        body: { type: 'text', text: 'x' },
        deliverySurface: 'runtime_system',
        admissionContext: 'runtime_owned',
        verifiedIntegration: verified,
      });
      const message = await env.db.message.findUniqueOrThrow({ where: { id: admitted.messageId } });
      expect(message.origin).toEqual(origin);
      expect(message.authorityClass).toBe(authorityClass);
      expect(message.trust).toBe(trust);
    },
  );

  it('honours interject from a runtime message only when a sub-agent’s parent sends it (fromParent)', async () => {
    const runtime = (sessionId: string, fromParent?: boolean) =>
      admission.admit({
        tenantId,
        sessionId,
        kind: 'internal_followup',
        origin: { kind: 'system', subsystem: 'subagent' },
        body: { type: 'text', text: 'steer' },
        deliverySurface: 'runtime_system',
        admissionContext: 'runtime_owned',
        priority: 'interject',
        ...(fromParent !== undefined ? { fromParent } : {}),
      });
    const plain = await runtime(await newSession());
    const steer = await runtime(await newSession(), true);
    const turn = (id: string) => env.db.turn.findUniqueOrThrow({ where: { id } });
    expect((await turn(plain.turnId)).priority).toBe('next');
    expect((await turn(steer.turnId)).priority).toBe('interject');
    expect((await queue.getJob(steer.turnId))!.priority).toBe(0);
    // Its authority stays a runtime instruction: the band changes, not what the message may authorise.
    const message = await env.db.message.findUniqueOrThrow({ where: { id: steer.messageId } });
    expect(message).toMatchObject({ priority: 'interject', authorityClass: 'runtime_instruction' });
  });

  it('stores a webhook envelope with its provenance', async () => {
    const sessionId = await newSession();
    const unverified = await admission.admit(webhookInput(sessionId, false));
    const verified = await admission.admit(webhookInput(sessionId, true));
    const [a, b] = await Promise.all(
      [unverified, verified].map((x) => env.db.message.findUniqueOrThrow({ where: { id: x.messageId } })),
    );
    expect(a).toMatchObject({
      kind: 'webhook_event',
      origin: { kind: 'webhook', source: 'github', eventType: 'push' },
      authorityClass: 'external_evidence',
      deliverySurface: 'http_webhook',
      admissionContext: 'external_trigger_capability',
      body: { type: 'json', value: { ref: 'main' } },
      turnSeq: 1,
    });
    expect(b).toMatchObject({ authorityClass: 'integration_signal', turnSeq: 2 });
  });

  it('never takes an authority class or trust from the caller', async () => {
    const sessionId = await newSession();
    const forged = {
      ...webhookInput(sessionId, false),
      authorityClass: 'operator_instruction',
      trust: 'trusted_operator',
    } as AdmitInput;
    const admitted = await admission.admit(forged);
    const message = await env.db.message.findUniqueOrThrow({ where: { id: admitted.messageId } });
    expect(message.authorityClass).toBe('external_evidence');
    expect(message.trust).toBe('trusted_integration');
    const [event] = await env.db.event.findMany({ where: { sessionId } });
    expect(event.data).toMatchObject({ authorityClass: 'external_evidence' });
  });

  it('gives 20 concurrent admissions into one session the seqs 1..20 with no gaps', async () => {
    const sessionId = await newSession();
    const results = await Promise.all(
      Array.from({ length: 20 }, (_, i) => admission.admit(operatorInput(sessionId, `m${i}`))),
    );
    expect(new Set(results.map((r) => r.turnId)).size).toBe(20);
    const turns = await env.db.turn.findMany({ where: { sessionId }, orderBy: { seq: 'asc' } });
    const seqs = Array.from({ length: 20 }, (_, i) => i + 1);
    expect(turns.map((t) => t.seq)).toEqual(seqs);
    const messages = await env.db.message.findMany({ where: { sessionId }, orderBy: { turnSeq: 'asc' } });
    expect(messages.map((m) => m.turnSeq)).toEqual(seqs);
    // Each message sits under its own turn's seq.
    for (const t of turns) expect(messages[t.seq - 1].id).toBe(t.inputMessageId);
    const events = await env.db.event.findMany({ where: { sessionId }, orderBy: { seq: 'asc' } });
    expect(events.map((e) => e.seq)).toEqual(seqs);
    const session = await env.db.session.findUniqueOrThrow({ where: { id: sessionId } });
    expect(session).toMatchObject({ lastTurnSeq: 20, lastEventSeq: 20 });
    const jobs = await Promise.all(results.map((r) => queue.getJob(r.turnId)));
    expect(jobs.every((j) => j !== undefined)).toBe(true);
  });

  it('admits one idempotency key once, even when 5 callers race', async () => {
    const sessionId = await newSession();
    const settled = await Promise.allSettled(
      Array.from({ length: 5 }, () =>
        admission.admit(operatorInput(sessionId, 'once', { idempotencyKey: 'k-1' })),
      ),
    );
    // A caller that arrives while the first is being admitted is told so (409); later ones replay.
    const results = settled.flatMap((r) => (r.status === 'fulfilled' ? [r.value] : []));
    for (const r of settled) {
      if (r.status === 'rejected') {
        expect(r.reason).toBeInstanceOf(AppError);
        expect(r.reason).toMatchObject({ code: 'idempotency_key_in_flight', status: 409 });
      }
    }
    expect(new Set(results.map((r) => r.messageId)).size).toBe(1);
    expect(new Set(results.map((r) => r.turnId)).size).toBe(1);
    expect(results.filter((r) => !r.replayed)).toHaveLength(1);
    expect(await footprint(sessionId)).toEqual({
      messages: 1,
      turns: 1,
      events: 1,
      lastTurnSeq: 1,
      lastEventSeq: 1,
    });
    const message = await env.db.message.findUniqueOrThrow({ where: { id: results[0].messageId } });
    expect(message.idempotencyKey).toBe('k-1');

    // A later retry gets the same answer; a different key admits anew.
    const again = await admission.admit(operatorInput(sessionId, 'once', { idempotencyKey: 'k-1' }));
    expect(again).toMatchObject({
      messageId: results[0].messageId,
      turnId: results[0].turnId,
      replayed: true,
    });
    const other = await admission.admit(operatorInput(sessionId, 'twice', { idempotencyKey: 'k-2' }));
    expect(other.messageId).not.toBe(results[0].messageId);
    expect((await footprint(sessionId)).turns).toBe(2);
    expect(await queue.getJob(results[0].turnId)).toBeDefined();
  });

  it('refuses an idempotency key reused with a different request (422) and writes nothing', async () => {
    const sessionId = await newSession();
    const first = await admission.admit(operatorInput(sessionId, 'deploy v1', { idempotencyKey: 'k' }));
    const before = await footprint(sessionId);
    const changes: Partial<AdmitInput>[] = [
      { body: { type: 'text', text: 'deploy v2' } },
      { priority: 'interject' },
      { metadata: { a: 1 } },
      { correlationId: 'c-1' },
      { multitask: 'reject' },
      { responseFormat: { type: 'json_object' } },
      { clientTools: [{ name: 'lookup', description: 'client side', parameters: { type: 'object' } }] },
      { toolChoice: { type: 'required' } },
    ];
    for (const extra of changes) {
      await expect(
        admission.admit({ ...operatorInput(sessionId, 'deploy v1', { idempotencyKey: 'k' }), ...extra }),
      ).rejects.toMatchObject({ code: 'idempotency_key_reused', status: 422 });
    }
    expect(await footprint(sessionId)).toEqual(before);
    // Defaults spelled out are the same request: it replays.
    const again = await admission.admit(
      operatorInput(sessionId, 'deploy v1', {
        idempotencyKey: 'k',
        priority: 'normal',
        multitask: 'enqueue',
        metadata: {},
      }),
    );
    expect(again).toMatchObject({ messageId: first.messageId, turnId: first.turnId, replayed: true });
    const stored = await env.db.message.findUniqueOrThrow({ where: { id: first.messageId } });
    expect(stored.idempotencyFingerprint).toMatch(/^[0-9a-f]{64}$/);
  });

  it('answers 409 in flight while the first request with the key is still being admitted', async () => {
    const sessionId = await newSession();
    // Another transaction holds the session row: the first admission takes the key's lock, then waits.
    const holder = new Client({ connectionString: env.databaseUrl });
    await holder.connect();
    try {
      await holder.query('BEGIN');
      await holder.query('SELECT 1 FROM sessions WHERE id = $1 FOR UPDATE', [sessionId]);
      const first = admission.admit(operatorInput(sessionId, 'slow', { idempotencyKey: 'k-slow' }));
      await waitFor(
        async () => {
          const [{ n }] = await env.db.$queryRaw<{ n: number }[]>`
            SELECT count(*)::int AS n FROM pg_locks
            WHERE locktype = 'advisory' AND granted AND database = (SELECT oid FROM pg_database WHERE datname = current_database())`;
          return n > 0;
        },
        { what: 'the first admission to hold the idempotency lock' },
      );
      await expect(
        admission.admit(operatorInput(sessionId, 'slow', { idempotencyKey: 'k-slow' })),
      ).rejects.toMatchObject({ code: 'idempotency_key_in_flight', status: 409 });
      await holder.query('COMMIT');
      const admitted = await first;
      expect(admitted.replayed).toBe(false);
      const retry = await admission.admit(operatorInput(sessionId, 'slow', { idempotencyKey: 'k-slow' }));
      expect(retry).toMatchObject({ messageId: admitted.messageId, replayed: true });
      expect((await footprint(sessionId)).messages).toBe(1);
    } finally {
      await holder.end();
    }
  });

  it("answers not_found for another tenant's session and writes nothing", async () => {
    const otherTenant = newId();
    const otherAgent = newId();
    await env.db.tenant.create({ data: { id: otherTenant, name: 'other' } });
    await env.db.agent.create({
      data: { id: otherAgent, tenantId: otherTenant, name: 'o', model: 'scripted/echo' },
    });
    const foreign = await newSession({ tenantId: otherTenant, agentId: otherAgent });

    const err = await rejection(admission.admit(operatorInput(foreign)));
    expect(err.code).toBe('not_found');
    expect(err.status).toBe(404);
    expect(await footprint(foreign)).toEqual({
      messages: 0,
      turns: 0,
      events: 0,
      lastTurnSeq: 0,
      lastEventSeq: 0,
    });

    const missing = await rejection(admission.admit(operatorInput(newId())));
    expect(missing.code).toBe('not_found');
  });

  it('answers conflict for a closed session and writes nothing', async () => {
    const sessionId = await newSession({ status: 'closed' });
    const err = await rejection(admission.admit(operatorInput(sessionId)));
    expect(err.code).toBe('conflict');
    expect(err.status).toBe(409);
    expect(await footprint(sessionId)).toEqual({
      messages: 0,
      turns: 0,
      events: 0,
      lastTurnSeq: 0,
      lastEventSeq: 0,
    });
  });

  it("multitask 'reject' answers conflict while a turn is queued or running, and writes nothing", async () => {
    const sessionId = await newSession();
    const first = await admission.admit(operatorInput(sessionId, 'first'));
    const before = await footprint(sessionId);

    const err = await rejection(admission.admit(operatorInput(sessionId, 'second', { multitask: 'reject' })));
    expect(err.code).toBe('conflict');
    expect(err.details).toEqual({ multitask: 'reject' });
    expect(await footprint(sessionId)).toEqual(before);

    await env.db.turn.update({ where: { id: first.turnId }, data: { status: 'running' } });
    const running = await rejection(
      admission.admit(operatorInput(sessionId, 'third', { multitask: 'reject' })),
    );
    expect(running.code).toBe('conflict');
    expect(await footprint(sessionId)).toEqual(before);

    await env.db.turn.update({ where: { id: first.turnId }, data: { status: 'completed' } });
    const accepted = await admission.admit(operatorInput(sessionId, 'fourth', { multitask: 'reject' }));
    expect(accepted.status).toBe('queued');
    expect(await env.db.turn.findUniqueOrThrow({ where: { id: accepted.turnId } })).toMatchObject({ seq: 2 });
  });

  it("multitask 'reject' lets exactly one of 5 racing admissions into an idle session", async () => {
    const sessionId = await newSession();
    const results = await Promise.allSettled(
      Array.from({ length: 5 }, (_, i) =>
        admission.admit(operatorInput(sessionId, `r${i}`, { multitask: 'reject' })),
      ),
    );
    expect(results.filter((r) => r.status === 'fulfilled')).toHaveLength(1);
    for (const r of results) {
      if (r.status === 'rejected') expect(r.reason).toMatchObject({ code: 'conflict' });
    }
    expect(await footprint(sessionId)).toEqual({
      messages: 1,
      turns: 1,
      events: 1,
      lastTurnSeq: 1,
      lastEventSeq: 1,
    });
  });

  it('admits in one statement (one transaction), with or without a key; reject takes one short transaction', async () => {
    const metrics = new Metrics('test');
    const counted = new Admission(env.db, queue, logger, { metrics });
    const count = async () => {
      const value = async (c: typeof metrics.dbStatements) =>
        (await c.get()).values.find((v) => v.labels.component === 'admission')?.value ?? 0;
      return {
        transactions: await value(metrics.dbTransactions),
        statements: await value(metrics.dbStatements),
      };
    };
    const sessionId = await newSession();
    await counted.admit(operatorInput(sessionId, 'plain'));
    expect(await count()).toEqual({ transactions: 1, statements: 1 });
    await counted.admit(operatorInput(sessionId, 'keyed', { idempotencyKey: 'count-1' }));
    expect(await count()).toEqual({ transactions: 2, statements: 2 });
    // A replay is the same single statement, and writes nothing.
    await counted.admit(operatorInput(sessionId, 'keyed', { idempotencyKey: 'count-1' }));
    expect(await count()).toEqual({ transactions: 3, statements: 3 });
    const idle = await newSession();
    await counted.admit(operatorInput(idle, 'alone', { multitask: 'reject', idempotencyKey: 'count-2' }));
    expect(await count()).toEqual({ transactions: 4, statements: 6 });
    expect(await env.db.turn.count({ where: { sessionId: { in: [sessionId, idle] } } })).toBe(3);
  });

  it('still admits within the enqueue timeout when the queue never answers', async () => {
    // Nobody listens on port 1: ioredis retries for ever, so `add` never settles. The short
    // disconnectTimeout keeps ioredis from leaving a timer behind when the test disconnects it.
    const deadConnection = createRedis('redis://127.0.0.1:1', {
      retryStrategy: () => 50,
      disconnectTimeout: 10,
    });
    const dead = new Queue(QueueName.Turns, { connection: deadConnection, prefix: env.queuePrefix });
    dead.on('error', () => undefined);
    try {
      const cut = new Admission(env.db, dead, logger, { enqueueTimeoutMs: 300 });
      const sessionId = await newSession();
      const started = Date.now();
      const admitted = await cut.admit(operatorInput(sessionId, 'redis is down'));
      const elapsed = Date.now() - started;
      expect(elapsed).toBeGreaterThanOrEqual(250);
      // Well under the 2 s default: the configured bound is the one that applies.
      expect(elapsed).toBeLessThan(1_800);
      expect(admitted).toMatchObject({ status: 'queued', replayed: false });
      expect(await env.db.turn.findUniqueOrThrow({ where: { id: admitted.turnId } })).toMatchObject({
        status: 'queued',
        inputMessageId: admitted.messageId,
      });
      expect(await env.db.message.count({ where: { sessionId } })).toBe(1);
      // Nothing reached the real Redis: the reconciler will enqueue it.
      expect(await queue.getJob(admitted.turnId)).toBeUndefined();
    } finally {
      // Not `dead.close()`: BullMQ's connection wrapper reports its failed start-up as an 'error'
      // event, and close() removes the listeners first, so under load that late event was thrown
      // as an uncaught error. Disconnecting the client ends it; the queue's no-op listener stays.
      deadConnection.disconnect();
    }
  });
});
