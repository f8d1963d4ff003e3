/**
 * What one 429 costs the gateway (issue 37, docs/adr/0078; a benchmark, not a test). A gateway, a
 * harness worker and a hooks worker as real processes with NODE_ENV=production, OpenTelemetry on
 * (no collector) and the request log at `info`, as production runs them; one tenant with an
 * admission quota of `--quota` a minute spends it, then sends `--requests` more messages
 * (`--concurrency` in flight, Retry-After ignored, as a bursting client does), each answered 429.
 * Prints the gateway's CPU (utime + stime from /proc) per 429 and the 429s per second, and one JSON
 * line. The quota window is a minute: keep `--requests` small enough to be sent within it.
 *
 *     npm run bench:429 -- [--requests 3000] [--concurrency 64] [--quota 20] [--otel off] [--profile-dir DIR]
 */
import { loadavg } from 'node:os';
import { parseArgs } from 'node:util';
import { Agent, request } from 'undici';
import { cpuMs, pool, startSwitchboard } from './bench-lib';

const { values } = parseArgs({
  options: {
    requests: { type: 'string', default: '3000' },
    concurrency: { type: 'string', default: '64' },
    quota: { type: 'string', default: '20' },
    otel: { type: 'string', default: 'on' },
    /** Write a V8 CPU profile of each process into this directory. */
    'profile-dir': { type: 'string' },
  },
});
const REQUESTS = Number(values.requests);
const CONCURRENCY = Number(values.concurrency);
const QUOTA = Number(values.quota);

const progress = (msg: string) => process.stderr.write(`[bench:429] ${msg}\n`);

async function main(): Promise<void> {
  const sb = await startSwitchboard({
    workers: 1,
    modelDelayMs: 0,
    otel: values.otel !== 'off',
    ...(values['profile-dir'] ? { profileDir: values['profile-dir'] } : {}),
    env: { NODE_ENV: 'production', LOG_LEVEL: 'info', RATE_LIMIT_ADMISSION_PER_MIN: String(QUOTA) },
  });
  const agent = new Agent({ keepAliveTimeout: 60_000, connections: CONCURRENCY });
  try {
    const { key, agentId } = await sb.tenant();
    const { id: sessionId } = await sb.post<{ id: string }>('/v1/sessions', { agentId }, key);
    const statuses: Record<number, number> = {};
    const send = async (i: number) => {
      const res = await request(`${sb.base}/v1/sessions/${sessionId}/messages`, {
        method: 'POST',
        dispatcher: agent,
        headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
        body: JSON.stringify({ content: `message ${i}` }),
      });
      await res.body.dump();
      statuses[res.statusCode] = (statuses[res.statusCode] ?? 0) + 1;
    };
    // Spend the quota (and warm the gateway up), then measure the refusals alone.
    for (let i = 0; i < QUOTA + 50; i++) await send(i);
    const gateway = sb.procs.find((p) => p.name === 'gateway')!.app.child.pid!;
    const load0 = loadavg()[0];
    const before = { ...statuses };
    const cpu0 = cpuMs(gateway);
    const t0 = performance.now();
    await pool(
      Array.from({ length: REQUESTS }, (_, i) => i),
      CONCURRENCY,
      (i) => send(QUOTA + 50 + i),
    );
    const seconds = (performance.now() - t0) / 1000;
    const cpu = cpuMs(gateway) - cpu0;
    const refused = (statuses[429] ?? 0) - (before[429] ?? 0);
    const load1 = loadavg()[0];
    const result = {
      bench: '429',
      requests: REQUESTS,
      refused,
      statuses,
      gatewayCpuMs: cpu,
      cpuMsPer429: Math.round((cpu / Math.max(1, refused)) * 1000) / 1000,
      refusedPerSecond: Math.round(refused / seconds),
      seconds: Math.round(seconds * 100) / 100,
      loadAverage: [Math.round(load0 * 100) / 100, Math.round(load1 * 100) / 100],
    };
    progress(
      `${refused} of ${REQUESTS} refused in ${result.seconds} s: gateway CPU ${cpu} ms, ${result.cpuMsPer429} ms per 429, ${result.refusedPerSecond} 429/s; load ${load0.toFixed(2)} → ${load1.toFixed(2)}`,
    );
    console.log(JSON.stringify(result));
  } finally {
    await agent.close();
    await sb.stop();
  }
}

main().then(
  () => process.exit(0),
  (err: unknown) => {
    console.error(err instanceof Error ? err.stack : err);
    process.exit(1);
  },
);
