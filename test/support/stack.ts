import path from 'node:path';
import type { INestApplicationContext } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import type { NestFastifyApplication } from '@nestjs/platform-fastify';
import type { Config } from '@switchboard/config';
import { createGateway } from '../../apps/gateway/src/gateway';
import { HarnessModule } from '../../apps/harness-worker/src/harness.module';
import { HooksModule } from '../../apps/hooks-worker/src/hooks.module';
import { TriageModule } from '../../apps/triage-worker/src/triage.module';

/** Scripted-provider fixtures the tests use (slow rounds, tool rounds). */
export const FIXTURES = path.resolve(__dirname, '../fixtures/scripted');

export interface Running {
  close(): Promise<void>;
}

export async function startGateway(
  config: Config,
): Promise<Running & { url: string; app: NestFastifyApplication }> {
  const app = await createGateway(config);
  app.useLogger(false);
  await app.listen({ port: 0, host: '127.0.0.1' });
  const address = app.getHttpServer().address();
  const port = typeof address === 'object' && address ? address.port : 0;
  return { app, url: `http://127.0.0.1:${port}`, close: () => app.close() };
}

async function context(
  module: Parameters<typeof NestFactory.createApplicationContext>[0],
): Promise<Running & { app: INestApplicationContext }> {
  const app = await NestFactory.createApplicationContext(module, { logger: false });
  await app.init();
  return { app, close: () => app.close() };
}

export const startHarness = (config: Config) => context(HarnessModule.forRoot(config));
export const startHooks = (config: Config) => context(HooksModule.forRoot(config));
export const startTriage = (config: Config) => context(TriageModule.forRoot(config));

/** The whole system in this process: gateway plus one of each worker. */
export async function startStack(config: Config) {
  const gateway = await startGateway(config);
  const harness = await startHarness(config);
  const hooks = await startHooks(config);
  const triage = await startTriage(config);
  return {
    gateway,
    harness,
    hooks,
    triage,
    url: gateway.url,
    async close() {
      // Workers first so nothing is mid-flight when the connections go.
      await Promise.all([harness.close(), hooks.close(), triage.close()]);
      await gateway.close();
    },
  };
}
