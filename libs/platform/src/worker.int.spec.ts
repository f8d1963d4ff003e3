import { once } from 'node:events';
import { existsSync, readFileSync } from 'node:fs';
import { connect, createServer, type Server } from 'node:net';
import { networkInterfaces } from 'node:os';
import { Writable } from 'node:stream';
import { Module, type INestApplicationContext } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { Queue, type Job } from 'bullmq';
import pino from 'pino';
import type { Config } from '@switchboard/config';
import { QueueName } from '@switchboard/contracts';
import { createRedis } from '@switchboard/queue';
import { createTestEnv, spawnApp, waitFor, type TestEnv } from '@switchboard/testing';
import { InfraModule } from './infra.module';
import { CONFIG, LOGGER, REDIS } from './tokens';
import { QueueProcessor, QueueWorker, WorkerFailures } from './worker';

/** Worker plumbing with real BullMQ on the running Redis. */
jest.setTimeout(120_000);

/** Every run of a job, across every worker of this file. */
const runs: { jobId: string; worker: string }[] = [];
const JOB_MS = 4000;

@QueueProcessor(QueueName.Turns, 2)
class SlowProcessor extends QueueWorker {
  async process(job: Job): Promise<string> {
    runs.push({ jobId: String(job.id), worker: this.worker.id });
    // The job's own work: longer than several lock durations and stalled checks.
    await new Promise((resolve) => setTimeout(resolve, JOB_MS));
    return 'done';
  }
}

@Module({})
class SlowModule {
  static forRoot(config: Config) {
    return { module: SlowModule, imports: [InfraModule.forRoot(config, 'test')], providers: [SlowProcessor] };
  }
}

