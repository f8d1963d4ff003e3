import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { readdir, readFile, rm } from 'node:fs/promises';
import path from 'node:path';
import { promisify } from 'node:util';
import { ROOT, createTestEnv, freePort, spawnApp, type AppProcess, type TestEnv } from '@switchboard/testing';

/**
 * `npm run build` and what the image runs: the command compiles the apps and libraries to
 * JavaScript, and the compiled gateway and a compiled worker start with plain `node` (no
 * @swc-node/register, no TypeScript) and answer their health endpoints.
 */
jest.setTimeout(120_000);

const run = promisify(execFile);
const APPS = ['gateway', 'harness-worker', 'triage-worker', 'hooks-worker'];

describe('npm run build', () => {
  let env: TestEnv;
  // Inside the repository, as dist/ is: the compiled files resolve node_modules by walking up.
  const outDir = path.join(ROOT, 'tmp', `build-${randomBytes(4).toString('hex')}`);
  const processes: AppProcess[] = [];
  let buildOutput = '';

  beforeAll(async () => {
    env = await createTestEnv();
    const { stdout } = await run('npm', ['run', '--silent', 'build', '--', '--out-dir', outDir], {
      cwd: ROOT,
    });
    buildOutput = stdout;
  });

  afterAll(async () => {
    await Promise.all(processes.map((p) => p.kill('SIGTERM')));
    await rm(outDir, { recursive: true, force: true });
    await env?.cleanup();
  });

  it('compiles every app and no test file or test helper', async () => {
    expect(buildOutput).toMatch(/compiled \d+ files to /);
    const files = (await readdir(outDir, { recursive: true })).map(String);
    for (const app of APPS) expect(files).toContain(path.join('apps', app, 'src', 'main.js'));
    expect(files.filter((f) => f.endsWith('.ts'))).toEqual([]);
    expect(files.filter((f) => /spec\.js$/.test(f))).toEqual([]);
    expect(files.filter((f) => f.startsWith(path.join('libs', 'testing')))).toEqual([]);
    // The aliases are rewritten: nothing requires '@switchboard/…' at run time.
    const compiled = await Promise.all(
      files.filter((f) => f.endsWith('.js')).map((f) => readFile(path.join(outDir, f), 'utf8')),
    );
    expect(compiled.length).toBeGreaterThan(100);
    expect(compiled.filter((code) => code.includes('require("@switchboard/'))).toEqual([]);
    // Data files the libraries read at run time come along (the word vectors of local/words-100d).
    expect(files).toContain(path.join('libs', 'providers', 'assets', 'words-100d.bin.gz'));
  });

  it('the compiled local/words-100d embedder finds its word vectors', async () => {
    const script = `const { EmbedderRegistry } = require(${JSON.stringify(path.join(outDir, 'libs/providers/src/index.js'))});
      const { provider, model } = new EmbedderRegistry().resolve('local/words-100d');
      provider.embed({ model, texts: ['Deploys happen on Thursdays'] }).then((r) => console.log(r.vectors[0].length));`;
    const { stdout } = await run(process.execPath, ['-e', script], { cwd: ROOT });
    expect(stdout.trim()).toBe('100');
  });

  it('starts the compiled gateway with plain node; it answers /healthz and /readyz', async () => {
    const port = await freePort();
    const gateway = await spawnApp('gateway', env.processEnv({ PORT: String(port), HOST: '127.0.0.1' }), {
      compiledDir: outDir,
      readyPattern: /Server listening at|successfully started/,
    });
    processes.push(gateway);
    const url = `http://127.0.0.1:${port}`;
    const health = await fetch(`${url}/healthz`);
    expect(health.status).toBe(200);
    expect(await health.json()).toEqual({ status: 'ok' });
    expect((await fetch(`${url}/readyz`)).status).toBe(200);
    // The queue board's page and assets resolve from the installed packages, not from the sources.
    const admin = { authorization: 'Bearer test-admin-token-0123456789' };
    const board = await fetch(`${url}/admin/queues`, { headers: admin });
    expect(board.status).toBe(200);
    const script = /<script defer src="([^"]+)"/.exec(await board.text())?.[1];
    expect((await fetch(`${url}/admin/queues/${script}`, { headers: admin })).status).toBe(200);
    // The process runs the compiled entry point: no loader on its command line.
    expect(gateway.child.spawnargs.slice(1)).toEqual([
      path.join(outDir, 'apps', 'gateway', 'src', 'main.js'),
    ]);
  });

  it('starts a compiled worker with plain node; it answers /healthz and /readyz on METRICS_PORT', async () => {
    const port = await freePort();
    const worker = await spawnApp(
      'triage-worker',
      env.processEnv({ METRICS_PORT: String(port), HOST: '127.0.0.1' }),
      { compiledDir: outDir },
    );
    processes.push(worker);
    expect((await fetch(`http://127.0.0.1:${port}/healthz`)).status).toBe(200);
    const ready = await fetch(`http://127.0.0.1:${port}/readyz`);
    expect(ready.status).toBe(200);
    expect(await ready.json()).toMatchObject({
      status: 'ok',
      details: { 'queue:triage': { status: 'up' }, 'queue:outbound-webhooks': { status: 'up' } },
    });
  });

  it('exits non-zero, with the reason, when it cannot write its output', async () => {
    await expect(
      run('npm', ['run', '--silent', 'build', '--', '--out-dir', '/dev/null/switchboard-build'], {
        cwd: ROOT,
      }),
    ).rejects.toMatchObject({ code: 1, stderr: expect.stringMatching(/ENOTDIR/) });
  });
});
