import { execFileSync } from 'node:child_process';
import { readFileSync, rmSync } from 'node:fs';
import path from 'node:path';

/**
 * A local Redis Cluster of 3 masters and 3 replicas for a test file, from `scripts/redis-cluster.sh`
 * (docs/adr/0043). Started synchronously when the file loads, so the file can pick `describe` or
 * `describe.skip`; a process `exit` hook stops it however the run ends, and `stop()` in `afterAll`
 * stops it as soon as the file is done.
 */
export interface TestRedisCluster {
  ports: number[];
  dir: string;
  /** `host:port` of every node, for REDIS_CLUSTER_NODES. */
  nodes: { host: string; port: number }[];
  /** redis-cli against one node (throws when it does not answer). */
  cli: (port: number, ...args: string[]) => string;
  /** The master serving the hash slot of `key` now, and its process id. */
  slotOwner: (key: string) => { port: number; pid: number };
  /** SIGKILLs a node (a crash: no shutdown, no last replication). */
  kill: (port: number) => void;
  /** Starts a killed node again from its config: it rejoins the cluster (as a replica if replaced). */
  restart: (port: number) => void;
  /** The port of a replica of the master on `port`, once one is in sync with it. */
  replicaOf: (port: number) => number | undefined;
  stop: () => void;
}

const SCRIPT = path.resolve(__dirname, '../../../scripts/redis-cluster.sh');

function run(file: string, args: string[], timeout: number): string {
  return execFileSync(file, args, { encoding: 'utf8', timeout, stdio: ['ignore', 'pipe', 'pipe'] }).trim();
}

/** A started cluster, or why it cannot run here (the file then skips, warning with the reason). */
export function startTestRedisCluster(): TestRedisCluster | { skip: string } {
  let version: string;
  try {
    version = run('redis-server', ['--version'], 5_000);
    run('redis-cli', ['--version'], 5_000);
  } catch {
    return { skip: 'redis-server or redis-cli is not installed' };
  }
  const major = Number(/v=(\d+)\./.exec(version)?.[1] ?? 0);
  if (major < 7) return { skip: `redis-server ${major} is older than 7` };
  let started: RegExpExecArray | null;
  try {
    started = /^ports=([\d,]+) dir=(.+)$/.exec(run(SCRIPT, ['start'], 60_000));
  } catch (err) {
    return { skip: `the cluster did not start: ${(err as { stderr?: string }).stderr ?? String(err)}` };
  }
  if (!started) return { skip: 'scripts/redis-cluster.sh start printed no ports' };
  const ports = started[1].split(',').map(Number);
  const dir = started[2];
  let stopped = false;
  const stop = () => {
    if (stopped) return;
    stopped = true;
    try {
      run(SCRIPT, ['stop', dir], 30_000);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  };
  process.once('exit', () => {
    try {
      stop();
    } catch {
      // Nothing more to do while exiting.
    }
  });
  const cli = (port: number, ...args: string[]) =>
    run('redis-cli', ['-h', '127.0.0.1', '-p', String(port), ...args], 5_000);
  const slotOwner = (key: string) => {
    const alive = ports.find((p) => {
      try {
        return cli(p, 'ping') === 'PONG';
      } catch {
        return false;
      }
    });
    if (alive === undefined) throw new Error('no cluster node answers');
    const slot = Number(cli(alive, 'cluster', 'keyslot', key));
    for (const line of cli(alive, 'cluster', 'nodes').split('\n')) {
      const [, addr, flags, , , , , , ...ranges] = line.split(' ');
      if (!flags.split(',').includes('master') || flags.includes('fail')) continue;
      const owns = ranges.some((r) => {
        const [from, to] = r.split('-').map(Number);
        return slot >= from && slot <= (to ?? from);
      });
      if (owns) {
        const port = Number(addr.split('@')[0].split(':').at(-1));
        return { port, pid: Number(readFileSync(path.join(dir, `node-${port}`, 'redis.pid'), 'utf8')) };
      }
    }
    throw new Error(`no master serves slot ${slot}`);
  };
  const kill = (port: number) => {
    process.kill(Number(readFileSync(path.join(dir, `node-${port}`, 'redis.pid'), 'utf8')), 'SIGKILL');
  };
  const restart = (port: number) => {
    run('redis-server', [path.join(dir, `node-${port}`, 'redis.conf')], 10_000);
  };
  const replicaOf = (port: number) => {
    const id = cli(port, 'cluster', 'myid');
    return ports.find((p) => {
      try {
        const info = cli(p, 'info', 'replication');
        return (
          info.includes('role:slave') &&
          info.includes('master_link_status:up') &&
          cli(p, 'cluster', 'nodes')
            .split('\n')
            .some((l) => l.includes('myself,slave') && l.split(' ')[3] === id)
        );
      } catch {
        return false;
      }
    });
  };
  return {
    ports,
    dir,
    nodes: ports.map((port) => ({ host: '127.0.0.1', port })),
    cli,
    slotOwner,
    kill,
    restart,
    replicaOf,
    stop,
  };
}
