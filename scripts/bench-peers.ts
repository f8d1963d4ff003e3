/**
 * Switchboard against LangGraph's open server (`@langchain/langgraph-api`, in memory), same agent
 * and workload, one system at a time, alternating (A B A B) — not a test.
 *
 * A turn is two instant model rounds and one tool: a fake model first calls `word_count` on the
 * user's text, then answers with the count. LangGraph runs a StateGraph (fake chat model + ToolNode)
 * in its in-memory server; Switchboard runs its real processes (gateway, hooks worker, harness
 * workers) on a database of its own with the scripted provider. Every client turn waits for its
 * answer: LangGraph with POST /threads/:id/runs/wait, Switchboard with `wait: true` on the message
 * POST when the API has it (else a Postgres completion watcher, said in the output). Every
 * Switchboard turn is checked in Postgres afterwards: completed, transcript rows and tool call there.
 *
 * CPU per turn counts every process a system needs: LangGraph's one process; Switchboard's gateway,
 * hooks worker, harness workers, its database's Postgres backends and Redis (the machine's one
 * server, so anything else using it counts too). A round's CPU is read after its post-turn hooks
 * settled, and the goals (issue 37: ≤ 0.5× LangGraph's CPU per turn, ≥ 2× its turns/s at the
 * highest concurrency) are printed with the table.
 *
 * LangGraph is installed from npm into a scratch folder outside the repository (cached between
 * runs; never a dependency of the project): $TMPDIR/sb-bench-langgraph.
 *
 *   npm run bench:peers -- [--concurrency 1,10,50] [--seconds 8] [--reps 2] [--workers 1]
 *                          [--langgraph-jobs 10] [--model-delay 0] [--json]
 */
import { spawn, execFileSync, type ChildProcess } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { Queue } from 'bullmq';
import { QueueName } from '@switchboard/contracts';
import { cpuMs, freePort, pct, redisCpuMs, sleep, startSwitchboard, type Switchboard } from './bench-lib';

const { values } = parseArgs({
  options: {
    concurrency: { type: 'string', default: '1,10,50' },
    /** Each measured round sends turns for this long, then waits for the ones in flight. */
    seconds: { type: 'string', default: '8' },
    /** Rounds per system and concurrency, alternating A B A B. */
    reps: { type: 'string', default: '2' },
    workers: { type: 'string', default: '1' },
    /** LangGraph's queue workers in its process (the CLI's --n-jobs-per-worker, 10 by default). */
    'langgraph-jobs': { type: 'string', default: '10' },
    'model-delay': { type: 'string', default: '0' },
    json: { type: 'boolean', default: false },
  },
});
const CONCURRENCY = values.concurrency.split(',').map(Number);
const SECONDS = Number(values.seconds);
const REPS = Number(values.reps);
const MODEL_DELAY = Number(values['model-delay']);
const SCRATCH = path.join(process.env.TMPDIR || tmpdir(), 'sb-bench-langgraph');

// --- LangGraph in a scratch folder --------------------------------------------------------------------

const LANGGRAPH_PACKAGE = {
  name: 'sb-bench-langgraph',
  private: true,
  type: 'module',
  dependencies: {
    '@langchain/langgraph-api': '2.0.0',
    '@langchain/langgraph': '^1.0.0',
    '@langchain/langgraph-checkpoint': '~1.0.0',
    '@langchain/langgraph-sdk': '~2.0.0',
    '@langchain/core': '^1.0.1',
    typescript: '^5.5.4',
    zod: '^3.25.76',
  },
};

