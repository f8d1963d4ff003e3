import type { Page } from 'playwright-core';
import { scripted, waitFor } from '@switchboard/testing';
import type { Api } from '../support/api';
import { openConsole, screenshot, scrollsSideways, signIn, type ConsolePage } from '../support/console';
import { startConsoleStack, type ConsoleStack } from '../support/console-stack';

/**
 * The Datasets and Experiment pages (docs/adr/0063) in Chromium against a real gateway and workers: a
 * dataset created and filled from the console, an experiment started on two versions of an agent, and
 * its results with the versions side by side until it completes (the experiment's own state is checked
 * through the API).
 */
jest.setTimeout(180_000);

describe('console: datasets and experiments', () => {
  let stack: ConsoleStack;
  let api: Api;
  let key: string;
  let con: ConsolePage;
  let page: Page;

  beforeAll(async () => {
    stack = await startConsoleStack({
      env: { RECONCILE_INTERVAL_MS: '500', HOOKS_RECONCILE_GRACE_MS: '200' },
    });
    stack.llm.setDefault(() => scripted.text('Paris.'));
    ({ api, key } = await stack.tenant('experiments-console'));
    expect((await api.patch('/v1/settings', { archivist: { mode: 'off' } })).status).toBe(200);
    con = await openConsole(stack.browser, stack.url);
    page = con.page;
    await signIn(page, key);
  });

  afterAll(async () => {
    await con?.close();
    await stack?.close();
  });

  it('creates a dataset, adds items, runs an experiment and shows its results by version', async () => {
    const agent = await api.post('/v1/agents', {
      name: 'geo',
      model: 'openai-chat/gpt-4o-mini',
      instructions: 'First words.',
    });
    expect(agent.status).toBe(201);
    expect(
      (await api.patch(`/v1/agents/${agent.body.id}`, { instructions: 'Second words.' })).body.version,
    ).toBe(2);

    await page.goto('/console/datasets');
    await page.getByLabel('Name', { exact: true }).fill('capitals');
    await page.getByRole('button', { name: 'Create dataset' }).click();
    await page.getByTestId('dataset-capitals').getByRole('link', { name: 'capitals' }).click();
    await page.getByRole('heading', { name: 'Dataset capitals' }).waitFor();

    for (const [input, expected] of [
      ['Capital of France?', 'Paris.'],
      ['Capital of Italy?', 'Rome.'],
    ]) {
      await page.getByLabel('Input', { exact: true }).fill(input);
      await page.getByLabel('Expected answer', { exact: true }).fill(expected);
      await page.getByRole('button', { name: 'Add item' }).click();
      await waitFor(
        async () => (await page.getByTestId('dataset-item').allInnerTexts()).some((t) => t.includes(input)),
        {
          what: `the item "${input}" listed`,
        },
      );
    }
    // A bad version list keeps the button disabled; an unknown version is the API's 400, shown.
    await page.getByLabel('Agent', { exact: true }).selectOption({ label: 'geo (current v2)' });
    await page.getByLabel('Versions', { exact: true }).fill('1, 9');
    await page.getByRole('button', { name: 'Run on 2 items' }).click();
    await page.getByTestId('run-error').waitFor();
    expect(await page.getByTestId('run-error').innerText()).toMatch(/version 9/);
    expect((await api.get('/v1/experiments')).body.data).toHaveLength(0);

    await page.getByLabel('Versions', { exact: true }).fill('1, 2');
    await page.getByRole('button', { name: 'Run on 2 items' }).click();
    await page.getByTestId('experiment-versions').waitFor();
    const experimentId = page.url().split('/').pop()!;
    await waitFor(
      async () => (await api.get(`/v1/experiments/${experimentId}`)).body.status === 'completed',
      {
        timeoutMs: 120_000,
        what: 'the experiment to complete',
      },
    );
    // The page refreshes itself while the experiment runs.
    await waitFor(async () => /completed/.test(await page.getByRole('heading', { level: 1 }).innerText()), {
      what: 'the page to show the experiment completed',
    });
    expect(await page.getByTestId('experiment-version-1').innerText()).toMatch(/^v1\s/);
    expect(await page.getByTestId('experiment-version-2').innerText()).toMatch(/^v2\s/);
    const rows = page.getByTestId('experiment-item');
    expect(await rows.count()).toBe(2);
    expect(await page.getByTestId('experiment-items').innerText()).toMatch(/Capital of France\?/);
    await screenshot(page, 'experiment-results');
    expect(await scrollsSideways(page)).toBe(false);
  });
});
