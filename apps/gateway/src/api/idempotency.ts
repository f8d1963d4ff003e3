import { createParamDecorator, type ExecutionContext } from '@nestjs/common';
import type { FastifyRequest } from 'fastify';
import { AppError, IdempotencyKey } from '@switchboard/contracts';

/**
 * The request's `Idempotency-Key` header, validated; undefined when absent. The draft
 * (draft-ietf-httpapi-idempotency-key-header) sends it as a structured-field string, `"abc"`: the
 * quotes are taken off, so `"abc"` and `abc` are the same key. A param decorator rather than
 * `@Headers()`, which would add a second (required) header to the OpenAPI document next to the
 * route's `@ApiHeader`.
 */
export const IdempotencyKeyHeader = createParamDecorator(
  (_: unknown, ctx: ExecutionContext): string | undefined => {
    const raw = ctx.switchToHttp().getRequest<FastifyRequest>().headers['idempotency-key'];
    if (raw === undefined) return undefined;
    const value = typeof raw === 'string' ? raw.replace(/^"(.*)"$/, '$1') : undefined;
    const parsed = IdempotencyKey.safeParse(value);
    if (!parsed.success) {
      throw new AppError('bad_request', 'Idempotency-Key must be 1 to 200 printable ASCII characters');
    }
    return parsed.data;
  },
);
