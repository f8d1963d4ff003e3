import { closeSync, openSync, readSync, statSync } from 'node:fs';
import type { Circus } from '@jest/types';
import NodeEnvironment from 'jest-environment-node';
import { logState } from './logs';

/** Lines of each log shown at a failure. */
const TAIL_LINES = 40;

/**
 * The integration and end-to-end tests' environment: Node's, plus the logs of the apps a test file
 * started (`logs.ts`) when something fails. At a failed test or hook it marks the file failed (its
 * log directory is kept) and prints, into that file's console output, the last lines each app wrote
 * since the previous failure's report, so a failing test shows what the gateway and workers said
 * without every passing test printing their logs.
 */
export default class TestEnvironmentWithLogs extends NodeEnvironment {
  /** Bytes of each log already shown. */
  private readonly shown = new Map<string, number>();

  handleTestEvent(event: Circus.Event): void {
    let failure: string | undefined;
    if (event.name === 'test_done' && event.test.errors.length > 0) failure = `test "${nameOf(event.test)}"`;
    if (event.name === 'hook_failure') failure = `${event.hook.type} hook`;
    if (!failure) return;
    const state = logState(this.global);
    state.failed = true;
    const parts: string[] = [];
    for (const log of state.logs) {
      const tail = this.newTail(log.file);
      if (tail) parts.push(`── ${log.label}, last lines (${log.file}):\n${tail}`);
    }
    if (parts.length === 0) return;
    this.global.console.error(`Logs of this file's apps when the ${failure} failed:\n${parts.join('\n\n')}`);
  }

  /** The last TAIL_LINES lines written to `file` since the last report, or ''. */
  private newTail(file: string): string {
    let size: number;
    try {
      size = statSync(file).size;
    } catch {
      return '';
    }
    const from = this.shown.get(file) ?? 0;
    this.shown.set(file, size);
    if (size <= from) return '';
    // The tail only: at most 64 KiB from the end.
    const start = Math.max(from, size - 65_536);
    const buffer = Buffer.alloc(size - start);
    const fd = openSync(file, 'r');
    try {
      readSync(fd, buffer, 0, buffer.length, start);
    } finally {
      closeSync(fd);
    }
    return buffer.toString('utf8').trimEnd().split('\n').slice(-TAIL_LINES).join('\n');
  }
}

function nameOf(test: Circus.TestEntry): string {
  const names: string[] = [];
  for (let block: Circus.DescribeBlock | Circus.TestEntry | undefined = test; block; block = block.parent) {
    if (block.name !== 'ROOT_DESCRIBE_BLOCK') names.unshift(block.name);
  }
  return names.join(' › ');
}
