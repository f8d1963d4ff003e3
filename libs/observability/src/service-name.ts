/**
 * The service's name on its spans when OTEL_SERVICE_NAME is not set: `switchboard-<app>` from the
 * entry script's path (apps/<app>/src/main.ts, or a compiled apps/<app>/main.js), so traces outside
 * compose are not `unknown_service:node`; `switchboard` for anything else (a script).
 */
export function defaultServiceName(entry = process.argv[1] ?? ''): string {
  const app = /(?:^|[\\/])apps[\\/]([a-z-]+)[\\/]/.exec(entry)?.[1];
  return app ? `switchboard-${app}` : 'switchboard';
}
