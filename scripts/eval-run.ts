/**
 * `npm run admin -- eval run`: the evaluation gate for CI (docs/adr/0063), over the public HTTP API
 * with a tenant API key (--url / --key, or SWITCHBOARD_URL / SWITCHBOARD_API_KEY). It creates an
 * experiment of the dataset on the listed versions of the agent, waits until it completes (every
 * turn ended and scored), prints the per-version table and exits 1 when any listed version's mean
 * score is under --min-score (a version with no score is under it) or the wait timed out; 0 otherwise.
 */
import { isUuid } from '@switchboard/contracts';

export const EVAL_USAGE = `  eval run --dataset <id|name> --agent <id|name> --version N [--version M]...
           --min-score X [--timeout-s 600] [--url <gateway>] [--key <api key>] [--json]`;

export class EvalUsageError extends Error {}

interface VersionResult {
  version: number;
  meanScore: number | null;
  passRate: number | null;
  costUsd: number;
  meanLatencyMs: number | null;
  runs: number;
  scored: number;
  failed: number;
}

interface Experiment {
  id: string;
  status: string;
  results: VersionResult[];
}

interface Options {
  dataset: string;
  agent: string;
  versions: number[];
  minScore: number;
  timeoutS: number;
  url: string;
  key: string;
  json: boolean;
}

function parse(args: string[]): Options {
  const [sub, ...rest] = args;
  if (sub !== 'run')
    throw new EvalUsageError(sub ? `unknown eval command ${sub}` : 'eval needs a command: run');
  const flags = new Map<string, string[]>();
  let json = false;
  for (let i = 0; i < rest.length; i++) {
    const arg = rest[i];
    if (arg === '--json') {
      json = true;
      continue;
    }
    const name = arg.startsWith('--') ? arg.slice(2) : undefined;
    if (!name || !['dataset', 'agent', 'version', 'min-score', 'timeout-s', 'url', 'key'].includes(name)) {
      throw new EvalUsageError(`unknown argument ${arg}`);
    }
    const value = rest[++i];
    if (value === undefined) throw new EvalUsageError(`${arg} needs a value`);
    flags.set(name, [...(flags.get(name) ?? []), value]);
  }
  const one = (name: string, fallback?: string): string => {
    const values = flags.get(name);
    if (values && values.length > 1) throw new EvalUsageError(`--${name} given twice`);
    const value = values?.[0] ?? fallback;
    if (value === undefined || value === '') throw new EvalUsageError(`--${name} is required`);
    return value;
  };
  const versions = (flags.get('version') ?? []).map((v) => {
    const n = Number(v);
    if (!Number.isInteger(n) || n < 1)
      throw new EvalUsageError(`--version takes a positive integer, not ${v}`);
    return n;
  });
  if (versions.length === 0) throw new EvalUsageError('--version is required (repeat it for more)');
  const minScore = Number(one('min-score'));
  if (!Number.isFinite(minScore) || minScore < 0 || minScore > 1)
    throw new EvalUsageError('--min-score is 0 to 1');
  const timeoutS = Number(one('timeout-s', '600'));
  if (!Number.isFinite(timeoutS) || timeoutS <= 0)
    throw new EvalUsageError('--timeout-s is a positive number');
  const key = flags.get('key')?.[0] ?? process.env.SWITCHBOARD_API_KEY;
  if (!key) throw new EvalUsageError('no API key: give --key or set SWITCHBOARD_API_KEY');
  return {
    dataset: one('dataset'),
    agent: one('agent'),
    versions,
    minScore,
    timeoutS,
    url: (flags.get('url')?.[0] ?? process.env.SWITCHBOARD_URL ?? 'http://localhost:3000').replace(
      /\/+$/,
      '',
    ),
    key,
    json,
  };
}

/** Runs `eval <args>`; resolves to the exit code (throws EvalUsageError on bad arguments). */
export async function runEval(args: string[]): Promise<number> {
  const o = parse(args);
  const call = async <T>(method: string, path: string, body?: unknown): Promise<T> => {
    const res = await fetch(`${o.url}${path}`, {
      method,
      headers: {
        authorization: `Bearer ${o.key}`,
        ...(body === undefined ? {} : { 'content-type': 'application/json' }),
      },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const text = await res.text();
    if (!res.ok) throw new Error(`${method} ${path}: HTTP ${res.status} ${text}`);
    return JSON.parse(text) as T;
  };
  /** An id as given, else the one whose name matches, looked up page by page. */
  const resolve = async (path: string, what: string, ref: string): Promise<string> => {
    if (isUuid(ref)) return ref;
    let cursor: string | undefined;
    for (;;) {
      const page = await call<{ data: { id: string; name: string }[]; nextCursor: string | null }>(
        'GET',
        `${path}?limit=200${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`,
      );
      const found = page.data.find((d) => d.name === ref);
      if (found) return found.id;
      if (!page.nextCursor) throw new Error(`no ${what} named ${ref}`);
      cursor = page.nextCursor;
    }
  };
  const datasetId = await resolve('/v1/datasets', 'dataset', o.dataset);
  const agentId = await resolve('/v1/agents', 'agent', o.agent);
  const created = await call<{ id: string }>('POST', '/v1/experiments', {
    datasetId,
    agentId,
    versions: o.versions,
  });
  console.error(`experiment ${created.id}: waiting up to ${o.timeoutS}s`);
  const deadline = Date.now() + o.timeoutS * 1000;
  let experiment = await call<Experiment>('GET', `/v1/experiments/${created.id}`);
  while (experiment.status === 'running' && Date.now() < deadline) {
    // A CLI polls: the API has no completion stream for experiments.
    await new Promise((r) => setTimeout(r, Math.min(1000, Math.max(0, deadline - Date.now()))));
    experiment = await call<Experiment>('GET', `/v1/experiments/${created.id}`);
  }
  const timedOut = experiment.status !== 'completed';
  const below = experiment.results.filter((r) => r.meanScore === null || r.meanScore < o.minScore);
  if (o.json) {
    console.log(
      JSON.stringify(
        { ...experiment, minScore: o.minScore, timedOut, passed: !timedOut && below.length === 0 },
        null,
        2,
      ),
    );
  } else {
    console.log(table(experiment.results, o.minScore));
    console.log(`experiment ${experiment.id} ${experiment.status}`);
  }
  if (timedOut) {
    console.error(`timed out after ${o.timeoutS}s: the experiment is ${experiment.status}`);
    return 1;
  }
  if (below.length > 0) {
    console.error(`under --min-score ${o.minScore}: version ${below.map((r) => r.version).join(', ')}`);
    return 1;
  }
  return 0;
}

const fmt = (n: number | null, digits: number) => (n === null ? '-' : n.toFixed(digits));

function table(results: VersionResult[], minScore: number): string {
  const rows = [
    ['version', 'meanScore', 'passRate', 'costUsd', 'meanLatencyMs', 'runs', 'scored', 'failed', 'gate'],
    ...results.map((r) => [
      String(r.version),
      fmt(r.meanScore, 3),
      fmt(r.passRate, 3),
      r.costUsd.toFixed(6),
      fmt(r.meanLatencyMs, 0),
      String(r.runs),
      String(r.scored),
      String(r.failed),
      r.meanScore !== null && r.meanScore >= minScore ? 'pass' : 'FAIL',
    ]),
  ];
  const widths = rows[0].map((_, i) => Math.max(...rows.map((r) => r[i].length)));
  return rows.map((r) => r.map((c, i) => c.padEnd(widths[i])).join('  ')).join('\n');
}
