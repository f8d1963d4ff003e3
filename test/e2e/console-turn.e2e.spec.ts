import { randomUUID } from 'node:crypto';
import OpenAI from 'openai';
import type { ChatCompletionMessageParam, ChatCompletionTool } from 'openai/resources/chat/completions';
import {
  crossRealmSafeFetch,
  scripted,
  waitFor,
  type RecordedRequest,
  type ScriptedReply,
} from '@switchboard/testing';
import type { Api } from '../support/api';
import { openConsole, screenshot, scrollsSideways, signIn, type ConsolePage } from '../support/console';
import { startConsoleStack, type ConsoleStack } from '../support/console-stack';
import { TEST_LOG, TOKENJUICE_TOOLS_MODULE } from '../support/tokenjuice-tools';

jest.setTimeout(180_000);

const MODEL = 'openai-chat/gpt-4o-mini';
const JAEGER = 'http://jaeger.test:16686';

interface WireMessage {
  role: string;
  content?: unknown;
}

/** The agent a model request is from (its system prompt names it) and how many tool results it carries. */
function ask(req: RecordedRequest): { agent: string; results: number } {
  const messages = (req.body as { messages?: WireMessage[] }).messages ?? [];
  const content = messages.find((m) => m.role === 'system')?.content;
  const system = typeof content === 'string' ? content : '';
  let last = -1;
  messages.forEach((m, i) => {
    if (m.role === 'user') last = i;
  });
  return {
    agent: /You are the agent "([^"]+)"/.exec(system)?.[1] ?? '?',
    results: messages.slice(last + 1).filter((m) => m.role === 'tool').length,
  };
}

/**
 * The turn page (/console/turns/:id) in a real browser against a real gateway, workers and the fake
 * model server: a turn whose first provider attempt got a 429, that spawned a blocking sub-agent and
 * called a tool. The page shows the retry, the tool call and the child turn (a link to its own page),
 * the trace link, and a round's exact context; it fits 1280×800 and 390×844 without sideways scroll.
 */
