import type { Page } from 'playwright-core';
import { scripted, waitFor } from '@switchboard/testing';
import type { Api } from '../support/api';
import { openConsole, screenshot, scrollsSideways, signIn, type ConsolePage } from '../support/console';
import { startConsoleStack, type ConsoleStack } from '../support/console-stack';

/**
 * The console's agents, inputs and usage pages in Chromium against a real gateway, workers and the
 * fake model server: an agent created and edited through the form (checked through the API too),
 * the API's validation errors beside the fields, pause and resume, memory added and deleted, a
 * schedule and a trigger's triaged delivery listed, usage after a turn. No request leaves the gateway's
 * origin; no page scrolls sideways.
 */
jest.setTimeout(180_000);

describe('console: agents, inputs, usage', () => {
  let stack: ConsoleStack;
  let api: Api;
  let key: string;
  let con: ConsolePage;
  let page: Page;

  beforeAll(async () => {
    stack = await startConsoleStack();
    // Every model call (the turn, any post-turn distillation) gets a short answer.
    stack.llm.setDefault(() => scripted.text('Hello from the fake model.'));
    ({ api, key } = await stack.tenant('agents-console'));
    con = await openConsole(stack.browser, stack.url);
    page = con.page;
    await signIn(page, key);
  });

  afterAll(async () => {
    await con?.close();
    await stack?.close();
  });

  /** The page at 1280×800 saved as an artifact, and not wider than the window. */
  const shot = async (name: string) => {
    await screenshot(page, name);
    expect(await scrollsSideways(page)).toBe(false);
  };
  const agentsNamed = async (name: string) =>
    ((await api.get('/v1/agents')).body.data as { id: string; name: string; instructions: string }[]).filter(
      (a) => a.name === name,
    );

  it('creates an agent through the form, refuses invalid values beside their fields, and edits it', async () => {
    await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Agents' }).click();
    await page.getByRole('heading', { name: 'Agents', level: 1 }).waitFor();
    await page.getByRole('link', { name: 'New agent' }).click();
    await page.getByRole('heading', { name: 'New agent' }).waitFor();

    // Invalid values: the API's issues appear next to the fields they name, and nothing is created.
    await page.getByLabel('Model', { exact: true }).fill('not-a-model');
    await page.getByRole('button', { name: 'Create agent' }).click();
    await page.getByTestId('form-error').waitFor();
    await expectText(page.getByTestId('error-Name'), /too small|at least|>=1/i);
    await expectText(page.getByTestId('error-Model'), /provider/);
    await shot('agents-new-invalid');
    expect((await api.get('/v1/agents')).body.data).toEqual([]);

    await page.getByLabel('Name', { exact: true }).fill('helper');
    await page.getByLabel('Model', { exact: true }).fill('openai-chat/gpt-4o-mini');
    await page.getByLabel('Instructions').fill('Answer briefly.');
    await page.getByLabel('Max spend per turn (USD)').fill('0.5');
    await page.getByRole('button', { name: 'Create agent' }).click();
    await page.getByRole('heading', { name: 'helper', level: 1 }).waitFor();
    const [created] = await agentsNamed('helper');
    expect(created).toMatchObject({ model: 'openai-chat/gpt-4o-mini', instructions: 'Answer briefly.' });
    expect((await api.get(`/v1/agents/${created.id}`)).body.budgets).toEqual({ maxUsd: 0.5 });
    await shot('agents-agent-settings');

    await page.getByRole('link', { name: 'Edit' }).click();
    await page.getByRole('heading', { name: 'Edit helper' }).waitFor();
    await page.getByLabel('Instructions').fill('Answer in one sentence.');
    await shot('agents-edit');
    await page.getByRole('button', { name: 'Save changes' }).click();
    await expectText(page.getByTestId('agent-instructions'), /^Answer in one sentence\.$/);
    expect((await api.get(`/v1/agents/${created.id}`)).body.instructions).toBe('Answer in one sentence.');

    const before = con.requests.length;
    await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Agents' }).click();
    await page.getByTestId('agent-helper').getByRole('link', { name: 'helper' }).waitFor();
    // The list answers each agent's lifecycle: the page reads no agent one by one.
    await expectText(page.getByTestId('agent-helper'), /awake idle|awake running|asleep/);
    expect(con.requests.slice(before).filter((u) => /\/v1\/agents\/[0-9a-f-]{36}/.test(u))).toEqual([]);
    await shot('agents-list');
    expect(await agentsNamed('helper')).toHaveLength(1);
  });

  it('pauses and resumes the agent, and adds and deletes a memory', async () => {
    const [agent] = await agentsNamed('helper');
    await page.goto(`/console/agents/${agent.id}`);
    await page.getByRole('tab', { name: 'Lifecycle' }).click();
    await page.getByRole('button', { name: 'Pause' }).click();
    await expectText(page.getByTestId('lifecycle-state'), /paused/);
    expect((await api.get(`/v1/agents/${agent.id}`)).body.status.lifecycle.state).toBe('paused');
    await shot('agents-lifecycle-paused');
    // The list shows it paused too (its answer carries the lifecycle).
    expect(
      ((await api.get('/v1/agents')).body.data as { id: string; lifecycle: { state: string } }[]).find(
        (a) => a.id === agent.id,
      )?.lifecycle.state,
    ).toBe('paused');
    await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Agents' }).click();
    await expectText(page.getByTestId('agent-helper'), /paused/);
    await page.getByTestId('agent-helper').getByRole('link', { name: 'helper' }).click();
    await page.getByRole('tab', { name: 'Lifecycle' }).click();
    await page.getByRole('button', { name: 'Resume' }).click();
    await page.getByRole('button', { name: 'Pause' }).waitFor();
    expect((await api.get(`/v1/agents/${agent.id}`)).body.status.lifecycle.state).not.toBe('paused');

    await page.getByRole('tab', { name: 'Work items' }).click();
    await page.getByLabel('Objective').fill('Tidy the changelog');
    await page.getByRole('button', { name: 'Enqueue' }).click();
    await page.getByTestId('work-items').getByText('Tidy the changelog').first().waitFor();
    await shot('agents-work-items');

    // The work item wakes the agent: its tick turn may add an episode to memory meanwhile.
    await page.getByRole('tab', { name: 'Memory', exact: true }).click();
    await page.getByLabel('Title (optional)').fill('Deploy day');
    // Memory is shown as text: markup in it stays characters.
    await page.getByLabel('Content').fill('Deploys happen on <b>Tuesdays</b>.');
    await page.getByRole('button', { name: 'Add memory' }).click();
    const record = page.getByTestId('memory-record').filter({ hasText: 'Deploy day' });
    await expectText(record, /Deploys happen on <b>Tuesdays<\/b>\./);
    await expectText(record, /source: api/);
    await shot('agents-memory');
    const notes = async () =>
      ((await api.get(`/v1/agents/${agent.id}/memory?kind=note`)).body.data as { title: string }[]).map(
        (m) => m.title,
      );
    expect(await notes()).toEqual(['Deploy day']);
    await page.getByRole('button', { name: 'Delete memory “Deploy day”' }).click();
    await record.waitFor({ state: 'detached' });
    expect(await notes()).toEqual([]);
  });

  it('lists a schedule, a trigger and its triaged delivery on the inputs page', async () => {
    const [agent] = await agentsNamed('helper');
    const schedule = await api.post('/v1/schedules', {
      agentId: agent.id,
      cron: '0 9 * * 1-5',
      timezone: 'Europe/Paris',
      payload: { text: 'Morning report' },
    });
    expect(schedule.status).toBe(201);
    const trigger = await api.post('/v1/triggers', {
      agentId: agent.id,
      name: 'alerts',
      scheme: 'token',
      rules: [{ match: {}, action: 'drop', reason: 'quiet hours' }],
    });
    expect(trigger.status).toBe(201);
    const hook = await fetch(`${stack.url}${trigger.body.path}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'idempotency-key': 'alert-1' },
      body: JSON.stringify({ type: 'disk_full' }),
    });
    expect(hook.status).toBe(202);

    await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Inputs' }).click();
    const row = page.getByTestId(`schedule-${schedule.body.id}`);
    await expectText(row, /0 9 \* \* 1-5/);
    await expectText(row, /helper/);
    await expectText(row, /in \d+[smhd]/);
    await page.getByRole('button', { name: 'Deliveries of alerts' }).click();
    const deliveries = page.getByRole('table', { name: 'Deliveries of alerts' });
    await expectText(deliveries, /drop/);
    await expectText(deliveries, /quiet hours/);
    // The trigger's URL token was shown once, at creation: never on this page.
    expect(await page.content()).not.toContain(trigger.body.path);
    await shot('inputs');
  });

  it('shows spend per day, agent and model after a turn', async () => {
    const [agent] = await agentsNamed('helper');
    const session = await api.post('/v1/sessions', { agentId: agent.id });
    const message = await api.post(`/v1/sessions/${session.body.id}/messages`, { content: 'Hello?' });
    expect(message.status).toBe(202);
    await waitFor(
      async () => (await api.get(`/v1/turns/${message.body.turnId}`)).body.status === 'completed',
      { what: 'the turn to complete' },
    );
    // The page reads the cost ledger once: wait until the turn's spend is in it.
    await waitFor(async () => (await api.get('/v1/usage?groupBy=agent')).body.groups?.length > 0, {
      what: 'the turn to be in the usage ledger',
    });

    await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Usage' }).click();
    await page.getByRole('heading', { name: 'Spend per day' }).waitFor();
    await expectText(page.getByTestId('usage-totals'), /[1-9]\d* turns?/);
    await page.getByTestId('usage-agent-helper').waitFor();
    await page.getByTestId('usage-model-openai-chat/gpt-4o-mini').waitFor();
    await page.getByRole('img', { name: 'Spend per model' }).waitFor();
    await shot('usage');
  });

  it('fits a phone screen, and no request left the gateway', async () => {
    const phone = await openConsole(stack.browser, stack.url, { width: 390, height: 844 });
    try {
      await signIn(phone.page, key);
      await phone.page.goto('/console/agents');
      await phone.page.getByTestId('agent-helper').waitFor();
      await screenshot(phone.page, 'agents-list-390');
      expect(await scrollsSideways(phone.page)).toBe(false);
      const [agent] = await agentsNamed('helper');
      await phone.page.goto(`/console/agents/${agent.id}`);
      await phone.page.getByTestId('agent-settings').waitFor();
      await screenshot(phone.page, 'agents-agent-390');
      expect(await scrollsSideways(phone.page)).toBe(false);
      await phone.page.goto('/console/agents/new');
      await phone.page.getByLabel('Name', { exact: true }).waitFor();
      expect(await scrollsSideways(phone.page)).toBe(false);
      expect(phone.foreign()).toEqual([]);
    } finally {
      await phone.close();
    }
    expect(con.foreign()).toEqual([]);
  });
});

/** Waits until the element's text matches (the page updates after the API answers). */
async function expectText(locator: ReturnType<Page['getByTestId']>, pattern: RegExp): Promise<void> {
  await locator.first().waitFor();
  await waitFor(async () => pattern.test((await locator.first().innerText()).trim()), {
    what: `text ${pattern}`,
  });
}
