/**
 * The per-turn CPU cost of encryption at rest (docs/adr/0067), mode off vs on, in one run (not a
 * test). One process, a database of its own: for each mode, N turns' worth of what the data layer does
 * per turn — the admission's body sealed, a checkpoint write set with a tool call sealed (transcript
 * messages, tool call row, final text, journal events, context parts), and the transcript read back
 * and opened (a SqlDb read of the session's messages) — measured as process CPU (user + system).
 *
 *   npm run bench:encryption -- --turns 2000 [--messages 12]
 *
 * `--stack`: the whole message path through the real services instead, mode on vs off in ONE run —
 * a gateway, a hooks worker, a triage worker and harness worker(s) as processes, Postgres, Redis, and
 * a local fake model server answering at once (FakeLlmServer, the OpenAI wire). Two tenants with the
 * same agent (two model rounds, one tool: the model calls `word_count`, then answers), one with
 * `encryption.mode` on and one off, in interleaved rounds (off on, then on off) at each concurrency,
 * in the same processes. Per round: turns/s, p50/p99, CPU ms per turn of every process (gateway,
 * hooks, triage, harness, the database's Postgres backends, Redis), read after the round's post-turn
 * hooks settled. Every turn is checked in Postgres (completed, transcript, tool call), and the `on`
 * tenant's transcript is checked sealed, the `off` one's clear.
 *
 *   npm run bench:encryption -- --stack [--concurrency 10,50] [--seconds 8] [--reps 2] [--workers 1] [--json]
 */
import { randomBytes } from 'node:crypto';
import { parseArgs } from 'node:util';
import { Queue } from 'bullmq';
import { QueueName } from '@switchboard/contracts';
import { newId } from '@switchboard/contracts';
import { poolOf, setContentCipher, sealJson } from '@switchboard/database';
import { LocalKeyRing, TenantCipher } from '@switchboard/platform';
import { sealCheckpoint, sql, sqlDbFor, type CheckpointWrites } from '@switchboard/store';
import {
  createTestEnv,
  FakeLlmServer,
  seedTenantSession,
  seedTurn,
  transcriptMessage,
  type RecordedRequest,
  type ScriptedReply,
} from '@switchboard/testing';
import { cpuMs, pct, redisCpuMs, sleep, startSwitchboard, type Switchboard } from './bench-lib';

const { values } = parseArgs({
  options: {
    turns: { type: 'string', default: '2000' },
    messages: { type: 'string', default: '12' },
    stack: { type: 'boolean', default: false },
    concurrency: { type: 'string', default: '10,50' },
    seconds: { type: 'string', default: '8' },
    reps: { type: 'string', default: '2' },
    workers: { type: 'string', default: '1' },
    json: { type: 'boolean', default: false },
  },
});
const TURNS = Number(values.turns);
const MESSAGES = Number(values.messages);
const text = (n: number) => 'The quick brown fox jumps over the lazy dog. '.repeat(n);