/** A server that speaks just enough RESP to look like a Redis too old for BullMQ. */
async function oldRedis(): Promise<{ url: string; server: Server }> {
  const server = createServer((socket) => {
    let buffered = '';
    socket.on('data', (chunk) => {
      buffered += chunk.toString('latin1');
      // Each command is an array of bulk strings: *N\r\n($len\r\narg\r\n){N}
      for (;;) {
        const head = /^\*(\d+)\r\n/.exec(buffered);
        if (!head) return;
        let at = head[0].length;
        const args: string[] = [];
        for (let i = 0; i < Number(head[1]); i++) {
          const len = /^\$(\d+)\r\n/.exec(buffered.slice(at));
          if (!len || buffered.length < at + len[0].length + Number(len[1]) + 2) return;
          at += len[0].length;
          args.push(buffered.slice(at, at + Number(len[1])));
          at += Number(len[1]) + 2;
        }
        buffered = buffered.slice(at);
        if (args[0]?.toLowerCase() === 'info') {
          const info = '# Server\r\nredis_version:4.0.0\r\nloading:0\r\n';
          socket.write(`$${info.length}\r\n${info}\r\n`);
        } else {
          socket.write('+OK\r\n');
        }
      }
    });
    socket.on('error', () => undefined);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  const port = typeof address === 'object' && address ? address.port : 0;
  return { url: `redis://127.0.0.1:${port}`, server };
}

describe('QueueWorker', () => {
  let env: TestEnv;
  const apps: INestApplicationContext[] = [];

  beforeAll(async () => {
    env = await createTestEnv();
  });

  afterAll(async () => {
    await Promise.all(apps.map((a) => a.close()));
    await env?.cleanup();
  });

  it('keeps the lock of a job that runs longer than QUEUE_LOCK_MS: no second worker gets it', async () => {
    const config = env.config({ QUEUE_LOCK_MS: '1000', QUEUE_STALLED_INTERVAL_MS: '500' });
    for (let i = 0; i < 2; i++) {
      const app = await NestFactory.createApplicationContext(SlowModule.forRoot(config), { logger: false });
      await app.init();
      apps.push(app);
    }
    const workers = apps.map((a) => a.get(SlowProcessor).worker);
    const stalled: string[] = [];
    const errors: Error[] = [];
    for (const w of workers) {
      w.on('stalled', (jobId) => stalled.push(jobId));
      w.on('error', (err) => errors.push(err));
      w.on('failed', (_job, err) => errors.push(err));
    }
    // Built with the configured lock: the lock manager renews at half of it.
    expect(workers.map((w) => w.opts.lockDuration)).toEqual([1000, 1000]);

    const queue = new Queue(QueueName.Turns, {
      connection: createRedis(env.redisUrl),
      prefix: env.queuePrefix,
    });
    try {
      const ids = ['slow-1', 'slow-2', 'slow-3'];
      for (const id of ids) await queue.add('slow', {}, { jobId: id });
      await waitFor(
        async () =>
          (await Promise.all(ids.map((id) => queue.getJobState(id)))).every((s) => s === 'completed'),
        { what: 'the slow jobs completed', timeoutMs: 30_000 },
      );
      expect(stalled).toEqual([]);
      expect(errors).toEqual([]);
      // Each job ran exactly once, though each outlived its lock duration several times over.
      expect(runs.map((r) => r.jobId).sort()).toEqual(ids);
      const jobs = await Promise.all(ids.map((id) => queue.getJob(id)));
      expect(jobs.map((j) => j?.returnvalue)).toEqual(['done', 'done', 'done']);
    } finally {
      await queue.close();
      await (await queue.client).quit().catch(() => undefined);
    }
  });

  it('reports and logs a worker that cannot start instead of swallowing it', async () => {
    const fake = await oldRedis();
    const lines: Record<string, unknown>[] = [];
    const logger = pino(
      { level: 'info' },
      new Writable({
        write(chunk: Buffer, _enc, done) {
          lines.push(JSON.parse(chunk.toString()) as Record<string, unknown>);
          done();
        },
      }),
    );
    const redis = createRedis(fake.url);
    @Module({
      providers: [
        { provide: CONFIG, useValue: env.config() },
        { provide: LOGGER, useValue: logger },
        { provide: REDIS, useValue: redis },
        WorkerFailures,
        SlowProcessor,
      ],
    })
    class Broken {}
    const app = await NestFactory.createApplicationContext(Broken, { logger: false });
    try {
      const reported = new Promise<{ err: Error; queue: string }>((resolve) =>
        app.get(WorkerFailures).onFailure((err, queue) => resolve({ err, queue })),
      );
      await app.init();
      const failure = await reported;
      expect(failure.queue).toBe(QueueName.Turns);
      expect(failure.err.message).toMatch(/Redis version/);
      expect(lines).toContainEqual(
        expect.objectContaining({ level: 60, queue: QueueName.Turns, msg: 'queue worker stopped' }),
      );
    } finally {
      await app.close();
      redis.disconnect();
      fake.server.close();
    }
  });

  it('a worker process whose queue worker cannot start exits non-zero', async () => {
    const fake = await oldRedis();
    try {
      // It may log that it started before the worker's failure arrives, or fail first.
      const { code, output } = await spawnApp('hooks-worker', env.processEnv({ REDIS_URL: fake.url }), {
        expectExit: true,
      }).then(
        async (p) => {
          const exited = await Promise.race([
            once(p.child, 'exit').then(([c]) => c as number | null),
            new Promise<'running'>((resolve) => setTimeout(() => resolve('running'), 20_000).unref()),
          ]);
          if (exited === 'running') await p.kill('SIGKILL');
          return { code: exited, output: p.output() };
        },
        (err: Error) => ({ code: Number(/exited with (\d+)/.exec(err.message)?.[1]), output: err.message }),
      );
      expect(output).toMatch(/queue worker stopped/);
      expect(code).toBe(1);
    } finally {
      fake.server.close();
    }
  });

  it('a worker process serves /metrics on HOST only (HOST=127.0.0.1: not on other interfaces)', async () => {
    const port = await freePort();
    const p = await spawnApp(
      'hooks-worker',
      env.processEnv({ HOST: '127.0.0.1', METRICS_PORT: String(port) }),
    );
    try {
      const res = await fetch(`http://127.0.0.1:${port}/metrics`);
      expect(res.status).toBe(200);
      expect(await res.text()).toContain('switchboard_event_loop_delay_seconds');
      // Linux lists listening sockets in /proc: the one on the port is bound to 127.0.0.1, not 0.0.0.0.
      if (existsSync('/proc/net/tcp')) expect(listeningAddresses(port)).toEqual(['127.0.0.1']);
      // And a connection through another interface of this machine is refused.
      const outside = Object.values(networkInterfaces())
        .flat()
        .find((a) => a && a.family === 'IPv4' && !a.internal);
      if (outside) {
        const socket = connect(port, outside.address);
        const [err] = (await once(socket, 'error').finally(() => socket.destroy())) as [
          NodeJS.ErrnoException,
        ];
        expect(err.code).toBe('ECONNREFUSED');
      }
    } finally {
      await p.kill('SIGTERM');
    }
  });
});

async function freePort(): Promise<number> {
  const server = createServer().listen(0, '127.0.0.1');
  await once(server, 'listening');
  const { port } = server.address() as { port: number };
  await new Promise((resolve) => server.close(resolve));
  return port;
}

/** The local addresses of the TCP sockets listening on `port` (IPv4 as dotted quads, IPv6 as hex). */
function listeningAddresses(port: number): string[] {
  const hexPort = port.toString(16).toUpperCase().padStart(4, '0');
  return ['/proc/net/tcp', '/proc/net/tcp6']
    .filter((f) => existsSync(f))
    .flatMap((f) => readFileSync(f, 'utf8').trim().split('\n').slice(1))
    .map((line) => line.trim().split(/\s+/))
    .filter(([, local, , state]) => state === '0A' && local.endsWith(`:${hexPort}`))
    .map(([, local]) => {
      const hex = local.split(':')[0];
      return hex.length === 8
        ? Array.from({ length: 4 }, (_, i) => parseInt(hex.slice(6 - 2 * i, 8 - 2 * i), 16)).join('.')
        : hex;
    });
}
