/**
 * Provider chunk → SSE client latency (issue 10; not a test). Real processes (a gateway, one
 * harness worker, a hooks worker) on a database of their own, and a fake OpenAI-compatible model
 * server in this process whose answers stream in frames `--chunk-ms` apart. `--sessions`
 * sessions each have `--subscribers` clients on `GET /v1/sessions/:id/stream` (50 × 10 = 500 by
 * default), then every session gets one message per round, all sessions at once, for `--rounds`
 * rounds after a warm-up round.
 *
 * Every text piece the fake server streams is a tag naming its session, round and place
 * (`s007r02c013 `); the server reports each frame just before writing it (FakeLlmServer.onFrame),
 * and each client notes when a tag first reaches it in a `text_delta` frame (live or journaled).
 * Both ends run in this process, on one clock. The latency covers the harness reading the
 * provider's stream, its live channel's coalescing (LIVE_DELTA_FLUSH_MS, docs/adr/0015), the
 * Redis PUBLISH, the gateway's subscriber and event stream, and the client's SSE parsing.
 *
 *   npm run bench:sse -- --sessions 50 --subscribers 10 --rounds 3 [--stream-seconds 2] [--chunk-ms 100]
 */
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { parseArgs } from 'node:util';
import { createParser } from 'eventsource-parser';
import { Client } from 'pg';
import { FakeLlmServer, scripted, type RecordedRequest } from '@switchboard/testing';
import { pct, pool, sleep, startSwitchboard } from './bench-lib';

const { values } = parseArgs({
  options: {
    sessions: { type: 'string', default: '50' },
    subscribers: { type: 'string', default: '10' },
    rounds: { type: 'string', default: '3' },
    'stream-seconds': { type: 'string', default: '2' },
    'chunk-ms': { type: 'string', default: '100' },
    /** Write V8 CPU profiles of every process to <dir>/<process>/. */
    profile: { type: 'string' },
  },
});
const SESSIONS = Number(values.sessions);
const SUBSCRIBERS = Number(values.subscribers);
const ROUNDS = Number(values.rounds);
const STREAM_MS = Number(values['stream-seconds']) * 1000;
const CHUNK_MS = Number(values['chunk-ms']);
// Role frame, the pieces, the finish frame, the usage frame, [DONE]: pieces + 3 intervals.
const INTERVALS = Math.max(4, Math.round(STREAM_MS / CHUNK_MS));
const PIECES = INTERVALS - 3;
const TAG = /s\d{3}r\d{2}c\d{3}/g;

const tag = (s: number, r: number, c: number) =>
  `s${String(s).padStart(3, '0')}r${String(r).padStart(2, '0')}c${String(c).padStart(3, '0')}`;

/** The reply to a request whose user message is `bench s<session> r<round>`: tags of fixed width, one per piece. */
function reply(req: RecordedRequest) {
  // The request carries the session's history: its last user message is this round's.
  const m = [...req.rawBody.matchAll(/bench s(\d+) r(\d+)/g)].at(-1);
  const [s, r] = m ? [Number(m[1]), Number(m[2])] : [999, 99];
  const text = Array.from({ length: PIECES }, (_, c) => `${tag(s, r, c)} `).join('');
  return scripted.text(text, {
    textPieces: PIECES,
    frameIntervalMs: STREAM_MS / INTERVALS,
    usage: { input: 50, output: PIECES },
  });
}