async function main() {
  const env = await createTestEnv();
  try {
    const cipher = new TenantCipher(
      env.db,
      LocalKeyRing.fromSpec(`k1:${randomBytes(32).toString('base64')}`),
    );
    setContentCipher(cipher);
    const db = sqlDbFor(poolOf(env.db), 'bench');
    const results: Record<string, { cpuMsPerTurn: number; wallMsPerTurn: number }> = {};
    for (const mode of ['off', 'on'] as const) {
      const s = await seedTenantSession(env.db, `bench-${mode}`);
      await env.db.tenant.update({ where: { id: s.tenantId }, data: { settings: { encryption: { mode } } } });
      const turn = await seedTurn(env.db, s, { status: 'completed' });
      const rows = Array.from({ length: MESSAGES }, (_, i) =>
        transcriptMessage(s, turn, i, i % 2 ? 'assistant' : 'user', text(8)),
      );
      for (const r of rows) r.body = (await sealJson(s.tenantId, r.body)) as never;
      await env.db.message.createMany({ data: rows });
      const writes = (): CheckpointWrites => ({
        tenantId: s.tenantId,
        sessionId: s.sessionId,
        turnId: turn.id,
        lease: null,
        events: [
          { id: newId(), turnId: turn.id, type: 'text_delta', data: { text: text(6) } },
          {
            id: newId(),
            turnId: turn.id,
            type: 'tool_call_started',
            data: { callId: 'c1', name: 'http_fetch' },
          },
        ],
        messages: [0, 1].map((i) => ({
          ...transcriptMessage(s, turn, 100 + i, 'assistant', text(6)),
          priority: 'normal',
          toolCalls: [{ id: 'c1', name: 'http_fetch', arguments: '{"url":"http://x"}' }],
        })),
        toolCalls: [
          {
            id: newId(),
            callId: 'c1',
            name: 'http_fetch',
            arguments: { url: 'http://x' },
            sideEffect: 'network',
            idempotencyKey: 'k',
            status: 'completed',
            result: { text: text(20) },
            durationMs: 5,
          },
        ],
        contextParts: [{ hash: 'h', content: { role: 'system', content: text(20) }, tokens: 100 }],
      });
      const read = () =>
        db.rows(sql`SELECT body FROM messages WHERE session_id = ${s.sessionId}::uuid ORDER BY position`);
      // Warm up (keys unwrapped and cached, V8 optimised), then measure.
      for (let i = 0; i < 50; i++) {
        await sealJson(s.tenantId, { type: 'text', text: text(4) });
        await sealCheckpoint(writes());
        await read();
      }
      const baseline = process.cpuUsage();
      const t0 = performance.now();
      for (let i = 0; i < TURNS; i++) {
        await sealJson(s.tenantId, { type: 'text', text: text(4) });
        await sealCheckpoint(writes());
        await read();
      }
      const cpu = process.cpuUsage(baseline);
      results[mode] = {
        cpuMsPerTurn: Number(((cpu.user + cpu.system) / 1000 / TURNS).toFixed(4)),
        wallMsPerTurn: Number(((performance.now() - t0) / TURNS).toFixed(4)),
      };
    }
    console.log(JSON.stringify({ turns: TURNS, messagesReadPerTurn: MESSAGES, ...results }, null, 2));
    console.log(
      `encryption on costs ${(results.on.cpuMsPerTurn - results.off.cpuMsPerTurn).toFixed(3)} ms CPU per turn ` +
        `(off ${results.off.cpuMsPerTurn} ms, on ${results.on.cpuMsPerTurn} ms; includes the transcript read's own Postgres round trip)`,
    );
  } finally {
    setContentCipher(undefined);
    await env.cleanup();
  }
}

// --- --stack: the real services ----------------------------------------------------------------------

type Mode = 'off' | 'on';

interface StackRound {
  mode: Mode;
  concurrency: number;
  turns: number;
  turnsPerSecond: number;
  p50: number;
  p99: number;
  cpuMsPerTurn: number;
  cpuMsPerTurnByProcess: Record<string, number>;
}

/** The fake model: a user message gets a `word_count` call on its text, a tool result the answer. */
function benchReply(req: RecordedRequest): ScriptedReply {
  const messages = (req.body as { messages?: { role: string; content: unknown }[] }).messages ?? [];
  const last = messages[messages.length - 1];
  if (last?.role === 'tool') return { kind: 'message', text: `counted ${String(last.content)}` };
  const text = typeof last?.content === 'string' ? last.content : JSON.stringify(last?.content ?? '');
  return {
    kind: 'message',
    toolCalls: [{ name: 'word_count', arguments: JSON.stringify({ text }) }],
  };
}

async function stackCpu(sb: Switchboard): Promise<Record<string, number>> {
  const out: Record<string, number> = {};
  for (const p of sb.procs) {
    const name = p.name.replace(/-\d+$/, '');
    out[name] = (out[name] ?? 0) + cpuMs(p.app.child.pid!);
  }
  out.postgres = (await sb.cpu()).postgres;
  // Redis is the machine's one server: anything else using it at the same time counts too.
  out.redis = await redisCpuMs(sb.env.redisUrl);
  return out;
}

/** Resolves once no post-turn job waits or runs: the round's hooks are in its CPU. */
async function settle(sb: Switchboard): Promise<void> {
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
}

