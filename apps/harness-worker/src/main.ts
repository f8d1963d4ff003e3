// OpenTelemetry first: it patches pg and ioredis as they load.
import '@switchboard/observability/register';
import { NestFactory } from '@nestjs/core';
import { loadConfig } from '@switchboard/config';
import { runWorkerProcess } from '@switchboard/platform';
import { HarnessModule } from './harness.module';

runWorkerProcess(
  'harness-worker',
  (config) => NestFactory.createApplicationContext(HarnessModule.forRoot(config), { bufferLogs: true }),
  loadConfig,
);
