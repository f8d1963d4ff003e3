import { newId, uuid7Time } from '@switchboard/contracts';
import { poolOf } from '@switchboard/database';
import { MemoryStore } from '@switchboard/memory';
import { ProviderRegistry } from '@switchboard/providers';
import { sqlDbFor } from '@switchboard/store';
import {
  createTestEnv,
  FakeLlmServer,
  hookContext,
  hookJob,
  scripted,
  seedEndedTurn,
  seedTenantSession,
  transcriptMessage,
  type RecordedRequest,
  type EndedTurnSeed,
  type SessionIds,
  type TestEnv,
} from '@switchboard/testing';
import { ArchivistError, runArchivist } from './archivist';
import type { HookContext } from './context';
import { runCostLog } from './cost-log';

/**
 * The archivist on real Postgres with the real OpenAI SDK against the fake LLM server: facts land in
 * the agent's memory with provenance, together with the hook's run and its ledger entries, once.
 */
jest.setTimeout(120_000);

const ROUTE_MODEL = 'openai-chat/archivist-small';

describe('runArchivist', () => {
  let env: TestEnv;
  let llm: FakeLlmServer;

  beforeAll(async () => {
    env = await createTestEnv();
    llm = await FakeLlmServer.start();
  });

  afterAll(async () => {
    await llm?.close();
    await env?.cleanup();
  });

  const ctx = (defaultModel = 'openai-chat/deployment-default'): HookContext =>
    hookContext(env, {
      models: {
        // No SDK retries: every request the test scripts is one the hook made.
        providers: new ProviderRegistry({
          openaiApiKey: 'sk-test',
          openaiBaseUrl: llm.openaiBaseUrl,
          timeoutMs: 10_000,
        }),
        defaultModel,
      },
    });

  const tenant = (route: string | null = ROUTE_MODEL) =>
    seedTenantSession(
      env.db,
      `t-${newId()}`,
      {},
      // One distillation per turn, at once: the debounce has its own tests (archivist-debounce.int.spec.ts).
      {
        settings: {
          archivist: { mode: 'every_turn' },
          ...(route ? { modelRoutes: { summarization: route } } : {}),
        },
      },
    );

  /** A turn with its input, an assistant round that called a tool, the tool's result and (unless cancelled) an answer. */
  async function turn(t: SessionIds, opts: EndedTurnSeed) {
    const row = await seedEndedTurn(env.db, t, opts);
    const id = row.id;
    const assistantRound = {
      ...transcriptMessage(t, row, 1, 'assistant', opts.partial ?? ''),
      toolCalls: [
        { id: 'call_1', name: 'http_fetch', arguments: '{"url":"https://status.example/deploys"}' },
      ],
    };
    await env.db.message.createMany({
      data: [
        transcriptMessage(t, row, 0, 'user', opts.input),
        assistantRound,
        {
          ...transcriptMessage(t, row, 2, 'tool', '{"next":"Tuesday"}'),
          kind: 'tool_result',
          toolCallId: 'call_1',
        },
        ...(opts.answer ? [transcriptMessage(t, row, 3, 'assistant', opts.answer)] : []),
      ],
    });
    await env.db.toolCall.create({
      data: {
        id: newId(),
        tenantId: t.tenantId,
        sessionId: t.sessionId,
        turnId: id,
        callId: 'call_1',
        name: 'http_fetch',
        arguments: { url: 'https://status.example/deploys' },
        sideEffect: 'network',
        status: opts.status === 'cancelled' ? 'failed' : 'completed',
        idempotencyKey: `${id}:call_1`,
        ...(opts.status === 'cancelled'
          ? { error: { kind: 'cancelled', message: 'the turn was cancelled' } }
          : { result: { next: 'Tuesday' } }),
        durationMs: 12,
      },
    });
    return id;
  }

  const run = (turnId: string, tenantId: string, c = ctx()) =>
    runArchivist(c, hookJob('archivist', turnId, tenantId));

  const facts = (...list: { title: string; content: string; preference?: boolean }[]) =>
    scripted.text(JSON.stringify({ facts: list }), { usage: { input: 400, output: 60 }, costUsd: 0.0021 });

  const requestsSince = (before: number): RecordedRequest[] => llm.requests.slice(before);
  const userPrompt = (r: RecordedRequest): string => {
    const messages = (r.body as { messages: { role: string; content: string }[] }).messages;
    return messages.filter((m) => m.role === 'user').map((m) => m.content)[0] ?? '';
  };

  const memoryOf = (agentId: string) =>
    env.db.memoryRecord.findMany({ where: { agentId }, orderBy: { dedupeKey: 'asc' } });

  it('writes the facts as memory with provenance, its hook run and its ledger entry in one go', async () => {
    const t = await tenant();
    const turnId = await turn(t, {
      status: 'completed',
      input: 'Remember: my deploy window is Tuesdays 14:00 UTC. Check the status page.',
      answer: 'Noted — your deploy window is Tuesdays at 14:00 UTC; the next one is on Tuesday.',
    });
    const before = llm.requests.length;
    llm.enqueue(
      facts(
        { title: 'Deploy window', content: 'The user deploys on Tuesdays at 14:00 UTC.' },
        { title: 'Status page', content: 'The user checks deploys at https://status.example/deploys.' },
      ),
    );

    await expect(run(turnId, t.tenantId)).resolves.toBe('written');

    const [req] = requestsSince(before);
    expect((req.body as { model: string }).model).toBe('archivist-small');
    const prompt = userPrompt(req);
    expect(prompt).toContain('my deploy window is Tuesdays 14:00 UTC');
    expect(prompt).toContain('Tool call http_fetch {"url": "https://status.example/deploys"} → completed');
    expect(prompt).toContain('your deploy window is Tuesdays at 14:00 UTC');
    expect(prompt).toMatch(/^<evidence kind="turn" status="completed">/);

    const records = await memoryOf(t.agentId);
    expect(records.map((r) => [r.kind, r.title, r.dedupeKey])).toEqual([
      ['fact', 'Deploy window', `archivist:${turnId}:0`],
      ['fact', 'Status page', `archivist:${turnId}:1`],
    ]);
    for (const r of records) {
      expect(r.tenantId).toBe(t.tenantId);
      expect(r.provenance).toEqual({
        source: 'archivist',
        hook: 'archivist',
        turnId,
        sessionId: t.sessionId,
        messageSeqs: [0, 3],
        model: ROUTE_MODEL,
      });
    }
    const hits = await new MemoryStore(sqlDbFor(poolOf(env.db), 'test')).search({
      tenantId: t.tenantId,
      agentId: t.agentId,
      query: 'deploy window Tuesdays',
    });
    expect(hits[0]).toMatchObject({ kind: 'fact', title: 'Deploy window' });

    const run1 = await env.db.hookRun.findFirstOrThrow({
      where: { turnId, hook: 'archivist' },
    });
    expect(run1).toMatchObject({ status: 'completed', tenantId: t.tenantId });
    expect(run1.output).toMatchObject({ facts: 2, model: ROUTE_MODEL, calls: 1, costUsd: '0.00210000' });
    const ledger = await env.db.ledgerEntry.findMany({ where: { turnId } });
    expect(
      ledger.map((e) => [e.key, e.provider, e.model, e.inputTokens, e.outputTokens, e.costSource]),
    ).toEqual([[`hook:archivist:${turnId}:1`, 'openai-chat', 'archivist-small', 400, 60, 'provider']]);
    expect(ledger[0].costUsd.toFixed(8)).toBe('0.00210000');
    expect(ledger[0]).toMatchObject({ tenantId: t.tenantId, agentId: t.agentId, sessionId: t.sessionId });
    // The turn's own totals stay what the turn spent.
    expect((await env.db.turn.findUniqueOrThrow({ where: { id: turnId } })).costUsd.toFixed(8)).toBe(
      '0.00000000',
    );

    // A re-run (a retried job, a duplicate) calls no model and writes nothing.
    const again = llm.requests.length;
    await expect(run(turnId, t.tenantId)).resolves.toBe('already_done');
    expect(llm.requests.length).toBe(again);
    expect(await memoryOf(t.agentId)).toHaveLength(2);
    expect(await env.db.ledgerEntry.count({ where: { turnId } })).toBe(1);
    expect(await env.db.hookRun.count({ where: { turnId } })).toBe(1);
  });

  it('tags a preference or habit `preference` (the context pack reads it by that tag), other facts none', async () => {
    const t = await tenant();
    const turnId = await turn(t, {
      status: 'completed',
      input: 'Always give me distances in kilometres. The staging cluster is stg-7.',
      answer: 'Understood: kilometres from now on; staging is stg-7.',
    });
    const before = llm.requests.length;
    llm.enqueue(
      facts(
        { title: 'Distance units', content: 'The user wants distances in kilometres.', preference: true },
        { title: 'Staging cluster', content: 'The staging cluster is stg-7.', preference: false },
      ),
    );
    await expect(run(turnId, t.tenantId)).resolves.toBe('written');
    const [req] = requestsSince(before);
    // The extraction contract asks for the mark.
    expect(JSON.stringify(req.body)).toContain('\\"preference\\": true');
    const records = await memoryOf(t.agentId);
    expect(records.map((r) => [r.title, r.tags])).toEqual([
      ['Distance units', ['preference']],
      ['Staging cluster', []],
    ]);
  });

  it('archives a cancelled turn from its partial context', async () => {
    const t = await tenant();
    const turnId = await turn(t, {
      status: 'cancelled',
      input: 'Our staging database is pg-staging-3 in eu-west-1; migrate it tonight.',
      partial: 'Starting the migration of pg-staging-3 in eu-west-1.',
    });
    const before = llm.requests.length;
    llm.enqueue(facts({ title: 'Staging database', content: 'Staging runs on pg-staging-3 in eu-west-1.' }));

    await expect(run(turnId, t.tenantId)).resolves.toBe('written');

    const prompt = userPrompt(requestsSince(before)[0]);
    expect(prompt).toMatch(/^<evidence kind="turn" status="cancelled">/);
    expect(prompt).toContain('pg-staging-3 in eu-west-1; migrate it tonight');
    expect(prompt).toContain('Assistant (partial: the turn was cancelled before it finished):');
    expect(prompt).toContain('Starting the migration of pg-staging-3');
    expect(prompt).toContain('→ failed: {"kind": "cancelled"');
    const records = await memoryOf(t.agentId);
    expect(records).toHaveLength(1);
    expect(records[0]).toMatchObject({ kind: 'fact', title: 'Staging database' });
    expect(records[0].provenance).toMatchObject({ turnId, messageSeqs: [0, 1] });
  });

  it('reads messages delivered into the turn as input, and not the runtime’s own notes', async () => {
    const t = await tenant();
    const turnId = await turn(t, {
      status: 'completed',
      input: 'Plan the release.',
      answer: 'Planned for Friday.',
    });
    const { turnSeq } = await env.db.message.findFirstOrThrow({ where: { turnId, position: 0 } });
    await env.db.message.createMany({
      data: [
        transcriptMessage(
          t,
          { id: turnId, seq: turnSeq },
          4,
          'user',
          'also: our release train leaves every second Friday',
        ),
        {
          ...transcriptMessage(
            t,
            { id: turnId, seq: turnSeq },
            5,
            'user',
            'Reflection: the tool result looked stale.',
          ),
          kind: 'internal_followup',
          authorityClass: 'runtime_instruction',
        },
      ],
    });
    const before = llm.requests.length;
    llm.enqueue(facts({ title: 'Release train', content: 'Releases leave every second Friday.' }));
    await expect(run(turnId, t.tenantId)).resolves.toBe('written');
    const prompt = userPrompt(requestsSince(before)[0]);
    expect(prompt).toContain(
      'Plan the release.\n\n(added during the turn) also: our release train leaves every second Friday',
    );
    expect(prompt).not.toContain('Reflection: the tool result looked stale');
    expect((await memoryOf(t.agentId))[0].provenance).toMatchObject({ messageSeqs: [0, 3, 4] });
  });

  it('asks once more after an answer that is not the facts JSON, and books both calls', async () => {
    const t = await tenant();
    const turnId = await turn(t, {
      status: 'completed',
      input: 'I prefer answers in French.',
      answer: 'D’accord.',
    });
    const before = llm.requests.length;
    llm.enqueue(
      scripted.text('Sure! The user prefers French.', { usage: { input: 300, output: 10 } }),
      scripted.text(
        '```json\n{"facts":[{"title":"Language","content":"The user prefers answers in French."}]}\n```',
        {
          usage: { input: 330, output: 20 },
        },
      ),
    );

    await expect(run(turnId, t.tenantId)).resolves.toBe('written');

    const [first, second] = requestsSince(before);
    expect(first).toBeDefined();
    const retryMessages = (second.body as { messages: { role: string; content: string }[] }).messages;
    expect(retryMessages.slice(-2)).toEqual([
      expect.objectContaining({ role: 'assistant', content: 'Sure! The user prefers French.' }),
      expect.objectContaining({ role: 'user', content: expect.stringContaining('not JSON') }),
    ]);
    expect((await memoryOf(t.agentId)).map((r) => r.content)).toEqual([
      'The user prefers answers in French.',
    ]);
    expect(
      (await env.db.ledgerEntry.findMany({ where: { turnId }, orderBy: { key: 'asc' } })).map((e) => e.key),
    ).toEqual([`hook:archivist:${turnId}:1`, `hook:archivist:${turnId}:2`]);
  });

  it('fails the run, writing nothing, when both answers are unusable; a later run writes the facts', async () => {
    const t = await tenant();
    const turnId = await turn(t, {
      status: 'completed',
      input: 'My team is called Falcon.',
      answer: 'Hi Falcon!',
    });
    llm.enqueue(scripted.text('{"facts": "Falcon"}'), scripted.text('no facts here'));

    const failed = run(turnId, t.tenantId);
    await expect(failed).rejects.toBeInstanceOf(ArchivistError);
    await expect(failed).rejects.toMatchObject({ kind: 'invalid_output' });
    expect(await memoryOf(t.agentId)).toEqual([]);
    expect(await env.db.hookRun.count({ where: { turnId } })).toBe(0);
    expect(await env.db.ledgerEntry.count({ where: { turnId } })).toBe(0);

    // BullMQ's retry of the job.
    llm.enqueue(facts({ title: 'Team', content: 'The user’s team is called Falcon.' }));
    await expect(run(turnId, t.tenantId)).resolves.toBe('written');
    expect((await memoryOf(t.agentId)).map((r) => r.title)).toEqual(['Team']);
  });

  it('records a routed model that answers with a tool call (scripted/demo) as a skip with its reason, never retried', async () => {
    const t = await tenant('scripted/demo');
    const turnId = await turn(t, { status: 'completed', input: 'My cat is called Miso.', answer: 'Cute.' });
    const before = llm.requests.length;
    // Not a failure to retry or log as an error: a setting to make (the route the tenant chose).
    await expect(run(turnId, t.tenantId)).resolves.toBe('skipped');
    const row = await env.db.hookRun.findFirstOrThrow({
      where: { turnId, hook: 'archivist' },
    });
    expect(row).toMatchObject({
      status: 'completed',
      output: expect.objectContaining({
        skipped: 'unsupported_model',
        models: ['scripted/demo'],
        message: expect.stringMatching(/scripted\/demo answered the archivist with a tool call/),
      }),
    });
    // The tenant's route is the only model asked: no fallback to the deployment's or the agent's.
    expect(llm.requests.length).toBe(before);
    expect(await memoryOf(t.agentId)).toEqual([]);
    // A scripted fixture's simulated spend is not booked for a run that kept nothing.
    expect(await env.db.ledgerEntry.count({ where: { turnId } })).toBe(0);
    await expect(run(turnId, t.tenantId)).resolves.toBe('already_done');
  });

  it('records an empty list of facts as a run that wrote nothing to memory', async () => {
    const t = await tenant();
    const turnId = await turn(t, { status: 'completed', input: 'thanks!', answer: 'You are welcome.' });
    llm.enqueue(facts());
    await expect(run(turnId, t.tenantId)).resolves.toBe('written');
    expect(await memoryOf(t.agentId)).toEqual([]);
    expect((await env.db.hookRun.findFirstOrThrow({ where: { turnId } })).output).toMatchObject({ facts: 0 });
  });

  it('refuses another tenant’s turn: no model call, nothing written', async () => {
    const owner = await tenant();
    const other = await tenant();
    const turnId = await turn(owner, { status: 'completed', input: 'my PIN is 4321', answer: 'ok' });
    const before = llm.requests.length;
    await expect(run(turnId, other.tenantId)).resolves.toBe('skipped');
    expect(llm.requests.length).toBe(before);
    expect(await env.db.hookRun.count({ where: { turnId } })).toBe(0);
    expect(
      await env.db.memoryRecord.count({ where: { tenantId: { in: [owner.tenantId, other.tenantId] } } }),
    ).toBe(0);
  });

  it('skips a failed turn and records the skip, without a model call', async () => {
    const t = await tenant();
    const turnId = await turn(t, { status: 'failed', input: 'my deploy window is Mondays' });
    const before = llm.requests.length;
    await expect(run(turnId, t.tenantId)).resolves.toBe('skipped');
    await expect(run(turnId, t.tenantId)).resolves.toBe('already_done');
    expect(llm.requests.length).toBe(before);
    expect((await env.db.hookRun.findFirstOrThrow({ where: { turnId } })).output).toMatchObject({
      skipped: 'turn_failed',
    });
    expect(await memoryOf(t.agentId)).toEqual([]);
  });

  it('uses the deployment default model when the tenant has no summarization route', async () => {
    const t = await tenant(null);
    const turnId = await turn(t, { status: 'completed', input: 'I live in Lisbon.', answer: 'Nice.' });
    const before = llm.requests.length;
    llm.enqueue(facts({ title: 'Home', content: 'The user lives in Lisbon.' }));
    await expect(run(turnId, t.tenantId, ctx('openai-chat/deployment-default'))).resolves.toBe('written');
    expect((requestsSince(before)[0].body as { model: string }).model).toBe('deployment-default');
    expect((await memoryOf(t.agentId))[0].provenance).toMatchObject({
      model: 'openai-chat/deployment-default',
    });
  });

  it('its spend counts once in the tenant roll-up and never in the turn’s cost line, whichever hook runs first', async () => {
    const t = await tenant();
    const own = async (turnId: string) =>
      env.db.ledgerEntry.create({
        data: {
          id: newId(),
          tenantId: t.tenantId,
          agentId: t.agentId,
          sessionId: t.sessionId,
          turnId,
          turnAt: uuid7Time(turnId),
          key: `${turnId}:round:0`,
          provider: 'openai-chat',
          model: 'chat-small',
          inputTokens: 100,
          outputTokens: 10,
          cachedTokens: 60,
          cacheWriteTokens: 20,
          costUsd: '0.00100000',
          cacheSavedUsd: '0.00010000',
          costSource: 'override',
        },
      });
    const archivistFirst = await turn(t, { status: 'completed', input: 'I use Neovim.', answer: 'Nice.' });
    const costLogFirst = await turn(t, { status: 'completed', input: 'I use Helix too.', answer: 'Nice.' });
    await own(archivistFirst);
    await own(costLogFirst);
    const costLog = (turnId: string) =>
      runCostLog(ctx(), { turnId, tenantId: t.tenantId, hook: 'cost-log', trace: {} });

    // The archivist's calls read and write the provider's cache too: the roll-up carries both.
    const cachedFacts = (content: string) =>
      scripted.text(JSON.stringify({ facts: [{ title: 'Editor', content }] }), {
        usage: { input: 400, output: 60, cached: 300, cacheWrite: 50 },
        costUsd: 0.0021,
      });
    llm.enqueue(cachedFacts('The user uses Neovim.'));
    await expect(run(archivistFirst, t.tenantId)).resolves.toBe('written');
    await expect(costLog(archivistFirst)).resolves.toBe('written');
    await expect(costLog(costLogFirst)).resolves.toBe('written');
    llm.enqueue(cachedFacts('The user uses Helix.'));
    await expect(run(costLogFirst, t.tenantId)).resolves.toBe('written');

    for (const turnId of [archivistFirst, costLogFirst]) {
      const line = await env.db.hookRun.findFirstOrThrow({
        where: { turnId, hook: 'cost-log' },
      });
      expect(line.output).toMatchObject({ providerCalls: 1, costUsd: '0.00100000', models: ['chat-small'] });
    }
    const [spend, ...otherDays] = await env.db.tenantSpendDaily.findMany({ where: { tenantId: t.tenantId } });
    expect(otherDays).toEqual([]);
    expect(spend.costUsd.toFixed(8)).toBe('0.00620000'); // 2 × 0.001 own + 2 × 0.0021 archivist
    expect(spend).toMatchObject({ providerCalls: 4, turns: 2 });
    expect(Number(spend.inputTokens)).toBe(2 * 100 + 2 * 400);
    expect(Number(spend.cachedTokens)).toBe(2 * 60 + 2 * 300);
    expect(Number(spend.cacheWriteTokens)).toBe(2 * 20 + 2 * 50);
    // What caching saved: the ledger's sum, the turns' own entries and the archivist's alike.
    const [ledger] = await env.db.$queryRaw<{ saved: string }[]>`
      SELECT sum(cache_saved_usd)::numeric(20, 8)::text AS saved FROM ledger_entries
      WHERE tenant_id = ${t.tenantId}::uuid`;
    expect(spend.cacheSavedUsd.toFixed(8)).toBe(ledger.saved);
  });

  it('two runs racing for one turn write its facts once; both calls’ spend is booked', async () => {
    const t = await tenant();
    const turnId = await turn(t, {
      status: 'completed',
      input: 'The on-call phone is +351 555 0100.',
      answer: 'Saved.',
    });
    // Neither call is answered before both have been made: a race in fact, not only in name (under
    // load the first run could otherwise commit before the second had read the turn).
    const both = llm.requests.length + 2;
    const replies = [
      facts({ title: 'On-call phone', content: 'The on-call phone is +351 555 0100.' }),
      facts({ title: 'On-call phone', content: 'The on-call phone number is +351 555 0100.' }),
    ];
    llm.setDefault(async () => {
      await llm.waitForRequests(both);
      return replies.shift() ?? { kind: 'error', status: 500 };
    });
    const outcomes = await Promise.all([run(turnId, t.tenantId), run(turnId, t.tenantId)]).finally(() =>
      llm.setDefault(undefined),
    );
    expect(outcomes.sort()).toEqual(['already_done', 'written']);
    expect(await memoryOf(t.agentId)).toHaveLength(1);
    // The loser's call was made: its spend is booked under its own key, its facts are not kept.
    expect(await env.db.ledgerEntry.count({ where: { turnId } })).toBe(2);
    expect(await env.db.hookRun.count({ where: { turnId } })).toBe(1);
  });
});
