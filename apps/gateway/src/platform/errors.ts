import http from 'node:http';
import type { Socket } from 'node:net';
import { ArgumentsHost, Catch, HttpException, Inject, type ExceptionFilter } from '@nestjs/common';
import { RouteConfig } from '@nestjs/platform-fastify';
import type { FastifyError, FastifyReply, FastifyRequest } from 'fastify';
import { AppError, type ErrorAnswer, type ErrorCode } from '@switchboard/contracts';
import { isTransientDbError } from '@switchboard/database';
import type { Logger } from '@switchboard/observability';
import { LOGGER } from '@switchboard/platform';

const FASTIFY_CODES: Record<string, ErrorCode> = {
  FST_ERR_CTP_INVALID_JSON: 'invalid_json',
  FST_ERR_CTP_INVALID_JSON_BODY: 'invalid_json',
  FST_ERR_CTP_EMPTY_JSON_BODY: 'invalid_json',
  FST_ERR_CTP_BODY_TOO_LARGE: 'payload_too_large',
  FST_ERR_CTP_INVALID_MEDIA_TYPE: 'unsupported_media_type',
  FST_ERR_CTP_INVALID_CONTENT_LENGTH: 'bad_request',
  FST_ERR_BAD_URL: 'bad_request',
  FST_ERR_MAX_PARAM_LENGTH: 'uri_too_long',
};

/** Seconds a client is told to wait (Retry-After) before trying again. */
const RETRY_AFTER_S: Partial<Record<ErrorCode, number>> = { unavailable: 5, idempotency_key_in_flight: 1 };

const BY_STATUS: Record<number, ErrorCode> = {
  400: 'bad_request',
  401: 'unauthorized',
  403: 'unauthorized',
  404: 'not_found',
  409: 'conflict',
  408: 'request_timeout',
  413: 'payload_too_large',
  414: 'uri_too_long',
  415: 'unsupported_media_type',
  429: 'rate_limited',
  431: 'headers_too_large',
};

const respond = (app: AppError): ErrorAnswer => ({
  status: app.status,
  body: app.toBody(),
  headers: RETRY_AFTER_S[app.code] === undefined ? {} : { 'retry-after': String(RETRY_AFTER_S[app.code]) },
});

/**
 * Any thrown value → the one error shape. A database that cannot be reached is a 503 `unavailable`
 * with Retry-After; other unknown failures are 500s and are logged.
 */
export function toErrorAnswer(err: unknown, logger: Logger): ErrorAnswer {
  if (err instanceof AppError) return respond(err);
  const e = err as { code?: string; statusCode?: number; message?: string };
  if (typeof e?.code === 'string' && FASTIFY_CODES[e.code]) {
    return respond(new AppError(FASTIFY_CODES[e.code], friendly(e.code, e.message ?? '')));
  }
  if (err instanceof SyntaxError) {
    return respond(new AppError('invalid_json', `request body is not valid JSON: ${err.message}`));
  }
  if (err instanceof HttpException) {
    const status = err.getStatus();
    if (status < 500) {
      const code =
        status === 400 && /json/i.test(err.message) ? 'invalid_json' : (BY_STATUS[status] ?? 'bad_request');
      // Nest turns Fastify's errors into HttpExceptions carrying only Fastify's text.
      const message = status === 415 ? friendly('FST_ERR_CTP_INVALID_MEDIA_TYPE', '') : err.message;
      return { status, body: { error: { code, message } }, headers: {} };
    }
  } else if (typeof e?.statusCode === 'number' && e.statusCode >= 400 && e.statusCode < 500) {
    const code = BY_STATUS[e.statusCode] ?? 'bad_request';
    return { status: e.statusCode, body: { error: { code, message: e.message ?? code } }, headers: {} };
  }
  if (isTransientDbError(err)) {
    logger.warn({ err }, 'database unavailable');
    return respond(new AppError('unavailable', 'the service is temporarily unavailable: retry later'));
  }
  logger.error({ err }, 'unhandled error');
  return respond(new AppError('internal', 'internal error'));
}

function friendly(code: string, message: string): string {
  switch (code) {
    case 'FST_ERR_CTP_BODY_TOO_LARGE':
      return 'request body is larger than the limit';
    case 'FST_ERR_CTP_INVALID_MEDIA_TYPE':
      return 'unsupported content type: send application/json';
    case 'FST_ERR_CTP_EMPTY_JSON_BODY':
      return 'request body is empty but content-type is application/json';
    case 'FST_ERR_CTP_INVALID_CONTENT_LENGTH':
      return 'content-length does not match the request body';
    case 'FST_ERR_BAD_URL':
      return 'malformed URL: a percent-encoded sequence is not valid';
    case 'FST_ERR_MAX_PARAM_LENGTH':
      return 'a path segment of the URL is too long';
    default:
      return `request body is not valid JSON: ${message}`;
  }
}

/**
 * The name of an error shape a route may answer in: 'switchboard' (the gateway's own, `ErrorBody`),
 * or one a protocol added to `ErrorShapes` — OpenAI's (chat completions, Responses, models), a
 * JSON-RPC 2.0 error response (the MCP server and A2A endpoints, docs/adr/0036, 0037), LangGraph's
 * `{detail}` (docs/adr/0038).
 */
export type ErrorShape = string;

