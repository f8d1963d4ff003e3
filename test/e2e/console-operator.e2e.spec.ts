import type { Locator, Page } from 'playwright-core';
import { waitFor } from '@switchboard/testing';
import { Api } from '../support/api';
import { openConsole, screenshot, scrollsSideways, signIn, type ConsolePage } from '../support/console';
import { ADMIN, startConsoleStack, type ConsoleStack } from '../support/console-stack';
import { FIXTURES } from '../support/stack';

jest.setTimeout(180_000);

/**
 * The console's operator view in Chromium against a real gateway and workers: tenants with their
 * turn counts, a tenant's daily spend cap edited and persisted, a pause that refuses new input and a
 * resume, the tenant's own view opened and left, an API key created and revoked, the queues and the
 * harness processes; every page at 1280×800 and 390×844 without sideways scroll, nothing fetched
 * from another origin.
 */
describe('console: operator view', () => {
  let stack: ConsoleStack;
  let admin: Api;
  let tenant: { api: Api; tenantId: string; key: string };
  let session: string;
  let ui: ConsolePage;
  let page: Page;

  beforeAll(async () => {
    stack = await startConsoleStack({ env: { SCRIPTED_FIXTURES_DIR: FIXTURES } });
    admin = new Api(stack.url, ADMIN);
    tenant = await stack.tenant('acme-operator');
    // A turn held for approval, and one queued behind it: the tenant's counts are 1 waiting, 1 queued.
    const agent = await tenant.api.post('/v1/agents', {
      name: 'gated',
      model: 'scripted/demo',
      tools: ['word_count'],
      approvalRequired: ['word_count'],
    });
    session = (await tenant.api.post('/v1/sessions', { agentId: agent.body.id })).body.id;
    const held = await tenant.api.post(`/v1/sessions/${session}/messages`, { content: 'one two' });
    await waitFor(
      async () => (await tenant.api.get(`/v1/turns/${held.body.turnId}`)).body.status === 'awaiting_approval',
      { what: 'the first turn to wait for approval' },
    );
    await tenant.api.post(`/v1/sessions/${session}/messages`, { content: 'three' });
    ui = await openConsole(stack.browser, stack.url);
    page = ui.page;
  });

  afterAll(async () => {
    await ui?.close();
    await stack?.close();
  });

  afterEach(() => {
    expect(ui.foreign()).toEqual([]);
  });

  const row = () => page.getByTestId(`tenant-${tenant.tenantId}`);
  /** Waits until the locator holds exactly this text (the pages refetch on their own). */
  const shows = (locator: Locator, text: string | RegExp) =>
    locator
      .filter({ hasText: typeof text === 'string' ? new RegExp(`^${text}$`) : text })
      .first()
      .waitFor();
  const heading = (name: string) => page.getByRole('heading', { level: 1, name }).waitFor();
  const openTenantPage = async () => {
    await page.getByRole('link', { name: 'Tenants' }).click();
    await row().getByRole('link', { name: 'acme-operator' }).click();
    await heading('acme-operator');
  };

  it('signs in as the operator and lists tenants with their turn counts', async () => {
    await signIn(page, ADMIN);
    await heading('Tenants');
    await page
      .getByTestId('who')
      .filter({ hasText: /^Operator$/ })
      .waitFor();
    await shows(row().getByTestId('queued'), '1');
    await shows(row().getByTestId('waiting'), '1');
    await shows(row().getByTestId('running'), '0');
    await screenshot(page, 'operator-tenants');
  });

  it('creates a tenant and shows its first key once', async () => {
    await page.getByLabel('New tenant name').fill('created-in-console');
    await page.getByRole('button', { name: 'Create tenant' }).click();
    const key = await page.getByLabel('New API key').inputValue();
    expect(key).toMatch(/\S{20,}/);
    expect((await new Api(stack.url, key).get('/v1/settings')).status).toBe(200);
    await page.getByRole('button', { name: 'Done, hide the key' }).click();
    await page.getByLabel('New API key').waitFor({ state: 'detached' });
    await page.getByRole('link', { name: 'created-in-console' }).waitFor();
    // The key is in no storage of the page: only the credential is.
    const stored = await page.evaluate<string>('JSON.stringify(Object.entries(sessionStorage))');
    expect(stored).not.toContain(key);
  });

  it("edits a tenant's daily spend cap and it persists", async () => {
    await openTenantPage();
    await page.getByLabel('Daily spend cap (USD)').fill('42.5');
    await page.getByRole('button', { name: 'Save caps' }).click();
    await page.getByRole('status').filter({ hasText: 'Caps saved.' }).waitFor();
    const shown = await admin.get(`/v1/admin/tenants/${tenant.tenantId}`);
    expect(shown.body).toMatchObject({ dailySpendLimitUsd: 42.5, maxConcurrentTurns: null, share: 1 });
    await page.reload();
    expect(await page.getByLabel('Daily spend cap (USD)').inputValue()).toBe('42.5');
    await screenshot(page, 'operator-tenant');
  });

  it('pauses the tenant (a new message is refused) and resumes it', async () => {
    await page.getByLabel('Pause reason (optional, audited)').fill('console e2e');
    await page.getByRole('button', { name: 'Pause tenant' }).click();
    await page.getByTestId('pause-state').filter({ hasText: 'console e2e' }).waitFor();
    const refused = await tenant.api.post(`/v1/sessions/${session}/messages`, { content: 'more' });
    expect({ status: refused.status, code: refused.body.error?.code }).toEqual({
      status: 403,
      code: 'tenant_paused',
    });
    // …and the tenant, in its own console, sees its message refused with the reason.
    const own = await openConsole(stack.browser, stack.url);
    try {
      await signIn(own.page, tenant.key);
      await own.page.goto(`/console/sessions/${session}`);
      await own.page.getByLabel('Message').fill('refused while paused');
      await own.page.getByRole('button', { name: 'Send', exact: true }).click();
      await own.page.getByRole('alert').filter({ hasText: 'tenant_paused' }).waitFor();
      expect(own.foreign()).toEqual([]);
    } finally {
      await own.close();
    }
    // The tenant's page lists the pause in its recent audit entries.
    await page.getByTestId('audit-tenant.paused').first().waitFor();

    await page.getByRole('button', { name: 'Resume tenant' }).click();
    await page.getByRole('button', { name: 'Pause tenant' }).waitFor();
    expect((await admin.get(`/v1/admin/tenants/${tenant.tenantId}`)).body.paused).toBe(false);
    const accepted = await tenant.api.post(`/v1/sessions/${session}/messages`, { content: 'again' });
    expect(accepted.status).toBe(202);
  });

  it('creates an API key for the tenant with a role, shows the role, and revokes it', async () => {
    await page.getByLabel('New key name (optional)').fill('console-made');
    await page.getByLabel('Role').selectOption('reader');
    await page.getByRole('button', { name: 'Create key' }).click();
    const key = await page.getByLabel('New API key').inputValue();
    const made = new Api(stack.url, key);
    expect((await made.get('/v1/settings')).status).toBe(200);
    // A reader key (docs/adr/0066): reads, and is refused a change naming the scope it lacks.
    expect((await made.patch('/v1/settings', {})).body.error).toMatchObject({
      code: 'insufficient_scope',
      details: { scope: 'settings:write' },
    });
    await page.getByRole('button', { name: 'Done, hide the key' }).click();

    const listed = await admin.get(`/v1/admin/tenants/${tenant.tenantId}/api-keys`);
    const row = listed.body.data.find((k: { name: string }) => k.name === 'console-made');
    expect(row).toMatchObject({ role: 'reader', agentIds: null, expiresAt: null });
    const prefix = row.prefix;
    await page.getByTestId(`key-${prefix}`).getByText('reader').waitFor();
    await page.getByRole('button', { name: `Revoke key ${prefix}` }).click();
    await page.getByRole('button', { name: `Confirm revoking key ${prefix}` }).click();
    await page.getByTestId(`key-${prefix}`).getByText('revoked').waitFor();
    expect((await made.get('/v1/settings')).status).toBe(401);
    // The tenant's first key still works.
    expect((await tenant.api.get('/v1/settings')).status).toBe(200);
  });

  it("shows each key's role, the agents it is limited to and its expiry", async () => {
    const agentId = (await tenant.api.get('/v1/agents')).body.data[0].id as string;
    const expiresAt = new Date(Date.now() + 7 * 86_400_000).toISOString();
    const made = await admin.post(`/v1/admin/tenants/${tenant.tenantId}/api-keys`, {
      name: 'approvals-console',
      role: 'approver',
      agentIds: [agentId],
      expiresAt,
    });
    expect(made.status).toBe(201);
    // The page afresh (the sign-in is kept for the tab): the panel reads the keys again.
    await page.reload();
    await heading('acme-operator');
    const keys = (await admin.get(`/v1/admin/tenants/${tenant.tenantId}/api-keys`)).body.data;
    const listed = keys.find((k: { id: string }) => k.id === made.body.id);
    expect(listed).toMatchObject({ role: 'approver', agentIds: [agentId], expiresAt: expect.any(String) });
    const limited = page.getByTestId(`key-${listed.prefix}`);
    await limited.getByText('approver', { exact: true }).waitFor();
    await limited.getByText(agentId).waitFor();
    expect(await limited.getByText('never', { exact: true }).count()).toBe(0);
    expect(await limited.getByText('all', { exact: true }).count()).toBe(0);
    // The tenant's first key: an admin key for every agent that never expires.
    const unlimited = page.getByTestId(`key-${keys[0].prefix}`);
    await unlimited.getByText('admin', { exact: true }).waitFor();
    await unlimited.getByText('all', { exact: true }).waitFor();
    await unlimited.getByText('never', { exact: true }).waitFor();
    await screenshot(page, 'operator-tenant-keys');
  });

  it("opens the tenant's view and comes back", async () => {
    await page.getByRole('button', { name: 'Open tenant view' }).click();
    await heading('Sessions');
    await page.getByTestId('who').filter({ hasText: 'Operator, viewing acme-operator' }).waitFor();
    expect(page.url()).toContain('/console/sessions');
    await page.getByRole('button', { name: 'Back to operator view' }).click();
    await heading('Tenants');
    await page.getByRole('button', { name: 'Open tenant view of acme-operator' }).waitFor();
  });

  it('shows the audit log, the queues and the harness processes', async () => {
    await page.getByRole('link', { name: 'Audit log' }).click();
    await heading('Audit log');
    await page.getByLabel('Action').selectOption('tenant.paused');
    await page.getByTestId('audit-tenant.paused').first().waitFor();
    expect(await page.getByTestId('audit-tenant.created').count()).toBe(0);
    await screenshot(page, 'operator-audit');

    await page.getByRole('link', { name: 'Queues' }).click();
    await heading('Queues');
    await page.getByTestId('queue-turns').waitFor();
    expect(await page.getByRole('link', { name: 'Open Bull Board' }).getAttribute('href')).toBe(
      '/admin/queues',
    );
    await screenshot(page, 'operator-queues');

    await page.getByRole('link', { name: 'Processes' }).click();
    await heading('Harness processes');
    await page
      .getByTestId(/^process-/)
      .first()
      .waitFor();
    await screenshot(page, 'operator-processes');
  });

  it('fits 1280×800 and 390×844 without sideways scroll', async () => {
    const pages: [string, string][] = [
      ['/console/operator/tenants', 'Tenants'],
      [`/console/operator/tenants/${tenant.tenantId}`, 'acme-operator'],
      ['/console/operator/audit', 'Audit log'],
      ['/console/operator/queues', 'Queues'],
      ['/console/operator/processes', 'Harness processes'],
    ];
    for (const viewport of [
      { width: 1280, height: 800 },
      { width: 390, height: 844 },
    ]) {
      await page.setViewportSize(viewport);
      for (const [url, title] of pages) {
        await page.goto(url);
        await heading(title);
        expect({ url, viewport, sideways: await scrollsSideways(page) }).toEqual({
          url,
          viewport,
          sideways: false,
        });
      }
    }
    await page.goto('/console/operator/tenants');
    await row().waitFor();
    await screenshot(page, 'operator-tenants-narrow');
    expect(ui.errors.filter((e) => !/401|403/.test(e))).toEqual([]);
  });
});
