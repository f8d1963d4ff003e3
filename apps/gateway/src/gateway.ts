import { NestFactory } from '@nestjs/core';
import { FastifyAdapter, type NestFastifyApplication } from '@nestjs/platform-fastify';
import { SwaggerModule } from '@nestjs/swagger';
import type { Config } from '@switchboard/config';
import type { Logger, Metrics } from '@switchboard/observability';
import { LOGGER, METRICS, NestPinoLogger } from '@switchboard/platform';
import { GatewayModule } from './gateway.module';
import { registerJsonBodyParser } from './platform/body';
import { clientErrorHandler, frameworkErrors } from './platform/errors';
import { createOpenApiDocument } from './platform/openapi';
import { InFlightRequests } from './platform/in-flight';
import { EarlyRateLimitRefusal } from './platform/early-refusal';
import { registerQueueBoard } from './platform/queue-board';
import { registerConsole } from './platform/console';
import { registerRequestLog, requestLogOptions } from './platform/request-log';
import { registerSecurityHeaders } from './platform/security-headers';
import { ResponsesSocket } from './protocols/responses/responses-socket';

/** Builds the gateway application (not yet listening). Tests and main.ts share it. */
export async function createGateway(config: Config): Promise<NestFastifyApplication> {
  const adapter = new FastifyAdapter({
    bodyLimit: config.BODY_LIMIT_BYTES,
    trustProxy: true,
    // Errors Fastify and Node answer before Nest sees the request, in the one error shape too.
    frameworkErrors: frameworkErrors((): Logger => logger),
    clientErrorHandler,
    // One log line per request, with a request id echoed in x-request-id.
    ...requestLogOptions(config),
  });
  const app = await NestFactory.create<NestFastifyApplication>(GatewayModule.forRoot(config), adapter, {
    bufferLogs: true,
    // Nest would add a form (urlencoded) parser; the gateway registers its own JSON-only parser.
    bodyParser: false,
  });
  const logger: Logger = app.get<Logger>(LOGGER);
  app.useLogger(new NestPinoLogger(logger));
  app.enableShutdownHooks();
  // Before any route is added (Swagger's below, the controllers' at init): its hook covers them all.
  await registerSecurityHeaders(app);

  // JSON only (UTF-8, bounded depth): anything else is a 415 rather than a string the validator has to reject.
  registerJsonBodyParser(app.getHttpAdapter().getInstance(), config.BODY_LIMIT_BYTES);
  registerRequestLog(app.getHttpAdapter().getInstance(), app.get<Metrics>(METRICS));
  app.get(InFlightRequests).attach(app.getHttpAdapter().getInstance());
  // After the log and in-flight hooks (they see its 429s), before the body parser and Nest: a tenant
  // known over its quota is refused from memory (docs/adr/0078).
  app.get(EarlyRateLimitRefusal).attach(app.getHttpAdapter().getInstance());
  // WebSocket mode of the Responses API: upgrades of /v1/responses (docs/adr/0035).
  app.get(ResponsesSocket).attach(app.getHttpServer());

  await registerQueueBoard(app, config);
  // The web console's static files at /console (apps/console, built by `npm run console:build`).
  await registerConsole(app, config);
  SwaggerModule.setup('docs', app, createOpenApiDocument(app), { jsonDocumentUrl: 'docs/openapi.json' });
  return app;
}