/** The gateway's own shape: the one every route answers in unless it names another. */
export const NATIVE_ERROR_SHAPE = 'switchboard';

/** An error as a shape answers it: the same status and headers, its own body. */
export type ShapedErrorAnswer = Omit<ErrorAnswer, 'body'> & { body: unknown };

/**
 * A protocol's error shape: any thrown value → its answer. `native` is the gateway's one error
 * mapping (status, code, message, Retry-After); a shape reshapes what it answers, and answers the
 * protocol's own errors as they are.
 */
export type ErrorShapeMapper = (err: unknown, native: (err: unknown) => ErrorAnswer) => ShapedErrorAnswer;

/**
 * The error shapes the filter knows (docs/adr/0005): each protocol adds its own, by name, when the
 * gateway's module is wired (apps/gateway/src/protocols/error-shapes.ts); the platform imports none.
 * A route names its shape with `@ErrorShapeOf(name)`; a name nobody added answers in the gateway's own.
 */
export class ErrorShapes {
  private readonly shapes = new Map<ErrorShape, ErrorShapeMapper>();

  add(name: ErrorShape, mapper: ErrorShapeMapper): this {
    if (name === NATIVE_ERROR_SHAPE || this.shapes.has(name)) {
      throw new Error(`error shape ${name} is taken`);
    }
    this.shapes.set(name, mapper);
    return this;
  }

  has(name: ErrorShape): boolean {
    return this.shapes.has(name);
  }

  /** `err` in the shape `name`: its mapper over the gateway's own mapping, or the gateway's own. */
  answer(name: ErrorShape, err: unknown, native: (err: unknown) => ErrorAnswer): ShapedErrorAnswer {
    const mapper = this.shapes.get(name);
    return mapper ? mapper(err, native) : native(err);
  }
}

/** Fastify route config (`@RouteConfig`) naming the route's error shape; without it, the gateway's own. */
export interface ErrorShapeConfig {
  errorShape?: ErrorShape;
  /** The API key may come in the `x-api-key` header (the LangGraph SDK's), as well as the bearer. */
  apiKeyHeader?: boolean;
}

/**
 * Marks a route as answering its errors in `shape`. The route's Fastify config carries it, so every
 * error of a request the route matched takes it: the guard's and the pipes' as the handler's, and
 * the body parser's, which fails before Nest's per-controller filters could see it.
 */
export const ErrorShapeOf = (shape: ErrorShape) =>
  RouteConfig({ errorShape: shape } satisfies ErrorShapeConfig);

/** The error shape of the route the request matched (none matched: the gateway's own). */
export function errorShapeOf(req: FastifyRequest | undefined): ErrorShape {
  const config = req?.routeOptions?.config as ErrorShapeConfig | undefined;
  return config?.errorShape ?? NATIVE_ERROR_SHAPE;
}

@Catch()
export class ErrorFilter implements ExceptionFilter {
  constructor(
    @Inject(LOGGER) private readonly logger: Logger,
    @Inject(ErrorShapes) private readonly shapes: ErrorShapes,
  ) {}

  catch(err: unknown, host: ArgumentsHost): void {
    const reply = host.switchToHttp().getResponse<FastifyReply>();
    const req = host.switchToHttp().getRequest<FastifyRequest | undefined>();
    const native = (e: unknown) => toErrorAnswer(e, this.logger);
    send(reply, this.shapes.answer(errorShapeOf(req), err, native));
  }
}

/** Writes an error answer: its status, headers and body as JSON. */
export function send(reply: FastifyReply, { status, body, headers }: ShapedErrorAnswer): void {
  void reply
    .status(status)
    .headers({ ...headers, 'content-type': 'application/json; charset=utf-8' })
    .send(body);
}

/**
 * Fastify's `frameworkErrors`: a URL it cannot decode (400) or route (a path segment over
 * maxParamLength, 414) never reaches Nest, so it is answered here in the same shape.
 */
export const frameworkErrors =
  (logger: () => Logger) =>
  (err: FastifyError, _req: FastifyRequest, reply: FastifyReply): void =>
    send(reply, toErrorAnswer(err, logger()));

/**
 * Fastify's `clientErrorHandler`: Node's HTTP parser refused the request (headers or request line
 * over its 16 KiB limit → 431, a request that took too long → 408, anything else → 400). There is
 * no request object yet, so the response is written to the socket, in the same shape.
 */
export function clientErrorHandler(err: NodeJS.ErrnoException, socket: Socket): void {
  if (err.code === 'ECONNRESET' || socket.destroyed) return;
  const app =
    err.code === 'HPE_HEADER_OVERFLOW'
      ? new AppError('headers_too_large', 'the request line and headers are larger than the server accepts')
      : err.code === 'ERR_HTTP_REQUEST_TIMEOUT'
        ? new AppError('request_timeout', 'the request was not received in time')
        : new AppError('bad_request', 'malformed HTTP request');
  const body = JSON.stringify(app.toBody());
  if (socket.writable) {
    socket.write(
      `HTTP/1.1 ${app.status} ${http.STATUS_CODES[app.status]}\r\n` +
        `Content-Type: application/json; charset=utf-8\r\nContent-Length: ${Buffer.byteLength(body)}\r\n` +
        `Connection: close\r\n\r\n${body}`,
    );
  }
  socket.destroy(err);
}
