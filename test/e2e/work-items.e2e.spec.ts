import {
  createTestEnv,
  FakeLlmServer,
  scripted,
  spawnApp,
  spawnGateway,
  waitFor,
  type AppProcess,
  type RecordedRequest,
  type ScriptedReply,
  type TestEnv,
} from '@switchboard/testing';
import { newTenant, type Api } from '../support/api';

jest.setTimeout(120_000);

const ADMIN = 'test-admin-token-0123456789';
const WORK_TOOLS = ['create_work_item', 'pick_work_item', 'update_work_item', 'complete_work_item'];
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

interface ChatMessage {
  role: string;
  content: string | null;
  tool_calls?: { function: { name: string; arguments: string } }[];
}

/** The conversation of a Chat Completions request, and what came after its last user message. */
function conversation(r: RecordedRequest): { input: string; after: ChatMessage[] } {
  const messages = (r.body as { messages: ChatMessage[] }).messages;
  let last = -1;
  messages.forEach((m, i) => {
    if (m.role === 'user') last = i;
  });
  return { input: String(messages[last]?.content ?? ''), after: messages.slice(last + 1) };
}

/** The id of the first item listed under `heading` in the projection. */
function firstUnder(input: string, heading: string): string | undefined {
  const at = input.indexOf(heading);
  if (at < 0) return undefined;
  return /\n- ([0-9a-f-]{36})/.exec(input.slice(at))?.[1];
}

/**
 * Work items through real gateway, harness and triage worker processes (seed 002, docs/adr/0031),
 * with a fake model that works like a diligent agent: on a tick it picks the next queued item,
 * completes it with a report in the same reply, and stops.
 */
