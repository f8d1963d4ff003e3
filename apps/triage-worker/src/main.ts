// OpenTelemetry first: it patches pg and ioredis as they load.
import '@switchboard/observability/register';
import { NestFactory } from '@nestjs/core';
import { loadConfig } from '@switchboard/config';
import { runWorkerProcess } from '@switchboard/platform';
import { TriageModule } from './triage.module';

runWorkerProcess(
  'triage-worker',
  (config) => NestFactory.createApplicationContext(TriageModule.forRoot(config), { bufferLogs: true }),
  loadConfig,
);
