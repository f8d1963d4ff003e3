import { FASTIFY_ROUTE_CONFIG_METADATA } from '@nestjs/platform-fastify/constants';
import type { FastifyRequest } from 'fastify';
import { ChatCompletionsController } from './chat-completions.controller';
import { errorShapeOf } from '../../platform/errors';

describe('OpenAI error shape', () => {
  it('is the shape its route declares, whatever the URL', () => {
    const matched = (config: Record<string, unknown>) =>
      ({ routeOptions: { config } }) as unknown as FastifyRequest;
    expect(
      Reflect.getMetadata(
        FASTIFY_ROUTE_CONFIG_METADATA,
        Object.getOwnPropertyDescriptor(ChatCompletionsController.prototype, 'create')!.value as object,
      ),
    ).toEqual({ errorShape: 'openai' });
    expect(errorShapeOf(matched({ errorShape: 'openai' }))).toBe('openai');
    expect(errorShapeOf(matched({}))).toBe('switchboard');
    expect(errorShapeOf(undefined)).toBe('switchboard');
  });
});
