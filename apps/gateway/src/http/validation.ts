import { createZodValidationPipe } from 'nestjs-zod';
import type { ZodError } from 'zod';
import { AppError } from '@switchboard/contracts';

/** Strict request validation: the error lists every issue with its path. */
export const ValidationPipe = createZodValidationPipe({
  createValidationException: (error: unknown) => {
    const issues = (error as ZodError).issues.map((i) => ({
      path: i.path.join('.'),
      message: i.message,
      code: i.code,
    }));
    return new AppError(
      'validation_failed',
      issues.map((i) => `${i.path || '(body)'}: ${i.message}`).join('; '),
      {
        issues,
      },
    );
  },
});
