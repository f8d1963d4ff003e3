import { execFile } from 'node:child_process';
import path from 'node:path';
import { promisify } from 'node:util';

/**
 * What `@switchboard/observability/register` sets up, seen from a fresh Node process as an app
 * sees it: which libraries it patches, and whether spans are recorded.
 */
jest.setTimeout(30_000);

const ROOT = path.resolve(__dirname, '../../..');
const PROBE = `
require(${JSON.stringify(path.join(__dirname, 'register.ts'))});
const { trace } = require('@opentelemetry/api');
const pg = require('pg');
const nest = require('@nestjs/core/router/router-execution-context');
const span = trace.getTracer('probe').startSpan('probe');
const { context } = require('@opentelemetry/api');
console.log(JSON.stringify({
  contextManager: context.with(trace.setSpan(context.active(), span), () => trace.getSpan(context.active()) === span),
  httpPatched: Boolean(require('http').request.__wrapped),
  recording: span.isRecording(),
  traceId: span.spanContext().traceId,
  pgPatched: Boolean(pg.Client.prototype.query.__wrapped),
  nestPatched: Boolean(nest.RouterExecutionContext.prototype.create.__wrapped),
}));
`;

async function probe(env: Record<string, string>): Promise<Record<string, unknown>> {
  const clean = Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith('OTEL_')));
  const { stdout } = await promisify(execFile)(process.execPath, ['-r', '@swc-node/register', '-e', PROBE], {
    cwd: ROOT,
    env: { ...clean, ...env },
  });
  return JSON.parse(stdout.trim().split('\n').pop()!) as Record<string, unknown>;
}

describe('observability/register', () => {
  it('with no exporter configured starts nothing: no context manager, no instrumentation, no-op spans', async () => {
    expect(await probe({})).toEqual({
      contextManager: false,
      httpPatched: false,
      recording: false,
      traceId: '0'.repeat(32),
      pgPatched: false,
      nestPatched: false,
    });
  });

  it('with OTEL_TRACES_EXPORTER=none records no span but still gives every span a trace id', async () => {
    const seen = await probe({ OTEL_TRACES_EXPORTER: 'none' });
    expect(seen).toMatchObject({
      contextManager: true,
      httpPatched: true,
      recording: false,
      traceId: expect.stringMatching(/^(?!0+$)[0-9a-f]{32}$/),
    });
  });

  it('patches the libraries SPEC §12 traces (pg) and not the rest of the auto-instrumentations (Nest)', async () => {
    expect(await probe({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://127.0.0.1:1' })).toMatchObject({
      pgPatched: true,
      nestPatched: false,
    });
    // Exporting nothing, pg's spans would go nowhere: only what carries trace context is patched.
    expect(await probe({ OTEL_TRACES_EXPORTER: 'none' })).toMatchObject({
      pgPatched: false,
      nestPatched: false,
    });
    // The operator's own list wins.
    expect(
      await probe({
        OTEL_NODE_ENABLED_INSTRUMENTATIONS: 'http,pg,nestjs-core',
        OTEL_TRACES_EXPORTER: 'none',
      }),
    ).toMatchObject({ pgPatched: true, nestPatched: true });
  });

  it('records spans when a sampler is configured explicitly', async () => {
    expect(await probe({ OTEL_TRACES_SAMPLER: 'always_on' })).toMatchObject({ recording: true });
  });
});