describe('console: turn page', () => {
  let stack: ConsoleStack;
  let api: Api;
  let key: string;
  const scripts = new Map<string, (a: { results: number }) => ScriptedReply>();
  const pages: ConsolePage[] = [];

  beforeAll(async () => {
    // Tracing on, exporting nothing (OTEL_TRACES_EXPORTER=none: with no exporter configured nothing
    // starts, libs/observability register.ts) so the turn has a trace id to link.
    // run_tests answers 16 KB of log, which TokenJuice compacts lossily, keeping the original.
    stack = await startConsoleStack({
      env: {
        JAEGER_UI_URL: JAEGER,
        OTEL_SDK_DISABLED: 'false',
        OTEL_TRACES_EXPORTER: 'none',
        EXTRA_TOOL_MODULES: TOKENJUICE_TOOLS_MODULE,
      },
    });
    stack.llm.setDefault((req) => {
      const a = ask(req);
      return scripts.get(a.agent)?.(a) ?? scripted.text(`no script for ${a.agent}`);
    });
    ({ api, key } = await stack.tenant('console-turn'));
  });

  afterAll(async () => {
    await Promise.all(pages.map((p) => p.close().catch(() => undefined)));
    await stack?.close();
  });

  async function agent(name: string, tier: string, tools: string[]) {
    const r = await api.post('/v1/agents', { name, tier, model: MODEL, tools });
    expect(r.status).toBe(201);
    return r.body.id as string;
  }

  async function open(viewport: { width: number; height: number }, turnId: string) {
    const c = await openConsole(stack.browser, stack.url, viewport);
    pages.push(c);
    await signIn(c.page, key);
    await c.page.goto(`/console/turns/${turnId}`);
    // The heading shows while loading; the attempts table once the timeline is in.
    await c.page.getByRole('heading', { name: `Turn ${turnId.slice(0, 8)}` }).waitFor();
    await c.page.getByRole('table', { name: 'Attempts of round 1' }).waitFor();
    return c;
  }

  it('shows the retry, the tool call, the child turn and what the model saw', async () => {
    const boss = `boss-${randomUUID().slice(0, 6)}`;
    const helper = `helper-${randomUUID().slice(0, 6)}`;
    let limited = false;
    scripts.set(boss, (a) => {
      // The turn's first provider attempt is refused with a 429; the engine retries the same model.
      if (!limited) return ((limited = true), scripted.rateLimited(0));
      if (a.results === 0)
        return scripted.toolCall(
          'spawn_subagent',
          { agent: helper, task: 'count the sheep', blocking: true },
          { id: 'call_spawn' },
        );
      if (a.results === 1)
        return scripted.toolCall('word_count', { text: 'one two three' }, { id: 'call_count' });
      if (a.results === 2)
        return scripted.toolCall('run_tests', { command: 'npm test' }, { id: 'call_tests' });
      return scripted.text('all done');
    });
    scripts.set(helper, () => scripted.text('there are 42 sheep'));
    await agent(helper, 'worker', []);
    const bossId = await agent(boss, 'chat', ['spawn_subagent', 'word_count', 'run_tests']);
    const sessionId = (await api.post('/v1/sessions', { agentId: bossId })).body.id as string;
    const admitted = await api.post(`/v1/sessions/${sessionId}/messages`, { content: 'how many sheep?' });
    expect(admitted.status).toBe(202);
    const turnId = admitted.body.turnId as string;
    const turn = await waitFor(
      async () => {
        const r = await api.get(`/v1/turns/${turnId}`);
        return ['completed', 'failed', 'cancelled'].includes(r.body.status) ? r.body : undefined;
      },
      { what: `turn ${turnId} ended`, timeoutMs: 60_000 },
    );
    expect(turn.status).toBe('completed');
    const timeline = (await api.get(`/v1/turns/${turnId}/timeline`)).body;
    const childTurnId = timeline.children[0].childTurnId as string;

    // Wide screen.
    const wide = await open({ width: 1280, height: 800 }, turnId);
    const { page } = wide;
    await expect(page.getByRole('link', { name: 'Back to the session' }).getAttribute('href')).resolves.toBe(
      `/console/sessions/${sessionId}`,
    );
    // The trace id links to Jaeger (not followed: no request leaves for it).
    expect(timeline.traceId).toMatch(/^[0-9a-f]{32}$/);
    await expect(page.getByRole('link', { name: timeline.traceId }).getAttribute('href')).resolves.toBe(
      `${JAEGER}/trace/${timeline.traceId}`,
    );

    // Round 1: the 429, then the retry that answered.
    const attempts = page.getByRole('table', { name: 'Attempts of round 1' }).getByTestId('attempt');
    await expect(attempts.count()).resolves.toBe(2);
    await expect(attempts.nth(0).innerText()).resolves.toMatch(/retrying[\s\S]*rate limited \(HTTP 429\)/);
    await expect(attempts.nth(1).innerText()).resolves.toMatch(/2 of \d+\s*retry[\s\S]*succeeded/);
    // The waterfall says the same in words for screen readers.
    await expect(page.getByTestId('row-round-0-attempt-1').innerText()).resolves.toContain(
      'Attempt 2 (retry)',
    );

    // The tool call, and the child turn under the spawn that made it, linking to its own page.
    const count = page.getByTestId('call-call_count');
    await expect(count.innerText()).resolves.toMatch(/word_count[\s\S]*succeeded[\s\S]*read only/);
    const spawn = page.getByTestId('call-call_spawn');
    const childLink = spawn.getByRole('link', { name: `Child turn: ${helper}` });
    await expect(childLink.getAttribute('href')).resolves.toBe(`/console/turns/${childTurnId}`);
    await expect(
      page
        .getByRole('region', { name: /Child turns/ })
        .getByTestId('child')
        .innerText(),
    ).resolves.toMatch(/completed[\s\S]*with its children \$/);
    await expect(page.getByTestId(`row-child-${timeline.children[0].taskId}`).innerText()).resolves.toContain(
      `Child turn: ${helper}`,
    );
    // A compacted result: its size before and after, its original fetched on a click, as plain text.
    const tests = page.getByTestId('call-call_tests');
    await expect(tests.innerText()).resolves.toMatch(/kB → .* after compaction/);
    await tests.getByRole('button', { name: 'Show original result' }).click();
    await expect(tests.getByLabel('Original result').innerText()).resolves.toBe(TEST_LOG);
    expect(await scrollsSideways(page)).toBe(false);
    await screenshot(page, 'turn-page');

    // What the model saw in round 1: the system prompt and the user's message.
    await page.getByRole('button', { name: 'Context of round 1' }).click();
    const viewer = page.getByRole('region', { name: 'What the model saw: round 1' });
    await expect(viewer.getByLabel('System prompt').innerText()).resolves.toContain(
      `You are the agent "${boss}"`,
    );
    const messages = viewer.getByRole('list', { name: 'Messages' }).getByTestId('context-message');
    await expect(messages.first().innerText()).resolves.toMatch(/user[\s\S]*how many sheep\?/);
    await expect(viewer.getByRole('table', { name: 'Tokens per part' }).innerText()).resolves.toMatch(
      /total\s+\d+/,
    );
    await expect(viewer.getByText('spawn_subagent', { exact: true }).count()).resolves.toBeGreaterThan(0);
    expect(await scrollsSideways(page)).toBe(false);
    await screenshot(page, 'turn-context');
    // Closing it hands the keyboard back to the button that opened it.
    await viewer.getByRole('button', { name: 'Close context' }).click();
    await viewer.waitFor({ state: 'detached' });
    await expect(page.evaluate('document.activeElement?.getAttribute("aria-label")')).resolves.toBe(
      'Context of round 1',
    );

    // The child's own page: its parent linked back.
    await childLink.click();
    await page.getByRole('heading', { name: `Turn ${childTurnId.slice(0, 8)}` }).waitFor();
    await page.getByRole('link', { name: 'Parent turn' }).waitFor();
    await expect(page.getByRole('link', { name: 'Parent turn' }).getAttribute('href')).resolves.toBe(
      `/console/turns/${turnId}`,
    );

    // Narrow screen: the same page and viewer without sideways scroll.
    const narrow = await open({ width: 390, height: 844 }, turnId);
    expect(await scrollsSideways(narrow.page)).toBe(false);
    await screenshot(narrow.page, 'turn-page-narrow');
    await narrow.page.getByRole('button', { name: 'Context of round 2' }).click();
    const narrowViewer = narrow.page.getByRole('region', { name: 'What the model saw: round 2' });
    await narrowViewer.getByLabel('System prompt').waitFor();
    await narrowViewer.getByTestId('context-message').first().waitFor();
    expect(await scrollsSideways(narrow.page)).toBe(false);
    await screenshot(narrow.page, 'turn-context-narrow');

    for (const c of [wide, narrow]) {
      expect(c.foreign()).toEqual([]);
      expect(c.errors).toEqual([]);
    }
  });

  it('shows a call to the client’s own tool as a client tool wait: pending, then answered', async () => {
    const name = `client-${randomUUID().slice(0, 6)}`;
    scripts.set(name, (a) =>
      a.results === 0
        ? scripted.toolCall('get_weather', { city: 'Oslo' }, { id: 'call_weather' })
        : scripted.text('Snow in Oslo.'),
    );
    await agent(name, 'chat', []);
    const client = new OpenAI({
      baseURL: `${stack.url}/v1`,
      apiKey: key,
      fetch: crossRealmSafeFetch,
      maxRetries: 0,
    });
    const tools: ChatCompletionTool[] = [
      {
        type: 'function',
        function: {
          name: 'get_weather',
          parameters: { type: 'object', properties: { city: { type: 'string' } } },
        },
      },
    ];
    const messages: ChatCompletionMessageParam[] = [{ role: 'user', content: 'Weather in Oslo?' }];
    const first = await client.chat.completions.create({ model: name, messages, tools });
    expect(first.choices[0].finish_reason).toBe('tool_calls');
    const turnId = (first as unknown as { turn_id: string }).turn_id;

    // Waiting: the call is the client's, pending, and says so (not an approval).
    const c = await open({ width: 1280, height: 800 }, turnId);
    const call = c.page.getByTestId('call-call_weather');
    await expect(call.innerText()).resolves.toMatch(/get_weather[\s\S]*awaiting client tool/);
    await expect(call.innerText()).resolves.toMatch(/client tool: pending/);
    await expect(call.innerText()).resolves.toMatch(/Client tool\s+pending get_weather, run by the client/);
    await expect(call.innerText()).resolves.not.toMatch(/Approval/);
    await expect(c.page.getByTestId('row-call-call_weather-approval').innerText()).resolves.toContain(
      'Client tool wait: get_weather',
    );

    // Answered by the client: the same call, answered, its result recorded.
    const [handed] = first.choices[0].message.tool_calls ?? [];
    const second = await client.chat.completions.create({
      model: name,
      messages: [
        ...messages,
        first.choices[0].message,
        { role: 'tool', tool_call_id: handed.id, content: 'snow' },
      ],
      tools,
    });
    expect(second.choices[0].message.content).toBe('Snow in Oslo.');
    await c.page.reload();
    await c.page.getByRole('table', { name: 'Attempts of round 1' }).waitFor();
    const answered = c.page.getByTestId('call-call_weather');
    await expect(answered.innerText()).resolves.toMatch(/get_weather[\s\S]*succeeded/);
    await expect(answered.innerText()).resolves.toMatch(/client tool: answered/);
    await expect(answered.innerText()).resolves.toMatch(
      /answered get_weather, run by the client, waited .*answered via chat\.completions/,
    );
    expect(await scrollsSideways(c.page)).toBe(false);
    expect(c.foreign()).toEqual([]);
    expect(c.errors).toEqual([]);
  });
});
