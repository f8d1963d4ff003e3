import { Metrics } from './metrics';

/** Blocks the event loop for `ms` (what a long synchronous step in a handler does). */
function block(ms: number): void {
  const until = performance.now() + ms;
  while (performance.now() < until) {
    // busy
  }
}

const tick = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function delaySamples(metrics: Metrics): Promise<{ count: number; over100ms: number }> {
  const values = (await metrics.eventLoopDelay.get()).values;
  const count = values.find((v) => v.metricName?.endsWith('_count'))?.value ?? 0;
  const upTo100 = values.find((v) => v.metricName?.endsWith('_bucket') && v.labels.le === 0.1)?.value ?? 0;
  return { count, over100ms: count - upTo100 };
}

describe('Metrics.monitorEventLoop', () => {
  it('records how late the loop ran: a loop blocked for 150 ms shows as a sample over 100 ms', async () => {
    const metrics = new Metrics('test');
    const stop = metrics.monitorEventLoop(10);
    try {
      await tick(100);
      const before = await delaySamples(metrics);
      expect(before.count).toBeGreaterThanOrEqual(3);

      block(150);
      await tick(30);
      const after = await delaySamples(metrics);
      expect(after.over100ms - before.over100ms).toBeGreaterThanOrEqual(1);
      expect(await metrics.registry.metrics()).toMatch(
        /^switchboard_event_loop_delay_seconds_bucket\{le="0.05"/m,
      );
    } finally {
      stop();
    }
    const stopped = (await delaySamples(metrics)).count;
    await tick(50);
    expect((await delaySamples(metrics)).count).toBe(stopped);
  });
});
