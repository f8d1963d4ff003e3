import { lookup as dnsLookup, type LookupAddress } from 'node:dns';
import http, { type IncomingMessage } from 'node:http';
import https from 'node:https';
import type { LookupFunction } from 'node:net';
import { z } from 'zod';
import { HostAllowList, refusedAddress, refusedName } from './addresses';
import { defineTool, ToolError, type ToolContext, type ToolDefinition } from './tool';

export interface HttpFetchOptions {
  /** Host names, IPs and CIDR ranges exempt from the address checks (HTTP_FETCH_ALLOW_HOSTS). */
  allowHosts?: string[];
  /** Largest body returned, in bytes; the rest is cut with a marker. */
  maxBytes?: number;
  /** Redirects followed at most, each one checked like the first request. */
  maxRedirects?: number;
  timeoutMs?: number;
}

export const HTTP_FETCH_MAX_BYTES = 256 * 1024;
const MAX_REDIRECTS = 5;
const TEXTUAL = /^(text\/|application\/([\w.+-]*\+)?(json|xml|javascript|x-www-form-urlencoded)\b)/i;

/** A host the tool must not reach, before or after DNS resolution, on any hop. */
const blocked = (url: string, why: string) =>
  new ToolError('blocked_address', `refused to fetch ${url}: ${why}`, {
    details: { url },
    recoveryHint: 'only public http(s) addresses can be fetched',
    retryable: false,
  });

/**
 * The DNS step of a connection: resolves, refuses when any resolved address is refused (a name
 * answering both a public and a private address is not trusted), and hands the checked addresses to
 * the socket, so the address checked is the address connected to (no second lookup to rebind).
 */
function checkedLookup(url: string, allow: HostAllowList, exempt: boolean): LookupFunction {
  return (hostname, options, callback) => {
    dnsLookup(hostname, { all: true, family: options.family }, (err, addresses: LookupAddress[]) => {
      if (err) return callback(err, '', 0);
      if (!exempt) {
        for (const a of addresses) {
          const why = allow.allowsAddress(a.address) ? null : refusedAddress(a.address);
          if (why) return callback(blocked(url, `${hostname} resolves to ${a.address} (${why})`), '', 0);
        }
      }
      if (options.all) return (callback as (e: null, a: LookupAddress[]) => void)(null, addresses);
      callback(null, addresses[0].address, addresses[0].family);
    });
  };
}

/** Refusals that need no network: scheme, credentials, metadata names, IP literals. */
function checkUrl(raw: string, allow: HostAllowList): { url: URL; exempt: boolean } {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw new ToolError('invalid_url', `not a URL: ${raw.slice(0, 200)}`, {
      details: { field: 'url' },
      recoveryHint: 'pass an absolute http(s) URL',
    });
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') {
    throw blocked(raw, `the scheme ${url.protocol} is not http or https`);
  }
  if (url.username || url.password) throw blocked(url.origin, 'URLs with credentials are refused');
  // The WHATWG parser has already normalised decimal, octal and hex IPv4 forms and IPv6 literals.
  const host = url.hostname.replace(/^\[|\]$/g, '');
  if (allow.allowsName(host) || allow.allowsAddress(host)) return { url, exempt: true };
  if (refusedName(host)) throw blocked(url.href, `${host} is a cloud metadata service`);
  const why = refusedAddress(host);
  // A literal is connected to without a lookup, so it is checked here; a name is checked at lookup.
  if (why && why !== 'not an IP address') throw blocked(url.href, `${host} is ${why}`);
  return { url, exempt: false };
}

interface Response {
  status: number;
  headers: IncomingMessage['headers'];
  body: Buffer;
  truncated: boolean;
}

/** One request, no redirect following; the body read up to `maxBytes` and then cut. */
function request(
  url: URL,
  method: 'GET' | 'HEAD',
  lookup: LookupFunction,
  ctx: ToolContext,
  maxBytes: number,
): Promise<Response> {
  return new Promise((resolve, reject) => {
    const client = url.protocol === 'https:' ? https : http;
    const req = client.request(
      url,
      {
        method,
        lookup,
        signal: ctx.signal,
        // No agent: a pooled socket would skip the lookup that checks the address.
        agent: false,
        headers: {
          accept: 'text/*, application/json, application/xml;q=0.9, */*;q=0.5',
          // Compressed bodies would let a small response expand past the size bound.
          'accept-encoding': 'identity',
          'user-agent': 'switchboard-http-fetch/1',
          // The turn's idempotency key (SPEC §8): a server that deduplicates can use it.
          'idempotency-key': ctx.idempotencyKey,
        },
      },
      (res) => {
        const chunks: Buffer[] = [];
        let size = 0;
        let truncated = false;
        res.on('data', (chunk: Buffer) => {
          if (truncated) return;
          const room = maxBytes - size;
          if (chunk.length > room) {
            chunks.push(chunk.subarray(0, room));
            size = maxBytes;
            truncated = true;
            // Enough read: stop the transfer instead of downloading the rest.
            res.destroy();
            finish();
            return;
          }
          chunks.push(chunk);
          size += chunk.length;
        });
        res.on('end', finish);
        res.on('error', (err) => (truncated ? undefined : reject(err)));
        let done = false;
        function finish() {
          if (done) return;
          done = true;
          resolve({
            status: res.statusCode ?? 0,
            headers: res.headers,
            body: Buffer.concat(chunks),
            truncated,
          });
        }
      },
    );
    // A refused lookup arrives here as its ToolError.
    req.on('error', reject);
    req.end();
  });
}

