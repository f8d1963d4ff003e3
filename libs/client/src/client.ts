import createClient, { type Client } from 'openapi-fetch';
import { createParser, type EventSourceMessage } from 'eventsource-parser';
import type { paths } from './openapi';

/**
 * The typed TypeScript client of the Switchboard API: openapi-fetch over the types generated from
 * the gateway's OpenAPI document (libs/client/src/openapi.ts, `npm run client:generate`), so every
 * path, parameter, body and answer is checked at compile time, plus the Server-Sent Events streams.
 *
 *   const sb = createSwitchboardClient({ baseUrl: 'http://localhost:3000', apiKey: process.env.KEY });
 *   const { data, error } = await sb.api.POST('/v1/sessions', { body: { agentId } });
 *   for await (const frame of sb.streamSession(sessionId)) console.log(frame.event, frame.data);
 */
export interface SwitchboardClientOptions {
  /** The gateway, e.g. http://localhost:3000 (no trailing /v1). */
  baseUrl: string;
  /** A tenant API key (`sb_…`), or the deployment's ADMIN_TOKEN for the admin routes. */
  apiKey?: string;
  /** Another fetch (tests, proxies). */
  fetch?: typeof globalThis.fetch;
  /**
   * More headers on every request: the operator acting as a tenant sends its ADMIN_TOKEN as `apiKey`
   * and `{'x-switchboard-tenant': tenantId}` here (the web console does).
   */
  headers?: Record<string, string>;
}

/** One SSE frame of a stream: journaled frames carry the event's seq as `id`; live ones none. */
export interface StreamFrame {
  id?: string;
  event?: string;
  data: unknown;
}

export interface SwitchboardClient {
  /** Every route, typed: `api.GET('/v1/turns/{id}', { params: { path: { id } } })`. */
  api: Client<paths>;
  /** A session's journal then its live events (GET /v1/sessions/{id}/stream), resumable by `after`. */
  streamSession(sessionId: string, o?: { after?: number; signal?: AbortSignal }): AsyncGenerator<StreamFrame>;
  /** One turn's events until it ends (GET /v1/turns/{id}/stream). */
  streamTurn(turnId: string, o?: { after?: number; signal?: AbortSignal }): AsyncGenerator<StreamFrame>;
}

export function createSwitchboardClient(o: SwitchboardClientOptions): SwitchboardClient {
  const baseUrl = o.baseUrl.replace(/\/+$/, '');
  const headers: Record<string, string> = {
    ...o.headers,
    ...(o.apiKey ? { authorization: `Bearer ${o.apiKey}` } : {}),
  };
  const fetchImpl = o.fetch ?? globalThis.fetch;
  const api = createClient<paths>({ baseUrl, headers, fetch: fetchImpl });

  async function* stream(url: string, signal?: AbortSignal): AsyncGenerator<StreamFrame> {
    const res = await fetchImpl(url, { headers: { ...headers, accept: 'text/event-stream' }, signal });
    if (!res.ok || !res.body) {
      const body = await res.text().catch(() => '');
      throw new SwitchboardError(res.status, body);
    }
    // eventsource-parser reads the frames (ids, event names, multi-line data) as the SSE spec says.
    const pending: EventSourceMessage[] = [];
    const parser = createParser({ onEvent: (e) => pending.push(e) });
    const decoder = new TextDecoder();
    for await (const chunk of res.body as AsyncIterable<Uint8Array>) {
      parser.feed(decoder.decode(chunk, { stream: true }));
      for (const e of pending.splice(0)) yield frameOf(e);
    }
  }
  const query = (after?: number) => (after === undefined ? '' : `?after=${after}`);
  return {
    api,
    streamSession: (id, s = {}) =>
      stream(`${baseUrl}/v1/sessions/${encodeURIComponent(id)}/stream${query(s.after)}`, s.signal),
    streamTurn: (id, s = {}) =>
      stream(`${baseUrl}/v1/turns/${encodeURIComponent(id)}/stream${query(s.after)}`, s.signal),
  };
}

function frameOf(e: EventSourceMessage): StreamFrame {
  let data: unknown = e.data;
  try {
    data = JSON.parse(e.data);
  } catch {
    // Not JSON: given as the text it is.
  }
  return { ...(e.id ? { id: e.id } : {}), ...(e.event ? { event: e.event } : {}), data };
}

/** A stream the gateway refused: its status and the body (the API's error shape). */
export class SwitchboardError extends Error {
  constructor(
    readonly status: number,
    readonly body: string,
  ) {
    super(`HTTP ${status}: ${body.slice(0, 500)}`);
  }
}