async function stackMain() {
  const concurrencies = values.concurrency.split(',').map(Number);
  const seconds = Number(values.seconds);
  const reps = Number(values.reps);
  const llm = await FakeLlmServer.start();
  llm.setDefault(benchReply);
  let sb: Switchboard | undefined;
  try {
    sb = await startSwitchboard({
      workers: Number(values.workers),
      triageWorkers: 1,
      modelDelayMs: 0,
      env: { ...llm.providerEnv, ENCRYPTION_KEYS: `k1:${randomBytes(32).toString('base64')}` },
    });
    const s = sb;
    const tenants = {} as Record<Mode, { key: string; agentId: string; turnIds: string[] }>;
    for (const mode of ['off', 'on'] as const) {
      const { apiKey } = await s.post<{ apiKey: { key: string } }>('/v1/admin/tenants', {
        name: `bench-${mode}`,
      });
      const res = await fetch(`${s.base}/v1/settings`, {
        method: 'PATCH',
        headers: { 'content-type': 'application/json', authorization: `Bearer ${apiKey.key}` },
        body: JSON.stringify({ encryption: { mode } }),
      });
      if (!res.ok) throw new Error(`PATCH /v1/settings ${res.status} ${await res.text()}`);
      const agent = await s.post<{ id: string }>(
        '/v1/agents',
        { name: 'bench', model: 'openai-chat/gpt-4o-mini', tools: ['word_count'] },
        apiKey.key,
      );
      tenants[mode] = { key: apiKey.key, agentId: agent.id, turnIds: [] };
    }
    const round = async (mode: Mode, concurrency: number, secs: number): Promise<StackRound> => {
      const t = tenants[mode];
      const sessions = await Promise.all(
        Array.from(
          { length: concurrency },
          async () => (await s.post<{ id: string }>('/v1/sessions', { agentId: t.agentId }, t.key)).id,
        ),
      );
      await settle(s);
      const cpu0 = await stackCpu(s);
      const latencies: number[] = [];
      const t0 = performance.now();
      const deadline = t0 + secs * 1000;
      await Promise.all(
        sessions.map(async (session, i) => {
          for (let n = 0; performance.now() < deadline; n++) {
            const sent = performance.now();
            t.turnIds.push(await s.turn(t.key, session, `client ${i} turn ${n} counts these words`));
            latencies.push(performance.now() - sent);
          }
        }),
      );
      const wall = (performance.now() - t0) / 1000;
      await settle(s);
      const cpu1 = await stackCpu(s);
      llm.requests.length = 0;
      const byProcess: Record<string, number> = {};
      let total = 0;
      for (const k of Object.keys(cpu1)) {
        const d = cpu1[k] - (cpu0[k] ?? 0);
        total += d;
        byProcess[k] = Number((d / latencies.length).toFixed(2));
      }
      return {
        mode,
        concurrency,
        turns: latencies.length,
        turnsPerSecond: Number((latencies.length / wall).toFixed(1)),
        p50: Number(pct(latencies, 50).toFixed(1)),
        p99: Number(pct(latencies, 99).toFixed(1)),
        cpuMsPerTurn: Number((total / latencies.length).toFixed(2)),
        cpuMsPerTurnByProcess: byProcess,
      };
    };
    console.error(
      `encryption on vs off through the real services: gateway, hooks, triage, ${values.workers} harness worker(s), ` +
        `Postgres, Redis, a fake model server; ${seconds} s rounds, interleaved (off on, on off), ${reps} rep(s) per concurrency.`,
    );
    // Warm-up (V8, pools, the data key unwrapped and cached), not measured.
    for (const mode of ['off', 'on'] as const) await round(mode, 5, 2);
    tenants.off.turnIds.length = 0;
    tenants.on.turnIds.length = 0;
    const rounds: StackRound[] = [];
    for (const c of concurrencies) {
      for (let r = 0; r < reps; r++) {
        for (const mode of (r % 2 === 0 ? ['off', 'on'] : ['on', 'off']) as Mode[]) {
          const x = await round(mode, c, seconds);
          rounds.push(x);
          console.error(
            `  c=${c} ${mode.padEnd(3)} ${x.turnsPerSecond} turns/s (${x.turns} turns, p50 ${x.p50} ms, p99 ${x.p99} ms), ` +
              `${x.cpuMsPerTurn} CPU ms/turn: ${Object.entries(x.cpuMsPerTurnByProcess)
                .map(([k, v]) => `${k} ${v}`)
                .join(', ')}`,
          );
        }
      }
    }
    // Every turn durable, and sealed exactly where the mode says.
    const durable = {
      off: await s.verifyDurable(tenants.off.turnIds),
      on: await s.verifyDurable(tenants.on.turnIds),
    };
    const sealedShare = async (mode: Mode) => {
      const { rows } = await poolOf(s.env.db).query<{ sealed: number; total: number }>(
        `SELECT count(*) FILTER (WHERE jsonb_typeof(m.body) = 'string' AND m.body #>> '{}' LIKE 'sbe1.%')::int AS sealed,
                count(*)::int AS total
           FROM messages m WHERE m.turn_id = ANY($1::uuid[])`,
        [tenants[mode].turnIds],
      );
      return rows[0];
    };
    const sealed = { off: await sealedShare('off'), on: await sealedShare('on') };
    const mean = (xs: StackRound[], f: (x: StackRound) => number) =>
      xs.reduce((a, x) => a + f(x), 0) / xs.length;
    const meanBy = (xs: StackRound[]) => {
      const out: Record<string, number> = {};
      for (const x of xs)
        for (const [k, v] of Object.entries(x.cpuMsPerTurnByProcess)) out[k] = (out[k] ?? 0) + v / xs.length;
      for (const k of Object.keys(out)) out[k] = Number(out[k].toFixed(2));
      return out;
    };
    const summary = concurrencies.map((c) => {
      const of = (mode: Mode) => rounds.filter((x) => x.concurrency === c && x.mode === mode);
      const [off, on] = [of('off'), of('on')];
      return {
        concurrency: c,
        off: {
          turnsPerSecond: Number(mean(off, (x) => x.turnsPerSecond).toFixed(1)),
          p50p99: `${Math.round(mean(off, (x) => x.p50))} / ${Math.round(mean(off, (x) => x.p99))}`,
          cpuMsPerTurn: Number(mean(off, (x) => x.cpuMsPerTurn).toFixed(2)),
          byProcess: meanBy(off),
        },
        on: {
          turnsPerSecond: Number(mean(on, (x) => x.turnsPerSecond).toFixed(1)),
          p50p99: `${Math.round(mean(on, (x) => x.p50))} / ${Math.round(mean(on, (x) => x.p99))}`,
          cpuMsPerTurn: Number(mean(on, (x) => x.cpuMsPerTurn).toFixed(2)),
          byProcess: meanBy(on),
        },
        throughputRatio: Number(
          (mean(on, (x) => x.turnsPerSecond) / mean(off, (x) => x.turnsPerSecond)).toFixed(3),
        ),
        cpuRatio: Number((mean(on, (x) => x.cpuMsPerTurn) / mean(off, (x) => x.cpuMsPerTurn)).toFixed(3)),
      };
    });
    if (values.json) {
      console.log(JSON.stringify({ durable, sealed, rounds, summary }, null, 2));
    } else {
      const fmt = (b: Record<string, number>) =>
        Object.entries(b)
          .map(([k, v]) => `${k} ${v}`)
          .join(', ');
      console.log(`
Turns durable (completed, transcript, tool call): off ${durable.off.ok}/${tenants.off.turnIds.length}, on ${durable.on.ok}/${tenants.on.turnIds.length}.
Transcript rows sealed: off ${sealed.off.sealed}/${sealed.off.total}, on ${sealed.on.sealed}/${sealed.on.total}.

| concurrency | mode | turns/s | p50 / p99 ms | CPU ms / turn (total) | CPU ms / turn by process |
| --- | --- | --- | --- | --- | --- |
${summary
  .flatMap((x) => [
    `| ${x.concurrency} | off | ${x.off.turnsPerSecond} | ${x.off.p50p99} | ${x.off.cpuMsPerTurn} | ${fmt(x.off.byProcess)} |`,
    `| ${x.concurrency} | on | ${x.on.turnsPerSecond} | ${x.on.p50p99} | ${x.on.cpuMsPerTurn} | ${fmt(x.on.byProcess)} |`,
    `| ${x.concurrency} | on / off | **${x.throughputRatio}×** | | **${x.cpuRatio}×** | |`,
  ])
  .join('\n')}`);
    }
    const bad = durable.off.bad.length + durable.on.bad.length;
    if (bad > 0) throw new Error(`${bad} turns not durably persisted`);
    if (sealed.off.sealed > 0 || sealed.on.sealed !== sealed.on.total)
      throw new Error('the transcript is not sealed as the modes say');
  } finally {
    await sb?.stop();
    await llm.close();
  }
}

(values.stack ? stackMain() : main()).then(
  () => process.exit(0),
  (err: unknown) => {
    console.error(err instanceof Error ? err.stack : err);
    process.exit(1);
  },
);
