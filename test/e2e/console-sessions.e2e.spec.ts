import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { Page } from 'playwright-core';
import { scripted, waitFor, type RecordedRequest, type ScriptedReply } from '@switchboard/testing';
import type { Api } from '../support/api';
import { openConsole, screenshot, scrollsSideways, signIn, type ConsolePage } from '../support/console';
import { startConsoleStack, type ConsoleStack } from '../support/console-stack';
import { EFFECT_TOOLS_MODULE } from '../support/effect-tools';

jest.setTimeout(180_000);

/** Generous: the CI machine is loaded, and a turn goes through queue, harness and a streamed model call. */
const T = { timeout: 60_000 };
const MODEL = 'openai-chat/gpt-4o-mini';
const WORDS = Array.from({ length: 80 }, (_, i) => `word${i}`).join(' ');
const STREAMED = `${WORDS} END-OF-STREAM`;
const XSS = 'Look: <img src=x onerror="window.__xss=1"> and [click](javascript:window.__xss=2) there.';

/** The last message a model call carries (OpenAI chat shape): what the scripted model answers. */
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

/**
 * The model, by what the user said (a default reply rather than a queue: post-turn calls of the
 * hooks and triage workers take no scripted reply meant for a turn).
 */
function model(req: RecordedRequest): ScriptedReply {
  const { role, text } = lastMessage(req);
  if (role === 'tool') return scripted.text('The effect is done.');
  if (text.startsWith('STREAM')) return scripted.text(STREAMED, { textPieces: 81, frameIntervalMs: 100 });
  if (text.startsWith('STALL'))
    return scripted.text('Thinking slowly about it', { textPieces: 2, stallAfterFrames: 3 });
  if (text.startsWith('XSS')) return scripted.text(XSS);
  const gate = /^GATE (\S+)/.exec(text);
  if (gate) return scripted.toolCall('effect_once', { path: gate[1] });
  return scripted.text('ok');
}

/**
 * The console's session pages in Chromium against a real gateway, workers and the fake model: a tenant
 * streams a turn (text before the turn ends), sees model output rendered inert, cancels a running
 * turn, approves a gated call from the inbox, signs out, and is sent to sign-in when its key is revoked.
 */
