import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { createTestEnv, type TestEnv } from '@switchboard/testing';
import { FIXTURES, startGateway } from '../support/stack';

jest.setTimeout(120_000);

/** `default-src 'self'; …` as a map of directive → sources. */
function csp(header: string | null): Map<string, string[]> {
  return new Map(
    (header ?? '')
      .split(';')
      .map((d) => d.trim().split(/\s+/))
      .filter(([name]) => name)
      .map(([name, ...sources]) => [name, sources]),
  );
}

const INDEX =
  '<!doctype html><html><head><script type="module" src="/console/assets/a.js"></script></head></html>';

/**
 * The gateway serves the console's build (CONSOLE_DIST_DIR) at /console: index.html for the SPA's
 * paths (no-cache), hashed assets with a year's cache, helmet's CSP unchanged, 503 naming the build
 * command while there is no build. A temporary directory stands in for apps/console/dist.
 */
describe('console static files', () => {
  let env: TestEnv;
  let gateway: Awaited<ReturnType<typeof startGateway>>;
  let missing: Awaited<ReturnType<typeof startGateway>>;
  const dist = mkdtempSync(path.join(tmpdir(), 'sb-console-dist-'));

  beforeAll(async () => {
    mkdirSync(path.join(dist, 'assets'));
    writeFileSync(path.join(dist, 'index.html'), INDEX);
    writeFileSync(path.join(dist, 'assets', 'a.js'), 'console.log("a");\n');
    writeFileSync(path.join(dist, 'favicon.svg'), '<svg xmlns="http://www.w3.org/2000/svg"/>');
    env = await createTestEnv();
    gateway = await startGateway(env.config({ SCRIPTED_FIXTURES_DIR: FIXTURES, CONSOLE_DIST_DIR: dist }));
    missing = await startGateway(
      env.config({ SCRIPTED_FIXTURES_DIR: FIXTURES, CONSOLE_DIST_DIR: path.join(dist, 'nothing-here') }),
    );
  });

  afterAll(async () => {
    await gateway?.close();
    await missing?.close();
    await env?.cleanup();
    rmSync(dist, { recursive: true, force: true });
  });

  it.each(['/console', '/console/', '/console/sessions/x', '/console/operator/tenants?x=1'])(
    '%s is index.html, revalidated each time, under the CSP',
    async (route) => {
      const res = await fetch(`${gateway.url}${route}`);
      expect(res.status).toBe(200);
      expect(res.headers.get('content-type')).toMatch(/^text\/html/);
      expect(res.headers.get('cache-control')).toBe('no-cache');
      expect(await res.text()).toBe(INDEX);
      const policy = csp(res.headers.get('content-security-policy'));
      expect(policy.get('script-src')).toEqual(["'self'"]);
      expect(policy.get('default-src')).toEqual(["'self'"]);
      expect(res.headers.get('x-content-type-options')).toBe('nosniff');
    },
  );

  it('serves hashed assets with a long immutable cache, and 404s a missing one', async () => {
    const res = await fetch(`${gateway.url}/console/assets/a.js`);
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toMatch(/javascript/);
    expect(res.headers.get('cache-control')).toBe('public, max-age=31536000, immutable');
    expect(csp(res.headers.get('content-security-policy')).get('script-src')).toEqual(["'self'"]);
    expect(await res.text()).toContain('console.log');
    const gone = await fetch(`${gateway.url}/console/assets/missing-123.js`);
    expect(gone.status).toBe(404);
    expect(((await gone.json()) as { error: { code: string } }).error.code).toBe('not_found');
  });

  it('serves other files of the build, and never a file outside it', async () => {
    const icon = await fetch(`${gateway.url}/console/favicon.svg`);
    expect(icon.status).toBe(200);
    expect(icon.headers.get('content-type')).toMatch(/svg/);
    const outside = await fetch(`${gateway.url}/console/..%2f..%2fetc%2fpasswd`);
    expect(await outside.text()).not.toContain('root:');
  });

  it('needs no credentials (one it is sent is not looked at)', async () => {
    const res = await fetch(`${gateway.url}/console/sessions`, { headers: { authorization: 'Bearer nope' } });
    expect(res.status).toBe(200);
  });

  it('answers 503 naming the build command while there is no build, and the gateway still serves', async () => {
    const json = await fetch(`${missing.url}/console/sessions/x`);
    expect(json.status).toBe(503);
    const body = (await json.json()) as { error: { code: string; message: string } };
    expect(body.error.code).toBe('unavailable');
    expect(body.error.message).toContain('npm run console:build');
    const html = await fetch(`${missing.url}/console`, { headers: { accept: 'text/html' } });
    expect(html.status).toBe(503);
    expect(html.headers.get('content-type')).toMatch(/^text\/html/);
    expect(await html.text()).toContain('npm run console:build');
    expect(csp(html.headers.get('content-security-policy')).get('script-src')).toEqual(["'self'"]);
    expect((await fetch(`${missing.url}/healthz`)).status).toBe(200);
  });
});
