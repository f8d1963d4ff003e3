import Fastify from 'fastify';
import { InFlightRequests } from './in-flight';

/** Shutdown waits for requests in flight: settled() resolves when the last one is answered, or at its bound. */
describe('InFlightRequests', () => {
  it('settles once every request in flight has been answered, and at once when none is', async () => {
    const app = Fastify();
    const inFlight = new InFlightRequests();
    inFlight.attach(app);
    let answer!: () => void;
    const held = new Promise<void>((resolve) => (answer = resolve));
    app.get('/slow', async () => {
      await held;
      return { ok: true };
    });
    await app.listen({ port: 0, host: '127.0.0.1' });
    const { port } = app.server.address() as { port: number };
    try {
      await inFlight.settled(10);
      const response = fetch(`http://127.0.0.1:${port}/slow`);
      await new Promise<void>((resolve) => {
        const check = () => (inFlight.size === 1 ? resolve() : setImmediate(check));
        check();
      });
      let settled = false;
      const done = inFlight.settled(10_000).then(() => (settled = true));
      await new Promise((r) => setImmediate(r));
      expect(settled).toBe(false);
      answer();
      expect((await response).status).toBe(200);
      await done;
      expect(inFlight.size).toBe(0);
    } finally {
      answer();
      await app.close();
    }
  });

  it('gives up waiting at its bound', async () => {
    const app = Fastify();
    const inFlight = new InFlightRequests();
    inFlight.attach(app);
    let answer!: () => void;
    const held = new Promise<void>((resolve) => (answer = resolve));
    app.get('/stuck', async () => {
      await held;
      return {};
    });
    await app.listen({ port: 0, host: '127.0.0.1' });
    const { port } = app.server.address() as { port: number };
    const response = fetch(`http://127.0.0.1:${port}/stuck`);
    await new Promise<void>((resolve) => {
      const check = () => (inFlight.size === 1 ? resolve() : setImmediate(check));
      check();
    });
    await inFlight.settled(20);
    expect(inFlight.size).toBe(1);
    answer();
    await response;
    await app.close();
  });
});
