import { readdirSync, readFileSync } from 'node:fs';
import { summariseCpuProfile, type CpuProfile } from '@switchboard/testing';
const load = (dir: string, proc: string) => {
  const f = readdirSync(`${dir}/${proc}`).find((x) => x.endsWith('.cpuprofile'))!;
  const w = JSON.parse(readFileSync(`${dir}/window.json`, 'utf8'));
  const s = summariseCpuProfile(JSON.parse(readFileSync(`${dir}/${proc}/${f}`, 'utf8')) as CpuProfile, { fromUs: w.fromUs, toUs: w.toUs, top: 100000 });
  return { s, turns: w.turns as number };
};
const pats = process.argv.slice(2);
for (const proc of ['gateway', 'harness-0', 'hooks-worker']) {
  const a = load('/tmp/wte-prof-before', proc);
  const b = load('/tmp/wte-prof-after', proc);
  console.log(`\n## ${proc}: busy ${(a.s.busyMs / a.turns).toFixed(2)} → ${(b.s.busyMs / b.turns).toFixed(2)} ms/turn sampled`);
  for (const [title, key] of [['own caller', 'byOwnCaller'], ['self', 'byFunction']] as const) {
    const ma = new Map(a.s[key]);
    const mb = new Map(b.s[key]);
    for (const p of pats) {
      for (const k of new Set([...ma.keys(), ...mb.keys()])) {
        if (!k.startsWith(p + ' ') && k !== p) continue;
        const va = ma.get(k) ?? 0, vb = mb.get(k) ?? 0;
        if (va / a.turns < 0.01 && vb / b.turns < 0.01) continue;
        console.log(`${title.padEnd(10)} ${k.padEnd(70)} ${(va / a.turns).toFixed(3)} (${((100 * va) / a.s.busyMs).toFixed(2)}%) → ${(vb / b.turns).toFixed(3)} (${((100 * vb) / b.s.busyMs).toFixed(2)}%)`);
      }
    }
  }
}
