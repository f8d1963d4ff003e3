/**
 * The web console under a fast stream (issue 31; a benchmark, not a test). Real processes (a gateway
 * serving the built console, one harness worker, a hooks worker) on a database of their own, a fake
 * OpenAI-compatible model server in this process streaming one long answer at `--rate` text deltas per
 * second for `--seconds`, and the session page open in headless Chromium (playwright-core).
 *
 * Every delta is a fixed-width tag (`c000123 `), so the page's text can be checked piece by piece: every
 * second the bench reads how many tags the live text shows against how many the server has sent (the
 * lag), and the page's JS heap and DOM size (Chrome DevTools Protocol `Performance.getMetrics`). At the
 * end it checks the rendered answer holds every tag exactly once, in order, and reports the heap after a
 * forced garbage collection. It also reports the initial route's JavaScript, gzipped: every script the
 * browser loaded to show /console/sessions after signing in.
 *
 *   npm run console:build && npm run bench:console -- [--rate 200] [--seconds 60]
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { gzipSync } from 'node:zlib';
import { FakeLlmServer, scripted } from '@switchboard/testing';
import { launchBrowser, openConsole, signIn } from '../test/support/console';
import { sleep, startSwitchboard } from './bench-lib';

const { values } = parseArgs({
  options: {
    rate: { type: 'string', default: '200' },
    seconds: { type: 'string', default: '60' },
  },
});
const RATE = Number(values.rate);
const SECONDS = Number(values.seconds);
const PIECES = RATE * SECONDS;
const TAG = /c\d{7} /g;
const tag = (i: number) => `c${String(i).padStart(7, '0')} `;
const DIST = path.resolve(__dirname, '../apps/console/dist');

async function main() {
  let sent = 0;
  const fake = await FakeLlmServer.start();
  fake.onFrame = (frame) => {
    sent += frame.match(TAG)?.length ?? 0;
  };
  fake.setDefault(
    scripted.text(Array.from({ length: PIECES }, (_, i) => tag(i)).join(''), {
      textPieces: PIECES,
      frameIntervalMs: 1000 / RATE,
      usage: { input: 50, output: PIECES },
    }),
  );
  const sb = await startSwitchboard({ workers: 1, modelDelayMs: 0, env: { ...fake.providerEnv } });
  const browser = await launchBrowser();
  try {
    const { key } = await sb.tenant();
    const agent = await sb.post<{ id: string }>(
      '/v1/agents',
      { name: 'streamer', model: 'openai-chat/gpt-4o-mini' },
      key,
    );
    const session = await sb.post<{ id: string }>('/v1/sessions', { agentId: agent.id }, key);

    const c = await openConsole(browser, sb.base);
    await signIn(c.page, key);
    const initialJs = c.requests.filter((u) => u.endsWith('.js'));
    const gz = initialJs.map((u) => {
      const file = path.join(DIST, new URL(u).pathname.replace(/^\/console\//, ''));
      return { file: path.basename(file), gzip: gzipSync(readFileSync(file)).length };
    });
    const cdp = await c.context.newCDPSession(c.page);
    await cdp.send('Performance.enable');
    const metrics = async () => {
      const { metrics: m } = await cdp.send('Performance.getMetrics');
      const get = (n: string) => m.find((x) => x.name === n)?.value ?? 0;
      return { heapMb: get('JSHeapUsedSize') / 2 ** 20, nodes: get('Nodes') };
    };

    await c.page.goto(`/console/sessions/${session.id}`);
    await c.page.getByTestId('transcript').waitFor();
    const before = await metrics();
    await sb.post(`/v1/sessions/${session.id}/messages`, { content: 'stream' }, key);
    const live = c.page.getByTestId('live-text');
    const samples: { t: number; sent: number; shown: number; heapMb: number; nodes: number }[] = [];
    const started = Date.now();
    while (sent < PIECES || samples.length === 0) {
      await sleep(1000);
      const text = (await live.textContent({ timeout: 1000 }).catch(() => '')) ?? '';
      samples.push({
        t: (Date.now() - started) / 1000,
        sent,
        shown: text.match(TAG)?.length ?? 0,
        ...(await metrics()),
      });
      if (Date.now() - started > (SECONDS + 60) * 1000) break;
    }
    // The answer as the page shows it once the turn ended: from the transcript.
    const answer = c.page.getByTestId('transcript').getByText(tag(PIECES - 1).trim(), { exact: false });
    await answer.first().waitFor({ timeout: 60_000 });
    const finalText = (await c.page.getByTestId('transcript').textContent()) ?? '';
    // The transcript's Markdown trims the answer's last space: match the tags without it.
    const tags = finalText.match(/c\d{7}/g) ?? [];
    const seen = new Set<string>();
    let duplicated = 0;
    let outOfOrder = 0;
    tags.forEach((t, i) => {
      if (seen.has(t)) duplicated++;
      seen.add(t);
      if (i > 0 && t < tags[i - 1]) outOfOrder++;
    });
    const missing = PIECES - seen.size;
    await cdp.send('HeapProfiler.collectGarbage');
    const after = await metrics();
    const maxLag = Math.max(...samples.map((s) => s.sent - s.shown));
    const lagAtEnd = samples.at(-1) ? samples.at(-1)!.sent - samples.at(-1)!.shown : NaN;

    console.log(`\nconsole bench: ${RATE} deltas/s for ${SECONDS} s (${PIECES} deltas)`);
    console.log(
      `initial route JS (gzip): ${(gz.reduce((a, b) => a + b.gzip, 0) / 1024).toFixed(1)} kB in ${gz.length} files`,
    );
    for (const f of gz) console.log(`  ${f.file}: ${(f.gzip / 1024).toFixed(1)} kB`);
    console.log(
      `rendered: ${seen.size}/${PIECES} tags, missing ${missing}, duplicated ${duplicated}, out of order ${outOfOrder}`,
    );
    console.log(
      `lag (tags sent − shown, sampled each second): max ${maxLag}, at the stream's end ${lagAtEnd}`,
    );
    console.log(
      `heap: ${before.heapMb.toFixed(1)} MB before, max ${Math.max(...samples.map((s) => s.heapMb)).toFixed(1)} MB while streaming, ${after.heapMb.toFixed(1)} MB after (GC); DOM nodes ${before.nodes} → ${after.nodes}`,
    );
    console.log('t(s)  sent  shown  heapMB  nodes');
    for (const s of samples.filter((_, i) => i % 5 === 4 || i === samples.length - 1)) {
      console.log(
        `${s.t.toFixed(0).padStart(4)} ${String(s.sent).padStart(6)} ${String(s.shown).padStart(6)} ${s.heapMb.toFixed(1).padStart(7)} ${String(s.nodes).padStart(6)}`,
      );
    }
    if (c.errors.length) console.log('page errors:', c.errors.slice(0, 5));
    await c.close();
  } finally {
    await browser.close();
    await sb.stop();
    await fake.close();
  }
}

main().then(
  () => process.exit(0),
  (e: unknown) => {
    console.error(e);
    process.exit(1);
  },
);
