/**
 * Reading V8 CPU profiles (`node --cpu-prof`, the `.cpuprofile` JSON) for the benchmarks: where a
 * process's CPU went between two instants, as self time per function and per file or package, and
 * as time attributed to the nearest frame of our own code on the stack (which of our functions led
 * to a library's or Node's work). Used by `scripts/cpu-profile-summary.ts`.
 */

export interface CpuProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number; columnNumber?: number };
  children?: number[];
}

export interface CpuProfile {
  nodes: CpuProfileNode[];
  /** µs on the monotonic clock (CLOCK_MONOTONIC on Linux, as `process.hrtime`). */
  startTime: number;
  endTime: number;
  samples: number[];
  timeDeltas: number[];
}

export interface CpuProfileSummary {
  /** Sampled ms in the window, idle excluded. */
  busyMs: number;
  /** Self ms per function (`name (file:line)`), highest first. */
  byFunction: [string, number][];
  /** Self ms per package (`node_modules/<pkg>`), our file (`libs/…`, `apps/…`) or V8/Node category. */
  byFile: [string, number][];
  /** Every sample's ms given to the innermost frame of our own code on its stack (`(none)` if none). */
  byOwnCaller: [string, number][];
}

/** Ours: the repository's apps and libs, not its node_modules. */
export function isOwnUrl(url: string): boolean {
  return !url.includes('/node_modules/') && /\/(apps|libs)\/[^/]+\/src\//.test(url);
}

/** A profile frame's file as a short, stable key. */
export function fileKey(url: string, functionName: string): string {
  if (!url) return functionName.startsWith('(') ? functionName : '(native)';
  const nm = url.lastIndexOf('/node_modules/');
  if (nm >= 0) {
    const parts = url.slice(nm + '/node_modules/'.length).split('/');
    return `npm:${parts[0].startsWith('@') ? `${parts[0]}/${parts[1]}` : parts[0]}`;
  }
  if (url.startsWith('node:')) return url;
  const own = /\/((?:apps|libs)\/.+)$/.exec(url);
  if (own) return own[1];
  return url.replace(/^file:\/\//, '');
}

function frameKey(node: CpuProfileNode): string {
  const { functionName, url, lineNumber } = node.callFrame;
  if (!url) return functionName || '(anonymous)';
  return `${functionName || '(anonymous)'} (${fileKey(url, functionName)}:${lineNumber + 1})`;
}

const sorted = (m: Map<string, number>, top: number): [string, number][] =>
  [...m.entries()]
    .sort((a, b) => b[1] - a[1])
    .slice(0, top)
    .map(([k, v]) => [k, Number((v / 1000).toFixed(1))]);

/**
 * Sums a profile's samples taken in [fromUs, toUs] (the whole profile without them). A sample's
 * time is the interval to the next sample, as Chrome's DevTools counts it. `(idle)` is left out.
 */
export function summariseCpuProfile(
  profile: CpuProfile,
  opts: { fromUs?: number; toUs?: number; top?: number } = {},
): CpuProfileSummary {
  const top = opts.top ?? 40;
  const byId = new Map(profile.nodes.map((n) => [n.id, n]));
  const parent = new Map<number, number>();
  for (const n of profile.nodes) for (const c of n.children ?? []) parent.set(c, n.id);
  const ownCaller = new Map<number, string>();
  const ownCallerOf = (id: number): string => {
    const known = ownCaller.get(id);
    if (known !== undefined) return known;
    const node = byId.get(id)!;
    const p = parent.get(id);
    const key = isOwnUrl(node.callFrame.url) ? frameKey(node) : p === undefined ? '(none)' : ownCallerOf(p);
    ownCaller.set(id, key);
    return key;
  };

  const self = new Map<string, number>();
  const files = new Map<string, number>();
  const callers = new Map<string, number>();
  let busy = 0;
  let t = profile.startTime;
  const times: number[] = [];
  for (const d of profile.timeDeltas) times.push((t += d));
  const from = opts.fromUs ?? -Infinity;
  const to = opts.toUs ?? Infinity;
  for (let i = 0; i < profile.samples.length; i++) {
    const at = times[i];
    if (at < from || at > to) continue;
    const next = i + 1 < times.length ? times[i + 1] : profile.endTime;
    const us = Math.max(0, Math.min(next, to) - at);
    const node = byId.get(profile.samples[i]);
    if (!node || node.callFrame.functionName === '(idle)') continue;
    busy += us;
    const add = (m: Map<string, number>, k: string) => m.set(k, (m.get(k) ?? 0) + us);
    add(self, frameKey(node));
    add(files, fileKey(node.callFrame.url, node.callFrame.functionName));
    add(callers, ownCallerOf(node.id));
  }
  return {
    busyMs: Number((busy / 1000).toFixed(1)),
    byFunction: sorted(self, top),
    byFile: sorted(files, top),
    byOwnCaller: sorted(callers, top),
  };
}
