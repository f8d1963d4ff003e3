import { readFileSync } from 'node:fs';
import path from 'node:path';
import { createTestEnv, runProcess, type TestEnv } from '@switchboard/testing';
import { startStack } from '../support/stack';

/**
 * The README's quickstart as a newcomer pastes it (issue 23): the shell block after the
 * `readme-test: quickstart` marker runs with bash against a running stack, with only `SB` and
 * `ADMIN_TOKEN` given (the block sets every other variable it uses). `curl -f` and `set -e` make
 * any error status fail the run, so a README that drifts from the API fails here.
 */
jest.setTimeout(120_000);

const README = readFileSync(path.resolve(__dirname, '../../README.md'), 'utf8');

/** The first ```sh block after the marker. */
function block(marker: string): string {
  const at = README.indexOf(`<!-- readme-test: ${marker}`);
  if (at < 0) throw new Error(`README.md has no readme-test marker "${marker}"`);
  const fenced = /```sh\n([\s\S]*?)```/.exec(README.slice(at));
  if (!fenced) throw new Error(`no sh block after the marker "${marker}"`);
  return fenced[1];
}

/** A block run with bash, no rc files (a system bashrc may read unset variables under `set -u`). */
const bash = (script: string, env: Record<string, string>) =>
  runProcess('bash', ['--noprofile', '--norc', '-euo', 'pipefail', '-c', script], {
    env: { PATH: process.env.PATH, HOME: process.env.HOME, ...env },
    timeoutMs: 90_000,
  });

describe('README examples', () => {
  let env: TestEnv;
  let stack: Awaited<ReturnType<typeof startStack>>;

  beforeAll(async () => {
    env = await createTestEnv();
    stack = await startStack(env.config());
  });

  afterAll(async () => {
    await stack?.close();
    await env?.cleanup();
  });

  it('runs the quickstart as written: a tenant, an agent, a turn to its end, its journal and memory', async () => {
    const r = await bash(block('quickstart'), { SB: stack.url, ADMIN_TOKEN: 'test-admin-token-0123456789' });
    expect({ code: r.code, stderr: r.stderr }).toEqual({ code: 0, stderr: '' });
    expect(r.stdout).toContain('"status": "completed"');
    expect(r.stdout).toContain('"stopReason": "final_answer"');
    expect(r.stdout).toContain('["message_admitted","turn_started"');
    expect(r.stdout).toContain('"turn_completed"]');
    expect(r.stdout).toMatch(/^mem_\S+$/m);
    expect(r.stdout).toContain('Deploys happen on Thursdays.');
  });

  it('fails when a step does: the same block against a gateway that refuses the admin token', async () => {
    const r = await bash(block('quickstart'), { SB: stack.url, ADMIN_TOKEN: 'not-the-admin-token-000' });
    expect(r.code).not.toBe(0);
    expect(r.stdout).not.toContain('"status": "completed"');
  });
});
