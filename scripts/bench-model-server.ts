/**
 * A model server for the benchmarks, as a process of its own (so its work is not on the bench
 * client's event loop): the test suite's FakeLlmServer (the OpenAI and Anthropic wire protocols,
 * streaming included) answering every request with a short text after `--delay-ms` (0: at once).
 * It prints `MODEL_SERVER <url>` on stdout once it listens, and runs until it is sent SIGTERM.
 *
 *   node -r @swc-node/register scripts/bench-model-server.ts [--delay-ms 0]
 */
import { parseArgs } from 'node:util';
import { FakeLlmServer } from '@switchboard/testing';

const { values } = parseArgs({ options: { 'delay-ms': { type: 'string', default: '0' } } });
const delayMs = Number(values['delay-ms']);
if (!Number.isFinite(delayMs) || delayMs < 0)
  throw new Error(`--delay-ms must be ≥ 0, not ${values['delay-ms']}`);

async function main() {
  const server = await FakeLlmServer.start();
  server.setDefault({ kind: 'message', text: 'ok, noted.', ...(delayMs > 0 ? { delayMs } : {}) });
  // The server records every request (for tests); a benchmark sends thousands, so forget them.
  const forget = setInterval(() => {
    server.requests.length = 0;
  }, 1000);
  const stop = () => {
    clearInterval(forget);
    void server.close().finally(() => process.exit(0));
  };
  process.once('SIGTERM', stop);
  process.once('SIGINT', stop);
  process.stdout.write(`MODEL_SERVER ${server.url}\n`);
}

void main();
