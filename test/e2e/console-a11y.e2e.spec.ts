import { scripted, waitFor } from '@switchboard/testing';
import { Api } from '../support/api';
import { axeViolations, openConsole, signIn, type ConsolePage } from '../support/console';
import { ADMIN, startConsoleStack, type ConsoleStack } from '../support/console-stack';

jest.setTimeout(180_000);

/**
 * Every page of the console against axe-core's WCAG 2.1 A and AA rules (labelled controls, names of
 * buttons and links, headings, landmarks, contrast…), and the keyboard: from the top of a page, Tab
 * reaches the skip link, then the navigation, then the page's controls. The checker is injected,
 * so these pages are opened with `bypassCSP`; the other console tests run under the real CSP.
 */
describe('console accessibility', () => {
  let stack: ConsoleStack;
  let key: string;
  let tenantId: string;
  let ids: { agent: string; session: string; turn: string };
  const pages: ConsolePage[] = [];

  beforeAll(async () => {
    stack = await startConsoleStack();
    stack.llm.setDefault(scripted.text('A **short** answer with a [link](https://example.com).'));
    const t = await stack.tenant('a11y');
    key = t.key;
    tenantId = t.tenantId;
    const agent = await t.api.post('/v1/agents', { name: 'a11y-agent', model: 'openai-chat/gpt-4o-mini' });
    const session = await t.api.post('/v1/sessions', { agentId: agent.body.id });
    const turn = await t.api.post(`/v1/sessions/${session.body.id}/messages`, {
      content: 'hello',
      wait: true,
    });
    expect(turn.body.status).toBe('completed');
    ids = { agent: agent.body.id, session: session.body.id, turn: turn.body.id };
  });

  afterEach(async () => {
    await Promise.all(pages.splice(0).map((p) => p.close()));
  });

  afterAll(async () => {
    await stack?.close();
  });

  async function open(token: string) {
    const c = await openConsole(stack.browser, stack.url, undefined, { bypassCSP: true });
    pages.push(c);
    await signIn(c.page, token);
    return c;
  }

  /** Each path's WCAG violations, so one failure names every page and rule at once. */
  async function audit(c: ConsolePage, paths: string[]) {
    const found: Record<string, unknown> = {};
    for (const path of paths) {
      await c.page.goto(`/console${path}`);
      await c.page.getByRole('heading', { level: 1 }).first().waitFor();
      // The page's data, not its loading state, is what is checked.
      const loading = c.page.getByRole('status').filter({ hasText: /Loading/ });
      await waitFor(async () => (await loading.count()) === 0, { what: `${path} to load` });
      const violations = await axeViolations(c.page);
      if (violations.length > 0) found[path] = violations;
    }
    return found;
  }

  it('the sign-in page', async () => {
    const c = await openConsole(stack.browser, stack.url, undefined, { bypassCSP: true });
    pages.push(c);
    await c.page.goto('/console/');
    await c.page.getByLabel('API key or admin token').waitFor();
    expect(await axeViolations(c.page)).toEqual([]);
    // The checker does find what it looks for: an input with no label.
    await c.page.evaluate(`document.querySelector('form').append(document.createElement('input'))`);
    expect((await axeViolations(c.page)).map((v) => v.id)).toContain('label');
  });

  it("the tenant's pages", async () => {
    const c = await open(key);
    const found = await audit(c, [
      '/sessions',
      `/sessions/${ids.session}`,
      `/turns/${ids.turn}`,
      '/approvals',
      '/agents',
      '/agents/new',
      `/agents/${ids.agent}`,
      '/inputs',
      '/datasets',
      '/usage',
    ]);
    expect(found).toEqual({});
    expect(c.foreign()).toEqual([]);
  });

  it("the operator's pages", async () => {
    // A tenant deleted to its receipt, so the deletions list and a receipt page have content.
    const gone = await stack.tenant('a11y-deleted');
    const admin = new Api(stack.url, ADMIN);
    const deletion = (await admin.delete(`/v1/admin/tenants/${gone.tenantId}`)).body.deletion.id as string;
    await waitFor(
      async () => (await admin.get(`/v1/admin/tenant-deletions/${deletion}`)).body.status === 'completed',
      { what: 'the deletion to complete' },
    );
    const c = await open(ADMIN);
    const found = await audit(c, [
      '/operator/tenants',
      `/operator/tenants/${tenantId}`,
      '/operator/audit',
      '/operator/queues',
      '/operator/processes',
      '/operator/deletions',
      `/operator/deletions/${deletion}`,
    ]);
    expect(found).toEqual({});
  });

  it('the keyboard reaches the skip link, the navigation and the composer, in that order', async () => {
    const c = await open(key);
    await c.page.goto(`/console/sessions/${ids.session}`);
    await c.page.getByLabel('Message').waitFor();
    const reached: string[] = [];
    for (let i = 0; i < 40; i++) {
      await c.page.keyboard.press('Tab');
      const focused = await c.page.evaluate<string>(
        `(() => { const e = document.activeElement; return e ? (e.getAttribute('aria-label') || e.labels?.[0]?.textContent || e.textContent || '').trim() : ''; })()`,
      );
      reached.push(focused);
      if (focused === 'Message') break;
    }
    expect(reached[0]).toBe('Skip to content');
    const at = (name: string) => reached.indexOf(name);
    expect(at('Sessions')).toBeGreaterThan(0);
    expect(at('Message')).toBeGreaterThan(at('Sessions'));
  });
});
