import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { HostAllowList, refusedAddress } from './addresses';
import { createHttpFetch } from './http-fetch';
import { ToolError, type ToolContext } from './tool';

const context = (signal = new AbortController().signal): ToolContext => ({
  tenantId: 't',
  sessionId: 's',
  turnId: 'turn_1',
  callId: 'call_1',
  idempotencyKey: 'turn_1:call_1',
  signal,
  resumed: false,
  writeGate: { isOpen: () => true },
});

/** The ToolError a call fails with (it must fail with one). */
async function failure(promise: Promise<unknown>): Promise<ToolError> {
  const err = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(ToolError);
  return err as ToolError;
}

describe('refusedAddress', () => {
  it.each([
    ['127.0.0.1', 'loopback'],
    ['127.255.255.254', 'loopback'],
    ['10.1.2.3', 'private'],
    ['172.16.0.1', 'private'],
    ['172.31.255.255', 'private'],
    ['192.168.1.1', 'private'],
    ['169.254.169.254', 'link-local (cloud metadata)'],
    ['100.64.0.1', 'carrier-grade NAT'],
    ['0.0.0.0', 'unspecified'],
    ['224.0.0.1', 'multicast'],
    ['255.255.255.255', 'reserved or broadcast'],
    ['::1', 'not a global unicast IPv6 address'],
    ['::', 'not a global unicast IPv6 address'],
    ['fe80::1', 'not a global unicast IPv6 address'],
    ['fc00::1', 'not a global unicast IPv6 address'],
    ['fd00:ec2::254', 'not a global unicast IPv6 address'],
    ['ff02::1', 'not a global unicast IPv6 address'],
    ['::ffff:127.0.0.1', 'not a global unicast IPv6 address'],
    ['::ffff:a9fe:a9fe', 'not a global unicast IPv6 address'],
    ['64:ff9b::7f00:1', 'not a global unicast IPv6 address'],
    ['2002:7f00:1::1', '6to4'],
    ['2001:db8::1', 'documentation'],
    ['[::1]', 'not a global unicast IPv6 address'],
    ['example.com', 'not an IP address'],
  ])('refuses %s (%s)', (address, why) => {
    expect(refusedAddress(address)).toBe(why);
  });

  it.each(['8.8.8.8', '1.1.1.1', '172.32.0.1', '100.128.0.1', '2606:4700:4700::1111', '2a00:1450::1'])(
    'lets the public address %s through',
    (address) => {
      expect(refusedAddress(address)).toBeNull();
    },
  );
});

describe('HostAllowList', () => {
  it('matches exact names, IPs and CIDR ranges', () => {
    const allow = new HostAllowList(['Intranet.Example.', '10.0.0.0/8', '::1']);
    expect(allow.allowsName('intranet.example')).toBe(true);
    expect(allow.allowsName('sub.intranet.example')).toBe(false);
    expect(allow.allowsAddress('10.9.8.7')).toBe(true);
    expect(allow.allowsAddress('11.0.0.1')).toBe(false);
    expect(allow.allowsAddress('::1')).toBe(true);
    expect(new HostAllowList().allowsAddress('127.0.0.1')).toBe(false);
  });

  it('refuses a malformed range', () => {
    expect(() => new HostAllowList(['10.0.0.0/33'])).toThrow(/prefix length/);
    expect(() => new HostAllowList(['name/8'])).toThrow(/not a CIDR range/);
  });
});

describe('http_fetch refusals before any connection', () => {
  const fetchTool = createHttpFetch();

  it.each([
    ['decimal IPv4', 'http://2130706433/'],
    ['octal IPv4', 'http://0177.0.0.1/'],
    ['hex IPv4', 'http://0x7f.1/'],
    ['IPv6 loopback', 'http://[::1]:8080/'],
    ['IPv4-mapped IPv6', 'http://[::ffff:169.254.169.254]/latest/meta-data/'],
    ['AWS metadata', 'http://169.254.169.254/latest/meta-data/'],
    ['AWS IPv6 metadata', 'http://[fd00:ec2::254]/'],
    ['GCP metadata by name', 'http://metadata.google.internal/computeMetadata/v1/'],
    ['a private address', 'https://10.0.0.1/'],
    ['a non-http scheme', 'file:///etc/passwd'],
    ['ftp', 'ftp://example.com/'],
    ['credentials in the URL', 'https://user:secret@example.com/'],
  ])('refuses %s', async (_label, url) => {
    const err = await failure(fetchTool.execute({ url }, context()));
    expect(err.kind).toBe('blocked_address');
    expect(err.retryable).toBe(false);
    expect(err.message).not.toContain('secret');
  });

  it('answers a malformed URL as invalid', async () => {
    expect((await failure(fetchTool.execute({ url: 'not a url' }, context()))).kind).toBe('invalid_url');
  });

  it('accepts only GET and HEAD, and no other argument', () => {
    expect(fetchTool.schema.safeParse({ url: 'https://x', method: 'POST' }).success).toBe(false);
    expect(fetchTool.schema.safeParse({ url: 'https://x', extra: 1 }).success).toBe(false);
  });
});