describe('work items driven by system ticks', () => {
  let env: TestEnv;
  let llm: FakeLlmServer;
  let api: Api;
  let other: Api;
  let url: string;
  const workers: AppProcess[] = [];
  /** Turns held at their model call until the test lets them go (the SIGKILL case). */
  let hold: ((r: RecordedRequest) => Promise<ScriptedReply> | undefined) | undefined;

  /** A diligent worker: pick the next queued item, then complete it with the report as text. */
  const worker = (r: RecordedRequest): ScriptedReply => {
    const { input, after } = conversation(r);
    const model = (r.body as { model: string }).model;
    const lastTool = [...after].reverse().find((m) => m.role === 'tool');
    // A tool's answer as the engine renders it: {ok, result} or a failure.
    const answer = lastTool
      ? ((JSON.parse(lastTool.content!) as { result?: Record<string, unknown> }).result ?? {})
      : {};
    if (model === 'plodder') {
      // Works without updating its item: word counts until the runtime's reminder comes, then
      // completes the item with its report.
      if (input.startsWith('Runtime reminder')) {
        const id = /Current work item ([0-9a-f-]{36})/.exec(input)![1];
        return { ...scripted.toolCall('complete_work_item', { work_item_id: id }), text: 'Report: counted.' };
      }
      if (!lastTool) {
        const next = firstUnder(input, 'Queued, runnable');
        if (next) return scripted.toolCall('pick_work_item', { work_item_id: next });
        return scripted.text('Nothing to do.');
      }
      if (lastTool && answer.state === 'completed') return scripted.text('Done.');
      return scripted.toolCall('word_count', { text: 'one two three' });
    }
    if (model === 'ticker') {
      // A model that tries to wake itself with a tool named like a tick.
      if (!lastTool) return scripted.toolCall('system_tick', {});
      return scripted.text('I cannot tick myself.');
    }
    if (model === 'blocker') {
      if (input.includes('recheck of blocked work is due'))
        return scripted.text('Still waiting on the vendor.');
      const next = firstUnder(input, 'Queued, runnable');
      if (!lastTool && next) return scripted.toolCall('pick_work_item', { work_item_id: next });
      if (lastTool && answer.current === true && !answer.blocked_by) {
        const id = answer.work_item_id as string;
        return scripted.toolCall('update_work_item', {
          work_item_id: id,
          blocked_by: 'vendor reply',
          recheck_after: 1500,
        });
      }
      return scripted.text('Blocked until the vendor answers.');
    }
    if (!lastTool) {
      const current = /Current work item:\n- id: ([0-9a-f-]{36})/.exec(input)?.[1];
      const next = current ?? firstUnder(input, 'Queued, runnable');
      if (!next) return scripted.text('Nothing to do.');
      return scripted.toolCall('pick_work_item', { work_item_id: next });
    }
    const result = answer;
    if (result.state === 'open' && result.current === true) {
      return {
        ...scripted.toolCall('complete_work_item', { work_item_id: result.work_item_id }),
        text: `Report: finished "${String(result.objective)}".`,
      };
    }
    return scripted.text('Done.');
  };

  beforeAll(async () => {
    env = await createTestEnv();
    llm = await FakeLlmServer.start();
    llm.setDefault((r) => hold?.(r) ?? worker(r));
    const gateway = await spawnGateway(env.processEnv(llm.providerEnv));
    workers.push(gateway, await spawnApp('triage-worker', env.processEnv(llm.providerEnv)));
    url = gateway.url;
    await startHarness();
    ({ api } = await newTenant(url, ADMIN, 'workers'));
    ({ api: other } = await newTenant(url, ADMIN, 'others'));
  });

  afterAll(async () => {
    await Promise.all(workers.map((w) => w.kill('SIGKILL')));
    await llm?.close();
    await env?.cleanup();
  });

  let harness: AppProcess | undefined;
  async function startHarness(): Promise<AppProcess> {
    harness = await spawnApp(
      'harness-worker',
      env.processEnv({
        ...llm.providerEnv,
        // The progress reminder after 3 stale rounds (the diligent and blocking agents never get there).
        WORK_ITEM_STALE_REMINDER_ROUNDS: '3',
        WORK_ITEM_STALE_REMINDER_COOLDOWN_ROUNDS: '2',
      }),
    );
    workers.push(harness);
    return harness;
  }

  const agent = async (name: string, model: string, client = api) =>
    (await client.post('/v1/agents', { name, model: `openai-chat/${model}`, tools: WORK_TOOLS })).body
      .id as string;

  const ticks = (agentId: string) =>
    env.db.message.findMany({
      where: { agentId, kind: 'system_tick' },
      orderBy: { createdAt: 'asc' },
    });

  it('an operator enqueues three items while the agent is idle; ticks alone drive each to a report', async () => {
    const agentId = await agent('diligent', 'diligent');
    const objectives = ['Write the changelog', 'Tag the release', 'Announce it'];
    const items: string[] = [];
    for (const objective of objectives) {
      const res = await api.post(`/v1/agents/${agentId}/work-items`, { objective });
      expect(res.status).toBe(201);
      expect(res.body).toMatchObject({ objective, state: 'open', current: false, createdBy: 'operator' });
      items.push(res.body.id);
    }
    await waitFor(
      async () => {
        const done = await api.get(`/v1/agents/${agentId}/work-items?view=completed`);
        return done.body.data.length === 3;
      },
      { what: 'three completed work items', timeoutMs: 60_000 },
    );
    const all = (await api.get(`/v1/agents/${agentId}/work-items`)).body.data as {
      id: string;
      completionReport: { text: string; by: string; turnId: string; at: string };
    }[];
    // Three delivery summaries, each the same-round text, in the enqueue order.
    expect(all.map((w) => w.id)).toEqual(items);
    expect(all.map((w) => w.completionReport.text)).toEqual(
      objectives.map((o) => `Report: finished "${o}".`),
    );
    const at = all.map((w) => Date.parse(w.completionReport.at));
    expect([...at].sort((a, b) => a - b)).toEqual(at);
    expect(all.every((w) => w.completionReport.by === 'agent')).toBe(true);
    // No operator message: every input of the agent was a runtime system tick.
    const inputs = await env.db.message.findMany({ where: { agentId, role: 'user' } });
    expect(inputs.length).toBeGreaterThanOrEqual(3);
    expect(inputs.every((m) => m.kind === 'system_tick' && m.authorityClass === 'runtime_instruction')).toBe(
      true,
    );
    expect(inputs.every((m) => (m.origin as { subsystem?: string }).subsystem === 'work_items')).toBe(true);
    // The queue is empty: no more ticks come.
    const settled = (await ticks(agentId)).length;
    await sleep(1500);
    expect((await ticks(agentId)).length).toBe(settled);
    const detail = await api.get(`/v1/agents/${agentId}/work-items/${items[0]}`);
    expect(detail.body).toMatchObject({ state: 'completed', closedBy: 'agent', readiness: 'completed' });
    // Every ended turn has its closure decision, on the turn and in the journal: continuable while
    // queued work remained, completed after the last item.
    const turns = await env.db.turn.findMany({ where: { agentId }, orderBy: { createdAt: 'asc' } });
    // All in the agent's one work session, one at a time.
    expect(new Set(turns.map((t) => t.sessionId)).size).toBe(1);
    const closures = await Promise.all(
      turns.map(async (t) => (await api.get(`/v1/turns/${t.id}`)).body.closure),
    );
    expect(closures.every((c) => c !== null)).toBe(true);
    expect(closures.slice(0, -1).map((c) => c.outcome)).toEqual(
      closures.slice(0, -1).map(() => 'continuable'),
    );
    expect(closures[0].workSignal).toMatchObject({ status: 'queued', reactivationMode: 'activate_queued' });
    expect(closures[closures.length - 1]).toMatchObject({ outcome: 'completed', runtimePosture: 'awake' });
    const journal = await api.get(`/v1/sessions/${turns[0].sessionId}/events?limit=500`);
    expect(journal.status).toBe(200);
    const closureEvents = journal.body.data.filter((e: { type: string }) => e.type === 'turn_closure');
    // Journaled where it tells more than the terminal event: continuable, waiting, or bound to an item.
    const telling = turns.filter((_, i) => closures[i].outcome !== 'completed' || closures[i].workItemId);
    expect(closureEvents.map((e: { turnId: string }) => e.turnId)).toEqual(telling.map((t) => t.id));
    expect(closureEvents.length).toBeGreaterThanOrEqual(2);
    // Another tenant sees none of it.
    expect((await other.get(`/v1/agents/${agentId}/work-items`)).status).toBe(404);
    expect((await other.get(`/v1/agents/${agentId}/work-items/${items[0]}`)).status).toBe(404);
    expect((await other.post(`/v1/agents/${agentId}/work-items`, { objective: 'x' })).status).toBe(404);
    expect((await other.post(`/v1/agents/${agentId}/work-items/${items[0]}/cancel`)).status).toBe(404);
  });

  it('many rounds without a work-item update bring a provider-only progress reminder, never journaled', async () => {
    const agentId = (
      await api.post('/v1/agents', {
        name: 'plodder',
        model: 'openai-chat/plodder',
        tools: [...WORK_TOOLS, 'word_count'],
      })
    ).body.id as string;
    const item = (await api.post(`/v1/agents/${agentId}/work-items`, { objective: 'Count the words' })).body;
    await waitFor(
      async () => {
        const w = await api.get(`/v1/agents/${agentId}/work-items/${item.id as string}`);
        return w.body.state === 'completed' ? w.body : undefined;
      },
      { what: 'the plodding agent to complete its item', timeoutMs: 60_000 },
    );
    const sent = llm.requests.filter((r) => (r.body as { model: string }).model === 'plodder');
    const reminded = sent.filter((r) => conversation(r).input.startsWith('Runtime reminder'));
    expect(reminded).toHaveLength(1);
    const text = conversation(reminded[0]).input;
    // After the pick (a work-item update), three word counts: three stale rounds.
    expect(text).toContain('3 model rounds have passed without a work-item update');
    expect(text).toContain(`Current work item ${item.id as string}: Count the words`);
    // The reminder is the last message of that request, after the tool results.
    const messages = (reminded[0].body as { messages: ChatMessage[] }).messages;
    expect(messages[messages.length - 1]).toMatchObject({ role: 'user' });
    expect(messages[messages.length - 2]).toMatchObject({ role: 'tool' });
    // Provider-only: not in the transcript, not in the journal.
    const stored = await env.db.message.findMany({ where: { agentId } });
    expect(stored.length).toBeGreaterThan(0);
    expect(stored.some((m) => JSON.stringify(m).includes('Runtime reminder'))).toBe(false);
    const [{ n }] = await env.db.$queryRaw<{ n: number }[]>`
      SELECT count(*)::int AS n FROM events e JOIN turns t ON t.id = e.turn_id
      WHERE t.agent_id = ${agentId}::uuid AND e.data::text LIKE '%Runtime reminder%'`;
    expect(n).toBe(0);
  });

  it('a blocked item with recheck_after gets exactly one tick when due', async () => {
    const agentId = await agent('blocked', 'blocker');
    const item = (await api.post(`/v1/agents/${agentId}/work-items`, { objective: 'Get the vendor quote' }))
      .body;
    await waitFor(
      async () => {
        const w = (await api.get(`/v1/agents/${agentId}/work-items/${item.id}`)).body;
        return w.blockedBy === 'vendor reply' ? w : undefined;
      },
      { what: 'the item blocked', timeoutMs: 30_000 },
    );
    await waitFor(
      async () => (await ticks(agentId)).some((m) => (m.metadata as any).workTick?.reason === 'recheck_due'),
      { what: 'the recheck tick', timeoutMs: 30_000 },
    );
    const w = (await api.get(`/v1/agents/${agentId}/work-items/${item.id}`)).body;
    expect(w.recheckConsumedAt).not.toBeNull();
    expect(w.readiness).toBe('blocked');
    // Exactly one: well past the deadline and after the tick's turn ended, no second recheck.
    await waitFor(
      async () =>
        (await env.db.turn.count({
          where: { agentId, status: { notIn: ['completed', 'failed', 'cancelled'] } },
        })) === 0,
      { what: 'the agent idle' },
    );
    await sleep(2500);
    const all = await ticks(agentId);
    expect(all.filter((m) => (m.metadata as any).workTick?.reason === 'recheck_due')).toHaveLength(1);
    // One tick picked it up and blocked it; the recheck is the only other one.
    expect(all).toHaveLength(2);
    // The turn that blocked it closed `waiting` for an external change, the item bound.
    const first = await env.db.turn.findFirstOrThrow({ where: { inputMessageId: all[0].id } });
    expect((await api.get(`/v1/turns/${first.id}`)).body.closure).toMatchObject({
      outcome: 'waiting',
      waitingReason: 'awaiting_external_change',
    });
  });

  it('a model calling a tool named like a tick gets an unknown-tool result and makes no tick', async () => {
    const agentId = await agent('self-waker', 'ticker');
    const session = (await api.post('/v1/sessions', { agentId })).body.id;
    const sent = await api.post(`/v1/sessions/${session}/messages`, {
      content: 'keep yourself busy',
      wait: 30,
    });
    expect(sent.status).toBe(200);
    const call = await env.db.toolCall.findFirstOrThrow({ where: { turnId: sent.body.id } });
    expect(call.name).toBe('system_tick');
    expect(call.status).toBe('failed');
    expect(JSON.stringify(call.error)).toContain('unknown_tool');
    await sleep(500);
    expect(await ticks(agentId)).toHaveLength(0);
  });

  it('operator complete and cancel; bad input is a 4xx that writes nothing', async () => {
    const agentId = await agent('manual', 'never-called');
    // A needs_input item never activates the agent.
    const a = (
      await api.post(`/v1/agents/${agentId}/work-items`, { objective: 'A', planStatus: 'needs_input' })
    ).body;
    const b = (
      await api.post(`/v1/agents/${agentId}/work-items`, { objective: 'B', planStatus: 'needs_input' })
    ).body;
    expect(
      (await api.get(`/v1/agents/${agentId}/work-items?view=waiting_for_operator`)).body.data,
    ).toHaveLength(2);
    const done = await api.post(`/v1/agents/${agentId}/work-items/${a.id}/complete`, {
      summary: 'Done by hand.',
    });
    expect(done.status).toBe(200);
    expect(done.body).toMatchObject({
      state: 'completed',
      closedBy: 'operator',
      completionReport: { text: 'Done by hand.', by: 'operator', turnId: null },
    });
    const cancelled = await api.post(`/v1/agents/${agentId}/work-items/${b.id}/cancel`);
    expect(cancelled.status).toBe(200);
    expect(cancelled.body).toMatchObject({ state: 'cancelled', completionReport: null });
    expect((await api.post(`/v1/agents/${agentId}/work-items/${b.id}/complete`)).status).toBe(409);
    expect((await api.post(`/v1/agents/${agentId}/work-items/${a.id}/cancel`, { reason: 'x' })).status).toBe(
      409,
    );
    const count = await env.db.workItem.count();
    for (const body of [
      {},
      { objective: '' },
      { objective: 'x', extra: 1 },
      { objective: 'x', planStatus: 'done' },
      { objective: 'x', todoList: [{ text: 'a', state: 'x' }] },
    ]) {
      const res = await api.post(`/v1/agents/${agentId}/work-items`, body);
      expect(res.status).toBe(400);
      expect(res.body.error.code).toBe('validation_failed');
    }
    expect((await api.get(`/v1/agents/${agentId}/work-items?view=nope`)).status).toBe(400);
    expect((await api.get(`/v1/agents/${agentId}/work-items?cursor=zzz`)).status).toBe(400);
    expect((await api.get(`/v1/agents/${agentId}/work-items/not-a-uuid`)).status).toBe(404);
    expect((await api.post(`/v1/agents/not-a-uuid/work-items`, { objective: 'x' })).status).toBe(404);
    expect(await env.db.workItem.count()).toBe(count);
    expect(await ticks(agentId)).toHaveLength(0);
    expect(llm.requests.filter((r) => (r.body as { model?: string })?.model === 'never-called')).toHaveLength(
      0,
    );
  });

  it('the harness SIGKILLed during a tick-driven turn resumes it once, with no duplicate tick', async () => {
    const agentId = await agent('crashy', 'diligent-slow');
    let release: () => void = () => undefined;
    const released = new Promise<void>((resolve) => (release = resolve));
    let held = 0;
    // The first tick turn's second model round waits until the harness has been killed.
    hold = (r) => {
      if ((r.body as { model: string }).model !== 'diligent-slow') return undefined;
      const { after } = conversation(r);
      if (after.some((m) => m.role === 'tool') && held++ === 0) return released.then(() => worker(r));
      return undefined;
    };
    const item = (await api.post(`/v1/agents/${agentId}/work-items`, { objective: 'Survive a crash' })).body;
    await waitFor(async () => (held > 0 ? true : undefined), {
      what: 'the tick turn at its second round',
      timeoutMs: 30_000,
    });
    const [tick] = await ticks(agentId);
    const turn = await env.db.turn.findFirstOrThrow({ where: { inputMessageId: tick.id } });
    expect(turn.status).toBe('running');
    expect(await harness!.kill('SIGKILL')).toBeNull();
    release();
    await startHarness();
    await waitFor(
      async () => {
        const w = (await api.get(`/v1/agents/${agentId}/work-items/${item.id}`)).body;
        return w.state === 'completed' ? w : undefined;
      },
      { what: 'the item completed after the restart', timeoutMs: 60_000 },
    );
    await waitFor(
      async () => (await env.db.turn.findUniqueOrThrow({ where: { id: turn.id } })).status === 'completed',
      { what: 'the tick turn ended' },
    );
    const ended = await env.db.turn.findUniqueOrThrow({ where: { id: turn.id } });
    expect(ended.status).toBe('completed');
    // Resumed once (two runs), one tick admitted for the work, none after it (the queue is empty).
    expect(ended.runCount).toBe(2);
    await sleep(1500);
    expect(await ticks(agentId)).toHaveLength(1);
    const completes = await env.db.toolCall.findMany({
      where: { turnId: turn.id, name: 'complete_work_item' },
    });
    expect(completes).toHaveLength(1);
  });
});