async function main() {
  const sent = new Map<string, number>();
  const fake = await FakeLlmServer.start();
  fake.setDefault(reply);
  fake.onFrame = (frame) => {
    const now = performance.now();
    for (const t of frame.match(TAG) ?? []) sent.set(t, now);
  };
  const sb = await startSwitchboard({
    workers: 1,
    modelDelayMs: 0,
    env: { ...fake.providerEnv },
    profileDir: values.profile,
  });
  const pg = new Client({ connectionString: sb.env.databaseUrl });
  await pg.connect();
  const controller = new AbortController();
  // The bench process's own event-loop delay: it is the fake provider and every client.
  const eld = monitorEventLoopDelay({ resolution: 10 });
  try {
    const { apiKey } = await sb.post<{ apiKey: { key: string } }>('/v1/admin/tenants', { name: 'bench' });
    const key = apiKey.key;
    const agent = await sb.post<{ id: string }>(
      '/v1/agents',
      { name: 'stream', model: 'openai-chat/gpt-4o-mini' },
      key,
    );
    const sessions: string[] = [];
    await pool(Array.from({ length: SESSIONS }), 16, async () => {
      sessions.push((await sb.post<{ id: string }>('/v1/sessions', { agentId: agent.id }, key)).id);
    });

    // Per subscriber: tag → arrival. Latencies of the measured rounds.
    const latencies: number[] = [];
    const firstChunk: number[] = [];
    let unmatched = 0;
    /** Streams the server ended (a session stream should stay open). */
    let streamsEnded = 0;
    let measuring = false;
    const received = sessions.map(() => Array.from({ length: SUBSCRIBERS }, () => new Set<string>()));
    const subscribe = async (s: number, k: number) => {
      const res = await fetch(`${sb.base}/v1/sessions/${sessions[s]}/stream`, {
        headers: { accept: 'text/event-stream', authorization: `Bearer ${key}` },
        signal: controller.signal,
      });
      if (!res.ok || !res.body) throw new Error(`stream ${res.status}`);
      const seen = received[s][k];
      const parser = createParser({
        onEvent: (m) => {
          if (m.event !== 'text_delta') return;
          const now = performance.now();
          const text = (JSON.parse(m.data) as { data?: { text?: string } }).data?.text ?? '';
          for (const t of text.match(TAG) ?? []) {
            if (seen.has(t)) continue;
            seen.add(t);
            const at = sent.get(t);
            if (at === undefined) unmatched++;
            else if (measuring) {
              latencies.push(now - at);
              if (t.endsWith('c000')) firstChunk.push(now - at);
            }
          }
        },
      });
      const reader = res.body.pipeThrough(new TextDecoderStream()).getReader();
      void (async () => {
        try {
          for (;;) {
            const { done, value } = await reader.read();
            if (done) break;
            parser.feed(value);
          }
        } catch (err) {
          if (controller.signal.aborted) return; // the end
          console.error(`stream of session ${s} failed: ${String(err)}`);
        }
        if (!controller.signal.aborted) streamsEnded++;
      })();
    };
    const subs: [number, number][] = [];
    for (let s = 0; s < SESSIONS; s++) for (let k = 0; k < SUBSCRIBERS; k++) subs.push([s, k]);
    await pool(subs, 50, ([s, k]) => subscribe(s, k));

    const ended = async (n: number) => {
      for (;;) {
        const r = await pg.query<{ n: number }>(
          "SELECT count(*)::int AS n FROM turns WHERE status IN ('completed', 'failed', 'cancelled')",
        );
        if (r.rows[0].n >= n) return;
        await sleep(100);
      }
    };
    /** Chunks of round `r` that some subscriber never received, by session. */
    const missed = (r: number) => {
      const bySession: Record<number, number> = {};
      for (let s = 0; s < SESSIONS; s++)
        for (let k = 0; k < SUBSCRIBERS; k++)
          for (let c = 0; c < PIECES; c++)
            if (!received[s][k].has(tag(s, r, c))) bySession[s] = (bySession[s] ?? 0) + 1;
      return bySession;
    };

    let missing = 0;
    const t0 = performance.now();
    for (let r = 0; r <= ROUNDS; r++) {
      measuring = r > 0; // round 0 warms up
      if (r === 1) eld.enable();
      await pool(sessions, 64, async (s, i) => {
        await sb.post(`/v1/sessions/${s}/messages`, { content: `bench s${i} r${r}` }, key);
      });
      await ended(SESSIONS * (r + 1));
      await sleep(200); // the last chunks' frames
      const lost = missed(r);
      const n = Object.values(lost).reduce((x, y) => x + y, 0);
      if (n > 0) console.error(`round ${r}: chunks missed by session ${JSON.stringify(lost)}`);
      if (r > 0) missing += n;
    }
    eld.disable();
    const wall = (performance.now() - t0) / 1000;
    const fmt = (x: number) => Number(x.toFixed(1));
    const result = {
      sessions: SESSIONS,
      subscribersPerSession: SUBSCRIBERS,
      subscribers: SESSIONS * SUBSCRIBERS,
      rounds: ROUNDS,
      streamSeconds: STREAM_MS / 1000,
      chunkMs: Number((STREAM_MS / INTERVALS).toFixed(1)),
      textChunksPerTurn: PIECES,
      wallSeconds: fmt(wall),
      chunksDelivered: latencies.length,
      chunksMissing: missing,
      unmatched,
      streamsEnded,
      chunkToClientMs: {
        p50: fmt(pct(latencies, 50)),
        p90: fmt(pct(latencies, 90)),
        p99: fmt(pct(latencies, 99)),
        max: fmt(Math.max(...latencies)),
      },
      firstChunkToClientMs: { p50: fmt(pct(firstChunk, 50)), p99: fmt(pct(firstChunk, 99)) },
      benchProcessEventLoopDelayMs: {
        p50: fmt(eld.percentile(50) / 1e6 - 10),
        p99: fmt(eld.percentile(99) / 1e6 - 10),
      },
    };
    console.log(JSON.stringify(result, null, 2));
    if (missing > 0) throw new Error(`${missing} chunks never reached a subscriber`);
  } finally {
    controller.abort();
    await pg.end().catch(() => undefined);
    await sb.stop();
    await fake.close();
  }
}

main().then(
  () => process.exit(0),
  (err: unknown) => {
    console.error(err instanceof Error ? err.stack : err);
    process.exit(1);
  },
);