describe('http_fetch against a local server', () => {
  let server: Server;
  let port: number;
  const seen: IncomingHttpHeaders[] = [];

  beforeAll(async () => {
    server = createServer((req, res) => {
      seen.push(req.headers);
      const url = new URL(req.url ?? '/', 'http://x');
      switch (url.pathname) {
        case '/page':
          res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' });
          return res.end('<p>héllo from the page</p>');
        case '/json':
          res.writeHead(200, { 'content-type': 'application/json' });
          return res.end('{"ok":true}');
        case '/big':
          res.writeHead(200, { 'content-type': 'text/plain' });
          return res.end('x'.repeat(300 * 1024));
        case '/binary':
          res.writeHead(200, { 'content-type': 'image/png' });
          return res.end(Buffer.alloc(10));
        case '/missing':
          res.writeHead(404, { 'content-type': 'text/plain' });
          return res.end('no such page');
        case '/to-loopback':
          // The allowlist names `localhost` only: the hop to 127.0.0.1 must be checked and refused.
          res.writeHead(302, { location: `http://127.0.0.1:${port}/page` });
          return res.end();
        case '/to-metadata':
          res.writeHead(301, { location: 'http://169.254.169.254/latest/meta-data/' });
          return res.end();
        case '/to-page':
          res.writeHead(307, { location: '/page' });
          return res.end();
        case '/loop':
          res.writeHead(302, { location: '/loop' });
          return res.end();
        case '/hang':
          return; // never answers
        default:
          res.writeHead(500);
          return res.end();
      }
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    port = (server.address() as AddressInfo).port;
  });

  afterAll(async () => {
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  });

  const allowed = createHttpFetch({ allowHosts: ['localhost'] });
  const at = (path: string) => `http://localhost:${port}${path}`;

  it('returns status, content type and text, and sends the idempotency key', async () => {
    seen.length = 0;
    expect(await allowed.execute({ url: at('/page') }, context())).toEqual({
      url: at('/page'),
      status: 200,
      contentType: 'text/html; charset=utf-8',
      text: '<p>héllo from the page</p>',
      bytes: Buffer.byteLength('<p>héllo from the page</p>'),
      truncated: false,
    });
    expect(seen[0]['idempotency-key']).toBe('turn_1:call_1');
    expect(seen[0]['accept-encoding']).toBe('identity');
  });

  it('returns JSON as text; HEAD returns no body; binary content is described, not returned', async () => {
    expect(await allowed.execute({ url: at('/json') }, context())).toMatchObject({ text: '{"ok":true}' });
    const head = (await allowed.execute({ url: at('/page'), method: 'HEAD' }, context())) as object;
    expect(head).toMatchObject({ status: 200 });
    expect(head).not.toHaveProperty('text');
    expect(await allowed.execute({ url: at('/binary') }, context())).toMatchObject({
      note: 'the content is not text; it was not returned',
    });
  });

  it('cuts a large body at the bound, with a marker', async () => {
    const result = (await allowed.execute({ url: at('/big') }, context())) as {
      text: string;
      truncated: boolean;
    };
    expect(result.truncated).toBe(true);
    expect(result.text.startsWith('x'.repeat(256 * 1024))).toBe(true);
    expect(result.text).toMatch(/\[truncated at 262144 bytes\]$/);
  });

  it('follows a redirect to an allowed host', async () => {
    expect(await allowed.execute({ url: at('/to-page') }, context())).toMatchObject({
      url: at('/page'),
      status: 200,
    });
  });

  it('refuses a redirect to a loopback address that the allowlist does not name', async () => {
    const err = await failure(allowed.execute({ url: at('/to-loopback') }, context()));
    expect(err.kind).toBe('blocked_address');
    expect(err.message).toContain('127.0.0.1');
  });

  it('refuses a redirect to the metadata address', async () => {
    const err = await failure(allowed.execute({ url: at('/to-metadata') }, context()));
    expect(err.kind).toBe('blocked_address');
    expect(err.message).toContain('169.254.169.254');
  });

  it('stops after the redirect bound', async () => {
    expect((await failure(allowed.execute({ url: at('/loop') }, context()))).kind).toBe('too_many_redirects');
  });

  it('answers an error status as a classified http_error', async () => {
    const err = await failure(allowed.execute({ url: at('/missing') }, context()));
    expect(err).toMatchObject({ kind: 'http_error', retryable: false });
    expect(err.details).toMatchObject({ status: 404, body: 'no such page' });
    expect((await failure(allowed.execute({ url: at('/error') }, context()))).retryable).toBe(true);
  });

  it('refuses a name that resolves to loopback when nothing is allowlisted', async () => {
    const before = seen.length;
    const err = await failure(createHttpFetch().execute({ url: at('/page') }, context()));
    expect(err.kind).toBe('blocked_address');
    expect(err.message).toMatch(/localhost resolves to \S+ \((loopback|not a global unicast)/);
    // Refused at the lookup: no request reached the server.
    expect(seen.length).toBe(before);
  });

  it('an allowlisted CIDR exempts the address connected to', async () => {
    const tool = createHttpFetch({ allowHosts: ['127.0.0.0/8'] });
    expect(await tool.execute({ url: `http://127.0.0.1:${port}/json` }, context())).toMatchObject({
      status: 200,
    });
  });

  it('stops when the call signal aborts', async () => {
    const abort = new AbortController();
    const pending = allowed.execute({ url: at('/hang') }, context(abort.signal));
    setTimeout(() => abort.abort(new Error('stop')), 50);
    await expect(pending).rejects.toThrow();
  });
});
