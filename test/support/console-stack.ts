import net from 'node:net';
import type { Browser } from 'playwright-core';
import {
  createTestEnv,
  FakeLlmServer,
  spawnApp,
  waitFor,
  type AppProcess,
  type TestEnv,
} from '@switchboard/testing';
import { newTenant, type Api } from './api';
import { launchBrowser } from './console';

export const ADMIN = 'test-admin-token-0123456789';

async function freePort(): Promise<number> {
  const server = net.createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as net.AddressInfo;
  await new Promise((resolve) => server.close(resolve));
  return port;
}

export interface ConsoleStack {
  env: TestEnv;
  llm: FakeLlmServer;
  /** The gateway's base URL; the console is at `${url}/console/`. */
  url: string;
  browser: Browser;
  processes: AppProcess[];
  /** A new tenant with its first key (through the admin API). */
  tenant(name?: string): Promise<{ api: Api; tenantId: string; key: string }>;
  /** The gateway process (`processes[0]`; replaced by `restartGateway`). */
  gateway(): AppProcess;
  /** Kills the gateway with `signal` and starts a new one on the same port (the browser keeps its URL). */
  restartGateway(signal?: NodeJS.Signals): Promise<void>;
  /** Starts one more worker process with the stack's environment (kept for `close`). */
  spawnWorker(app: 'harness-worker' | 'hooks-worker' | 'triage-worker'): Promise<AppProcess>;
  close(): Promise<void>;
}

/**
 * What the console's browser tests run against: a real gateway process (serving the built console
 * at /console), harness, hooks and triage workers as processes, the fake model server behind the
 * real provider SDKs, and a headless Chromium.
 */
export async function startConsoleStack(
  o: { env?: Record<string, string>; workers?: boolean } = {},
): Promise<ConsoleStack> {
  const env = await createTestEnv();
  const llm = await FakeLlmServer.start();
  const processes: AppProcess[] = [];
  const port = await freePort();
  const extra = { ...llm.providerEnv, ...o.env };
  const url = `http://127.0.0.1:${port}`;
  let browser: Browser | undefined;
  const startGateway = async () => {
    const gateway = await spawnApp(
      'gateway',
      env.processEnv({ ...extra, PORT: String(port), HOST: '127.0.0.1' }),
      { readyPattern: /Server listening at|successfully started/ },
    );
    await waitFor(async () => (await fetch(`${url}/healthz`).catch(() => undefined))?.ok, {
      what: 'the gateway to listen',
    });
    return gateway;
  };
  try {
    processes.push(await startGateway());
    if (o.workers !== false) {
      processes.push(
        ...(await Promise.all(
          (['harness-worker', 'hooks-worker', 'triage-worker'] as const).map((app) =>
            spawnApp(app, env.processEnv(extra)),
          ),
        )),
      );
    }
    browser = await launchBrowser();
  } catch (e) {
    await Promise.all(processes.map((p) => p.kill('SIGKILL')));
    await llm.close();
    await env.cleanup();
    throw e;
  }
  const b = browser;
  return {
    env,
    llm,
    url,
    browser: b,
    processes,
    async tenant(name = 'console-tenant') {
      const t = await newTenant(url, ADMIN, name);
      return { api: t.api, tenantId: t.tenantId, key: t.api.key as string };
    },
    gateway: () => processes[0],
    async restartGateway(signal = 'SIGKILL') {
      await processes[0].kill(signal);
      processes[0] = await startGateway();
    },
    async spawnWorker(app) {
      const worker = await spawnApp(app, env.processEnv(extra));
      processes.push(worker);
      return worker;
    },
    async close() {
      await b.close().catch(() => undefined);
      await Promise.all(processes.map((p) => p.kill('SIGTERM')));
      await llm.close();
      await env.cleanup();
    },
  };
}
