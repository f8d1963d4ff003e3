import { Writable } from 'node:stream';
import type { FastifyReply } from 'fastify';
import { clientGone, SseStream } from './sse';

/** A socket that takes writes only when `flush` is called (a slow client), as a hijackable reply. */
function slowReply() {
  const pending: (() => void)[] = [];
  const raw = Object.assign(
    new Writable({
      highWaterMark: 8,
      write(_chunk, _enc, done) {
        pending.push(() => done());
      },
    }),
    {
      head: undefined as { status: number; headers: object } | undefined,
      writeHead: (status: number, headers: object) => (raw.head = { status, headers }),
    },
  );
  const written: string[] = [];
  const write = raw.write.bind(raw);
  raw.write = ((chunk: string) => (written.push(chunk), write(chunk))) as typeof raw.write;
  const reply = {
    raw,
    hijacked: false,
    hijack: () => ((reply.hijacked = true), reply),
    getHeaders: () => ({ 'x-request-id': 'r1' }),
  };
  const flush = () => pending.splice(0).forEach((done) => done());
  return { reply, asReply: reply as unknown as FastifyReply, raw, written, flush };
}

const settled = async (p: Promise<unknown>) => {
  let done = false;
  void p.then(() => (done = true));
  await new Promise((r) => setImmediate(r));
  return done;
};

describe('SseStream', () => {
  it('takes the response over and sends the SSE headers with the reply’s own', () => {
    const r = slowReply();
    SseStream.open(r.asReply);
    expect(r.reply.hijacked).toBe(true);
    expect(r.raw.head).toEqual({
      status: 200,
      headers: {
        'x-request-id': 'r1',
        'content-type': 'text/event-stream; charset=utf-8',
        'cache-control': 'no-cache',
        connection: 'keep-alive',
        'x-accel-buffering': 'no',
      },
    });
  });

  it('writes frames, data and comments, and nothing once closed', () => {
    const r = slowReply();
    const sse = SseStream.open(r.asReply);
    sse.write('data: 1\n\n');
    sse.data({ a: 1 }, 'x');
    sse.data([2]);
    sse.comment('keepalive');
    sse.close();
    expect(sse.write('data: late\n\n')).toBe(false);
    expect(r.written).toEqual([
      'data: 1\n\n',
      'event: x\ndata: {"a":1}\n\n',
      'data: [2]\n\n',
      ': keepalive\n\n',
    ]);
    expect(r.raw.writableEnded).toBe(true);
  });

  it('waits for a slow client’s socket to drain before going on', async () => {
    const r = slowReply();
    const sse = SseStream.open(r.asReply);
    expect(await settled(sse.drained())).toBe(true); // nothing buffered: at once
    sse.write('data: a frame longer than the buffer\n\n');
    const drained = sse.drained();
    expect(await settled(drained)).toBe(false);
    r.flush();
    expect(await settled(drained)).toBe(true);
  });

  it('ends the wait when the client leaves or the gateway shuts down', async () => {
    const left = slowReply();
    const a = SseStream.open(left.asReply);
    a.write('data: a frame longer than the buffer\n\n');
    const waitA = a.drained();
    left.raw.destroy();
    expect(await settled(waitA)).toBe(true);
    expect(a.signal.aborted).toBe(true);
    expect(a.stopped).toBe(true);

    const stopping = new AbortController();
    const busy = slowReply();
    const b = SseStream.open(busy.asReply, { shutdown: stopping.signal });
    b.write('data: a frame longer than the buffer\n\n');
    const waitB = b.drained();
    expect(await settled(waitB)).toBe(false);
    stopping.abort();
    expect(await settled(waitB)).toBe(true);
    expect(b.signal.aborted).toBe(false);
    expect(b.stopped).toBe(true);
  });

  it('turns the client leaving into one signal, released on close; a caller’s ClientGone stays the caller’s', () => {
    const r = slowReply();
    const before = r.raw.listenerCount('close');
    const own = SseStream.open(r.asReply);
    expect(r.raw.listenerCount('close')).toBe(before + 1);
    own.close();
    expect(r.raw.listenerCount('close')).toBe(before);

    const s = slowReply();
    const gone = clientGone(s.asReply);
    const shared = SseStream.open(s.asReply, { gone });
    shared.close();
    expect(s.raw.listenerCount('close')).toBe(before + 1);
    s.raw.emit('close');
    expect(shared.signal.aborted).toBe(true);
    gone.release();
    expect(s.raw.listenerCount('close')).toBe(before);
  });
});
