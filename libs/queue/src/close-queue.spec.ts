import { Queue } from 'bullmq';
import { closeQueue } from './queue';
import { createRedis } from './redis';

/**
 * A process shutting down while Redis is unreachable (taskforcesh/bullmq#3546): the queue closes,
 * then the shared client ends mid-connect, and the queue's pending start-up fails. Without
 * `closeQueue` that failure is an unhandled rejection (`connect ECONNREFUSED`), which Jest reports
 * as this test's failure and which exits a Node process that treats rejections as fatal.
 */
describe('closeQueue', () => {
  it('leaves nothing to reject when the shared client ends after the close', async () => {
    // Port 1: nobody listens; reconnect quickly so the client is soon mid-connect again.
    const redis = createRedis('redis://127.0.0.1:1', { retryStrategy: () => 20 });
    const errors: Error[] = [];
    redis.on('error', (err: Error) => errors.push(err));
    const queue = new Queue('close-queue-spec', { connection: redis, prefix: 'close-queue-spec' });
    await new Promise((resolve) => redis.once('error', resolve));

    await closeQueue(queue);
    // The shared client ends while connecting: its 'end' fails the queue's pending start-up.
    const ended = new Promise((resolve) => redis.once('end', resolve));
    redis.once('connecting', () => redis.disconnect());
    await ended;
    // Let the start-up's rejection run its handlers (a microtask chain after 'end').
    await new Promise((resolve) => setImmediate(resolve));

    expect(redis.status).toBe('end');
    expect(errors[0]?.message).toMatch(/ECONNREFUSED/);
  });
});
