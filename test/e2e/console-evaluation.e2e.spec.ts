import type { Page } from 'playwright-core';
import { scripted, waitFor } from '@switchboard/testing';
import type { Api } from '../support/api';
import { openConsole, screenshot, scrollsSideways, signIn, type ConsolePage } from '../support/console';
import { startConsoleStack, type ConsoleStack } from '../support/console-stack';

/**
 * The agent page's Evaluation tab and the turn page's scores (docs/adr/0062) in Chromium against real
 * processes: a rule scores the turn in the hooks worker, feedback is posted, and both show per version
 * and day on the tab and on the turn.
 */
jest.setTimeout(180_000);

describe('console: evaluation', () => {
  let stack: ConsoleStack;
  let api: Api;
  let key: string;
  let con: ConsolePage;
  let page: Page;

  beforeAll(async () => {
    stack = await startConsoleStack();
    stack.llm.setDefault(() => scripted.text('The answer is 42.'));
    ({ api, key } = await stack.tenant('evaluation-console'));
    expect((await api.patch('/v1/settings', { archivist: { mode: 'off' } })).status).toBe(200);
    con = await openConsole(stack.browser, stack.url);
    page = con.page;
    await signIn(page, key);
  });

  afterAll(async () => {
    await con?.close();
    await stack?.close();
  });

  it('shows scores per version and day, and the turn’s scores', async () => {
    const created = await api.post('/v1/agents', {
      name: 'evaluated',
      model: 'openai-chat/gpt-4o-mini',
      scorers: [{ name: 'says-42', kind: 'rule', check: 'regex', pattern: '42' }],
    });
    expect(created.status).toBe(201);
    const id: string = created.body.id;
    const session = await api.post('/v1/sessions', { agentId: id });
    const turn = await api.post(`/v1/sessions/${session.body.id}/messages`, {
      content: 'What is it?',
      wait: 60,
    });
    expect(turn.body.status).toBe('completed');
    const turnId: string = turn.body.id;
    await waitFor(async () => ((await api.get(`/v1/turns/${turnId}`)).body.scores ?? []).length === 1, {
      what: 'the turn scored',
      timeoutMs: 60_000,
    });
    expect(
      (await api.post(`/v1/turns/${turnId}/feedback`, { rating: 'down', label: 'off-topic', by: 'reviewer' }))
        .status,
    ).toBe(201);

    await page.goto(`/console/agents/${id}`);
    await page.getByRole('tab', { name: 'Evaluation' }).click();
    const rows = page.getByTestId('agent-score');
    await waitFor(async () => (await rows.count()) === 2, { what: 'two aggregates listed' });
    const text = (await rows.allInnerTexts()).join('\n');
    expect(text).toMatch(/v1\s+\d{4}-\d{2}-\d{2}\s+feedback\s+feedback\s+1\s+0\.00\s+0\.00/);
    expect(text).toMatch(/v1\s+\d{4}-\d{2}-\d{2}\s+says-42\s+scorer\s+1\s+1\.00\s+1\.00/);
    await page.getByLabel('Scorer', { exact: true }).selectOption('feedback');
    await waitFor(async () => (await rows.count()) === 1, { what: 'the feedback aggregate alone' });
    await screenshot(page, 'agent-evaluation');
    expect(await scrollsSideways(page)).toBe(false);

    await page.goto(`/console/turns/${turnId}`);
    const scores = page.getByTestId('turn-score');
    await waitFor(async () => (await scores.count()) === 2, { what: 'the turn’s two scores' });
    const shown = (await scores.allInnerTexts()).join('\n');
    expect(shown).toMatch(/says-42\s+rule\s+scored\s+1\.00\s+yes/);
    expect(shown).toMatch(/feedback\s+feedback\s+scored\s+0\.00\s+no\s+off-topic\s+reviewer/);
  });
});
