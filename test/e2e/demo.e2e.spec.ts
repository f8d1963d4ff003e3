import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { createTestEnv, freePort, runProcess, type TestEnv } from '@switchboard/testing';

/**
 * `npm run demo` as a newcomer meets it (issue 23): scripts/demo.ts starts the four services as
 * processes, waits for each to be ready, runs one message through the HTTP API and, with `--exit`,
 * stops them and exits 0. Ports come from the environment (none hard-coded), each service logs to
 * a file of its own, and a service that fails shows its log tail. scripts/demo.sh's install,
 * generate and migrate steps run before it; here the test database is already migrated, and the
 * Prisma client is not generated again under the other tests' feet.
 */
jest.setTimeout(240_000);

/** scripts/demo.ts --exit, to its end (the demo stops its services and exits itself). */
const runDemo = (env: NodeJS.ProcessEnv) =>
  runProcess(process.execPath, ['-r', '@swc-node/register', 'scripts/demo.ts', '--exit'], {
    env,
    timeoutMs: 230_000,
  });

describe('the demo (npm run demo)', () => {
  let env: TestEnv;
  const logDir = mkdtempSync(path.join(tmpdir(), 'sb-demo-test-'));

  beforeAll(async () => {
    env = await createTestEnv();
  });

  afterAll(async () => {
    await env?.cleanup();
    rmSync(logDir, { recursive: true, force: true });
  });

  it('starts every service on the ports it is given, runs a turn to its end and exits 0', async () => {
    const [gateway, harness, triage, hooks] = [
      await freePort(),
      await freePort(),
      await freePort(),
      await freePort(),
    ];
    const dir = path.join(logDir, 'ok');
    const r = await runDemo(
      env.processEnv({
        PORT: String(gateway),
        HARNESS_METRICS_PORT: String(harness),
        TRIAGE_METRICS_PORT: String(triage),
        HOOKS_METRICS_PORT: String(hooks),
        DEMO_LOG_DIR: dir,
        DEMO_READY_TIMEOUT_S: '200',
      }),
    );
    expect({ code: r.code, stderr: r.stderr }).toEqual({ code: 0, stderr: expect.any(String) });
    expect(r.stdout).toContain('Switchboard is running.');
    expect(r.stdout).toMatch(/turn\s+\S+\s+completed \(final_answer\)/);
    expect(r.stdout).toContain(`http://127.0.0.1:${gateway}/docs`);
    expect(r.stdout).toContain(`web console       http://127.0.0.1:${gateway}/console`);
    expect(r.stdout).toContain(`:${harness} :${triage} :${hooks}`);
    expect(readdirSync(dir).sort()).toEqual([
      'gateway.log',
      'harness-worker.log',
      'hooks-worker.log',
      'triage-worker.log',
    ]);
  });

  it('says which service failed and shows every service’s log tail, then exits 1', async () => {
    const dir = path.join(logDir, 'failing');
    const r = await runDemo(
      env.processEnv({
        PORT: String(await freePort()),
        METRICS_PORT: String(await freePort()),
        // Invalid for every service: each exits at start with the reason in its log.
        WAIT_TIMEOUT_MS: '-5',
        DEMO_LOG_DIR: dir,
      }),
    );
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(/The demo failed: (gateway|harness-worker|triage-worker|hooks-worker) exited/);
    expect(r.stderr).toContain('--- gateway: last lines of');
    expect(r.stderr).toContain('WAIT_TIMEOUT_MS');
    expect(r.stderr).toContain(`Every service's whole log is in ${dir}.`);
  });

  it('refuses a port that is not a number before starting anything', async () => {
    const r = await runDemo(env.processEnv({ PORT: 'eighty', DEMO_LOG_DIR: path.join(logDir, 'bad') }));
    expect(r.code).toBe(2);
    expect(r.stderr).toContain('PORT must be a port number (1–65535), not eighty');
  });
});
