import type { FastifyInstance } from 'fastify';
import { AppError, MAX_JSON_DEPTH } from '@switchboard/contracts';

/** A request whose JSON body also keeps its bytes: webhook signatures are over the raw body (docs/adr/0019). */
export interface RawBodyRequest {
  rawBody?: Buffer;
}

/** The one route that reads `rawBody`. */
export const HOOK_ROUTE = '/v1/hooks/:token';

/**
 * The one route that takes `application/x-ndjson` (docs/adr/0063): a dataset file, one item a line,
 * read as the batch `{items: [...]}` its DTO validates (all or nothing). Elsewhere NDJSON is a 415.
 */
export const NDJSON_ROUTE = '/v1/datasets/:id/items';

/**
 * The gateway's only body parser: `application/json` in UTF-8. Every other content type (form
 * bodies, text/plain, none at all) finds no parser and Fastify answers 415. The raw bytes are
 * checked before anything parses them:
 * - a charset other than UTF-8 is a 415; bytes that are not valid UTF-8 are a 400 `invalid_json`
 *   (RFC 8259 §8.1: JSON exchanged between systems is UTF-8), never replacement characters;
 * - nesting deeper than MAX_JSON_DEPTH is a 400 `validation_failed`, before recursive code
 *   (validation, JSON.stringify, the database driver) can overflow the stack on it.
 * Parsing itself is Fastify's default (secure-json-parse: `__proto__` and `constructor.prototype`
 * keys are refused).
 */
export function registerJsonBodyParser(fastify: FastifyInstance, bodyLimit: number): void {
  const parseJson = fastify.getDefaultJsonParser('error', 'error');
  const decoder = new TextDecoder('utf-8', { fatal: true, ignoreBOM: false });
  fastify.removeAllContentTypeParsers();
  fastify.addContentTypeParser('application/json', { parseAs: 'buffer', bodyLimit }, (req, body, done) => {
    const charset = /;\s*charset\s*=\s*"?([^";\s]+)/i.exec(req.headers['content-type'] ?? '')?.[1];
    if (charset && !/^utf-?8$/i.test(charset)) {
      done(new AppError('unsupported_media_type', `unsupported charset "${charset}": send UTF-8`), undefined);
      return;
    }
    let text: string;
    try {
      text = decoder.decode(body as Buffer);
    } catch {
      done(new AppError('invalid_json', 'request body is not valid UTF-8'), undefined);
      return;
    }
    if (exceedsDepth(text, MAX_JSON_DEPTH)) {
      done(
        new AppError('validation_failed', `request body is nested deeper than ${MAX_JSON_DEPTH} levels`, {
          issues: [{ path: '', message: `nested deeper than ${MAX_JSON_DEPTH} levels`, code: 'too_deep' }],
        }),
        undefined,
      );
      return;
    }
    // Kept only for the webhook ingress, whose signatures are over these exact bytes.
    if (req.routeOptions.url === HOOK_ROUTE) (req as RawBodyRequest).rawBody = body as Buffer;
    void parseJson(req, text, done);
  });
  fastify.addContentTypeParser(
    'application/x-ndjson',
    { parseAs: 'buffer', bodyLimit },
    (req, body, done) => {
      if (req.routeOptions.url !== NDJSON_ROUTE || req.method !== 'POST') {
        done(
          new AppError(
            'unsupported_media_type',
            'application/x-ndjson is taken by POST /v1/datasets/{id}/items only',
          ),
          undefined,
        );
        return;
      }
      let text: string;
      try {
        text = decoder.decode(body as Buffer);
      } catch {
        done(new AppError('invalid_json', 'request body is not valid UTF-8'), undefined);
        return;
      }
      const items: unknown[] = [];
      const lines = text.split(/\r?\n/);
      for (let i = 0; i < lines.length; i++) {
        const line = lines[i].trim();
        if (line === '') continue;
        const where = `line ${i + 1}`;
        if (exceedsDepth(line, MAX_JSON_DEPTH)) {
          done(
            new AppError('validation_failed', `${where} is nested deeper than ${MAX_JSON_DEPTH} levels`),
            undefined,
          );
          return;
        }
        let parsed: unknown;
        let failure: Error | undefined;
        // The same parser as JSON bodies (prototype poisoning refused); it answers synchronously.
        void parseJson(req, line, (err: Error | null, value?: unknown) => {
          failure = err ?? undefined;
          parsed = value;
        });
        if (failure || parsed === undefined) {
          done(new AppError('invalid_json', `${where} is not a JSON value`, { line: i + 1 }), undefined);
          return;
        }
        items.push(parsed);
      }
      done(null, { items });
    },
  );
}

/** True when the JSON text opens more than `max` objects/arrays at once. Linear, no recursion. */
export function exceedsDepth(text: string, max: number): boolean {
  let depth = 0;
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (inString) {
      if (c === 0x5c /* \ */) i++;
      else if (c === 0x22 /* " */) inString = false;
    } else if (c === 0x22) inString = true;
    else if (c === 0x7b /* { */ || c === 0x5b /* [ */) {
      if (++depth > max) return true;
    } else if (c === 0x7d /* } */ || c === 0x5d /* ] */) depth--;
  }
  return false;
}
