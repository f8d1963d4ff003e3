import { createTestEnv, type TestEnv } from '@switchboard/testing';
import { FIXTURES, startGateway } from '../support/stack';
import { newTenant, type Api } from '../support/api';

/**
 * Helmet's headers (docs/adr/0034) on the gateway's JSON answers, on the Swagger UI at /docs (whose
 * scripts and styles the Content-Security-Policy must still allow) and on an SSE stream (written
 * on the raw response, which must carry them too and still stream).
 */
jest.setTimeout(120_000);

const ADMIN = 'test-admin-token-0123456789';

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

function expectHelmet(headers: Headers) {
  expect(headers.get('x-content-type-options')).toBe('nosniff');
  expect(headers.get('x-frame-options')).toBe('SAMEORIGIN');
  expect(headers.get('strict-transport-security')).toMatch(/max-age=\d+/);
  expect(headers.get('referrer-policy')).toBe('no-referrer');
  expect(headers.get('cross-origin-opener-policy')).toBe('same-origin');
  expect(headers.get('x-powered-by')).toBeNull();
  const policy = csp(headers.get('content-security-policy'));
  expect(policy.get('default-src')).toEqual(["'self'"]);
  expect(policy.get('object-src')).toEqual(["'none'"]);
  expect(policy.get('frame-ancestors')).toEqual(["'self'"]);
  // A gateway reached over plain http (port-forward, cluster address) must not have /docs' own
  // scripts upgraded to https.
  expect(policy.has('upgrade-insecure-requests')).toBe(false);
}

describe('security headers (helmet)', () => {
  let env: TestEnv;
  let gateway: Awaited<ReturnType<typeof startGateway>>;
  let api: Api;

  beforeAll(async () => {
    env = await createTestEnv();
    gateway = await startGateway(env.config({ SCRIPTED_FIXTURES_DIR: FIXTURES }));
    api = (await newTenant(gateway.url, ADMIN)).api;
  });

  afterAll(async () => {
    await gateway?.close();
    await env?.cleanup();
  });

  it('are on JSON answers, errors included', async () => {
    const ok = await fetch(`${gateway.url}/healthz`);
    expect(ok.status).toBe(200);
    expectHelmet(ok.headers);
    const unauthorized = await fetch(`${gateway.url}/v1/agents`);
    expect(unauthorized.status).toBe(401);
    expectHelmet(unauthorized.headers);
    const missing = await fetch(`${gateway.url}/v1/nope`, {
      headers: { authorization: `Bearer ${api.key}` },
    });
    expect(missing.status).toBe(404);
    expectHelmet(missing.headers);
  });

  it('let the Swagger UI load: every script and stylesheet it names is same-origin and allowed', async () => {
    const page = await fetch(`${gateway.url}/docs`);
    expect(page.status).toBe(200);
    expectHelmet(page.headers);
    const policy = csp(page.headers.get('content-security-policy'));
    const html = await page.text();
    const scripts = [...html.matchAll(/<script[^>]*\bsrc="([^"]+)"/g)].map((m) => m[1]);
    const styles = [...html.matchAll(/<link[^>]*rel="stylesheet"[^>]*href="([^"]+)"/g)].map((m) => m[1]);
    expect(scripts.length).toBeGreaterThanOrEqual(3);
    expect(styles.length).toBeGreaterThanOrEqual(1);
    // No inline script (script-src 'self' would block it); inline <style> needs 'unsafe-inline'.
    expect(html).not.toMatch(/<script(?![^>]*\bsrc=)[^>]*>/);
    expect(policy.get('script-src')).toEqual(["'self'"]);
    if (/<style[\s>]/.test(html)) expect(policy.get('style-src')).toContain("'unsafe-inline'");
    expect(policy.get('img-src')).toEqual(expect.arrayContaining(["'self'", 'data:']));
    for (const asset of [...scripts, ...styles]) {
      const url = new URL(asset, `${gateway.url}/docs`);
      expect(url.origin).toBe(gateway.url);
      const res = await fetch(url);
      expect({ asset, status: res.status }).toEqual({ asset, status: 200 });
    }
    // The document the UI renders (its init script carries it) is served too.
    expect((await fetch(`${gateway.url}/docs/openapi.json`)).status).toBe(200);
  });

  it('are on an SSE stream, which still streams', async () => {
    const agent = await api.post('/v1/agents', { name: 'headers', model: 'scripted/echo' });
    expect(agent.status).toBe(201);
    const session = await api.post('/v1/sessions', { agentId: agent.body.id });
    expect(session.status).toBe(201);
    const abort = new AbortController();
    try {
      const res = await fetch(`${gateway.url}/v1/sessions/${session.body.id}/stream`, {
        headers: { authorization: `Bearer ${api.key}`, accept: 'text/event-stream' },
        signal: abort.signal,
      });
      expect(res.status).toBe(200);
      expect(res.headers.get('content-type')).toMatch(/^text\/event-stream/);
      expectHelmet(res.headers);
      // The stream's first bytes arrive while it stays open.
      const reader = res.body!.getReader();
      const { value, done } = await reader.read();
      expect(done).toBe(false);
      expect(new TextDecoder().decode(value)).toMatch(/^: stream/);
    } finally {
      abort.abort();
    }
  });
});
