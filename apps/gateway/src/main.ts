// OpenTelemetry first: it patches http, pg and ioredis as they load.
import '@switchboard/observability/register';
import { loadConfig } from '@switchboard/config';
import { createGateway } from './gateway';

async function main() {
  const config = loadConfig();
  const app = await createGateway(config);
  await app.listen({ port: config.PORT, host: config.HOST });
}

main().catch((err: unknown) => {
  console.error(err instanceof Error ? err.message : err);
  process.exit(1);
});
