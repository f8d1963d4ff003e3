import type { Page } from 'playwright-core';
import { scripted, waitFor } from '@switchboard/testing';
import type { Api } from '../support/api';
import { openConsole, screenshot, scrollsSideways, signIn, type ConsolePage } from '../support/console';
import { startConsoleStack, type ConsoleStack } from '../support/console-stack';

/**
 * The agent page's Versions tab (docs/adr/0061) in Chromium against a real gateway: the versions an
 * edit made listed newest first, the field-by-field diff of two, and a rollback that creates a new
 * version equal to the old one (checked through the API).
 */
jest.setTimeout(180_000);

describe('console: agent versions', () => {
  let stack: ConsoleStack;
  let api: Api;
  let key: string;
  let con: ConsolePage;
  let page: Page;

  beforeAll(async () => {
    stack = await startConsoleStack();
    stack.llm.setDefault(() => scripted.text('Hello from the fake model.'));
    ({ api, key } = await stack.tenant('versions-console'));
    con = await openConsole(stack.browser, stack.url);
    page = con.page;
    await signIn(page, key);
  });

  afterAll(async () => {
    await con?.close();
    await stack?.close();
  });

  it('lists versions, diffs two and rolls back', async () => {
    const created = await api.post('/v1/agents', {
      name: 'versioned',
      model: 'openai-chat/gpt-4o-mini',
      instructions: 'First words.',
    });
    expect(created.status).toBe(201);
    const id: string = created.body.id;
    expect((await api.patch(`/v1/agents/${id}`, { instructions: 'Second words.' })).body.version).toBe(2);

    await page.goto(`/console/agents/${id}`);
    await page.getByRole('tab', { name: 'Versions' }).click();
    const rows = page.getByTestId('agent-version');
    await waitFor(async () => (await rows.count()) === 2, { what: 'two versions listed' });
    expect((await rows.first().innerText()).trim()).toMatch(/^v2 \(current\)/);
    // The default comparison: the previous version against the current one.
    const diff = page.getByTestId('version-diff');
    await diff.waitFor();
    await waitFor(async () => /First words\.[\s\S]*Second words\./.test(await diff.innerText()), {
      what: 'the instructions diff',
    });
    expect(await diff.innerText()).toMatch(/instructions/);
    await screenshot(page, 'agent-versions-diff');
    expect(await scrollsSideways(page)).toBe(false);

    await page.getByRole('button', { name: 'Roll back to version 1' }).click();
    await waitFor(async () => /^v3 \(current\)/.test((await rows.first().innerText()).trim()), {
      what: 'the rollback version listed as current',
    });
    await waitFor(async () => (await rows.count()) === 3, { what: 'three versions listed' });
    const agent = (await api.get(`/v1/agents/${id}`)).body;
    expect(agent).toMatchObject({ version: 3, instructions: 'First words.' });
    const v1 = (await api.get(`/v1/agents/${id}/versions/1`)).body.config;
    expect((await api.get(`/v1/agents/${id}/versions/3`)).body.config).toEqual(v1);

    // v1 against v3: the same.
    await page.getByLabel('From version', { exact: true }).selectOption('1');
    await page.getByLabel('To version', { exact: true }).selectOption('3');
    await page.getByTestId('version-diff-empty').waitFor();
    await screenshot(page, 'agent-versions-rolled-back');
  });
});
