import { ArgumentsHost, Catch, HttpException, Inject, type ExceptionFilter } from '@nestjs/common';
import type { FastifyReply } from 'fastify';
import { AppError, type ErrorBody, type ErrorCode } from '@switchboard/contracts';
import type { Logger } from '@switchboard/observability';
import { LOGGER } from '@switchboard/platform';

const FASTIFY_CODES: Record<string, ErrorCode> = {
  FST_ERR_CTP_INVALID_JSON: 'invalid_json',
  FST_ERR_CTP_EMPTY_JSON_BODY: 'invalid_json',
  FST_ERR_CTP_BODY_TOO_LARGE: 'payload_too_large',
  FST_ERR_CTP_INVALID_MEDIA_TYPE: 'unsupported_media_type',
  FST_ERR_CTP_INVALID_CONTENT_LENGTH: 'bad_request',
};

const BY_STATUS: Record<number, ErrorCode> = {
  400: 'bad_request',
  401: 'unauthorized',
  403: 'unauthorized',
  404: 'not_found',
  409: 'conflict',
  413: 'payload_too_large',
  415: 'unsupported_media_type',
  429: 'rate_limited',
};

/** Any thrown value → the one error shape. Unknown failures are 500s and are logged. */
export function toErrorResponse(err: unknown, logger: Logger): { status: number; body: ErrorBody } {
  if (err instanceof AppError) return { status: err.status, body: err.toBody() };
  const e = err as { code?: string; statusCode?: number; message?: string };
  if (typeof e?.code === 'string' && FASTIFY_CODES[e.code]) {
    const app = new AppError(FASTIFY_CODES[e.code], friendly(e.code, e.message ?? ''));
    return { status: app.status, body: app.toBody() };
  }
  if (err instanceof SyntaxError) {
    const app = new AppError('invalid_json', `request body is not valid JSON: ${err.message}`);
    return { status: app.status, body: app.toBody() };
  }
  if (err instanceof HttpException) {
    const status = err.getStatus();
    if (status < 500) {
      const code =
        status === 400 && /json/i.test(err.message) ? 'invalid_json' : (BY_STATUS[status] ?? 'bad_request');
      return { status, body: { error: { code, message: err.message } } };
    }
  } else if (typeof e?.statusCode === 'number' && e.statusCode >= 400 && e.statusCode < 500) {
    const code = BY_STATUS[e.statusCode] ?? 'bad_request';
    return { status: e.statusCode, body: { error: { code, message: e.message ?? code } } };
  }
  logger.error({ err }, 'unhandled error');
  return { status: 500, body: { error: { code: 'internal', message: 'internal error' } } };
}

function friendly(code: string, message: string): string {
  switch (code) {
    case 'FST_ERR_CTP_BODY_TOO_LARGE':
      return 'request body is larger than the limit';
    case 'FST_ERR_CTP_INVALID_MEDIA_TYPE':
      return 'unsupported content type: send application/json';
    case 'FST_ERR_CTP_EMPTY_JSON_BODY':
      return 'request body is empty but content-type is application/json';
    default:
      return `request body is not valid JSON: ${message}`;
  }
}

@Catch()
export class ErrorFilter implements ExceptionFilter {
  constructor(@Inject(LOGGER) private readonly logger: Logger) {}

  catch(err: unknown, host: ArgumentsHost): void {
    const reply = host.switchToHttp().getResponse<FastifyReply>();
    const { status, body } = toErrorResponse(err, this.logger);
    void reply.status(status).header('content-type', 'application/json; charset=utf-8').send(body);
  }
}