describe('console: sessions and approvals', () => {
  let stack: ConsoleStack;
  let api: Api;
  let key: string;
  let c: ConsolePage;
  let page: Page;
  let dir: string;
  const agents: Record<'streamer' | 'gated', string> = { streamer: '', gated: '' };

  beforeAll(async () => {
    stack = await startConsoleStack({ env: { EXTRA_TOOL_MODULES: EFFECT_TOOLS_MODULE } });
    stack.llm.setDefault(model);
    ({ api, key } = await stack.tenant('console-sessions'));
    const create = async (body: Record<string, unknown>) => {
      const r = await api.post('/v1/agents', { model: MODEL, archivist: { mode: 'off' }, ...body });
      expect(r.status).toBe(201);
      return r.body.id as string;
    };
    agents.streamer = await create({ name: 'streamer' });
    agents.gated = await create({ name: 'gated', tools: ['effect_once'], approvalRequired: ['effect_once'] });
    dir = mkdtempSync(path.join(tmpdir(), 'sb-console-'));
    c = await openConsole(stack.browser, stack.url);
    page = c.page;
  });

  afterAll(async () => {
    await c?.close();
    await stack?.close();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  const liveText = () => page.getByTestId('live-text');
  const transcript = () => page.getByTestId('transcript');
  const turnStatus = (s: string) => page.getByTestId('turn-status').getByText(s, { exact: true });
  const send = async (text: string) => {
    await page.getByLabel('Message').fill(text);
    await page.getByRole('button', { name: 'Send', exact: true }).click();
  };

  /** Neither size scrolls sideways; the page's screenshot at 1280×800 (and 390×844 when asked). */
  async function checkSizes(name: string, narrowShot = false) {
    await page.setViewportSize({ width: 1280, height: 800 });
    expect(await scrollsSideways(page)).toBe(false);
    await screenshot(page, name);
    await page.setViewportSize({ width: 390, height: 844 });
    expect(await scrollsSideways(page)).toBe(false);
    if (narrowShot) await screenshot(page, `${name}-390`);
    await page.setViewportSize({ width: 1280, height: 800 });
  }

  it('lists sessions and starts one with a chosen agent', async () => {
    await signIn(page, key);
    await page.getByRole('heading', { name: 'Sessions' }).waitFor(T);
    await page.getByLabel('Agent for a new session').selectOption({ label: 'streamer' });
    await page.getByRole('button', { name: 'New session' }).click();
    await page.waitForURL(/\/console\/sessions\/[0-9a-f-]{36}$/, T);
    await page.getByText('none yet').waitFor(T);
  });

  it('shows the text as the model streams it, before the turn ends, then the final text in the transcript', async () => {
    await send('STREAM a long answer');
    // Part of the text, not its end: only the live frames carry that (the journal has the round whole).
    // Read from here (the gateway's CSP forbids the string evaluation waitForFunction would use).
    await waitFor(
      async () => {
        const t = (await liveText().textContent()) ?? '';
        return t.startsWith('word0') && !t.includes('END-OF-STREAM');
      },
      { what: 'streamed text before the end', timeoutMs: 60_000, intervalMs: 50 },
    );
    await transcript().getByText('END-OF-STREAM').waitFor(T);
    await turnStatus('completed').waitFor(T);
    expect(await liveText().textContent()).toBe(STREAMED);
    await transcript().getByText('STREAM a long answer').waitFor(T);
  });

  it('renders model output inert: no <img>, no javascript: link', async () => {
    await send('XSS probe');
    await transcript().getByText('click', { exact: true }).waitFor(T);
    expect(await transcript().locator('img').count()).toBe(0);
    expect(await page.locator('img').count()).toBe(0);
    expect(await transcript().locator('a[href^="javascript" i]').count()).toBe(0);
    expect(await transcript().getByRole('link', { name: 'click' }).count()).toBe(0);
    await transcript().getByText('click', { exact: true }).click();
    expect(await page.evaluate('window.__xss')).toBeUndefined();
  });

  it('cancels a running turn from the session page', async () => {
    await send('STALL and wait');
    await liveText()
      .getByText(/Thinking/)
      .waitFor(T);
    await turnStatus('running').waitFor(T);
    await checkSizes('sessions-session', true);
    await page.getByRole('button', { name: 'Cancel turn' }).click();
    await turnStatus('cancelled').waitFor(T);
    expect(await page.getByRole('button', { name: 'Cancel turn' }).count()).toBe(0);
  });

  it('approves a gated call from the inbox and the turn completes', async () => {
    const session = (await api.post('/v1/sessions', { agentId: agents.gated })).body.id as string;
    const file = path.join(dir, 'effect');
    writeFileSync(`${file}.release`, '');
    const admitted = await api.post(`/v1/sessions/${session}/messages`, { content: `GATE ${file}` });
    expect(admitted.status).toBe(202);
    const turnId = admitted.body.turnId as string;

    await page.getByRole('navigation').getByRole('link', { name: 'Approvals' }).click();
    const item = page.getByRole('listitem', { name: 'Approval of effect_once' });
    await item.waitFor(T);
    await item.getByText(file).first().waitFor(T);
    await item.getByRole('link', { name: `…${turnId.slice(-8)}` }).waitFor(T);
    // Who asked: the agent, the turn's input (an operator prompt) and its authority class as a badge.
    await item
      .getByTestId('asked-by')
      .getByText(/Agent gated acting on an operator prompt from the operator/)
      .waitFor(T);
    await item.getByTestId('authority-class').getByText('operator instruction').waitFor(T);
    expect(await item.getByText('Asked by external content.').count()).toBe(0);
    await checkSizes('sessions-approvals');
    await item.getByLabel('Reason').fill('checked the path');
    await item.getByRole('button', { name: 'Approve' }).click();
    // The decision, with its reason, in the recent history (the pending entry leaves the inbox).
    const decided = page.getByRole('table', { name: 'Recent decisions' });
    const row = decided.getByRole('row').filter({ hasText: 'checked the path' });
    await row.getByText('approved').waitFor(T);
    await item.waitFor({ state: 'detached', ...T });
    await waitFor(async () => (await api.get(`/v1/turns/${turnId}`)).body.status === 'completed', {
      what: 'the approved turn to complete',
      timeoutMs: 60_000,
    });
    await row.getByRole('link', { name: `Session …${session.slice(-8)}` }).click();
    await turnStatus('completed').waitFor(T);
    await transcript().getByText('The effect is done.').waitFor(T);
  });

  it('the sessions list filters by agent and fits both sizes', async () => {
    await page.getByRole('navigation').getByRole('link', { name: 'Sessions' }).click();
    const table = page.getByRole('table', { name: 'Sessions' });
    await table.getByText('gated').waitFor(T);
    await page.getByLabel('Agent', { exact: true }).selectOption({ label: 'streamer' });
    await table.getByText('gated').waitFor({ state: 'detached', ...T });
    await table.getByText('streamer').waitFor(T);
    await page.getByLabel('Agent', { exact: true }).selectOption({ label: 'All agents' });
    await checkSizes('sessions-list');
  });

  it('sign-out forgets the key; a revoked key brings back the sign-in page with a notice', async () => {
    await page.getByRole('button', { name: 'Sign out' }).click();
    await page.getByLabel('API key or admin token').waitFor(T);
    expect(await page.evaluate('sessionStorage.length')).toBe(0);

    const second = await api.post('/v1/api-keys', { name: 'to revoke' });
    expect(second.status).toBe(201);
    await signIn(page, second.body.key as string);
    await page.getByRole('heading', { name: 'Sessions' }).waitFor(T);
    expect((await api.delete(`/v1/api-keys/${second.body.id as string}`)).status).toBeLessThan(300);
    // The list refetches every 2 s: its 401 signs out with a notice.
    await page
      .getByRole('status')
      .getByText(/revoked/)
      .waitFor(T);
    await page.getByLabel('API key or admin token').waitFor(T);
    expect(await page.evaluate('sessionStorage.length')).toBe(0);
    expect(c.foreign()).toEqual([]);
  });
});
