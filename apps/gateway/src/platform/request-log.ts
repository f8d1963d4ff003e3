import { randomUUID } from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import { context, isSpanContextValid, trace } from '@opentelemetry/api';
import {
  LogController,
  type FastifyInstance,
  type FastifyReply,
  type FastifyRequest,
  type FastifyServerOptions,
} from 'fastify';
import type { Config } from '@switchboard/config';
import { createLogger, traceExemplar, type Metrics } from '@switchboard/observability';
import type { LabelValues } from 'prom-client';

/** The request id header, read from the client (or a proxy) and echoed on every response. */
export const REQUEST_ID_HEADER = 'x-request-id';

/** An incoming request id is kept only when it is short and of a safe charset; otherwise one is made. */
const SAFE_REQUEST_ID = /^[A-Za-z0-9._:-]{1,64}$/;

export function requestId(req: IncomingMessage): string {
  const given = req.headers[REQUEST_ID_HEADER];
  return typeof given === 'string' && SAFE_REQUEST_ID.test(given) ? given : randomUUID();
}

/**
 * Fastify's own pino request logging, quietened to one line per request (written by
 * `registerRequestLog`), with the request id as `requestId` on every line of the request.
 */
export function requestLogOptions(
  config: Config,
): Pick<FastifyServerOptions, 'loggerInstance' | 'logController' | 'genReqId'> {
  return {
    loggerInstance: createLogger({ service: 'gateway', level: config.LOG_LEVEL, file: config.LOG_FILE }),
    logController: new LogController({ disableRequestLogging: true, requestIdLogLabel: 'requestId' }),
    genReqId: requestId,
  };
}

interface Logged {
  tenantId?: string;
  /** ADMIN_TOKEN made the request (acting as `tenantId` when set): logged as `actor: operator`. */
  operator?: boolean;
  /** The trace of the request's server span, taken while it is active. */
  logTraceId?: string;
  /** The request's server span, as exemplar labels of its duration (trace_id, span_id). */
  exemplar?: LabelValues<string>;
  /** Where the request's duration is observed (`http_server_request_duration_seconds`). */
  httpMetrics?: Metrics['httpRequests'];
}

/**
 * One line per request when the response is sent: method, route template, status,
 * duration, tenant (once authenticated; `actor: operator` when ADMIN_TOKEN acts as it), trace id and request id. Headers are never
 * logged, so neither the API key nor cookies can reach the line. The same moment observes the
 * request's duration by method, route template and status (`metrics`), and the request's server
 * span is named by its route (`POST /v1/sessions/:id/messages`, with `http.route`), as the
 * OpenTelemetry HTTP conventions name it; a request no route matched keeps the method alone.
 */
export function registerRequestLog(fastify: FastifyInstance, metrics?: Metrics): void {
  fastify.addHook('onRequest', async (request, reply) => {
    reply.header(REQUEST_ID_HEADER, request.id);
    const r = request as FastifyRequest & Logged;
    r.httpMetrics = metrics?.httpRequests;
    const span = trace.getSpan(context.active());
    if (span && isSpanContextValid(span.spanContext())) {
      r.logTraceId = span.spanContext().traceId;
      r.exemplar = traceExemplar(span);
      const route = request.routeOptions.url;
      if (route) {
        span.updateName(`${request.method} ${route}`);
        span.setAttribute('http.route', route);
      }
    }
  });
  fastify.addHook('onResponse', async (request, reply) => logRequest(request, reply));
}

/**
 * The request's line. Fastify's onResponse does not run for a response the route wrote itself
 * (`reply.hijack()`, the SSE streams): those routes call this when they end.
 */
export function logRequest(
  request: FastifyRequest,
  reply: FastifyReply,
  extra: Record<string, unknown> = {},
): void {
  const r = request as FastifyRequest & Logged;
  const status = reply.statusCode;
  r.httpMetrics?.observe({
    // Unmatched paths share one label value: a scanner's paths must not become series.
    labels: {
      method: request.method,
      route: request.routeOptions.url ?? 'unmatched',
      status_code: String(status),
    },
    value: reply.elapsedTime / 1000,
    // The server span's trace, linked from the bucket in Grafana (docs/adr/0040).
    exemplarLabels: r.exemplar,
  });
  request.log[status >= 500 ? 'error' : 'info'](
    {
      method: request.method,
      route: request.routeOptions.url ?? null,
      status,
      durationMs: Math.round(reply.elapsedTime * 10) / 10,
      ...(r.tenantId ? { tenantId: r.tenantId } : {}),
      ...(r.operator ? { actor: 'operator' } : {}),
      ...(r.logTraceId ? { trace_id: r.logTraceId } : {}),
      ...extra,
    },
    'request completed',
  );
}
