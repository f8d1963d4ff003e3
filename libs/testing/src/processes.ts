import { spawn, type ChildProcess } from 'node:child_process';
import path from 'node:path';
import { ROOT } from './services';

export interface AppProcess {
  child: ChildProcess;
  /** Everything the process wrote so far. */
  output(): string;
  kill(signal: NodeJS.Signals): Promise<number | null>;
}

/**
 * Starts an app as a real process, exactly as production does
 * (`node -r @swc-node/register apps/<app>/src/main.ts`), and resolves once it
 * logged that it is ready.
 */
export async function spawnApp(
  app: 'gateway' | 'harness-worker' | 'triage-worker' | 'hooks-worker',
  env: NodeJS.ProcessEnv,
  options: { readyPattern?: RegExp; timeoutMs?: number; nodeArgs?: string[] } = {},
): Promise<AppProcess> {
  const child = spawn(
    process.execPath,
    [...(options.nodeArgs ?? []), '-r', '@swc-node/register', path.join('apps', app, 'src', 'main.ts')],
    {
      cwd: ROOT,
      // Readiness is read from the start-up log line, which is logged at info.
      env: { ...env, LOG_LEVEL: ['debug', 'trace'].includes(env.LOG_LEVEL ?? '') ? env.LOG_LEVEL : 'info' },
      stdio: ['ignore', 'pipe', 'pipe'],
    },
  );
  let out = '';
  const ready = options.readyPattern ?? /worker started|Nest application successfully started/;
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  await new Promise<void>((resolve, reject) => {
    const timer = setTimeout(
      () => reject(new Error(`${app} did not start in time:\n${out.slice(-2000)}`)),
      options.timeoutMs ?? 30_000,
    );
    const onData = (chunk: Buffer) => {
      out += chunk.toString();
      if (ready.test(out)) {
        clearTimeout(timer);
        resolve();
      }
    };
    child.stdout?.on('data', onData);
    child.stderr?.on('data', onData);
    void exited.then((code) => {
      clearTimeout(timer);
      reject(new Error(`${app} exited with ${code} before it was ready:\n${out.slice(-2000)}`));
    });
  });
  return {
    child,
    output: () => out,
    kill: async (signal) => {
      if (child.exitCode === null && child.signalCode === null) child.kill(signal);
      return exited;
    },
  };
}
