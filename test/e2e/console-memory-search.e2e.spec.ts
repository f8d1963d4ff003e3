import type { Locator, Page } from 'playwright-core';
import { waitFor } from '@switchboard/testing';
import type { Api } from '../support/api';
import { axeViolations, openConsole, scrollsSideways, signIn, type ConsolePage } from '../support/console';
import { startConsoleStack, type ConsoleStack } from '../support/console-stack';

/**
 * Vector memory in the console (docs/adr/0050, issue 33), in Chromium against a real gateway process:
 * the agent page shows the re-embedding's progress while no hooks worker runs, and none once one has
 * embedded the records; a search by meaning finds a paraphrase sharing no word with its record, badged
 * as found by vector; kind and tag filters narrow it; the agent form edits the embedder and tool
 * selection, showing the API's 400 by the field and writing nothing. No request leaves the gateway's
 * origin; the page does not scroll sideways.
 */
jest.setTimeout(180_000);

describe('console: memory search and embeddings', () => {
  let stack: ConsoleStack;
  let api: Api;
  let key: string;
  let con: ConsolePage;
  let page: Page;
  let agentId: string;

  beforeAll(async () => {
    // The gateway alone at first: nothing embeds the records until a hooks worker is started.
    stack = await startConsoleStack({ workers: false });
    ({ api, key } = await stack.tenant('memory-search-console'));
    const agent = await api.post('/v1/agents', {
      name: 'rememberer',
      model: 'openai-chat/gpt-4o-mini',
      embedder: 'local/words-100d',
    });
    agentId = agent.body.id;
    for (const [content, kind, tags] of [
      ['Release schedule\nDeployments happen on Tuesdays at noon.', 'fact', ['ops']],
      ['Pets\nThe user has two cats named Miso and Tofu.', 'note', ['home']],
      ['Lunch\nThe team eats pizza on Fridays.', 'note', ['ops']],
    ] as const) {
      expect((await api.post(`/v1/agents/${agentId}/memory`, { content, kind, tags })).status).toBe(201);
    }
    con = await openConsole(stack.browser, stack.url);
    page = con.page;
    await signIn(page, key);
  });

  afterAll(async () => {
    await con?.close();
    await stack?.close();
  });

  const expectText = (l: Locator, re: RegExp) =>
    waitFor(async () => re.test((await l.textContent()) ?? ''), { what: `text ${re}` });

  it('shows re-embedding progress while incomplete, and none once the hooks worker embedded the records', async () => {
    await page.goto(`/console/agents/${agentId}`);
    await page.getByRole('heading', { name: 'rememberer', level: 1, exact: true }).waitFor();
    const progress = page.getByTestId('embedding-progress');
    await expectText(progress, /Embedding memory with local\/words-100d: 0 of 3 records \(0%\)/);
    const bar = page.getByRole('progressbar', { name: /Embedding memory/ });
    expect(await bar.getAttribute('value')).toBe('0');

    await stack.spawnWorker('hooks-worker');
    await waitFor(async () => (await progress.count()) === 0, { what: 'the progress bar to go' });
    expect((await api.get(`/v1/agents/${agentId}/memory/embeddings`)).body).toMatchObject({
      complete: true,
      embedded: 3,
      total: 3,
    });
  });

  it('finds a paraphrase by meaning, badges its path, and filters by kind and tags', async () => {
    await page.getByRole('tab', { name: 'Memory', exact: true }).click();
    const list = page.getByTestId('memory-record');
    await waitFor(async () => (await list.count()) === 3, { what: 'three records' });

    const search = page.getByRole('search', { name: 'Search memory' });
    // No word in common with the record: full-text finds nothing, meaning does.
    await search.getByLabel('Search memory').fill('when do we launch updates to production servers');
    await search.getByLabel('Search by').selectOption('fts');
    await search.getByRole('button', { name: 'Search', exact: true }).click();
    await page.getByText('Nothing matches.').waitFor();

    await search.getByLabel('Search by').selectOption('hybrid');
    await search.getByRole('button', { name: 'Search', exact: true }).click();
    await waitFor(async () => (await list.count()) > 0, { what: 'hybrid hits' });
    const first = list.first();
    await expectText(first, /Release schedule/);
    const badge = first.getByTestId('memory-path');
    expect(await badge.textContent()).toBe('found by vector');
    expect(await badge.getAttribute('data-path')).toBe('vector');

    // Filters: the same search among `home` records, then among notes tagged `ops`.
    await search.getByLabel('Tags').fill('home');
    await search.getByRole('button', { name: 'Search', exact: true }).click();
    await waitFor(
      async () => (await list.count()) === 1 && /Pets/.test((await list.first().textContent()) ?? ''),
      {
        what: 'only the home record',
      },
    );
    await search.getByLabel('Tags').fill('ops');
    await search.getByLabel('Kind', { exact: true }).selectOption('note');
    await search.getByRole('button', { name: 'Search', exact: true }).click();
    await waitFor(
      async () => (await list.count()) === 1 && /Lunch/.test((await list.first().textContent()) ?? ''),
      {
        what: 'only the ops note',
      },
    );
    expect(await scrollsSideways(page)).toBe(false);
  });

  it('edits the embedder and tool selection, showing the API’s 400 by the field', async () => {
    await page.goto(`/console/agents/${agentId}/edit`);
    const form = page.getByRole('form', { name: 'Edit agent' });
    const embedder = form.getByLabel('Embedder', { exact: true });
    await embedder.waitFor();
    expect(await embedder.inputValue()).toBe('local/words-100d');

    await embedder.fill('local/nope');
    await form.getByRole('button', { name: 'Save changes' }).click();
    await expectText(form.getByTestId('error-Embedder'), /unknown embedder: local\/nope/);
    expect(await embedder.getAttribute('aria-invalid')).toBe('true');
    const max = form.getByLabel('Tool selection: most tools per turn');
    await embedder.fill('local/words-100d');
    await max.fill('0');
    await form.getByRole('button', { name: 'Save changes' }).click();
    await form.getByTestId('error-Tool selection: most tools per turn').waitFor();
    expect((await api.get(`/v1/agents/${agentId}`)).body).toMatchObject({
      embedder: 'local/words-100d',
      toolSelection: {},
    });

    await embedder.fill('local/hash-256');
    await max.fill('4');
    await form.getByLabel('Tool selection: pinned tools').fill('memory_search');
    await form.getByRole('button', { name: 'Save changes' }).click();
    await page.getByRole('heading', { name: 'rememberer', level: 1, exact: true }).waitFor();
    expect((await api.get(`/v1/agents/${agentId}`)).body).toMatchObject({
      embedder: 'local/hash-256',
      toolSelection: { maxPerTurn: 4, pinned: ['memory_search'] },
    });
    const settings = page.getByTestId('agent-settings');
    await expectText(settings, /local\/hash-256/);
    await expectText(settings, /at most 4 tools a turn, pinned: memory_search/);
    // The new embedder's set fills (the hooks worker runs): the bar comes and goes, the API says complete.
    await waitFor(async () => (await api.get(`/v1/agents/${agentId}/memory/embeddings`)).body.complete, {
      what: 'the hash-256 set',
    });
    expect(con.foreign()).toEqual([]);
    // The browser logs the refusals above (400) and nothing else.
    expect(con.errors.filter((e) => !/status of 400 /.test(e))).toEqual([]);
  });

  it('meets the WCAG 2.1 A and AA rules axe-core checks: progress, badged hits, the form with an error', async () => {
    // A model the fake server does not know: its job keeps failing, so its progress stays on screen.
    const pending = await api.post('/v1/agents', { name: 'pending', embedder: 'openai/not-a-model' });
    expect(pending.status).toBe(201);
    await api.post(`/v1/agents/${pending.body.id}/memory`, { content: 'Colours\nTeal is preferred.' });
    const checked = await openConsole(stack.browser, stack.url, undefined, { bypassCSP: true });
    try {
      const p = checked.page;
      await signIn(p, key);
      await p.goto(`/console/agents/${pending.body.id}`);
      await p.getByTestId('embedding-progress').waitFor();
      expect(await axeViolations(p)).toEqual([]);
      await p.goto(`/console/agents/${agentId}`);
      await p.getByRole('tab', { name: 'Memory', exact: true }).click();
      const search = p.getByRole('search', { name: 'Search memory' });
      await search.getByLabel('Search memory').fill('cats');
      await search.getByRole('button', { name: 'Search', exact: true }).click();
      await p.getByTestId('memory-path').first().waitFor();
      expect(await axeViolations(p)).toEqual([]);
      await p.goto(`/console/agents/${agentId}/edit`);
      const form = p.getByRole('form', { name: 'Edit agent' });
      await form.getByLabel('Embedder', { exact: true }).fill('nobody/none');
      await form.getByRole('button', { name: 'Save changes' }).click();
      await form.getByTestId('error-Embedder').waitFor();
      expect(await axeViolations(p)).toEqual([]);
    } finally {
      await checked.close();
    }
  });
});
