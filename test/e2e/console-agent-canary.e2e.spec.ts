import type { Page } from 'playwright-core';
import { scripted, waitFor } from '@switchboard/testing';
import type { Api } from '../support/api';
import { openConsole, screenshot, scrollsSideways, signIn, type ConsolePage } from '../support/console';
import { startConsoleStack, type ConsoleStack } from '../support/console-stack';

/**
 * The canary's state on the agent page's Versions tab (docs/adr/0064) in Chromium against a real
 * gateway: a canary started through the API is shown with its versions, share and rule; Stop ends it
 * (checked through the API), and a promoted one shows how it ended.
 */
jest.setTimeout(180_000);

describe('console: agent canary', () => {
  let stack: ConsoleStack;
  let api: Api;
  let key: string;
  let con: ConsolePage;
  let page: Page;

  beforeAll(async () => {
    stack = await startConsoleStack();
    stack.llm.setDefault(() => scripted.text('Hello from the fake model.'));
    ({ api, key } = await stack.tenant('canary-console'));
    con = await openConsole(stack.browser, stack.url);
    page = con.page;
    await signIn(page, key);
  });

  afterAll(async () => {
    await con?.close();
    await stack?.close();
  });

  it('shows a running canary, stops it, and shows a promoted one', async () => {
    const created = await api.post('/v1/agents', {
      name: 'canaried',
      model: 'openai-chat/gpt-4o-mini',
      instructions: 'First words.',
    });
    const id: string = created.body.id;
    expect((await api.patch(`/v1/agents/${id}`, { instructions: 'Second words.' })).body.version).toBe(2);
    const started = await api.request('PUT', `/v1/agents/${id}/canary`, {
      body: { candidateVersion: 2, baselineVersion: 1, sharePercent: 25, minScored: 5 },
    });
    expect(started.status).toBe(200);

    await page.goto(`/console/agents/${id}`);
    await page.getByRole('tab', { name: 'Versions' }).click();
    const status = page.getByTestId('canary-status');
    await status.waitFor();
    expect((await status.innerText()).trim()).toBe('v2 on 25% of new sessions against v1: running');
    expect(await page.getByTestId('agent-canary').innerText()).toMatch(/once each has 5 scored turns/);
    expect((await page.getByTestId('canary-candidate').innerText()).trim()).toBe('— over 0 turns');
    await screenshot(page, 'agent-canary-running');
    expect(await scrollsSideways(page)).toBe(false);

    await page.getByRole('button', { name: 'Stop the canary' }).click();
    await waitFor(async () => /: stopped/.test(await status.innerText()), { what: 'the canary stopped' });
    expect((await api.get(`/v1/agents/${id}/canary`)).body.status).toBe('stopped');
    expect(await page.getByRole('button', { name: 'Stop the canary' }).count()).toBe(0);

    // A new one, promoted from the console: the agent's current version becomes the candidate (v2 already is).
    expect(
      (
        await api.request('PUT', `/v1/agents/${id}/canary`, {
          body: { candidateVersion: 2, baselineVersion: 1, sharePercent: 10 },
        })
      ).status,
    ).toBe(200);
    await page.reload();
    await page.getByRole('tab', { name: 'Versions' }).click();
    await waitFor(async () => /10% .*: running/.test(await status.innerText()), {
      what: 'the new canary shown',
    });
    await page.getByRole('button', { name: 'Promote v2' }).click();
    await waitFor(async () => /: promoted/.test(await status.innerText()), { what: 'the canary promoted' });
    expect((await api.get(`/v1/agents/${id}`)).body.canary).toMatchObject({ status: 'promoted' });
    await screenshot(page, 'agent-canary-promoted');
  });
});
