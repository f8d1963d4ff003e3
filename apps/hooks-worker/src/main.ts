// OpenTelemetry first: it patches pg and ioredis as they load.
import '@switchboard/observability/register';
import { NestFactory } from '@nestjs/core';
import { loadConfig } from '@switchboard/config';
import { runWorkerProcess } from '@switchboard/platform';
import { HooksModule } from './hooks.module';

runWorkerProcess(
  'hooks-worker',
  (config) => NestFactory.createApplicationContext(HooksModule.forRoot(config), { bufferLogs: true }),
  loadConfig,
);
