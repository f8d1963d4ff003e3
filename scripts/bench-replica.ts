/**
 * What a read replica takes off the primary (docs/adr/0042; not a test). A hot standby from
 * scripts/pg-replica.sh, a harness and a hooks worker, and two gateways on the same database: one
 * without DATABASE_READ_URL, one with it. Each gateway's Postgres connections go through counting
 * proxies (primary and replica apart), so the statements every API read sends to each side are
 * counted on the wire. After `--turns` tool-using turns in one session, each gateway answers
 * `--rounds` rounds of the four routed reads (GET of the turn, the transcript, the journal and the
 * usage), one at a time, and the bench prints statements per read on each side and the reads' latency.
 *
 *   npm run bench:replica -- [--turns 10] [--rounds 200]
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { createTestEnv, spawnApp, type AppProcess } from '@switchboard/testing';
import globalSetup from '../libs/testing/src/global-setup';
import { freePort, pct, pgProxy } from './bench-lib';

const { values } = parseArgs({
  options: { turns: { type: 'string', default: '10' }, rounds: { type: 'string', default: '200' } },
});
const TURNS = Number(values.turns);
const ROUNDS = Number(values.rounds);
const SCRIPT = path.resolve(__dirname, 'pg-replica.sh');
const ADMIN = 'test-admin-token-0123456789';

async function main() {
  await globalSetup();
  const env = await createTestEnv();
  const procs: AppProcess[] = [];
  let dir: string | undefined;
  const fixtures = mkdtempSync(path.join(tmpdir(), 'sb-bench-'));
  const closing: (() => Promise<unknown>)[] = [];
  try {
    const started = /^port=(\d+) dir=(.+)$/.exec(
      execFileSync(SCRIPT, ['start'], { encoding: 'utf8' }).trim(),
    );
    if (!started) throw new Error('scripts/pg-replica.sh start printed no port');
    dir = started[2];
    const standby = new URL(env.databaseUrl);
    standby.port = started[1];
    const primaryWire = await pgProxy(env.databaseUrl);
    const replicaWire = await pgProxy(standby.toString());
    closing.push(
      () => primaryWire.close(),
      () => replicaWire.close(),
    );
    writeFileSync(
      `${fixtures}/bench.json`,
      JSON.stringify({
        name: 'bench',
        rounds: [
          { toolCalls: [{ name: 'word_count', arguments: { text: '{{input}}' } }] },
          { text: 'counted {{lastToolResult}}' },
        ],
      }),
    );
    const base = env.processEnv({ LOG_LEVEL: 'error', SCRIPTED_FIXTURES_DIR: fixtures });
    procs.push(await spawnApp('harness-worker', base), await spawnApp('hooks-worker', base));
    const gateways: Record<string, string> = {};
    for (const [name, extra] of [
      ['primary only', {}],
      ['with DATABASE_READ_URL', { DATABASE_READ_URL: replicaWire.rewrite(standby.toString()) }],
    ] as const) {
      const port = await freePort();
      procs.push(
        await spawnApp('gateway', {
          ...base,
          PORT: String(port),
          DATABASE_URL: primaryWire.rewrite(env.databaseUrl),
          ...extra,
        }),
      );
      gateways[name] = `http://127.0.0.1:${port}`;
    }

    const call = async <T = { id: string }>(url: string, method: string, body?: unknown, key = ADMIN) => {
      const res = await fetch(url, {
        method,
        headers: { authorization: `Bearer ${key}`, ...(body ? { 'content-type': 'application/json' } : {}) },
        body: body ? JSON.stringify(body) : undefined,
      });
      if (!res.ok) throw new Error(`${method} ${url}: ${res.status} ${await res.text()}`);
      return res.json() as Promise<T>;
    };
    const first = Object.values(gateways)[0];
    const { apiKey } = await call<{ apiKey: { key: string } }>(`${first}/v1/admin/tenants`, 'POST', {
      name: 'bench',
    });
    const key = apiKey.key;
    const agent = await call(
      `${first}/v1/agents`,
      'POST',
      { name: 'bench', model: 'scripted/bench', tools: ['word_count'] },
      key,
    );
    const session = await call(`${first}/v1/sessions`, 'POST', { agentId: agent.id }, key);
    let turnId = '';
    for (let i = 0; i < TURNS; i++) {
      const turn = await call(
        `${first}/v1/sessions/${session.id}/messages`,
        'POST',
        { content: `a b c ${i}`, wait: true },
        key,
      );
      turnId = turn.id;
    }
    const paths = [
      `/v1/turns/${turnId}`,
      `/v1/sessions/${session.id}/messages?limit=100`,
      `/v1/sessions/${session.id}/events?limit=200`,
      '/v1/usage?groupBy=day',
    ];
    console.log(
      `${TURNS} turns in one session; ${ROUNDS} rounds of ${paths.length} GETs per gateway, one at a time\n`,
    );
    console.log('| gateway | primary statements / read | replica statements / read | p50 ms | p99 ms |');
    console.log('|---|---|---|---|---|');
    for (const [name, url] of Object.entries(gateways)) {
      // Warm both sides (connections, API key cache, named statements), then count.
      for (let i = 0; i < 5; i++) for (const p of paths) await call(`${url}${p}`, 'GET', undefined, key);
      primaryWire.reset();
      replicaWire.reset();
      const ms: number[] = [];
      for (let r = 0; r < ROUNDS; r++) {
        for (const p of paths) {
          const t0 = performance.now();
          await call(`${url}${p}`, 'GET', undefined, key);
          ms.push(performance.now() - t0);
        }
      }
      const n = ROUNDS * paths.length;
      const per = (x: number) => (x / n).toFixed(2);
      console.log(
        `| ${name} | ${per(primaryWire.read().statements)} | ${per(replicaWire.read().statements)} | ${pct(ms, 50).toFixed(1)} | ${pct(ms, 99).toFixed(1)} |`,
      );
      const top = Object.entries(primaryWire.read().byStatement)
        .sort((a, b) => b[1] - a[1])
        .slice(0, 6)
        .map(([text, count]) => `    ${(count / n).toFixed(2)}  ${text.slice(0, 110)}`);
      console.error(`  ${name}: primary statements per read, by text:\n${top.join('\n')}`);
    }
  } finally {
    await Promise.all(procs.map((p) => p.kill('SIGTERM')));
    for (const close of closing) await close().catch(() => undefined);
    if (dir) {
      execFileSync(SCRIPT, ['stop', dir]);
      rmSync(dir, { recursive: true, force: true });
    }
    rmSync(fixtures, { recursive: true, force: true });
    await env.cleanup();
  }
}

main().then(
  () => process.exit(0),
  (err) => {
    console.error(err);
    process.exit(1);
  },
);