const GRAPH = `import { randomUUID } from 'node:crypto';
import { BaseChatModel } from '@langchain/core/language_models/chat_models';
import { AIMessage } from '@langchain/core/messages';
import { tool } from '@langchain/core/tools';
import { END, MessagesAnnotation, START, StateGraph } from '@langchain/langgraph';
import { ToolNode, toolsCondition } from '@langchain/langgraph/prebuilt';
import { z } from 'zod';

const DELAY = Number(process.env.MODEL_DELAY_MS ?? '0');

/** A fake chat model: the first round calls word_count on the user's text, the second answers. */
class ScriptedChatModel extends BaseChatModel {
  _llmType() { return 'scripted'; }
  bindTools() { return this; }
  async _generate(messages) {
    if (DELAY > 0) await new Promise((r) => setTimeout(r, DELAY));
    const last = messages[messages.length - 1];
    const message = last.getType() === 'tool'
      ? new AIMessage({ content: 'counted ' + last.content })
      : new AIMessage({ content: '', tool_calls: [{ id: randomUUID(), name: 'word_count', args: { text: String(last.content) } }] });
    return { generations: [{ text: String(message.content), message }] };
  }
}

const wordCount = tool(async ({ text }) => JSON.stringify({ words: text.trim().split(/\\s+/).length }), {
  name: 'word_count',
  description: 'Counts the words in a text.',
  schema: z.object({ text: z.string() }),
});
const model = new ScriptedChatModel({}).bindTools([wordCount]);

export const graph = new StateGraph(MessagesAnnotation)
  .addNode('agent', async (state) => ({ messages: [await model.invoke(state.messages)] }))
  .addNode('tools', new ToolNode([wordCount]))
  .addEdge(START, 'agent')
  .addConditionalEdges('agent', toolsCondition, ['tools', END])
  .addEdge('tools', 'agent')
  .compile();
`;

const SERVER = `import { startServer } from '@langchain/langgraph-api/server';
const { host } = await startServer({
  port: Number(process.env.PORT),
  nWorkers: Number(process.env.N_WORKERS),
  host: '127.0.0.1',
  cwd: process.cwd(),
  graphs: { agent: './graph.mjs:graph' },
});
console.log('langgraph ready at ' + host);
`;

/** Installs the pinned LangGraph packages once (again only when the pins change). */
function ensureLangGraph(): void {
  mkdirSync(SCRATCH, { recursive: true });
  const pkg = JSON.stringify(LANGGRAPH_PACKAGE, null, 2);
  const stamp = path.join(SCRATCH, 'node_modules', '.sb-bench-stamp');
  const hash = createHash('sha256').update(pkg).digest('hex');
  if (!existsSync(stamp) || readFileSync(stamp, 'utf8') !== hash) {
    console.error(`installing LangGraph's server into ${SCRATCH} (once)…`);
    writeFileSync(path.join(SCRATCH, 'package.json'), pkg);
    execFileSync('npm', ['install', '--no-audit', '--no-fund', '--loglevel=error'], {
      cwd: SCRATCH,
      stdio: 'inherit',
      timeout: 600_000,
    });
    writeFileSync(stamp, hash);
  }
  writeFileSync(path.join(SCRATCH, 'graph.mjs'), GRAPH);
  writeFileSync(path.join(SCRATCH, 'server.mjs'), SERVER);
}

interface LangGraph {
  base: string;
  child: ChildProcess;
  stop(): Promise<void>;
}

