import type { StreamItem } from '@switchboard/agent-turns';

/**
 * SSE framing (text/event-stream): a journaled event is `id: <seq>` + `event: <type>` + `data:
 * <the Event, with "streamed": true when its content went out live>`; a live item has no id (a
 * resumed stream's Last-Event-ID is always a journal seq) and `data: {"ephemeral": true, …}`; an
 * idle one a comment line.
 */
export function sseFrame(item: StreamItem): string {
  if (item.kind === 'idle') return ': heartbeat\n\n';
  if (item.kind === 'live') return `event: ${item.event.type}\ndata: ${JSON.stringify(item.event)}\n\n`;
  const body = item.streamed ? { ...item.event, streamed: true } : item.event;
  return `id: ${item.event.seq}\nevent: ${item.event.type}\ndata: ${JSON.stringify(body)}\n\n`;
}
