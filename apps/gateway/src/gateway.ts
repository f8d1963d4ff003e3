import { NestFactory } from '@nestjs/core';
import { FastifyAdapter, type NestFastifyApplication } from '@nestjs/platform-fastify';
import { SwaggerModule } from '@nestjs/swagger';
import type { Config } from '@switchboard/config';
import type { Logger } from '@switchboard/observability';
import { LOGGER, NestPinoLogger } from '@switchboard/platform';
import { GatewayModule } from './gateway.module';
import { createOpenApiDocument } from './http/openapi';

/** Builds the gateway application (not yet listening). Tests and main.ts share it. */
export async function createGateway(config: Config): Promise<NestFastifyApplication> {
  const adapter = new FastifyAdapter({ bodyLimit: config.BODY_LIMIT_BYTES, trustProxy: true });
  const app = await NestFactory.create<NestFastifyApplication>(GatewayModule.forRoot(config), adapter, {
    bufferLogs: true,
  });
  const logger = app.get<Logger>(LOGGER);
  app.useLogger(new NestPinoLogger(logger));
  app.enableShutdownHooks();

  // JSON only: anything else is a 415 rather than a string the validator has to reject.
  app.getHttpAdapter().getInstance().removeContentTypeParser(['text/plain']);

  SwaggerModule.setup('docs', app, createOpenApiDocument(app), { jsonDocumentUrl: 'docs/openapi.json' });
  return app;
}
