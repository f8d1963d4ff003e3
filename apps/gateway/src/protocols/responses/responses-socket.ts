import { grants, insufficientScope } from '../../platform/auth/scopes';
import type { IncomingMessage, Server } from 'node:http';
import type { Duplex } from 'node:stream';
import { Inject, Injectable, type OnApplicationShutdown } from '@nestjs/common';
import { WebSocketServer, type RawData, type WebSocket } from 'ws';
import type { Config } from '@switchboard/config';
import { ResponseCreateEvent } from '@switchboard/contracts';
import type { Logger } from '@switchboard/observability';
import { CONFIG, LOGGER } from '@switchboard/platform';
import {
  OpenAiError,
  previousNotFound,
  toOpenAiErrorAnswer,
  type OpenAiErrorAnswer,
} from '@switchboard/protocols';
import { AuthGuard } from '../../platform/auth/guard';
import { bearer } from '../../platform/auth/keys';
import { toErrorAnswer } from '../../platform/errors';
import { ApiRateLimits } from '../../platform/rate-limit';
import { validateOptionalBody } from '../../platform/validation';
import { ResponsesStreamer } from './responses-stream';
import { ResponsesService, type CachedResponse } from './responses.service';

/** The path WebSocket mode answers on: the same resource as `POST /v1/responses`. */
const PATH = '/v1/responses';
/** Responses a socket remembers for `previous_response_id` (the newest; the spec asks for the last). */
const CACHED = 32;
/** HTTP-only fields a `response.create` message must not carry (Open Responses 2026-04-24). */
const HTTP_ONLY = ['stream', 'stream_options', 'background'] as const;

/**
 * WebSocket mode of the Responses API (Open Responses 2026-04-24; docs/adr/0035): a WebSocket on
 * `/v1/responses`, authenticated at the upgrade with the API key as HTTP is, on which each
 * `response.create` message is one response — checked, rate-limited and admitted exactly as
 * `POST /v1/responses` with `stream: true`, its events sent as messages — one at a time, in order.
 * The socket remembers the responses it made (connection-local state), so a `store: false` chain
 * continues with `previous_response_id` on it and nowhere else; a failed continuation forgets the
 * response it named. Failures are `{type: "error", status, error: {type, code, message, param}}`
 * messages; the socket stays open. It closes after RESPONSES_WEBSOCKET_MAX_MS with
 * `websocket_connection_limit_reached`, and when the gateway stops.
 */
@Injectable()
export class ResponsesSocket implements OnApplicationShutdown {
  private readonly wss: WebSocketServer;
  private readonly shutdown = new AbortController();

  constructor(
    @Inject(AuthGuard) private readonly auth: AuthGuard,
    @Inject(ApiRateLimits) private readonly limits: ApiRateLimits,
    @Inject(ResponsesService) private readonly responses: ResponsesService,
    @Inject(ResponsesStreamer) private readonly streamer: ResponsesStreamer,
    @Inject(CONFIG) private readonly config: Config,
    @Inject(LOGGER) private readonly logger: Logger,
  ) {
    this.wss = new WebSocketServer({ noServer: true, maxPayload: config.BODY_LIMIT_BYTES });
  }

  /** Answers upgrades of `/v1/responses` on the gateway's HTTP server; other upgrades are 404. */
  attach(server: Server): void {
    server.on('upgrade', (req: IncomingMessage, socket: Duplex, head: Buffer) => {
      void this.upgrade(req, socket, head);
    });
  }

  onApplicationShutdown(): void {
    this.shutdown.abort();
    for (const ws of this.wss.clients) ws.close(1001, 'the gateway is shutting down');
    this.wss.close();
  }

  private async upgrade(req: IncomingMessage, socket: Duplex, head: Buffer): Promise<void> {
    const path = (req.url ?? '').split('?')[0];
    if (path !== PATH && path !== `${PATH}/`) {
      refuseUpgrade(
        socket,
        new OpenAiError(404, 'not_found', `no WebSocket endpoint at ${path}`),
        this.native,
      );
      return;
    }
    let who: { tenantId: string; keyId: string; agentIds: string[] | null };
    try {
      const key = await this.auth.apiKey(bearer(req.headers.authorization));
      // WebSocket mode creates responses: the scope of POST /v1/responses (docs/adr/0066).
      if (!grants(key.role, 'messages:send')) throw insufficientScope('messages:send', key.role);
      who = key;
    } catch (err) {
      refuseUpgrade(socket, err, this.native);
      return;
    }
    if (this.shutdown.signal.aborted) {
      refuseUpgrade(
        socket,
        new OpenAiError(503, 'server_shutting_down', 'the gateway is shutting down'),
        this.native,
      );
      return;
    }
    this.wss.handleUpgrade(req, socket, head, (ws) => this.serve(ws, who));
  }

  private readonly native = (err: unknown) => toErrorAnswer(err, this.logger);

