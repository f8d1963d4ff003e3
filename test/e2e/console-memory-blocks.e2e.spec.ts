import type { Locator, Page } from 'playwright-core';
import { waitFor } from '@switchboard/testing';
import type { Api } from '../support/api';
import {
  axeViolations,
  openConsole,
  screenshot,
  scrollsSideways,
  signIn,
  type ConsolePage,
} from '../support/console';
import { startConsoleStack, type ConsoleStack } from '../support/console-stack';

/**
 * An agent's memory blocks in the console (docs/adr/0051), in Chromium against a real gateway
 * process: a block created through the form (a bad name refused beside it, nothing written), its
 * text edited and locked, a save over a version someone else changed meanwhile refused with the
 * API's conflict and nothing overwritten, its versions listed, the block deleted; each change checked
 * through the API. No request leaves the gateway's origin; the page does not scroll sideways.
 */
jest.setTimeout(180_000);

describe('console: memory blocks', () => {
  let stack: ConsoleStack;
  let api: Api;
  let key: string;
  let con: ConsolePage;
  let page: Page;
  let agentId: string;

  beforeAll(async () => {
    // No turn runs here: the gateway alone serves the console and the API.
    stack = await startConsoleStack({ workers: false });
    ({ api, key } = await stack.tenant('blocks-console'));
    const agent = await api.post('/v1/agents', { name: 'keeper', model: 'openai-chat/gpt-4o-mini' });
    agentId = agent.body.id;
    con = await openConsole(stack.browser, stack.url);
    page = con.page;
    await signIn(page, key);
  });

  afterAll(async () => {
    await con?.close();
    await stack?.close();
  });

  const block = async (name: string) => api.get(`/v1/agents/${agentId}/blocks/${name}`);
  const expectText = (l: Locator, re: RegExp) =>
    waitFor(async () => re.test((await l.textContent()) ?? ''), { what: `text ${re}` });

  it('creates, edits, locks, versions and deletes a block, and refuses what the API refuses', async () => {
    await page.goto(`/console/agents/${agentId}`);
    await page.getByRole('heading', { name: 'keeper', level: 1 }).waitFor();
    await page.getByRole('tab', { name: 'Memory blocks' }).click();
    await page.getByText('No memory blocks yet.').waitFor();

    // A bad name: the API's 400 shows, nothing is created.
    const form = page.getByRole('form', { name: 'New memory block' });
    await form.getByLabel('Block name').fill('Not A Name');
    await form.getByLabel('Block text').fill('Name: Ada.');
    await form.getByRole('button', { name: 'Create block' }).click();
    await expectText(form.getByRole('alert'), /block name.*\(bad_request\)/);
    expect((await api.get(`/v1/agents/${agentId}/blocks`)).body.data).toEqual([]);

    await form.getByLabel('Block name').fill('human');
    await form.getByLabel('Description (optional)').fill('The person you help');
    await form.getByLabel('Limit (characters)').fill('100');
    await form.getByRole('button', { name: 'Create block' }).click();
    const editor = page.getByTestId('memory-block').filter({ hasText: 'human' });
    await editor.getByLabel('Text of human (10/100 characters)').waitFor();
    expect((await block('human')).body).toMatchObject({
      content: 'Name: Ada.',
      description: 'The person you help',
      limitChars: 100,
      version: 1,
      writtenBy: 'operator',
    });

    // Edited and locked: saved over the version read.
    await editor.getByRole('textbox').fill('Name: Ada Lovelace.');
    await editor.getByLabel('Read-only (the agent cannot edit human)').check();
    await editor.getByRole('button', { name: 'Save human' }).click();
    await expectText(editor, /version 2 · written by operator · read-only/);
    expect((await block('human')).body).toMatchObject({
      content: 'Name: Ada Lovelace.',
      readOnly: true,
      version: 2,
    });
    await screenshot(page, 'agents-memory-blocks');
    expect(await scrollsSideways(page)).toBe(false);

    // Someone else changes it meanwhile: this page's save is refused and overwrites nothing.
    expect(
      (await api.request('PUT', `/v1/agents/${agentId}/blocks/human`, { body: { content: 'Name: Ada L.' } }))
        .status,
    ).toBe(200);
    await editor.getByRole('textbox').fill('Name: stale edit.');
    await editor.getByRole('button', { name: 'Save human' }).click();
    await expectText(editor.getByRole('alert'), /version 3, not 2 \(conflict\)/);
    expect((await block('human')).body).toMatchObject({ content: 'Name: Ada L.', version: 3 });

    // Over its limit: refused, nothing written.
    await page.reload();
    await page.getByRole('tab', { name: 'Memory blocks' }).click();
    const fresh = page.getByTestId('memory-block').filter({ hasText: 'human' });
    await fresh.getByRole('textbox').fill('x'.repeat(101));
    await fresh.getByRole('button', { name: 'Save human' }).click();
    await expectText(fresh.getByRole('alert'), /over its limit of 100 \(bad_request\)/);
    expect((await block('human')).body.version).toBe(3);

    // Its versions, newest first.
    await fresh.getByRole('button', { name: 'Versions of human' }).click();
    const versions = fresh.getByTestId('block-version');
    await waitFor(async () => (await versions.count()) === 3, { what: 'three versions' });
    expect(await versions.first().textContent()).toContain('Name: Ada L.');
    expect(await versions.last().textContent()).toContain('Name: Ada.');

    await fresh.getByRole('button', { name: 'Delete human' }).click();
    await page.getByText('No memory blocks yet.').waitFor();
    expect((await block('human')).status).toBe(404);
    expect(con.foreign()).toEqual([]);
    // The browser logs the refusals above (400, 409) and nothing else.
    expect(con.errors.filter((e) => !/status of (400|409) /.test(e))).toEqual([]);
  });

  it('meets the WCAG 2.1 A and AA rules axe-core checks, with a block and its versions open', async () => {
    await api.request('PUT', `/v1/agents/${agentId}/blocks/persona`, {
      body: { content: 'Terse.', readOnly: true },
    });
    await api.request('PUT', `/v1/agents/${agentId}/blocks/persona`, { body: { content: 'Kind.' } });
    // Only to inject the checker: the console itself runs under the gateway's CSP.
    const checked = await openConsole(stack.browser, stack.url, undefined, { bypassCSP: true });
    try {
      await signIn(checked.page, key);
      await checked.page.goto(`/console/agents/${agentId}`);
      await checked.page.getByRole('tab', { name: 'Memory blocks' }).click();
      await checked.page.getByRole('button', { name: 'Versions of persona' }).click();
      await waitFor(async () => (await checked.page.getByTestId('block-version').count()) === 2, {
        what: 'two versions',
      });
      expect(await axeViolations(checked.page)).toEqual([]);
    } finally {
      await checked.close();
    }
  });
});
