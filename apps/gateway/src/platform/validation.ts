import { Injectable, type ArgumentMetadata, type PipeTransform } from '@nestjs/common';
import { createZodValidationPipe } from 'nestjs-zod';
import type { ZodError, ZodType } from 'zod';
import { AppError, findInvalidText } from '@switchboard/contracts';

interface Issue {
  path: string;
  message: string;
  code: string;
}

const failed = (issues: Issue[]) =>
  new AppError('validation_failed', issues.map((i) => `${i.path || '(body)'}: ${i.message}`).join('; '), {
    issues,
  });

/** Validates an optional body by hand (the pipe needs one): no body is `{}`; errors as the pipe's. */
export function validateOptionalBody<T>(schema: ZodType<T>, value: unknown): T {
  // Only an absent body is `{}`: a JSON `null` is a body, and not an object.
  const r = schema.safeParse(value === undefined ? {} : value);
  if (r.success) return r.data;
  throw failed(r.error.issues.map((i) => ({ path: i.path.join('.'), message: i.message, code: i.code })));
}

/** Validates one path parameter by hand (`name` is its path in the error), errors as the pipe's. */
export function validateParam<T>(schema: ZodType<T>, value: unknown, name: string): T {
  const r = schema.safeParse(value);
  if (r.success) return r.data;
  throw failed(r.error.issues.map((i) => ({ path: name, message: i.message, code: i.code })));
}

/** Strict request validation: the error lists every issue with its path. */
const ZodPipe = createZodValidationPipe({
  createValidationException: (error: unknown) =>
    failed(
      (error as ZodError).issues.map((i) => ({ path: i.path.join('.'), message: i.message, code: i.code })),
    ),
});

/**
 * The global pipe. Before any schema runs, every string and object key of the body, the query and
 * the path parameters is checked for text Postgres cannot store (NUL, lone surrogates): one check
 * for every route and field, so no handler can pass such a string to the database.
 */
@Injectable()
export class ValidationPipe implements PipeTransform {
  private readonly zod = new ZodPipe();

  transform(value: unknown, metadata: ArgumentMetadata): unknown {
    if (metadata.type === 'body' || metadata.type === 'query' || metadata.type === 'param') {
      const issues = findInvalidText(value);
      if (issues.length > 0) {
        const prefix = metadata.type === 'param' && metadata.data ? metadata.data : '';
        throw failed(issues.map((i) => ({ ...i, path: [prefix, i.path].filter(Boolean).join('.') })));
      }
    }
    return this.zod.transform(value, metadata);
  }
}
