import { existsSync, mkdirSync } from 'node:fs';
import path from 'node:path';
import { chromium, type Browser, type BrowserContext, type Page } from 'playwright-core';

/**
 * The web console in a real browser: Debian's Chromium (scripts/lib.sh `ensure_chromium`) driven by
 * playwright-core, headless. Every request the page makes is recorded, so a test can assert that none
 * left for a non-local origin; screenshots go to test-artifacts/console/.
 */
export const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
export const ARTIFACTS = path.resolve(__dirname, '../../test-artifacts/console');

export async function launchBrowser(): Promise<Browser> {
  if (!existsSync(CHROMIUM)) {
    throw new Error(
      `no Chromium at ${CHROMIUM}: the test command installs Debian's chromium (scripts/lib.sh ensure_chromium)`,
    );
  }
  return chromium.launch({
    executablePath: CHROMIUM,
    headless: true,
    // Without these, Chromium reaches for Google's hosts at start (closed network here: refused).
    args: [
      '--no-sandbox',
      '--disable-gpu',
      '--disable-quic',
      '--no-first-run',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
      '--disable-dev-shm-usage',
    ],
  });
}

export interface ConsolePage {
  context: BrowserContext;
  page: Page;
  /** Every URL the page requested, in order. */
  requests: string[];
  /** Requests to an origin other than the gateway's (must stay empty). */
  foreign(): string[];
  /** Errors the page's scripts threw or logged. */
  errors: string[];
  close(): Promise<void>;
}

/** A fresh browser context (no storage) on the console of the gateway at `baseUrl`. */
export async function openConsole(
  browser: Browser,
  baseUrl: string,
  viewport: { width: number; height: number } = { width: 1280, height: 800 },
  /** `bypassCSP`: only for injecting a checker (axe-core); the console itself never needs it. */
  options: { bypassCSP?: boolean } = {},
): Promise<ConsolePage> {
  const context = await browser.newContext({
    viewport,
    baseURL: baseUrl,
    bypassCSP: options.bypassCSP ?? false,
  });
  const page = await context.newPage();
  const requests: string[] = [];
  const errors: string[] = [];
  page.on('request', (r) => requests.push(r.url()));
  page.on('pageerror', (e) => errors.push(String(e)));
  page.on('console', (m) => {
    if (m.type() === 'error') errors.push(m.text());
  });
  const origin = new URL(baseUrl).origin;
  return {
    context,
    page,
    requests,
    errors,
    foreign: () =>
      requests.filter((u) => !u.startsWith(origin) && !u.startsWith('data:') && !u.startsWith('blob:')),
    close: () => context.close(),
  };
}

/** Signs in on the console's sign-in page with a tenant key or the admin token. */
export async function signIn(page: Page, token: string): Promise<void> {
  await page.goto('/console/');
  await page.getByLabel('API key or admin token').fill(token);
  await page.getByRole('button', { name: 'Sign in' }).click();
  await page.getByRole('button', { name: 'Sign out' }).waitFor();
}

/** Saves a full-page screenshot as test-artifacts/console/<name>.png. */
export async function screenshot(page: Page, name: string): Promise<string> {
  mkdirSync(ARTIFACTS, { recursive: true });
  const file = path.join(ARTIFACTS, `${name}.png`);
  await page.screenshot({ path: file, fullPage: true });
  return file;
}

/** Whether the page scrolls sideways (it must not, at 1280×800 or 390×844). */
export function scrollsSideways(page: Page): Promise<boolean> {
  // A string, so it is evaluated in the page: the tests compile without the DOM's types.
  return page.evaluate<boolean>(
    'document.documentElement.scrollWidth > document.documentElement.clientWidth + 1',
  );
}

export interface AxeViolation {
  id: string;
  impact: string | null;
  help: string;
  targets: string[];
}

/**
 * The WCAG 2 A and AA rules of axe-core (Deque's accessibility engine) over the page as it is: needs
 * a page opened with `bypassCSP`, since the checker is injected as a script.
 */
export async function axeViolations(page: Page): Promise<AxeViolation[]> {
  await page.addScriptTag({ path: require.resolve('axe-core/axe.min.js') });
  return page.evaluate<AxeViolation[]>(`axe
    .run(document, { runOnly: { type: 'tag', values: ['wcag2a', 'wcag2aa', 'wcag21a', 'wcag21aa'] } })
    .then((r) => r.violations.map((v) => ({
      id: v.id,
      impact: v.impact,
      help: v.help,
      targets: v.nodes.slice(0, 5).map((n) => n.target.join(' ')),
    })))`);
}
