import helmet, { type FastifyHelmetOptions } from '@fastify/helmet';
import type { NestFastifyApplication } from '@nestjs/platform-fastify';

/**
 * Helmet's security headers on every response, SSE streams included (`SseStream.open` copies the
 * reply's headers onto the hijacked response). Helmet's default Content-Security-Policy already
 * fits the Swagger UI at /docs: its scripts are files of the same origin, its inline `<style>`
 * blocks are allowed by `style-src 'unsafe-inline'`, its icons are `data:` images. One directive
 * is dropped: `upgrade-insecure-requests` would make a browser fetch /docs' own scripts over https
 * from a gateway reached over plain http (a port-forward, a cluster-internal address), and the UI
 * would stay blank. The queue board at /admin/queues (Bull Board) fits the same policy unchanged: its
 * scripts are files of the same origin (its one inline `<script>` is `type="application/json"`
 * data, which CSP does not block), its inline styles and its Google Fonts stylesheet and fonts fall
 * under `style-src 'self' https: 'unsafe-inline'` and `font-src 'self' https: data:`
 * (test/e2e/queue-board.e2e.spec.ts loads every asset the page names). JSON responses carry the same headers; a browser applies none of them to a
 * `fetch`, so API clients see no difference (docs/adr/0034-build-image-and-kubernetes.md).
 */
export const SECURITY_HEADERS: FastifyHelmetOptions = {
  global: true,
  contentSecurityPolicy: {
    useDefaults: true,
    directives: { 'upgrade-insecure-requests': null },
  },
};

export async function registerSecurityHeaders(app: NestFastifyApplication): Promise<void> {
  await app.register(helmet, SECURITY_HEADERS);
}
