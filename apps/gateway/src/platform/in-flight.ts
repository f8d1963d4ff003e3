import type { FastifyInstance } from 'fastify';

/**
 * Requests the gateway is answering. Shutdown waits for them (bounded by SHUTDOWN_GRACE_MS) before
 * the HTTP server closes: Fastify's close ends every connection, so a request still in admission
 * would otherwise lose its answer (the admission itself stands, the client cannot know).
 */
export class InFlightRequests {
  private count = 0;
  private idle: (() => void)[] = [];

  /** Counts every request from its arrival to its response (or the client going away). */
  attach(fastify: FastifyInstance): void {
    fastify.addHook('onRequest', async (_request, reply) => {
      this.count++;
      let done = false;
      const finish = () => {
        if (done) return;
        done = true;
        this.count--;
        if (this.count === 0) for (const resolve of this.idle.splice(0)) resolve();
      };
      // A response's `close`: sent in full, or its connection ended first.
      reply.raw.once('close', finish);
    });
  }

  get size(): number {
    return this.count;
  }

  /** Resolves once no request is in flight, or after `ms`. */
  async settled(ms: number): Promise<void> {
    if (this.count === 0) return;
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([
      new Promise<void>((resolve) => this.idle.push(resolve)),
      new Promise<void>((resolve) => (timer = setTimeout(resolve, ms))),
    ]);
    clearTimeout(timer);
  }
}
