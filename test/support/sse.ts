import { createParser, type EventSourceMessage } from 'eventsource-parser';
import { waitFor } from '@switchboard/testing';

/** One SSE frame as a client sees it, with its JSON data parsed. */
export interface Frame {
  id?: string;
  event?: string;
  data: any;
  /** ms since the stream was opened. */
  at: number;
}

/**
 * An SSE client for tests: fetch and eventsource-parser (the parser behind the `eventsource`
 * package and the AI SDK), frames and comment lines recorded as they arrive.
 */
export class SseClient {
  readonly frames: Frame[] = [];
  readonly comments: string[] = [];
  status = 0;
  headers?: Headers;
  /** The error body when the answer was not a stream. */
  body?: unknown;
  /** Resolves when the server ends the stream (or the client closed it). */
  readonly ended: Promise<void>;
  private readonly controller = new AbortController();
  private readonly started = Date.now();
  private opened!: () => void;
  private readonly openedP = new Promise<void>((resolve) => (this.opened = resolve));

  private constructor(url: string, headers: Record<string, string>) {
    this.ended = this.run(url, headers);
  }

  static async open(url: string, o: { key?: string; lastEventId?: string } = {}): Promise<SseClient> {
    const headers: Record<string, string> = { accept: 'text/event-stream' };
    if (o.key) headers.authorization = `Bearer ${o.key}`;
    if (o.lastEventId !== undefined) headers['last-event-id'] = o.lastEventId;
    const client = new SseClient(url, headers);
    await client.openedP;
    return client;
  }

  /** Journaled frames (with an id). */
  get journaled(): Frame[] {
    return this.frames.filter((f) => f.id !== undefined);
  }

  /** Live frames (no id, ephemeral). */
  get live(): Frame[] {
    return this.frames.filter((f) => f.id === undefined);
  }

  get lastEventId(): string | undefined {
    return this.journaled.at(-1)?.id;
  }

  async until(predicate: (c: SseClient) => boolean, what: string, timeoutMs = 20_000): Promise<void> {
    await waitFor(() => predicate(this), { what, timeoutMs });
  }

  close(): void {
    this.controller.abort();
  }

  private async run(url: string, headers: Record<string, string>): Promise<void> {
    try {
      const res = await fetch(url, { headers, signal: this.controller.signal });
      this.status = res.status;
      this.headers = res.headers;
      if (!res.ok || !res.body) {
        this.body = await res.json().catch(() => undefined);
        return;
      }
      this.opened();
      const parser = createParser({
        onEvent: (m: EventSourceMessage) =>
          this.frames.push({
            id: m.id,
            event: m.event,
            data: JSON.parse(m.data),
            at: Date.now() - this.started,
          }),
        onComment: (c) => this.comments.push(c),
      });
      const decoder = new TextDecoder();
      for await (const chunk of res.body as unknown as AsyncIterable<Uint8Array>) {
        parser.feed(decoder.decode(chunk, { stream: true }));
      }
    } catch (err) {
      if ((err as Error).name !== 'AbortError') throw err;
    } finally {
      this.opened();
    }
  }
}
