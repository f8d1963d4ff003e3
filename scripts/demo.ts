/**
 * Starts the gateway and the three workers as separate processes, sends one
 * message through the HTTP API, waits for the turn and prints what happened.
 * Keeps the services running until Ctrl-C, or exits when given --exit.
 *
 * Settings (environment): PORT (gateway, 3000); HARNESS_METRICS_PORT, TRIAGE_METRICS_PORT,
 * HOOKS_METRICS_PORT (the workers' metrics, default METRICS_PORT, +1, +2, or 9464–9466);
 * DEMO_READY_TIMEOUT_S (how long the services may take to start, 180); DEMO_TURN_TIMEOUT_S (120);
 * DEMO_LOG_DIR (where each service's log goes; a new temporary folder by default). When anything
 * fails, the last lines of every service's log are printed.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { closeSync, mkdirSync, mkdtempSync, openSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';

const ROOT = path.resolve(__dirname, '..');
const env = process.env;
/** A port from the environment, or the default; anything else stops the demo before it starts. */
function port(name: string, fallback: number): number {
  const raw = env[name];
  const n = raw === undefined || raw === '' ? fallback : Number(raw);
  if (!Number.isInteger(n) || n < 1 || n > 65_535) {
    console.error(`${name} must be a port number (1–65535), not ${raw}`);
    process.exit(2);
  }
  return n;
}
function seconds(name: string, fallback: number): number {
  const raw = env[name];
  const n = raw === undefined || raw === '' ? fallback : Number(raw);
  if (!Number.isFinite(n) || n <= 0) {
    console.error(`${name} must be a number of seconds > 0, not ${raw}`);
    process.exit(2);
  }
  return n;
}
const PORT = port('PORT', 3000);
const METRICS_BASE = port('METRICS_PORT', 9464);
const METRICS_PORTS = {
  'harness-worker': port('HARNESS_METRICS_PORT', METRICS_BASE),
  'triage-worker': port('TRIAGE_METRICS_PORT', METRICS_BASE + 1),
  'hooks-worker': port('HOOKS_METRICS_PORT', METRICS_BASE + 2),
};
const READY_TIMEOUT_MS = seconds('DEMO_READY_TIMEOUT_S', 180) * 1000;
const TURN_TIMEOUT_MS = seconds('DEMO_TURN_TIMEOUT_S', 120) * 1000;
const LOG_DIR = env.DEMO_LOG_DIR || mkdtempSync(path.join(tmpdir(), 'switchboard-demo-'));
mkdirSync(LOG_DIR, { recursive: true });
const BASE = `http://127.0.0.1:${PORT}`;
const ADMIN_TOKEN = env.ADMIN_TOKEN ?? `demo-${randomBytes(12).toString('hex')}`;
const exitAfter = process.argv.includes('--exit');
const children: { app: string; child: ChildProcess; log: string }[] = [];

function start(app: string, extraEnv: Record<string, string> = {}, nodeArgs: string[] = []) {
  const log = path.join(LOG_DIR, `${app}.log`);
  const fd = openSync(log, 'a');
  const child = spawn(
    process.execPath,
    [...nodeArgs, '-r', '@swc-node/register', path.join('apps', app, 'src', 'main.ts')],
    {
      cwd: ROOT,
      env: {
        ...env,
        ADMIN_TOKEN,
        PORT: String(PORT),
        LOG_LEVEL: env.LOG_LEVEL ?? 'info',
        ...extraEnv,
      },
      stdio: ['ignore', fd, fd],
    },
  );
  closeSync(fd);
  child.on('exit', (code, signal) => {
    if (!stopping) fail(`${app} exited (${signal ?? `code ${code}`})`);
  });
  children.push({ app, child, log });
}

/** The last lines of a service's log. */
function tail(file: string, lines = 25): string {
  try {
    const all = readFileSync(file, 'utf8').trimEnd().split('\n');
    return all.slice(-lines).join('\n') || '(empty)';
  } catch {
    return '(no log)';
  }
}

/** Says what failed, shows every service's log tail, and stops everything. */
function fail(why: string): void {
  if (stopping) return;
  console.error(`\nThe demo failed: ${why}`);
  for (const { app, log } of children) {
    console.error(`\n--- ${app}: last lines of ${log} ---\n${tail(log)}`);
  }
  console.error(`\nEvery service's whole log is in ${LOG_DIR}.`);
  stop(1);
}

let stopping = false;
function stop(code: number) {
  stopping = true;
  for (const { child } of children) child.kill('SIGTERM');
  setTimeout(() => process.exit(code), 5000).unref();
  Promise.all(
    children.map(
      ({ child }) =>
        new Promise((r) =>
          child.exitCode !== null || child.signalCode !== null ? r(null) : child.once('exit', r),
        ),
    ),
  ).then(
    () => process.exit(code),
    () => process.exit(code),
  );
}
process.on('SIGINT', () => stop(0));
process.on('SIGTERM', () => stop(0));