  /** One connection: its messages one after another, its cache, its time limit. */
  private serve(ws: WebSocket, who: { tenantId: string; keyId: string; agentIds: string[] | null }): void {
    const cache = new Map<string, CachedResponse>();
    const gone = new AbortController();
    let queue = Promise.resolve();
    const limit = setTimeout(() => {
      send(ws, {
        type: 'error',
        status: 400,
        error: {
          type: 'invalid_request_error',
          code: 'websocket_connection_limit_reached',
          message: `this WebSocket reached its limit of ${Math.round(this.config.RESPONSES_WEBSOCKET_MAX_MS / 1000)} s: open a new one`,
          param: null,
        },
      });
      ws.close(1000, 'connection limit reached');
    }, this.config.RESPONSES_WEBSOCKET_MAX_MS);
    limit.unref();
    ws.on('close', () => {
      clearTimeout(limit);
      // The turns go on, as when an SSE client leaves; only the following stops.
      gone.abort();
    });
    ws.on('error', (err) => this.logger.warn({ err }, 'responses websocket error'));
    ws.on('message', (data: RawData, isBinary: boolean) => {
      // Sequential: a message waits for the response before it to end (at most one in flight).
      queue = queue.then(() =>
        this.handle(ws, who, cache, gone.signal, data, isBinary).catch((err: unknown) =>
          this.logger.error({ err }, 'responses websocket message failed'),
        ),
      );
    });
  }

  private async handle(
    ws: WebSocket,
    who: { tenantId: string; keyId: string; agentIds: string[] | null },
    cache: Map<string, CachedResponse>,
    signal: AbortSignal,
    data: RawData,
    isBinary: boolean,
  ): Promise<void> {
    if (signal.aborted) return;
    let previous: string | null = null;
    try {
      const event = parseCreateEvent(data, isBinary);
      previous = event.previous_response_id ?? null;
      await this.limits.enforce('admission', { tenantId: who.tenantId, apiKeyId: who.keyId }, undefined);
      const cached = previous !== null ? cache.get(previous) : undefined;
      // store: false has no stored fallback: only this socket's state can continue it.
      if (previous !== null && !cached && event.store === false) throw previousNotFound(previous);
      const { type: _type, ...body } = event;
      // A key limited to agents (docs/adr/0066) reaches only theirs, as on POST /v1/responses.
      const { meta, admitted } = await this.responses.admit(who.tenantId, body, {
        cached,
        ...(who.agentIds ? { only: who.agentIds } : {}),
      });
      let response;
      try {
        response = await this.streamer.follow(
          {
            signal,
            write: (e) => send(ws, e),
            // A ping keeps proxies from closing an idle socket (SSE's heartbeat comment).
            idle: () => {
              if (ws.readyState === ws.OPEN) ws.ping();
            },
            drained: () => Promise.resolve(),
          },
          { tenantId: who.tenantId, meta, watch: admitted.watch },
        );
      } finally {
        admitted.watch.close();
      }
      if (!response) return;
      if (response.status === 'failed' && previous !== null) cache.delete(previous);
      cache.set(response.id, { sessionId: meta.sessionId, turnId: meta.turnId });
      while (cache.size > CACHED) cache.delete(cache.keys().next().value!);
    } catch (err) {
      // A failed continuation forgets the response it named (Open Responses: evict on 4xx/5xx).
      if (previous !== null) cache.delete(previous);
      const answer: OpenAiErrorAnswer = toOpenAiErrorAnswer(err, this.native);
      send(ws, { type: 'error', status: answer.status, error: answer.body.error });
    }
  }
}

/** The message as a `response.create` event, or the 400 that says why not. */
function parseCreateEvent(data: RawData, isBinary: boolean): ResponseCreateEvent {
  if (isBinary) {
    throw new OpenAiError(400, 'invalid_json', 'send each response.create as a JSON text message');
  }
  let parsed: unknown;
  try {
    parsed = JSON.parse(rawText(data));
  } catch (err) {
    throw new OpenAiError(400, 'invalid_json', `the message is not valid JSON: ${(err as Error).message}`);
  }
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) {
    throw new OpenAiError(400, 'invalid_value', 'the message must be a JSON object', { param: 'type' });
  }
  const type = (parsed as { type?: unknown }).type;
  if (type !== 'response.create') {
    throw new OpenAiError(
      400,
      'invalid_value',
      `type: ${JSON.stringify(type ?? null)} is not a client event; send "response.create"`,
      { param: 'type' },
    );
  }
  for (const name of HTTP_ONLY) {
    if (name in parsed) {
      throw new OpenAiError(
        400,
        'unsupported_parameter',
        `${name}: an HTTP-only field; WebSocket mode always streams, one response at a time`,
        { param: name },
      );
    }
  }
  return validateOptionalBody(ResponseCreateEvent, parsed);
}

const rawText = (data: RawData): string =>
  Array.isArray(data)
    ? Buffer.concat(data).toString('utf8')
    : Buffer.from(data as ArrayBuffer).toString('utf8');

function send(ws: WebSocket, message: unknown): void {
  if (ws.readyState === ws.OPEN) ws.send(JSON.stringify(message));
}

/** An upgrade refused: an HTTP answer in OpenAI's error shape, then the socket closes. */
function refuseUpgrade(
  socket: Duplex,
  err: unknown,
  native: (err: unknown) => ReturnType<typeof toErrorAnswer>,
): void {
  const answer = toOpenAiErrorAnswer(err, native);
  const body = JSON.stringify(answer.body);
  socket.end(
    `HTTP/1.1 ${answer.status} ${answer.status === 401 ? 'Unauthorized' : answer.status === 404 ? 'Not Found' : 'Error'}\r\n` +
      'Content-Type: application/json\r\nConnection: close\r\n' +
      `Content-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`,
  );
}