async function startLangGraph(): Promise<LangGraph> {
  // Its in-memory store is flushed to .langgraph_api/ on exit and reloaded at start: start empty.
  rmSync(path.join(SCRATCH, '.langgraph_api'), { recursive: true, force: true });
  const port = await freePort();
  const child = spawn(process.execPath, ['server.mjs'], {
    cwd: SCRATCH,
    env: {
      PATH: process.env.PATH,
      HOME: process.env.HOME,
      PORT: String(port),
      N_WORKERS: values['langgraph-jobs'],
      MODEL_DELAY_MS: String(MODEL_DELAY),
      LOG_LEVEL: 'error',
      LANGSMITH_TRACING: 'false',
      LANGCHAIN_TRACING_V2: 'false',
      NODE_ENV: 'production',
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  await new Promise<void>((resolve, reject) => {
    const timer = setTimeout(
      () => reject(new Error(`LangGraph did not start:\n${out.slice(-2000)}`)),
      60_000,
    );
    const onData = (chunk: Buffer) => {
      out += chunk.toString();
      if (out.includes('langgraph ready at')) {
        clearTimeout(timer);
        resolve();
      }
    };
    child.stdout.on('data', onData);
    child.stderr.on('data', onData);
    child.once('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`LangGraph exited with ${code}:\n${out.slice(-2000)}`));
    });
  });
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  return {
    base: `http://127.0.0.1:${port}`,
    child,
    async stop() {
      if (child.exitCode === null) child.kill('SIGTERM');
      await exited;
    },
  };
}

async function postJson<T>(url: string, body: unknown): Promise<T> {
  const res = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  if (!res.ok) throw new Error(`${url} ${res.status} ${await res.text()}`);
  return (await res.json()) as T;
}

// --- the two systems behind one interface ----------------------------------------------------------

interface System {
  name: 'Switchboard' | 'LangGraph';
  /** A conversation: a Switchboard session or a LangGraph thread. */
  conversation(): Promise<string>;
  /** One turn, resolved once its answer is known. */
  turn(conversation: string, content: string): Promise<void>;
  /** CPU ms so far of each of the system's processes (Switchboard: Postgres and Redis included). */
  cpu(): Promise<Record<string, number>>;
  /** Resolves once the work a round started is done (Switchboard: every post-turn hook settled). */
  settle(): Promise<void>;
}

function langGraphSystem(lg: LangGraph): System {
  return {
    name: 'LangGraph',
    conversation: async () => (await postJson<{ thread_id: string }>(`${lg.base}/threads`, {})).thread_id,
    async turn(thread, content) {
      const state = await postJson<{ messages?: { type: string; content: string }[] }>(
        `${lg.base}/threads/${thread}/runs/wait`,
        { assistant_id: 'agent', input: { messages: [{ role: 'user', content }] } },
      );
      const last = state.messages?.at(-1);
      if (last?.type !== 'ai' || !String(last.content).startsWith('counted')) {
        throw new Error(`LangGraph answered ${JSON.stringify(last)}`);
      }
    },
    cpu: async () => ({ langgraph: cpuMs(lg.child.pid!) }),
    settle: async () => undefined,
  };
}

function switchboardSystem(sb: Switchboard, key: string, agentId: string, turnIds: string[]): System {
  return {
    name: 'Switchboard',
    conversation: async () => (await sb.post<{ id: string }>('/v1/sessions', { agentId }, key)).id,
    async turn(session, content) {
      turnIds.push(await sb.turn(key, session, content));
    },
    async cpu() {
      // sb.cpu() keys by process name; with several harness workers they are summed here.
      const out: Record<string, number> = {};
      for (const p of sb.procs) out[p.name] = (out[p.name] ?? 0) + cpuMs(p.app.child.pid!);
      out.postgres = (await sb.cpu()).postgres;
      // Redis is the machine's one server: anything else using it at the same time counts too.
      out.redis = await redisCpuMs(sb.env.redisUrl);
      return out;
    },
    async settle() {
      // The post-turn hooks run after the client has its answer; their CPU belongs to the round.
      // Settled = no post-turn job waiting or running (the archivist's delayed session jobs wait
      // for the session's idle period and are not this round's).
      const queue = new Queue(QueueName.PostTurn, {
        connection: { url: sb.env.redisUrl },
        prefix: sb.env.queuePrefix,
      });
      try {
        for (let i = 0; i < 600; i++) {
          const counts = await queue.getJobCounts('waiting', 'active', 'prioritized', 'waiting-children');
          if (Object.values(counts).every((n) => n === 0)) return;
          await sleep(50);
        }
        throw new Error('post-turn hooks did not settle within 30 s');
      } finally {
        await queue.close();
      }
    },
  };
}

interface Round {
  system: System['name'];
  concurrency: number;
  turns: number;
  seconds: number;
  turnsPerSecond: number;
  p50: number;
  p99: number;
  /** CPU ms per turn of all the system's processes (Switchboard: Postgres and Redis included). */
  cpuMsPerTurn: number;
  /** The same by process. */
  cpuMsPerTurnByProcess: Record<string, number>;
}

/** `concurrency` clients, each in its own fresh conversation, send turns one after another for SECONDS. */
async function round(sys: System, concurrency: number, seconds: number): Promise<Round> {
  const conversations = await Promise.all(Array.from({ length: concurrency }, () => sys.conversation()));
  const latencies: number[] = [];
  await sys.settle();
  const cpu0 = await sys.cpu();
  const t0 = performance.now();
  const deadline = t0 + seconds * 1000;
  await Promise.all(
    conversations.map(async (c, i) => {
      for (let t = 0; performance.now() < deadline; t++) {
        const sent = performance.now();
        await sys.turn(c, `client ${i} turn ${t} counts these words`);
        latencies.push(performance.now() - sent);
      }
    }),
  );
  const wall = (performance.now() - t0) / 1000;
  await sys.settle();
  const cpu1 = await sys.cpu();
  const byProcess: Record<string, number> = {};
  for (const k of Object.keys(cpu1)) {
    byProcess[k] = Number(((cpu1[k] - (cpu0[k] ?? 0)) / latencies.length).toFixed(1));
  }
  const cpu = Object.keys(cpu1).reduce((s, k) => s + cpu1[k] - (cpu0[k] ?? 0), 0);
  return {
    system: sys.name,
    concurrency,
    turns: latencies.length,
    seconds: Number(wall.toFixed(2)),
    turnsPerSecond: Number((latencies.length / wall).toFixed(1)),
    p50: Number(pct(latencies, 50).toFixed(1)),
    p99: Number(pct(latencies, 99).toFixed(1)),
    cpuMsPerTurn: Number((cpu / latencies.length).toFixed(1)),
    cpuMsPerTurnByProcess: byProcess,
  };
}

const fmtCpu = (byProcess: Record<string, number>): string =>
  Object.entries(byProcess)
    .map(([k, v]) => `${k} ${v}`)
    .join(', ');

/** The mean of each process's CPU ms per turn over rounds. */
function meanByProcess(rounds: Round[]): Record<string, number> {
  const out: Record<string, number> = {};
  for (const r of rounds) {
    for (const [k, v] of Object.entries(r.cpuMsPerTurnByProcess)) out[k] = (out[k] ?? 0) + v / rounds.length;
  }
  for (const k of Object.keys(out)) out[k] = Number(out[k].toFixed(1));
  return out;
}

async function main() {
  ensureLangGraph();
  const lg = await startLangGraph();
  let sb: Switchboard | undefined;
  try {
    sb = await startSwitchboard({ workers: Number(values.workers), modelDelayMs: MODEL_DELAY });
    const { key, agentId } = await sb.tenant();
    const turnIds: string[] = [];
    const systems = [switchboardSystem(sb, key, agentId, turnIds), langGraphSystem(lg)];
    console.error(
      `Switchboard: ${values.workers} harness worker(s), the client waits by ${sb.waitMode}` +
        (sb.waitMode === 'wait: true' ? '' : ' (the API has no `wait: true` on this commit)') +
        `; LangGraph: ${values['langgraph-jobs']} queue workers, in memory. ${SECONDS} s rounds, A B A B.` +
        ` Switchboard's tables analyzed and vacuumed by ${sb.maintenance}.`,
    );
    // Warm-up (V8, pools, caches), not measured.
    for (const s of systems) await round(s, 5, 2);
    turnIds.length = 0;

    const rounds: Round[] = [];
    for (const c of CONCURRENCY) {
      for (let r = 0; r < REPS; r++) {
        for (const s of systems) {
          const result = await round(s, c, SECONDS);
          rounds.push(result);
          console.error(
            `  c=${c} ${s.name.padEnd(11)} ${result.turnsPerSecond} turns/s (${result.turns} turns, p50 ${result.p50} ms, p99 ${result.p99} ms, ${result.cpuMsPerTurn} CPU ms/turn: ${fmtCpu(result.cpuMsPerTurnByProcess)})`,
          );
        }
      }
    }
    const durable = await sb.verifyDurable(turnIds);

    const summary = CONCURRENCY.map((c) => {
      const of = (name: System['name']) => rounds.filter((x) => x.concurrency === c && x.system === name);
      const mean = (xs: Round[], f: (x: Round) => number) => xs.reduce((s, x) => s + f(x), 0) / xs.length;
      const sbr = of('Switchboard');
      const lgr = of('LangGraph');
      // Each rep's ratio compares two neighbouring rounds, which share whatever else the machine did.
      const ratios = sbr.map((x, i) => x.turnsPerSecond / lgr[i].turnsPerSecond);
      return {
        concurrency: c,
        switchboard: Number(mean(sbr, (x) => x.turnsPerSecond).toFixed(1)),
        langgraph: Number(mean(lgr, (x) => x.turnsPerSecond).toFixed(1)),
        ratio: Number((ratios.reduce((s, x) => s + x, 0) / ratios.length).toFixed(2)),
        ratios: ratios.map((x) => Number(x.toFixed(2))),
        switchboardP50P99: `${Math.round(mean(sbr, (x) => x.p50))} / ${Math.round(mean(sbr, (x) => x.p99))}`,
        langgraphP50P99: `${Math.round(mean(lgr, (x) => x.p50))} / ${Math.round(mean(lgr, (x) => x.p99))}`,
        switchboardCpu: Number(mean(sbr, (x) => x.cpuMsPerTurn).toFixed(1)),
        switchboardCpuByProcess: meanByProcess(sbr),
        langgraphCpu: Number(mean(lgr, (x) => x.cpuMsPerTurn).toFixed(1)),
        cpuRatio: Number((mean(sbr, (x) => x.cpuMsPerTurn) / mean(lgr, (x) => x.cpuMsPerTurn)).toFixed(2)),
      };
    });
    const top = summary.find((x) => x.concurrency === Math.max(...CONCURRENCY))!;
    const goals = {
      cpuPerTurnRatio: top.cpuRatio,
      cpuGoal: '≤ 0.5× LangGraph per turn',
      cpuMet: top.cpuRatio <= 0.5,
      throughputRatio: top.ratio,
      throughputGoal: `≥ 2× LangGraph turns/s at c${top.concurrency}`,
      throughputMet: top.ratio >= 2,
    };
    if (values.json) {
      console.log(JSON.stringify({ waitMode: sb.waitMode, durable, rounds, summary, goals }, null, 2));
    } else {
      console.log(`
Switchboard turns durably persisted (completed in Postgres, 4 transcript rows, tool call completed): ${durable.ok} of ${turnIds.length}
Client waits: Switchboard by ${sb.waitMode}, LangGraph by runs/wait.

| concurrency | Switchboard turns/s | LangGraph turns/s | Switchboard / LangGraph (each rep) | Switchboard p50 / p99 ms | LangGraph p50 / p99 ms | CPU ms / turn: Switchboard (by process), LangGraph, ratio |
| --- | --- | --- | --- | --- | --- | --- |
${summary
  .map(
    (s) =>
      `| ${s.concurrency} | ${s.switchboard} | ${s.langgraph} | **${s.ratio}×** (${s.ratios.join(', ')}) | ${s.switchboardP50P99} | ${s.langgraphP50P99} | ${s.switchboardCpu} (${fmtCpu(s.switchboardCpuByProcess)}), ${s.langgraphCpu}, **${s.cpuRatio}×** |`,
  )
  .join('\n')}

Goals at c${top.concurrency}: CPU per durable turn ${goals.cpuPerTurnRatio}× LangGraph's (${goals.cpuGoal}: ${goals.cpuMet ? 'met' : 'NOT met'}); turns/s ${goals.throughputRatio}× (${goals.throughputGoal}: ${goals.throughputMet ? 'met' : 'NOT met'}).`);
    }
    if (durable.bad.length) throw new Error(`${durable.bad.length} Switchboard turns not durably persisted`);
  } finally {
    await sb?.stop();
    await lg.stop();
  }
}

main().then(
  () => process.exit(0),
  (err: unknown) => {
    console.error(err instanceof Error ? err.stack : err);
    process.exit(1);
  },
);
