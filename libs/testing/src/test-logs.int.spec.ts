import { spawn } from 'node:child_process';
import { existsSync, readFileSync, rmSync } from 'node:fs';
import path from 'node:path';
import { ROOT } from './services';

/**
 * The apps a test starts keep their logs in files (`logs.ts`), and a failing test prints their
 * tail (`test-environment.ts`): a Jest run of a fixture file that starts a worker process, logs from
 * the test's own process, and fails one of its two tests.
 */
jest.setTimeout(120_000);

it('a failing test prints the tail of each app’s log file; a passing one prints none', async () => {
  const child = spawn(
    process.execPath,
    [require.resolve('jest/bin/jest'), '--config', 'libs/testing/fixtures/jest.config.js', '--ci'],
    { cwd: ROOT, env: { ...process.env, FORCE_COLOR: '0' }, stdio: ['ignore', 'pipe', 'pipe'] },
  );
  let output = '';
  child.stdout.on('data', (c: Buffer) => (output += c.toString()));
  child.stderr.on('data', (c: Buffer) => (output += c.toString()));
  const code = await new Promise<number | null>((resolve) => child.once('close', resolve));

  expect(code).toBe(1);
  expect(output).toMatch(/Tests:\s+1 failed, 1 passed, 2 total/);
  // One report, at the failing test, naming it.
  const reports = output.split("Logs of this file's apps when the test").length - 1;
  expect(reports).toBe(1);
  expect(output).toContain('when the test "a file with a failing test › fails" failed');
  // The worker process's log: its start-up line, from its own file.
  const workerLog = /── hooks-worker \(pid \d+\), last lines \((\S+)\):/.exec(output);
  expect(workerLog).not.toBeNull();
  expect(output).toMatch(/"msg":"worker started"/);
  // The test process's own apps' log, up to the line logged just before the failure.
  expect(output).toMatch(/── apps in the test process, last lines \(\S+in-process\.log\):/);
  expect(output).toContain('the in-process line just before the failure');
  // The worker's lines are not written to the test output as they happen: only in the report.
  expect(output.split('"msg":"worker started"').length - 1).toBe(1);
  // The failed file's logs stay on disk to be read.
  const file = workerLog![1];
  expect(existsSync(file)).toBe(true);
  expect(readFileSync(file, 'utf8')).toContain('worker started');
  rmSync(path.dirname(file), { recursive: true, force: true });
});
