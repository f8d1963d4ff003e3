/**
 * Redis's own count of the commands a bench window ran (issue 37): `INFO commandstats` deltas,
 * which include the commands Lua scripts run inside (BullMQ's EVALSHAs), and, with `monitor`, a
 * MONITOR tap that attributes every command (and every script's internal calls) to the BullMQ
 * script by name and to the queue or key family it touched. Redis 7 feeds MONITOR a script's
 * EVALSHA first and then its `[n lua]` calls, so each Lua line belongs to the last script seen.
 * MONITOR slows Redis down: the tap is for attribution, not for timing.
 */
import { createHash } from 'node:crypto';
import { readdirSync } from 'node:fs';
import path from 'node:path';
import IORedis from 'ioredis';

/** Calls per command (lower-case) since Redis started, as `INFO commandstats` says. */
export async function commandStats(url: string): Promise<Record<string, number>> {
  const r = new IORedis(url, { lazyConnect: true, maxRetriesPerRequest: 1 });
  await r.connect();
  try {
    const text = await r.info('commandstats');
    const out: Record<string, number> = {};
    for (const m of text.matchAll(/^cmdstat_([^:]+):calls=(\d+)/gm)) out[m[1].toLowerCase()] = Number(m[2]);
    return out;
  } finally {
    r.disconnect();
  }
}

export function statsDelta(a: Record<string, number>, b: Record<string, number>): Record<string, number> {
  const out: Record<string, number> = {};
  for (const [k, v] of Object.entries(b)) {
    const d = v - (a[k] ?? 0);
    if (d > 0) out[k] = d;
  }
  return out;
}

/** BullMQ's scripts by the SHA-1 ioredis sends with EVALSHA. */
function bullmqScripts(): Map<string, string> {
  const dir = path.join(path.dirname(require.resolve('bullmq/package.json')), 'dist/cjs/scripts');
  const out = new Map<string, string>();
  for (const f of readdirSync(dir)) {
    if (!/-\d+\.js$/.test(f)) continue;
    // eslint-disable-next-line @typescript-eslint/no-require-imports
    const mod = require(path.join(dir, f)) as Record<string, { name: string; content: string }>;
    for (const s of Object.values(mod)) {
      if (s && typeof s.content === 'string')
        out.set(createHash('sha1').update(s.content).digest('hex'), s.name);
    }
  }
  return out;
}

export interface Attribution {
  /** "family · command" → calls, where a script's row counts its EVALSHAs. */
  calls: Record<string, number>;
  /** "family · script" → the commands run inside its calls. */
  internal: Record<string, number>;
}

/**
 * The family a key belongs to: a BullMQ queue's keys are `<prefix>:<queue>:<suffix>` → the queue;
 * other keys → their first two `:`-separated parts with ids (uuid-ish, numeric) dropped.
 */
export function family(key: string | undefined, queues: Set<string>): string {
  if (!key) return '(no key)';
  const parts = key.split(':');
  for (const p of parts) if (queues.has(p)) return `queue ${p}`;
  const named = parts.filter((p) => !/^[0-9a-f-]{8,}$/i.test(p) && !/^\d+$/.test(p) && !p.startsWith('{'));
  return named.slice(0, 2).join(':') || '(id key)';
}

export async function monitor(url: string, queues: Set<string>) {
  const scripts = bullmqScripts();
  const r = new IORedis(url, { lazyConnect: true });
  await r.connect();
  const m = await r.monitor();
  let on = false;
  let current = '';
  const a: Attribution = { calls: {}, internal: {} };
  const bump = (rec: Record<string, number>, k: string) => (rec[k] = (rec[k] ?? 0) + 1);
  m.on('monitor', (_time: string, argv: string[], source: string) => {
    if (!on) return;
    const cmd = String(argv[0]).toLowerCase();
    if (/lua/.test(source)) {
      if (current) bump(a.internal, current);
      return;
    }
    if (cmd === 'evalsha' || cmd === 'eval') {
      const name =
        cmd === 'evalsha' ? (scripts.get(argv[1]) ?? `evalsha ${argv[1].slice(0, 8)}`) : 'eval (inline)';
      const nkeys = Number(argv[2]);
      const fam = family(nkeys > 0 ? argv[3] : undefined, queues);
      current = `${fam} · ${name}`;
      bump(a.calls, current);
      return;
    }
    current = '';
    bump(a.calls, `${family(argv[1], queues)} · ${cmd}`);
  });
  return {
    start() {
      on = true;
    },
    async stop(): Promise<Attribution> {
      on = false;
      m.disconnect();
      r.disconnect();
      return a;
    },
  };
}
