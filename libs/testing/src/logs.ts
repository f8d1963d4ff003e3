import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';

/**
 * The logs of the apps a test file starts (docs/ARCHITECTURE.md, "Logs"): each spawned process
 * writes to its own file in the file's log directory, and the apps started in the test's own
 * process to one more (LOG_FILE), instead of the test output. The test environment
 * (`test-environment.ts`) prints the tail of every registered log when a test or a hook fails. The
 * directory is removed when the file's TestEnv is cleaned up, unless a test failed.
 */
export interface TestLog {
  /** What wrote it: `harness-worker (pid 1234)`, `apps in the test process`. */
  label: string;
  file: string;
}

export interface LogState {
  dir?: string;
  logs: TestLog[];
  /** Set by the test environment when a test or hook of this file failed. */
  failed?: boolean;
  /** TestEnvs of this file not cleaned up yet: the last one removes the directory. */
  users?: number;
}

/** Shared with the test environment through the test file's global object. */
export function logState(global: object = globalThis): LogState {
  const g = global as { __SB_TEST_LOGS__?: LogState };
  return (g.__SB_TEST_LOGS__ ??= { logs: [] });
}

/** This test file's log directory, created on first use under the system's tmp dir. */
export function testLogDir(): string {
  const state = logState();
  if (!state.dir) {
    const root = path.join(tmpdir(), 'switchboard-test-logs');
    mkdirSync(root, { recursive: true });
    const testPath = typeof expect === 'undefined' ? undefined : expect.getState().testPath;
    const name = path.basename(testPath ?? 'run').replace(/[^\w.-]/g, '_');
    state.dir = mkdtempSync(path.join(root, `${name}-`));
  }
  return state.dir;
}

/** Adds a log to those whose tail is printed when a test fails. */
export function registerLog(log: TestLog): void {
  const state = logState();
  if (!state.logs.some((l) => l.file === log.file)) state.logs.push(log);
}

/** The last `lines` lines of a log file ('' when it is empty or absent). */
export function logTail(file: string, lines = 40): string {
  if (!existsSync(file)) return '';
  const text = readFileSync(file, 'utf8').trimEnd();
  return text ? text.split('\n').slice(-lines).join('\n') : '';
}

/** A TestEnv of this file uses the log directory until `releaseTestLogs`. */
export function useTestLogs(): string {
  const state = logState();
  state.users = (state.users ?? 0) + 1;
  return testLogDir();
}

/** The last TestEnv of the file removes its log directory, unless a test failed (its logs stay to be read). */
export function releaseTestLogs(): void {
  const state = logState();
  state.users = Math.max(0, (state.users ?? 1) - 1);
  if (state.users === 0 && state.dir && !state.failed) {
    rmSync(state.dir, { recursive: true, force: true });
    state.dir = undefined;
    state.logs = [];
  }
}
