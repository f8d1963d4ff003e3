import type { FastifyReply } from 'fastify';
import type { StreamItem } from '@switchboard/agent-turns';

/**
 * SSE framing (text/event-stream): a journaled event is `id: <seq>` + `event: <type>` + `data:
 * <the Event, with "streamed": true when its content went out live>`; a live item has no id (a
 * resumed stream's Last-Event-ID is always a journal seq) and `data: {"ephemeral": true, …}`; an
 * idle one a comment line.
 */
/**
 * Takes the response over from Fastify (a stream is long-lived and written by the route itself) and
 * sends the Server-Sent Events headers: the journal streams and the chat completions facade share it.
 */
export function openEventStream(reply: FastifyReply): void {
  reply.hijack();
  reply.raw.writeHead(200, {
    ...(reply.getHeaders() as Record<string, string>),
    'content-type': 'text/event-stream; charset=utf-8',
    'cache-control': 'no-cache',
    connection: 'keep-alive',
    // Proxies (nginx) must not buffer the stream.
    'x-accel-buffering': 'no',
  });
}

export function sseFrame(item: StreamItem): string {
  if (item.kind === 'idle') return ': heartbeat\n\n';
  if (item.kind === 'live') return `event: ${item.event.type}\ndata: ${JSON.stringify(item.event)}\n\n`;
  const body = item.streamed ? { ...item.event, streamed: true } : item.event;
  return `id: ${item.event.seq}\nevent: ${item.event.type}\ndata: ${JSON.stringify(body)}\n\n`;
}