async function api<T>(method: string, url: string, body?: unknown, token?: string): Promise<T> {
  const res = await fetch(`${BASE}${url}`, {
    method,
    headers: { 'content-type': 'application/json', ...(token ? { authorization: `Bearer ${token}` } : {}) },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const json = (await res.json()) as T;
  if (!res.ok) throw new Error(`${method} ${url} → ${res.status} ${JSON.stringify(json)}`);
  return json;
}

/** Probes until it answers; says every 15 s that it is still waiting. */
async function until<T>(probe: () => Promise<T | undefined>, what: string, ms: number): Promise<T> {
  const started = Date.now();
  let said = started;
  for (;;) {
    const v = await probe().catch(() => undefined);
    if (v !== undefined) return v;
    const now = Date.now();
    if (now - started > ms) throw new Error(`timed out after ${Math.round(ms / 1000)} s waiting for ${what}`);
    if (now - said >= 15_000) {
      said = now;
      console.log(`  still waiting for ${what} (${Math.round((now - started) / 1000)} s)`);
    }
    await new Promise((r) => setTimeout(r, 200));
  }
}

async function main() {
  start('gateway');
  // A larger young generation keeps streamed chunks' garbage out of the old generation (BENCHMARKS.md).
  start('harness-worker', { METRICS_PORT: String(METRICS_PORTS['harness-worker']) }, [
    '--max-semi-space-size=64',
  ]);
  start('triage-worker', { METRICS_PORT: String(METRICS_PORTS['triage-worker']) });
  start('hooks-worker', { METRICS_PORT: String(METRICS_PORTS['hooks-worker']) });
  console.log(`  logs in ${LOG_DIR}`);
  await until(
    async () => ((await fetch(`${BASE}/readyz`)).ok ? true : undefined),
    'the gateway to be ready',
    READY_TIMEOUT_MS,
  );
  // Each worker is up once it serves its metrics.
  for (const [app, p] of Object.entries(METRICS_PORTS)) {
    await until(
      async () => ((await fetch(`http://127.0.0.1:${p}/metrics`)).ok ? true : undefined),
      `the ${app} to be ready`,
      READY_TIMEOUT_MS,
    );
  }

  const { tenant, apiKey } = await api<{ tenant: { id: string }; apiKey: { key: string } }>(
    'POST',
    '/v1/admin/tenants',
    { name: 'demo' },
    ADMIN_TOKEN,
  );
  const key = apiKey.key;
  // The archivist distils on the scripted model that answers its JSON (scripted/demo calls a tool),
  // soon after the session goes idle (docs/adr/0032).
  await api(
    'PATCH',
    '/v1/settings',
    { modelRoutes: { summarization: 'scripted/archivist' }, archivist: { idleMs: 2000 } },
    key,
  );
  const agent = await api<{ id: string; model: string }>(
    'POST',
    '/v1/agents',
    { name: 'word-counter', tools: ['word_count'] },
    key,
  );
  const session = await api<{ id: string }>('POST', '/v1/sessions', { agentId: agent.id }, key);
  const text = 'Switchboard turns messages into complete agent turns';
  const admitted = await api<{ turnId: string }>(
    'POST',
    `/v1/sessions/${session.id}/messages`,
    { content: text },
    key,
  );
  type Turn = {
    status: string;
    finalText: string;
    stopReason: string;
    costUsd: string;
    iterations: number;
    toolCalls: { name: string; result: unknown }[];
    usage: unknown;
  };
  const turn = await until(
    async () => {
      const t = await api<Turn>('GET', `/v1/turns/${admitted.turnId}`, undefined, key);
      return ['completed', 'failed', 'cancelled'].includes(t.status) ? t : undefined;
    },
    'the turn',
    TURN_TIMEOUT_MS,
  );
  // The archivist's distillation of the session, once it has been idle for 2 s.
  const memory = await until(
    async () => {
      const m = await api<{ data: { title: string }[] }>(
        'GET',
        `/v1/agents/${agent.id}/memory?kind=fact`,
        undefined,
        key,
      );
      return m.data.length > 0 ? m.data : undefined;
    },
    'the archivist',
    TURN_TIMEOUT_MS,
  );
  const events = await api<{ data: { seq: number; type: string }[] }>(
    'GET',
    `/v1/sessions/${session.id}/events`,
    undefined,
    key,
  );

  console.log(`
Switchboard is running.

  message   "${text}"
  turn      ${admitted.turnId}  ${turn.status} (${turn.stopReason}) after ${turn.iterations} model rounds
  tools     ${turn.toolCalls.map((c) => `${c.name} → ${JSON.stringify(c.result)}`).join('; ')}
  answer    ${turn.finalText}
  cost      $${turn.costUsd} (model ${agent.model}; the scripted provider's spend is simulated)
  memory    ${memory.map((m) => m.title).join('; ')} (the archivist, one model call after the session went idle)
  events    ${events.data.map((e) => `${e.seq}:${e.type}`).join(' ')}

Where to look:
  web console       ${BASE}/console  (sign in with the tenant key ${key}, or the admin token for the operator's view)
  the turn's story  ${BASE}/console/turns/${admitted.turnId}
  API docs          ${BASE}/docs
  the turn          curl -H "Authorization: Bearer ${key}" ${BASE}/v1/turns/${admitted.turnId}
  the transcript    curl -H "Authorization: Bearer ${key}" ${BASE}/v1/sessions/${session.id}/messages
  the journal       curl -H "Authorization: Bearer ${key}" ${BASE}/v1/sessions/${session.id}/events
  the live stream   curl -N -H "Authorization: Bearer ${key}" ${BASE}/v1/sessions/${session.id}/stream
  metrics           ${BASE}/metrics  (workers: ${Object.values(METRICS_PORTS)
    .map((p) => `:${p}`)
    .join(' ')})
  service logs      ${LOG_DIR}
  tenant            ${tenant.id}
  admin token       ${ADMIN_TOKEN}
`);
  if (exitAfter) stop(turn.status === 'completed' ? 0 : 1);
  else console.log('Services keep running; Ctrl-C stops them.');
}

main().catch((err: unknown) => fail(err instanceof Error ? err.message : String(err)));
