import { spawn, type ChildProcess } from 'node:child_process';
import { createWriteStream } from 'node:fs';
import { createServer, type AddressInfo } from 'node:net';
import path from 'node:path';
import { registerLog, testLogDir } from './logs';
import { ROOT } from './services';
import { waitFor } from './wait';

export interface AppProcess {
  child: ChildProcess;
  /** Everything the process wrote so far. */
  output(): string;
  /** The file its stdout and stderr go to (in the test file's log directory), not the test output. */
  logFile: string;
  kill(signal: NodeJS.Signals): Promise<number | null>;
}

/**
 * Starts an app as a real process, as `npm run start:<app>` does
 * (`node -r @swc-node/register apps/<app>/src/main.ts`), or as the image does from a build's
 * output (`compiledDir`: `node <dir>/apps/<app>/src/main.js`), and resolves once it
 * logged that it is ready. Its output goes to its own log file, whose tail is printed when a test
 * fails (`logs.ts`) or when the process exits without being told to.
 */
export async function spawnApp(
  app: 'gateway' | 'harness-worker' | 'triage-worker' | 'hooks-worker',
  env: NodeJS.ProcessEnv,
  options: {
    readyPattern?: RegExp;
    timeoutMs?: number;
    nodeArgs?: string[];
    /** The test expects the process to exit by itself: its exit is not reported. */
    expectExit?: boolean;
    /** Run the compiled JavaScript of `npm run build` in this directory, with no compiler loaded. */
    compiledDir?: string;
  } = {},
): Promise<AppProcess> {
  const entry = options.compiledDir
    ? [path.join(options.compiledDir, 'apps', app, 'src', 'main.js')]
    : ['-r', '@swc-node/register', path.join('apps', app, 'src', 'main.ts')];
  const child = spawn(process.execPath, [...(options.nodeArgs ?? []), ...entry], {
    cwd: ROOT,
    // Readiness is read from the start-up log line, which is logged at info.
    env: { ...env, LOG_LEVEL: ['debug', 'trace'].includes(env.LOG_LEVEL ?? '') ? env.LOG_LEVEL : 'info' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const label = `${app} (pid ${child.pid})`;
  const logFile = path.join(testLogDir(), `${app}-${child.pid}.log`);
  const log = createWriteStream(logFile, { flags: 'a' });
  registerLog({ label, file: logFile });
  let out = '';
  let started = false;
  let killed = false;
  const ready = options.readyPattern ?? /worker started|Nest application successfully started/;
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  // 'close': the process exited and its stdout and stderr ended, so the log has every line.
  child.once('close', (code, signal) => {
    log.end();
    if (started && !killed && !options.expectExit) {
      console.error(
        `${label} exited unexpectedly (code ${code}, signal ${signal}); last lines of ${logFile}:\n` +
          out.trimEnd().split('\n').slice(-40).join('\n'),
      );
    }
  });
  await new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => {
      // Not left running: a worker nobody stops would take jobs from later tests and hold Jest open.
      killed = true;
      child.kill('SIGKILL');
      reject(new Error(`${app} did not start in time (log: ${logFile}):\n${out.slice(-2000)}`));
    }, options.timeoutMs ?? 90_000);
    const onData = (chunk: Buffer) => {
      out += chunk.toString();
      if (!started && ready.test(out)) {
        started = true;
        clearTimeout(timer);
        // Ready once the line is in the log file too: a failure reported at once reads that file.
        log.write(chunk, () => resolve());
      } else {
        log.write(chunk);
      }
    };
    child.stdout?.on('data', onData);
    child.stderr?.on('data', onData);
    void exited.then((code) => {
      clearTimeout(timer);
      reject(
        new Error(`${app} exited with ${code} before it was ready (log: ${logFile}):\n${out.slice(-2000)}`),
      );
    });
  });
  return {
    child,
    output: () => out,
    logFile,
    kill: async (signal) => {
      killed = true;
      if (child.exitCode === null && child.signalCode === null) child.kill(signal);
      return exited;
    },
  };
}

/** A loopback port nothing listens on at the moment (for a process that needs its port up front). */
export async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  await new Promise((resolve) => server.close(resolve));
  return port;
}

/** A gateway process on a free loopback port, resolved once it answers /healthz. */
export async function spawnGateway(env: NodeJS.ProcessEnv): Promise<AppProcess & { url: string }> {
  const port = await freePort();
  const gateway = await spawnApp(
    'gateway',
    { ...env, PORT: String(port), HOST: '127.0.0.1' },
    {
      readyPattern: /Server listening at|successfully started/,
    },
  );
  const url = `http://127.0.0.1:${port}`;
  await waitFor(async () => (await fetch(`${url}/healthz`).catch(() => undefined))?.ok, {
    what: 'the gateway to listen',
  });
  return Object.assign(gateway, { url });
}

/**
 * Runs a command to its end without blocking the test's event loop (an in-process stack answers
 * from it), and gives its exit code and output. Killed after `timeoutMs`.
 */
export function runProcess(
  command: string,
  args: string[],
  o: { env: NodeJS.ProcessEnv; cwd?: string; timeoutMs?: number },
): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, { cwd: o.cwd ?? ROOT, env: o.env, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    const timer = setTimeout(() => child.kill('SIGKILL'), o.timeoutMs ?? 120_000);
    child.on('error', reject);
    child.on('close', (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
  });
}
