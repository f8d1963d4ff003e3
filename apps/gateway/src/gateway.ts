import { NestFactory } from '@nestjs/core';
import { FastifyAdapter, type NestFastifyApplication } from '@nestjs/platform-fastify';
import { DocumentBuilder, SwaggerModule } from '@nestjs/swagger';
import { cleanupOpenApiDoc } from 'nestjs-zod';
import type { Config } from '@switchboard/config';
import type { Logger } from '@switchboard/observability';
import { LOGGER, NestPinoLogger } from '@switchboard/platform';
import { GatewayModule } from './gateway.module';

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

  const document = SwaggerModule.createDocument(
    app,
    new DocumentBuilder()
      .setTitle('Switchboard API')
      .setDescription('Multi-tenant backend for tool-using LLM agent turns')
      .setVersion('v1')
      .addBearerAuth()
      .build(),
  );
  SwaggerModule.setup('docs', app, cleanupOpenApiDoc(document), { jsonDocumentUrl: 'docs/openapi.json' });
  return app;
}
