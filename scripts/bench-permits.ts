/**
 * How fast the harness's adaptive limit (`TurnPermits`, docs/adr/0029, issue 30 addendum) comes
 * back after pressure, on this process's real event loop (not a test): `--turns` loops hold a
 * permit each while the loop is blocked `--block-ms` at a time for `--pressure-ms`, so the limit
 * backs off; those turns end and as many slow ones arrive at once; the loop then stays quiet, and
 * the bench prints how many hold a permit each second until all of them do.
 *
 *   node -r @swc-node/register scripts/bench-permits.ts [--turns 500] [--pressure-ms 3000]
 *     [--block-ms 40] [--module <another turn-permits.ts, e.g. an older commit's>]
 */
import path from 'node:path';
import { parseArgs } from 'node:util';
import { TurnPermits } from '../libs/turns/src/turn-permits';

const { values } = parseArgs({
  options: {
    turns: { type: 'string', default: '500' },
    'pressure-ms': { type: 'string', default: '3000' },
    'block-ms': { type: 'string', default: '40' },
    module: { type: 'string' },
    'timeout-s': { type: 'string', default: '300' },
  },
});
const TURNS = Number(values.turns);
const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

async function main() {
  const Permits: typeof TurnPermits = values.module
    ? ((await import(path.resolve(values.module))) as { TurnPermits: typeof TurnPermits }).TurnPermits
    : TurnPermits;
  const p = new Permits({ max: TURNS });
  for (let i = 0; i < TURNS; i++) await p.acquire();
  const until = Date.now() + Number(values['pressure-ms']);
  while (Date.now() < until) {
    const blocked = Date.now();
    while (Date.now() - blocked < Number(values['block-ms'])) {
      // The loop is busy: CPU-bound turns.
    }
    await sleep(1);
  }
  for (let i = 0; i < TURNS; i++) p.release();
  let holding = 0;
  let allAt = NaN;
  const t0 = performance.now();
  for (let i = 0; i < TURNS; i++)
    void p.acquire().then(() => {
      if (++holding === TURNS) allAt = performance.now();
    });
  await sleep(0);
  console.log(`after pressure: limit ${p.limit}, ${holding} of ${TURNS} hold a permit`);
  const line: string[] = [];
  while (holding < TURNS && performance.now() - t0 < Number(values['timeout-s']) * 1000) {
    await sleep(1000);
    line.push(`${Math.round((performance.now() - t0) / 1000)} s: ${holding}`);
  }
  const seconds = (((holding < TURNS ? performance.now() : allAt) - t0) / 1000).toFixed(2);
  console.log(line.length > 12 ? [...line.slice(0, 10), '…', ...line.slice(-2)].join(', ') : line.join(', '));
  console.log(holding < TURNS ? `only ${holding} after ${seconds} s` : `all ${TURNS} within ${seconds} s`);
  p.close();
}

void main();
