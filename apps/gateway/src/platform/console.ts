import { stat } from 'node:fs/promises';
import path from 'node:path';
import fastifyStatic from '@fastify/static';
import type { NestFastifyApplication } from '@nestjs/platform-fastify';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { AppError } from '@switchboard/contracts';
import type { Config } from '@switchboard/config';

/** Where the web console is served. */
export const CONSOLE_PATH = '/console';

/** The command that builds it, named by the 503 a gateway without a build answers. */
export const CONSOLE_BUILD_COMMAND = 'npm run console:build';

/** Vite's hashed bundles: a name changes with its content, so a browser may keep one for ever. */
const IMMUTABLE = 'public, max-age=31536000, immutable';
/** index.html names the current bundles: the browser asks again each time (a 304 when unchanged). */
const REVALIDATE = 'no-cache';

async function isFile(file: string): Promise<boolean> {
  try {
    return (await stat(file)).isFile();
  } catch {
    return false;
  }
}

/**
 * The console is not built: 503 in the one error shape for a client, a small page for a browser
 * (no script, no inline style: the CSP holds for it too).
 */
function notBuilt(request: FastifyRequest, reply: FastifyReply, dist: string): FastifyReply {
  const message = `the console is not built: run \`${CONSOLE_BUILD_COMMAND}\` (looked in ${dist})`;
  void reply.code(503).header('cache-control', 'no-store');
  if (/\btext\/html\b/.test(request.headers.accept ?? '')) {
    return reply
      .type('text/html; charset=utf-8')
      .send(
        '<!doctype html><html lang="en"><head><meta charset="utf-8"><title>Switchboard console</title></head>' +
          `<body><h1>The console is not built</h1><p>Run <code>${CONSOLE_BUILD_COMMAND}</code> and reload.</p></body></html>`,
      );
  }
  return reply
    .type('application/json; charset=utf-8')
    .send(new AppError('unavailable', message, { command: CONSOLE_BUILD_COMMAND }).toBody());
}

/**
 * The web console (apps/console, a single-page application built by Vite) at /console, from
 * CONSOLE_DIST_DIR: `/console` and `/console/` are its index.html; `/console/assets/*` are its
 * hashed bundles, cached for a year (`immutable`); any other path under /console is a file of the
 * build when there is one, else index.html again (the SPA's router owns the path: a reload of
 * /console/sessions/x works). index.html is `no-cache`, so a new build is picked up at once.
 *
 * Plain Fastify routes beside Nest's, as the queue board: public (the SPA asks for a credential and
 * sends it on its API calls), never rate-limited, not in the OpenAPI document. Helmet's headers,
 * registered first, cover them: the build has no inline script, so `script-src 'self'` holds
 * unchanged. The directory is looked up per request, so a gateway started before the build serves
 * it once it is there, and one without it answers 503 instead of failing to start.
 */
export async function registerConsole(app: NestFastifyApplication, config: Config): Promise<void> {
  const dist = path.resolve(config.CONSOLE_DIST_DIR);
  const index = path.join(dist, 'index.html');
  await app.register(
    async (scope: FastifyInstance) => {
      // Only `reply.sendFile` (range, etag, last-modified, path-traversal checks); the routes are ours.
      await scope.register(fastifyStatic, { root: dist, serve: false, suppressWarning: true });

      const sendIndex = async (request: FastifyRequest, reply: FastifyReply) => {
        if (!(await isFile(index))) return notBuilt(request, reply, dist);
        return reply
          .header('cache-control', REVALIDATE)
          .sendFile('index.html', dist, { cacheControl: false });
      };

      scope.get('/', sendIndex);

      scope.get('/assets/*', async (request, reply) => {
        if (!(await isFile(index))) return notBuilt(request, reply, dist);
        const file = (request.params as { '*': string })['*'];
        // A missing bundle is a 404 (sendFile's not-found), never index.html with a script's name.
        return reply
          .header('cache-control', IMMUTABLE)
          .sendFile(path.posix.join('assets', file), dist, { cacheControl: false });
      });

      scope.get('/*', async (request, reply) => {
        const rel = (request.params as { '*': string })['*'];
        const file = path.resolve(dist, rel);
        // A file of the build at the top (favicon, robots.txt); a path outside it is the SPA's.
        if (rel && file.startsWith(dist + path.sep) && (await isFile(file)) && (await isFile(index))) {
          return reply
            .header('cache-control', REVALIDATE)
            .sendFile(path.relative(dist, file), dist, { cacheControl: false });
        }
        return sendIndex(request, reply);
      });
    },
    { prefix: CONSOLE_PATH },
  );
}
