import { createServer, type Server } from 'node:http';
import type { ReadinessResponse } from '@switchboard/contracts';
import type { Metrics } from '@switchboard/observability';

/** One dependency a worker needs to do its work; `check` rejects when it is not usable. */
export interface ReadinessCheck {
  name: string;
  check(): Promise<unknown>;
}

/** How long one check may take before it counts as down (as the gateway's /readyz). */
export const READINESS_CHECK_TIMEOUT_MS = 2000;

async function probe(readinessCheck: ReadinessCheck, timeoutMs: number) {
  let timer: NodeJS.Timeout | undefined;
  try {
    await Promise.race([
      readinessCheck.check(),
      new Promise((_, reject) => {
        timer = setTimeout(() => reject(new Error('timeout')), timeoutMs);
      }),
    ]);
    return { status: 'up' as const };
  } catch (err) {
    return { status: 'down' as const, message: err instanceof Error ? err.message : String(err) };
  } finally {
    clearTimeout(timer);
  }
}

/**
 * Runs every check at once, in the gateway's /readyz shape (@nestjs/terminus'): `ok` when all are
 * up, `error` with the ones that are down otherwise, `shutting_down` once the process drains.
 */
export async function readiness(
  checks: ReadinessCheck[],
  options: { stopping?: boolean; timeoutMs?: number } = {},
): Promise<ReadinessResponse> {
  const results = await Promise.all(
    checks.map(
      async (c) => [c.name, await probe(c, options.timeoutMs ?? READINESS_CHECK_TIMEOUT_MS)] as const,
    ),
  );
  const details = Object.fromEntries(results);
  const info = Object.fromEntries(results.filter(([, r]) => r.status === 'up'));
  const error = Object.fromEntries(results.filter(([, r]) => r.status === 'down'));
  const status = options.stopping ? 'shutting_down' : Object.keys(error).length > 0 ? 'error' : 'ok';
  return { status, info, error, details };
}

/**
 * A worker's HTTP port (METRICS_PORT), for Prometheus and the orchestrator's probes:
 *   GET /metrics  Prometheus text format
 *   GET /healthz  liveness: 200 while the process answers
 *   GET /readyz   readiness: 200 when Postgres and Redis answer and every queue worker runs, else 503
 * Anything else is a 404; a method other than GET or HEAD a 405.
 */
export function serveWorkerOps(
  port: number,
  host: string,
  deps: { metrics: Metrics; ready: () => Promise<ReadinessResponse> },
): Promise<Server> {
  const json = (status: number, body: unknown) => ({
    status,
    headers: { 'content-type': 'application/json; charset=utf-8' },
    body: JSON.stringify(body),
  });
  const route = async (path: string, accept: string | undefined) => {
    switch (path) {
      case '/metrics': {
        // OpenMetrics, with exemplars, when the scraper asks for it (docs/adr/0040).
        const { contentType, body } = await deps.metrics.expose(accept);
        return { status: 200, headers: { 'content-type': contentType }, body };
      }
      case '/healthz':
        return json(200, { status: 'ok' });
      case '/readyz': {
        const result = await deps.ready();
        return json(result.status === 'ok' ? 200 : 503, result);
      }
      default:
        return json(404, { error: { code: 'not_found', message: `No route ${path}` } });
    }
  };
  const server = createServer((req, res) => {
    const path = (req.url ?? '/').split('?')[0];
    const answer = ({
      status,
      headers,
      body,
    }: {
      status: number;
      headers: Record<string, string>;
      body: string;
    }) => res.writeHead(status, headers).end(req.method === 'HEAD' ? undefined : body);
    if (req.method !== 'GET' && req.method !== 'HEAD') {
      const refused = json(405, {
        error: { code: 'bad_request', message: `${req.method} is not allowed: GET or HEAD` },
      });
      answer({ ...refused, headers: { ...refused.headers, allow: 'GET, HEAD' } });
      return;
    }
    route(path, req.headers.accept).then(answer, () =>
      answer(json(500, { error: { code: 'internal', message: 'Internal error' } })),
    );
  });
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => resolve(server));
  });
}
