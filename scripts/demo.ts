/**
 * Starts the gateway and the three workers as separate processes, sends one
 * message through the HTTP API, waits for the turn and prints what happened.
 * Keeps the services running until Ctrl-C, or exits when given --exit.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import path from 'node:path';

const ROOT = path.resolve(__dirname, '..');
const PORT = Number(process.env.PORT ?? 3000);
const BASE = `http://127.0.0.1:${PORT}`;
const ADMIN_TOKEN = process.env.ADMIN_TOKEN ?? `demo-${randomBytes(12).toString('hex')}`;
const exitAfter = process.argv.includes('--exit');
const children: ChildProcess[] = [];

function start(app: string, extraEnv: Record<string, string> = {}, nodeArgs: string[] = []) {
  const child = spawn(
    process.execPath,
    [...nodeArgs, '-r', '@swc-node/register', path.join('apps', app, 'src', 'main.ts')],
    {
      cwd: ROOT,
      env: {
        ...process.env,
        ADMIN_TOKEN,
        PORT: String(PORT),
        LOG_LEVEL: process.env.LOG_LEVEL ?? 'warn',
        ...extraEnv,
      },
      stdio: ['ignore', 'inherit', 'inherit'],
    },
  );
  child.on('exit', (code, signal) => {
    if (!stopping) {
      console.error(`${app} exited (${signal ?? code}); stopping the demo`);
      stop(1);
    }
  });
  children.push(child);
}

let stopping = false;
function stop(code: number) {
  stopping = true;
  for (const c of children) c.kill('SIGTERM');
  setTimeout(() => process.exit(code), 1500).unref();
  Promise.all(
    children.map((c) => new Promise((r) => (c.exitCode !== null ? r(null) : c.once('exit', r)))),
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

async function until<T>(probe: () => Promise<T | undefined>, what: string, ms = 30_000): Promise<T> {
  const deadline = Date.now() + ms;
  for (;;) {
    const v = await probe().catch(() => undefined);
    if (v !== undefined) return v;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

async function main() {
  start('gateway');
  // A larger young generation keeps streamed chunks' garbage out of the old generation (BENCHMARKS.md).
  start('harness-worker', { METRICS_PORT: '9464' }, ['--max-semi-space-size=64']);
  start('triage-worker', { METRICS_PORT: '9465' });
  start('hooks-worker', { METRICS_PORT: '9466' });
  await until(async () => ((await fetch(`${BASE}/readyz`)).ok ? true : undefined), 'the gateway to be ready');

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
  const turn = await until(async () => {
    const t = await api<Turn>('GET', `/v1/turns/${admitted.turnId}`, undefined, key);
    return ['completed', 'failed', 'cancelled'].includes(t.status) ? t : undefined;
  }, 'the turn');
  // The archivist's distillation of the session, once it has been idle for 2 s.
  const memory = await until(async () => {
    const m = await api<{ data: { title: string }[] }>(
      'GET',
      `/v1/agents/${agent.id}/memory?kind=fact`,
      undefined,
      key,
    );
    return m.data.length > 0 ? m.data : undefined;
  }, 'the archivist');
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
  API docs          ${BASE}/docs
  the turn          curl -H "Authorization: Bearer ${key}" ${BASE}/v1/turns/${admitted.turnId}
  the transcript    curl -H "Authorization: Bearer ${key}" ${BASE}/v1/sessions/${session.id}/messages
  the journal       curl -H "Authorization: Bearer ${key}" ${BASE}/v1/sessions/${session.id}/events
  the live stream   curl -N -H "Authorization: Bearer ${key}" ${BASE}/v1/sessions/${session.id}/stream
  metrics           ${BASE}/metrics  (workers: :9464 :9465 :9466)
  tenant            ${tenant.id}
  admin token       ${ADMIN_TOKEN}
`);
  if (exitAfter) stop(turn.status === 'completed' ? 0 : 1);
  else console.log('Services keep running; Ctrl-C stops them.');
}

main().catch((err: unknown) => {
  console.error(err instanceof Error ? err.message : err);
  stop(1);
});
