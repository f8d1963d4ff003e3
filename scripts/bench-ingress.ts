/**
 * Webhook ingress latency (issue 12; not a test). A real gateway process (and a hooks worker, as
 * bench-lib starts them) on a database of its own; this process posts GitHub-signed deliveries to
 * one trigger's `/v1/hooks/:token` open-loop at `--rate` per second for `--seconds`, each with its
 * own X-GitHub-Delivery, and reports the answer latency (send → 202). Each answer covers the
 * token lookup, the HMAC check on the raw body, the delivery's INSERT and the triage job's
 * enqueue (docs/adr/0019); no triage worker runs, so the jobs wait in Redis and cost nothing here.
 * `--replay-share` of the requests repeat an earlier delivery (the duplicate path: INSERT … ON
 * CONFLICT, one lookup).
 *
 *   npm run bench:ingress -- [--rate 200] [--seconds 10] [--replay-share 0.1] [--body-bytes 4000]
 */
import { createHmac, randomUUID } from 'node:crypto';
import { parseArgs } from 'node:util';
import { pct, sleep, startSwitchboard } from './bench-lib';

const { values } = parseArgs({
  options: {
    rate: { type: 'string', default: '200' },
    seconds: { type: 'string', default: '10' },
    'replay-share': { type: 'string', default: '0.1' },
    /** Size of each delivery's JSON body (GitHub `issues` events are a few KB). */
    'body-bytes': { type: 'string', default: '4000' },
  },
});
const RATE = Number(values.rate);
const SECONDS = Number(values.seconds);
const REPLAY_SHARE = Number(values['replay-share']);
const BODY_BYTES = Number(values['body-bytes']);

async function main() {
  const sb = await startSwitchboard({ workers: 0, modelDelayMs: 0 });
  try {
    const { key, agentId } = await sb.tenant();
    const trigger = await sb.post<{ path: string; signingSecret: string }>(
      '/v1/triggers',
      { agentId, name: 'bench', scheme: 'github' },
      key,
    );
    const padding = 'x'.repeat(Math.max(0, BODY_BYTES - 120));
    const sent: string[] = [];
    const deliver = async (
      delivery: string,
    ): Promise<{ ms: number; status: number; duplicate?: boolean }> => {
      const raw = JSON.stringify({ action: 'opened', issue: { number: 1, title: 'bench', body: padding } });
      const signature = `sha256=${createHmac('sha256', trigger.signingSecret).update(raw).digest('hex')}`;
      const t0 = performance.now();
      const res = await fetch(`${sb.base}${trigger.path}`, {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          'x-github-event': 'issues',
          'x-github-delivery': delivery,
          'x-hub-signature-256': signature,
        },
        body: raw,
      });
      const body = (await res.json()) as { duplicate?: boolean };
      return { ms: performance.now() - t0, status: res.status, duplicate: body.duplicate };
    };

    // Warm-up: connections, JIT, the trigger's rows in Postgres' cache.
    for (let i = 0; i < 50; i++) await deliver(randomUUID());

    const total = RATE * SECONDS;
    const latencies: number[] = [];
    const replayLatencies: number[] = [];
    const statuses: Record<number, number> = {};
    let duplicatesSeen = 0;
    const inFlight: Promise<void>[] = [];
    const start = performance.now();
    // Open loop: request i leaves at start + i / RATE whatever earlier answers did.
    for (let i = 0; i < total; i++) {
      const due = start + (i * 1000) / RATE;
      const wait = due - performance.now();
      if (wait > 1) await sleep(wait);
      const replay = sent.length > 0 && Math.random() < REPLAY_SHARE;
      const delivery = replay ? sent[Math.floor(Math.random() * sent.length)] : randomUUID();
      if (!replay) sent.push(delivery);
      inFlight.push(
        deliver(delivery).then((r) => {
          statuses[r.status] = (statuses[r.status] ?? 0) + 1;
          if (r.duplicate) duplicatesSeen++;
          (replay ? replayLatencies : latencies).push(r.ms);
        }),
      );
    }
    await Promise.all(inFlight);
    const elapsed = (performance.now() - start) / 1000;
    const stored = await sb.env.db.triggerDelivery.count();
    const fmt = (xs: number[]) =>
      `p50 ${pct(xs, 50).toFixed(1)} ms, p95 ${pct(xs, 95).toFixed(1)} ms, p99 ${pct(xs, 99).toFixed(1)} ms, max ${Math.max(...xs).toFixed(1)} ms (n=${xs.length})`;
    console.log(
      JSON.stringify(
        {
          rate: RATE,
          seconds: SECONDS,
          bodyBytes: BODY_BYTES,
          achievedPerSecond: Number((total / elapsed).toFixed(1)),
          statuses,
          newDeliveries: fmt(latencies),
          replays: replayLatencies.length ? fmt(replayLatencies) : 'none',
          duplicatesAnswered: duplicatesSeen,
          // Warm-up deliveries included: every distinct delivery stored exactly once.
          storedDeliveries: stored,
          expectedStored: sent.length + 50,
        },
        null,
        2,
      ),
    );
  } finally {
    await sb.stop();
  }
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
