import { Queue } from 'bullmq';
import IORedis from 'ioredis';
import { QueueName } from '@switchboard/contracts';
import { createTestEnv, spawnGateway, type AppProcess, type TestEnv } from '@switchboard/testing';

/**
 * The queue board (Bull Board at /admin/queues) as an operator meets it, from real gateway
 * processes: behind ADMIN_TOKEN (Bearer, or Basic for a browser), every Switchboard queue with its
 * counts, helmet's Content-Security-Policy letting the page load, and read-only unless
 * QUEUE_BOARD_ACTIONS=true.
 */
jest.setTimeout(120_000);

const ADMIN = 'test-admin-token-0123456789';
const BEARER = { authorization: `Bearer ${ADMIN}` };
const QUEUES = Object.values(QueueName);

interface BoardQueue {
  name: string;
  readOnlyMode: boolean;
  isPaused: boolean;
  counts: Record<string, number>;
}

describe('queue board', () => {
  let env: TestEnv;
  let readOnly: AppProcess & { url: string };
  let withActions: AppProcess & { url: string };
  let connection: IORedis;
  let maintenance: Queue;

  beforeAll(async () => {
    env = await createTestEnv();
    [readOnly, withActions] = await Promise.all([
      spawnGateway(env.processEnv()),
      spawnGateway(env.processEnv({ QUEUE_BOARD_ACTIONS: 'true' })),
    ]);
    connection = new IORedis(env.redisUrl, { maxRetriesPerRequest: null });
    // No worker runs here: a job added stays where it is, for the board to count.
    maintenance = new Queue(QueueName.Maintenance, { connection, prefix: env.queuePrefix });
    await maintenance.add('board-spec', {}, { delay: 3_600_000, jobId: 'board-spec-delayed' });
  });

  afterAll(async () => {
    await maintenance?.close();
    connection?.disconnect();
    await Promise.all([readOnly?.kill('SIGTERM'), withActions?.kill('SIGTERM')]);
    await env?.cleanup();
  });

  const board = async (base: string, path: string, init: RequestInit = {}) =>
    fetch(`${base}/admin/queues${path}`, init);
  const queues = async (base: string): Promise<BoardQueue[]> => {
    const res = await board(base, '/api/queues', { headers: BEARER });
    expect(res.status).toBe(200);
    return ((await res.json()) as { queues: BoardQueue[] }).queues;
  };

  it.each([
    ['no credentials', {}],
    ['a wrong Bearer token', { authorization: 'Bearer not-the-admin-token-000' }],
    ['a tenant-style API key', { authorization: 'Bearer sb_0123456789abcdef' }],
    [
      'Basic with a wrong password',
      { authorization: `Basic ${Buffer.from('ops:wrong').toString('base64')}` },
    ],
  ])(
    'answers 401 to %s, on the page, its API and its assets, asking a browser for Basic credentials',
    async (_, headers) => {
      for (const path of ['', '/', '/api/queues', '/api/queues/turns/pause', '/static/favicon-32x32.png']) {
        const res = await board(readOnly.url, path, {
          headers,
          method: path.endsWith('pause') ? 'PUT' : 'GET',
        });
        expect({ path, status: res.status }).toEqual({ path, status: 401 });
        expect(res.headers.get('www-authenticate')).toMatch(/^Basic realm="Switchboard queues"/);
        expect(((await res.json()) as { error: { code: string } }).error.code).toBe('unauthorized');
      }
    },
  );

  it('serves the board page with the admin token, every asset of it allowed by the CSP it is sent with', async () => {
    for (const headers of [
      BEARER,
      { authorization: `Basic ${Buffer.from(`operator:${ADMIN}`).toString('base64')}` },
    ]) {
      const res = await board(readOnly.url, '', { headers });
      expect(res.status).toBe(200);
      expect(res.headers.get('content-type')).toMatch(/^text\/html/);
      const html = await res.text();
      expect(html).toContain('<title>Switchboard queues</title>');
      expect(html).toContain('<base href="/admin/queues/" />');

      // helmet's policy: scripts only from this origin, styles also from https and inline.
      const csp = Object.fromEntries(
        (res.headers.get('content-security-policy') ?? '').split(';').map((d) => {
          const [name, ...values] = d.trim().split(/\s+/);
          return [name, values];
        }),
      );
      expect(csp['script-src']).toEqual(["'self'"]);
      // Every script is a file of this origin (no inline code, which script-src 'self' would block)...
      const scripts = [...html.matchAll(/<script\b([^>]*)>/g)].map((m) => m[1]);
      expect(scripts.length).toBeGreaterThan(0);
      const srcs: string[] = [];
      for (const attrs of scripts) {
        const src = /\bsrc="([^"]+)"/.exec(attrs)?.[1];
        if (src) srcs.push(src);
        else expect(attrs).toMatch(/type="application\/json"/); // data, not code
      }
      // ...and each one, like each stylesheet of this origin, loads through the same guard.
      const styles = [...html.matchAll(/<link href="([^"]+)" rel="stylesheet">/g)].map((m) => m[1]);
      for (const href of styles.filter((h) => /^https?:/.test(h)))
        expect(csp['style-src']).toContain(new URL(href).protocol); // https: is allowed
      for (const asset of [...srcs, ...styles.filter((h) => !/^https?:/.test(h))]) {
        expect(asset).not.toMatch(/^(https?:)?\/\//);
        const got = await board(readOnly.url, `/${asset}`, { headers });
        expect({ asset, status: got.status }).toEqual({ asset, status: 200 });
        expect(got.headers.get('content-type')).toMatch(/javascript|css/);
        await got.arrayBuffer();
      }
    }
  });

  it("lists every Switchboard queue under the deployment's prefix, with its counts", async () => {
    const listed = await queues(readOnly.url);
    expect(listed.map((q) => q.name).sort()).toEqual([...QUEUES].sort());
    for (const q of listed) {
      expect(q.readOnlyMode).toBe(true);
      expect(q.counts).toEqual(
        expect.objectContaining({
          waiting: expect.any(Number),
          active: expect.any(Number),
          failed: expect.any(Number),
        }),
      );
    }
    // The job added under this deployment's QUEUE_PREFIX is the one counted.
    expect(listed.find((q) => q.name === QueueName.Maintenance)?.counts.delayed).toBe(1);
    const jobs = await board(readOnly.url, '/api/queues?activeQueue=maintenance&status=delayed&page=1', {
      headers: BEARER,
    });
    const body = (await jobs.json()) as { queues: { name: string; jobs: { id: string }[] }[] };
    expect(body.queues.find((q) => q.name === QueueName.Maintenance)?.jobs.map((j) => j.id)).toEqual([
      'board-spec-delayed',
    ]);
  });

  it('refuses every action in read-only mode and changes nothing', async () => {
    for (const [method, path] of [
      ['PUT', '/api/queues/turns/pause'],
      ['PUT', '/api/queues/maintenance/empty'],
      ['PUT', '/api/queues/maintenance/board-spec-delayed/promote'],
      ['PUT', '/api/queues/maintenance/clean/delayed'],
    ]) {
      const res = await board(readOnly.url, path, { method, headers: BEARER });
      expect({ path, status: res.status }).toEqual({ path, status: 405 });
      expect(await res.json()).toEqual({ error: { key: 'ERRORS.QUEUE_READ_ONLY' } });
    }
    expect(await maintenance.getJobState('board-spec-delayed')).toBe('delayed');
    expect((await queues(readOnly.url)).find((q) => q.name === QueueName.Turns)?.isPaused).toBe(false);
  });

  it('runs actions when QUEUE_BOARD_ACTIONS=true: pause and resume a queue', async () => {
    expect((await queues(withActions.url)).every((q) => !q.readOnlyMode)).toBe(true);
    const work = new Queue(QueueName.Work, { connection, prefix: env.queuePrefix });
    try {
      expect(
        (await board(withActions.url, '/api/queues/work/pause', { method: 'PUT', headers: BEARER })).status,
      ).toBe(200);
      expect(await work.isPaused()).toBe(true);
      expect(
        (await board(withActions.url, '/api/queues/work/resume', { method: 'PUT', headers: BEARER })).status,
      ).toBe(200);
      expect(await work.isPaused()).toBe(false);
    } finally {
      await work.close();
    }
    // Still behind the token.
    expect((await board(withActions.url, '/api/queues/work/pause', { method: 'PUT' })).status).toBe(401);
  });
});