function decode(body: Buffer, contentType: string): string {
  const charset = /charset=([^;]+)/i.exec(contentType)?.[1]?.trim().replace(/^"|"$/g, '');
  try {
    return new TextDecoder(charset || 'utf-8').decode(body);
  } catch {
    return new TextDecoder('utf-8').decode(body);
  }
}

/**
 * `http_fetch` (SPEC §8; docs/adr/0021): GET or HEAD of a public http(s) URL. Side effect class
 * `network`: it reaches outside the deployment, so the default approval policy asks a person when
 * the turn was triggered by untrusted content (a fetched URL can carry data out). A repeat is
 * harmless (GET/HEAD), so a call an earlier run started is run again under the same key.
 */
export function createHttpFetch(options: HttpFetchOptions = {}): ToolDefinition {
  const allow = new HostAllowList(options.allowHosts);
  const maxBytes = options.maxBytes ?? HTTP_FETCH_MAX_BYTES;
  const maxRedirects = options.maxRedirects ?? MAX_REDIRECTS;
  return defineTool({
    name: 'http_fetch',
    description:
      'Fetches a public web page or JSON document by URL (GET, or HEAD for headers only) and returns ' +
      'its status, content type and text (cut at 256 KiB). Private, loopback and cloud metadata ' +
      'addresses are refused.',
    schema: z.strictObject({
      url: z.string().min(1).max(2048).describe('An absolute http or https URL'),
      method: z.enum(['GET', 'HEAD']).optional().describe('GET (default) or HEAD'),
    }),
    sideEffect: 'network',
    timeoutMs: options.timeoutMs ?? 15_000,
    needsApproval: false,
    honoursIdempotencyKey: true,
    async execute({ url: raw, method = 'GET' }, ctx) {
      let current = raw;
      let hop = 0;
      for (;;) {
        const { url, exempt } = checkUrl(current, allow);
        let res: Response;
        try {
          res = await request(url, method, checkedLookup(url.href, allow, exempt), ctx, maxBytes);
        } catch (err) {
          if (err instanceof ToolError || ctx.signal.aborted) throw err;
          const e = err as NodeJS.ErrnoException;
          throw new ToolError(
            'connection_failed',
            `${method} ${url.href} failed: ${e.code ?? ''} ${e.message}`.trim(),
            {
              details: { url: url.href, code: e.code },
              recoveryHint: 'check the URL, or retry later',
              retryable: true,
            },
          );
        }
        const location = res.headers.location;
        if ([301, 302, 303, 307, 308].includes(res.status) && location) {
          if (++hop > maxRedirects) {
            throw new ToolError('too_many_redirects', `more than ${maxRedirects} redirects from ${raw}`, {
              details: { url: url.href },
            });
          }
          // Every hop is checked again, scheme, name and resolved address alike.
          current = new URL(location, url).href;
          continue;
        }
        const contentType = String(res.headers['content-type'] ?? '');
        const textual = contentType === '' || TEXTUAL.test(contentType);
        const text = textual ? decode(res.body, contentType) : undefined;
        if (res.status >= 400) {
          throw new ToolError('http_error', `${method} ${url.href} answered ${res.status}`, {
            details: { url: url.href, status: res.status, contentType, body: text?.slice(0, 2000) },
            recoveryHint: res.status === 429 || res.status >= 500 ? 'retry later' : 'check the URL',
            retryable: res.status === 429 || res.status >= 500,
          });
        }
        return {
          url: url.href,
          status: res.status,
          contentType,
          ...(method === 'HEAD'
            ? {}
            : textual
              ? { text: res.truncated ? `${text}\n[truncated at ${maxBytes} bytes]` : text }
              : { note: 'the content is not text; it was not returned' }),
          bytes: res.body.length,
          truncated: res.truncated,
        };
      }
    },
  });
}
