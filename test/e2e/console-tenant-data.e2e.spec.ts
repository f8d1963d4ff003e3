import { readFile } from 'node:fs/promises';
import { randomBytes } from 'node:crypto';
import type { Locator, Page } from 'playwright-core';
import { scripted, waitFor } from '@switchboard/testing';
import { Api } from '../support/api';
import { openConsole, screenshot, signIn, type ConsolePage } from '../support/console';
import { ADMIN, startConsoleStack, type ConsoleStack } from '../support/console-stack';

jest.setTimeout(180_000);

/**
 * The console's operator view of a tenant's data (docs/adr/0068, 0067) in Chromium against a real
 * gateway (with a local key ring, ENCRYPTION_KEYS) and workers (the hooks worker runs deletions): a
 * tenant exported (the download parses as the JSONL archive: manifest, rows, end line with counts),
 * a bad retention refused with the API's message (nothing changed) and a good one saved, encryption
 * turned on and the data key rotated (versions and states shown, the audit entry readable), and the
 * tenant deleted behind its typed name, followed to completion, with its receipt and counts.
 */
describe('console: tenant data (export, retention, data keys, deletion)', () => {
  let stack: ConsoleStack;
  let admin: Api;
  let tenant: { api: Api; tenantId: string; key: string };
  let ui: ConsolePage;
  let page: Page;
  const NAME = 'data-acme';

  beforeAll(async () => {
    stack = await startConsoleStack({
      env: { ENCRYPTION_KEYS: `k1:${randomBytes(32).toString('base64')}` },
    });
    stack.llm.setDefault(scripted.text('Noted.'));
    admin = new Api(stack.url, ADMIN);
    tenant = await stack.tenant(NAME);
    const agent = await tenant.api.post('/v1/agents', { name: 'keeper', model: 'openai-chat/gpt-4o-mini' });
    expect(agent.status).toBe(201);
    expect(
      (await tenant.api.post(`/v1/agents/${agent.body.id}/memory`, { content: 'likes green tea' })).status,
    ).toBe(201);
    const session = await tenant.api.post('/v1/sessions', { agentId: agent.body.id });
    const turn = await tenant.api.post(`/v1/sessions/${session.body.id}/messages`, {
      content: 'remember the tea',
      wait: true,
    });
    expect(turn.body.status).toBe('completed');
    ui = await openConsole(stack.browser, stack.url);
    page = ui.page;
    await signIn(page, ADMIN);
    await page.goto(`/console/operator/tenants/${tenant.tenantId}`);
    await page.getByRole('heading', { level: 1, name: NAME }).waitFor();
  });

  afterAll(async () => {
    await ui?.close();
    await stack?.close();
  });

  afterEach(() => {
    expect(ui.foreign()).toEqual([]);
    expect(ui.errors.filter((e) => !/status of 4\d\d/.test(e))).toEqual([]);
  });

  const alert = (text: RegExp) => page.getByRole('alert').filter({ hasText: text }).first().waitFor();
  const shows = (locator: Locator, text: string | RegExp) =>
    locator
      .filter({ hasText: typeof text === 'string' ? new RegExp(`^${text}$`) : text })
      .first()
      .waitFor();

  it('exports the tenant: the download is the archive, and its counts are shown', async () => {
    const [download] = await Promise.all([
      page.waitForEvent('download'),
      page.getByRole('button', { name: 'Export', exact: true }).click(),
    ]);
    expect(download.suggestedFilename()).toMatch(/^data-acme-export-\d{4}-\d{2}-\d{2}\.jsonl$/);
    const text = await readFile(await download.path(), 'utf8');
    const lines = text
      .trim()
      .split('\n')
      .map(
        (l) =>
          JSON.parse(l) as {
            kind: string;
            table?: string;
            tenantId?: string;
            counts?: Record<string, number>;
          },
      );
    expect(lines[0]).toMatchObject({ kind: 'manifest', tenantId: tenant.tenantId });
    const end = lines[lines.length - 1];
    expect(end.kind).toBe('end');
    const rows = lines.filter((l) => l.kind === 'row');
    for (const table of ['tenants', 'agents', 'sessions', 'messages', 'memory_records']) {
      expect({ table, n: rows.filter((r) => r.table === table).length }).toEqual({
        table,
        n: end.counts?.[table],
      });
    }
    expect(end.counts?.sessions).toBe(1);
    // The page says what it downloaded: the same total as the archive's rows.
    await shows(page.getByTestId('export-done'), new RegExp(`Exported ${rows.length} rows from`));
    // …and the export is in the tenant's audit log, readable.
    const audit = await admin.get(
      `/v1/admin/audit-events?tenantId=${tenant.tenantId}&action=tenant.exported`,
    );
    expect(audit.body.data).toHaveLength(1);
  });

  it("refuses a bad retention with the API's message and changes nothing; saves a good one", async () => {
    const field = page.getByLabel('Keep transcripts for (days, empty = for ever)');
    const save = page.getByRole('button', { name: 'Save retention' });
    await field.fill('a week');
    await save.click();
    await alert(/a number of days/);
    for (const bad of ['0', '2.5', '99999']) {
      await field.fill(bad);
      await save.click();
      await alert(/validation_failed/);
      expect(
        (await admin.get(`/v1/admin/tenants/${tenant.tenantId}`)).body.transcriptRetentionDays,
      ).toBeNull();
    }
    await field.fill('30');
    await save.click();
    await page.getByRole('status').filter({ hasText: 'Retention saved.' }).waitFor();
    await shows(page.getByTestId('retention-state'), /more than 30 days/);
    expect((await admin.get(`/v1/admin/tenants/${tenant.tenantId}`)).body.transcriptRetentionDays).toBe(30);
  });

  it('turns encryption on and rotates the data key; the versions and the audit entry show it', async () => {
    await page.getByLabel('Mode').selectOption('on');
    await page.getByRole('button', { name: 'Save mode' }).click();
    await shows(page.getByTestId('encryption-mode'), /In force: on\./);
    const before = (await admin.get(`/v1/admin/tenants/${tenant.tenantId}/data-keys`)).body.data as {
      version: number;
    }[];
    const next = Math.max(0, ...before.map((k) => k.version)) + 1;
    await page.getByRole('button', { name: 'Rotate data key' }).click();
    await page
      .getByRole('status')
      .filter({ hasText: `version ${next} is active` })
      .waitFor();
    await shows(page.getByTestId(`data-key-${next}`), /active/);
    if (next > 1) await shows(page.getByTestId(`data-key-${next - 1}`), /retired/);
    const after = await admin.get(`/v1/admin/tenants/${tenant.tenantId}/data-keys`);
    expect(after.body).toMatchObject({ mode: 'on' });
    expect(after.body.data[0]).toMatchObject({
      version: next,
      state: 'active',
      provider: 'local',
      kekId: 'k1',
    });
    await page.getByRole('link', { name: "The tenant's whole audit log" }).click();
    await page.getByRole('heading', { level: 1, name: 'Audit log' }).waitFor();
    await page.getByLabel('Action').selectOption('tenant.data_key_rotated');
    await page
      .getByTestId('audit-tenant.data_key_rotated')
      .filter({ hasText: next > 1 ? `version ${next} active, version ${next - 1} retired` : 'created' })
      .first()
      .waitFor();
    await page.goto(`/console/operator/tenants/${tenant.tenantId}`);
    await page.getByRole('heading', { level: 1, name: NAME }).waitFor();
  });

  it('deletes the tenant behind its typed name, follows it to its receipt with counts', async () => {
    const confirm = page.getByLabel(`Type the tenant's name (${NAME}) to confirm`);
    const remove = page.getByRole('button', { name: 'Delete tenant' });
    await confirm.fill('data-acm');
    expect(await remove.isDisabled()).toBe(true);
    expect((await admin.get(`/v1/admin/tenants/${tenant.tenantId}`)).status).toBe(200);
    await confirm.fill(NAME);
    await remove.click();
    await page.getByRole('heading', { level: 1, name: `Deletion of ${NAME}` }).waitFor();
    await shows(page.getByTestId('deletion-status'), 'completed');
    await shows(page.getByTestId('deleted-sessions'), /sessions\s*1/);
    await shows(page.getByTestId('deleted-tenants'), /tenants\s*1/);
    await shows(page.getByTestId('deletion-key'), 'yes');
    const receipt = page.getByTestId('audit-tenant.deleted');
    await shows(receipt, /data-acme: \d+ rows deleted from \d+ tables/);
    // The sentence alone: the rows per table are the table above, not repeated as raw lines.
    expect(await receipt.locator('.audit-details').count()).toBe(0);
    expect(await receipt.textContent()).not.toContain('counts.');
    await screenshot(page, 'operator-deletion');

    // The API agrees: the tenant is gone; the deletion's counts are the page's.
    expect((await admin.get(`/v1/admin/tenants/${tenant.tenantId}`)).status).toBe(404);
    const list = await admin.get('/v1/admin/tenant-deletions');
    const d = (list.body.data as { tenantId: string; counts: Record<string, number> }[]).find(
      (x) => x.tenantId === tenant.tenantId,
    );
    const total = Object.values(d?.counts ?? {}).reduce((a, b) => a + b, 0);
    expect(total).toBeGreaterThan(5);
    await shows(page.getByTestId('deletion-total'), String(total));

    // The Deletions list has it, with the same total, and links to it.
    await page.getByRole('link', { name: 'Deletions', exact: true }).click();
    await page.getByRole('heading', { level: 1, name: 'Tenant deletions' }).waitFor();
    const row = page.getByTestId(`deletion-${tenant.tenantId}`);
    await shows(row.getByTestId('deletion-rows'), String(total));
    await row.getByRole('link', { name: NAME }).click();
    await page.getByRole('heading', { level: 1, name: `Deletion of ${NAME}` }).waitFor();
    await screenshot(page, 'operator-deletions');
  });

  it('a deletion that does not exist is a readable 404, not a broken page', async () => {
    await page.goto('/console/operator/deletions/00000000-0000-4000-8000-000000000000');
    await page.getByRole('heading', { level: 1, name: 'Tenant deletion' }).waitFor();
    await alert(/not_found/);
    await waitFor(async () => (await page.getByRole('link', { name: 'All deletions' }).count()) === 1, {
      what: 'the way back',
    });
  });
});
