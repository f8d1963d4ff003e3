import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { Page } from 'playwright-core';
import { scripted, type RecordedRequest, type ScriptedReply } from '@switchboard/testing';
import type { Api } from '../support/api';
import { openConsole, screenshot, scrollsSideways, signIn, type ConsolePage } from '../support/console';
import { startConsoleStack, type ConsoleStack } from '../support/console-stack';
import { EFFECT_TOOLS_MODULE } from '../support/effect-tools';

jest.setTimeout(240_000);

/** Generous: the CI machine is loaded, and a turn goes through queue, harness and a model call. */
const T = { timeout: 60_000 };
const MODEL = 'openai-chat/gpt-4o-mini';

/** The last message a model call carries (OpenAI chat shape). */
function lastMessage(req: RecordedRequest): { role?: string; text: string } {
  const messages = (req.body as { messages?: { role?: string; content?: unknown }[] } | undefined)?.messages;
  const last = messages?.at(-1);
  const c = last?.content;
  const text =
    typeof c === 'string'
      ? c
      : Array.isArray(c)
        ? c.map((p: { text?: string }) => p.text ?? '').join('')
        : '';
  return { role: last?.role, text };
}

/** `EFFECT <path>` asks for the side-effecting tool; anything else is echoed. */
function model(req: RecordedRequest): ScriptedReply {
  const { role, text } = lastMessage(req);
  if (role === 'tool') return scripted.text('The effect is done.');
  const effect = /^EFFECT (\S+)/.exec(text);
  if (effect) return scripted.toolCall('effect_once', { path: effect[1] });
  return scripted.text(`echo: ${text}`);
}

/**
 * The console's time travel in Chromium against a real gateway, workers and the fake model
 * (docs/adr/0053, 0054): a session's turn timeline; fork here with other instructions (the fork's
 * lineage and overrides shown, the parent lists its fork); rewind to here (the turn stays listed,
 * marked rewound); replay a turn whose side effect is answered from the record (shown side by side
 * with the original, the effect made once).
 */
