/**
 * Where each process's CPU went during a benchmark's measured turns (not a test).
 *
 *   npm run bench -- --sessions 50 --turns 10 --workers 1 --count --profile /tmp/prof
 *   node -r @swc-node/register scripts/cpu-profile-summary.ts /tmp/prof [--top 25] [--json]
 *
 * `--profile <dir>` writes one `.cpuprofile` per process into `<dir>/<process>/` when the processes
 * exit, and `<dir>/window.json`: the measured turns' interval on the monotonic clock the profiler
 * stamps samples with, and their number. Only samples inside that interval count (not start-up,
 * warm-up or the idle statistics waits), and ms are divided by the turns: self time per function,
 * per file or package, and per innermost frame of our own code on the stack.
 */
import { existsSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { summariseCpuProfile, type CpuProfile } from '@switchboard/testing';

export interface ProfileWindow {
  fromUs: number;
  toUs: number;
  turns: number;
}

/** Records the measured interval (process.hrtime.bigint() readings, ns) next to the profiles. */
export function writeProfileWindow(dir: string, fromNs: bigint, toNs: bigint, turns: number): void {
  const w: ProfileWindow = { fromUs: Number(fromNs / 1000n), toUs: Number(toNs / 1000n), turns };
  writeFileSync(path.join(dir, 'window.json'), JSON.stringify(w));
}

function main() {
  const { values, positionals } = parseArgs({
    allowPositionals: true,
    options: { top: { type: 'string', default: '25' }, json: { type: 'boolean', default: false } },
  });
  const dir = positionals[0];
  if (!dir) throw new Error('usage: cpu-profile-summary.ts <profile dir> [--top N] [--json]');
  const windowFile = path.join(dir, 'window.json');
  const w: ProfileWindow | undefined = existsSync(windowFile)
    ? (JSON.parse(readFileSync(windowFile, 'utf8')) as ProfileWindow)
    : undefined;
  const per = (ms: number) => (w ? Number((ms / w.turns).toFixed(3)) : ms);
  const out: Record<string, unknown> = {};
  for (const proc of readdirSync(dir, { withFileTypes: true })) {
    if (!proc.isDirectory()) continue;
    for (const f of readdirSync(path.join(dir, proc.name)).filter((x) => x.endsWith('.cpuprofile'))) {
      const profile = JSON.parse(readFileSync(path.join(dir, proc.name, f), 'utf8')) as CpuProfile;
      const s = summariseCpuProfile(profile, { fromUs: w?.fromUs, toUs: w?.toUs, top: Number(values.top) });
      const scale = (rows: [string, number][]) => rows.map(([k, v]) => [k, per(v)] as [string, number]);
      const key = `${proc.name}/${f}`;
      out[key] = {
        busyMs: per(s.busyMs),
        byFunction: scale(s.byFunction),
        byFile: scale(s.byFile),
        byOwnCaller: scale(s.byOwnCaller),
      };
      if (values.json) continue;
      const unit = w ? `ms per turn (${w.turns} turns)` : 'ms';
      console.log(`\n## ${key}: ${per(s.busyMs)} ${unit} sampled, idle excluded`);
      for (const [title, rows] of [
        ['self time by function', s.byFunction],
        ['self time by file or package', s.byFile],
        ['all time by innermost own frame on the stack', s.byOwnCaller],
      ] as const) {
        console.log(`\n### ${title}`);
        for (const [k, v] of scale([...rows])) console.log(`${v.toFixed(3).padStart(8)}  ${k}`);
      }
    }
  }
  if (values.json) console.log(JSON.stringify(out, null, 2));
}

if (require.main === module) main();