describe('console: fork, rewind and replay', () => {
  let stack: ConsoleStack;
  let api: Api;
  let key: string;
  let c: ConsolePage;
  let page: Page;
  let dir: string;
  let sessionId: string;

  const say = async (content: string) => {
    const r = await api.post(`/v1/sessions/${sessionId}/messages`, { content, wait: 60 });
    expect(r.status).toBe(200);
    expect(r.body.status).toBe('completed');
  };
  const row = (seq: number) => page.getByTestId(`turn-row-${seq}`);

  beforeAll(async () => {
    stack = await startConsoleStack({ env: { EXTRA_TOOL_MODULES: EFFECT_TOOLS_MODULE } });
    stack.llm.setDefault(model);
    ({ api, key } = await stack.tenant('console-time-travel'));
    const agent = await api.post('/v1/agents', {
      name: 'traveller',
      model: MODEL,
      tools: ['effect_once'],
      archivist: { mode: 'off' },
    });
    expect(agent.status).toBe(201);
    const session = await api.post('/v1/sessions', { agentId: agent.body.id });
    expect(session.status).toBe(201);
    sessionId = session.body.id as string;
    dir = mkdtempSync(path.join(tmpdir(), 'sb-travel-'));
    // The tool makes its effect at once (it waits for this file).
    writeFileSync(path.join(dir, 'p.release'), '');
    await say('hello one');
    await say(`EFFECT ${path.join(dir, 'p')}`);
    await say('hello three');
    c = await openConsole(stack.browser, stack.url);
    page = c.page;
    await signIn(page, key);
  });

  afterAll(async () => {
    await c?.close();
    await stack?.close();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  const effects = () =>
    existsSync(path.join(dir, 'p.effects'))
      ? readFileSync(path.join(dir, 'p.effects'), 'utf8').trim().split('\n').filter(Boolean)
      : [];

  it("lists the session's turns, and forks after the first with other instructions", async () => {
    await page.goto(`/console/sessions/${sessionId}`);
    await row(3).waitFor(T);
    expect(await row(1).textContent()).toContain('echo: hello one');
    await row(1).getByRole('button', { name: 'Fork here' }).click();
    const form = page.getByRole('form', { name: 'Fork after turn #1' });
    await form.getByLabel('Instructions (optional)').fill('Answer in French.');
    await form.getByRole('button', { name: 'Create the fork' }).click();
    await page.waitForURL(
      (u) => /\/console\/sessions\/[0-9a-f-]{36}$/.test(u.pathname) && !u.pathname.endsWith(sessionId),
      T,
    );
    const forkId = page.url().split('/').at(-1)!;
    await page.getByTestId('lineage-parent').getByText('after turn #1').waitFor(T);
    await page.getByTestId('session-overrides').getByText('instructions').waitFor(T);
    await row(1).waitFor(T);
    expect(await row(2).count()).toBe(0);
    // The API agrees: the fork's one copied turn, its parent and its own instructions.
    const fork = await api.get(`/v1/sessions/${forkId}`);
    expect(fork.body.forkedFrom).toMatchObject({ sessionId, turnSeq: 1 });
    expect(fork.body.overrides).toEqual({ instructions: 'Answer in French.' });
    // The parent lists its fork.
    await page.goto(`/console/sessions/${sessionId}`);
    await page.getByTestId('lineage-children').getByRole('link').first().waitFor(T);
    expect(await page.getByTestId('lineage-children').getByRole('listitem').count()).toBe(1);
  });

  it('rewinds to before the third turn: it stays listed, marked rewound', async () => {
    await page.goto(`/console/sessions/${sessionId}`);
    await row(3).waitFor(T);
    page.once('dialog', (d) => void d.accept());
    await row(3).getByRole('button', { name: 'Rewind to here' }).click();
    await row(3).getByText('rewound', { exact: true }).waitFor(T);
    expect(await row(2).getByText('rewound', { exact: true }).count()).toBe(0);
    expect(await row(3).getByRole('button', { name: 'Rewind to here' }).isDisabled()).toBe(true);
    const turns = await api.get(`/v1/sessions/${sessionId}/turns`);
    expect(turns.body.data.map((t: { rewoundAt: string | null }) => t.rewoundAt !== null)).toEqual([
      false,
      false,
      true,
    ]);
  });

  it('replays the turn with the side effect: answered from the record, shown beside the original', async () => {
    expect(effects()).toHaveLength(1);
    await page.goto(`/console/sessions/${sessionId}`);
    await row(2).waitFor(T);
    await row(2).getByRole('button', { name: 'Replay' }).click();
    await page
      .getByRole('form', { name: 'Replay turn #2' })
      .getByRole('button', { name: 'Run the replay' })
      .click();
    await page.waitForURL(/\/console\/turns\/[0-9a-f-]{36}$/, T);
    await page.getByRole('heading', { name: 'Replay compared with the original' }).waitFor(T);
    await page.getByTestId('comparison-diff').getByText('Same final text').waitFor(T);
    const replay = page.getByTestId('comparison-replay');
    await replay.getByText('replayed from the record').waitFor(T);
    expect(await page.getByTestId('comparison-original').getByText('replayed from the record').count()).toBe(
      0,
    );
    expect(await page.getByTestId('final-replay').textContent()).toBe('The effect is done.');
    // Not executed again: the effect was made once, by the original.
    expect(effects()).toHaveLength(1);
    await page.setViewportSize({ width: 1280, height: 800 });
    expect(await scrollsSideways(page)).toBe(false);
    await screenshot(page, 'replay-comparison');
    await page.setViewportSize({ width: 390, height: 844 });
    expect(await scrollsSideways(page)).toBe(false);
    await page.setViewportSize({ width: 1280, height: 800 });
    expect(c.errors).toEqual([]);
    expect(c.foreign()).toEqual([]);
  });
});
