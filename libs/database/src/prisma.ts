import { PrismaPg } from '@prisma/adapter-pg';
import { Prisma, PrismaClient } from '@prisma/client';
import pg from 'pg';
import { openStored } from './content-cipher';

/** Prisma through the pg driver adapter: no native query engine (docs/adr/0002-prisma-engine.md). */
export interface DatabaseOptions {
  /** Connections in the pool (default 10). */
  poolSize?: number;
  /** How long opening a connection may take before it fails (default: no bound, pg's own). */
  connectTimeoutMs?: number;
  /**
   * How long a connection may sit idle in the pool before it is closed; 0: never (default: pg's own,
   * 10 s). A closed connection takes its prepared statements and cached plans with it.
   */
  idleMs?: number;
  /**
   * Open content sealed per tenant in every result (docs/adr/0067): set when the deployment has a key
   * provider. Off, reads carry no extension at all.
   */
  openSealed?: boolean;
}

export function createPrisma(databaseUrl: string, options: DatabaseOptions = {}): PrismaClient {
  return createDatabase(databaseUrl, options).prisma;
}

/**
 * Prisma and the pg pool under it, for code that also runs typed SQL on the same connections
 * (libs/store, docs/adr/0010-turn-store-on-pg.md). `prisma.$disconnect()` ends the pool.
 */
export function createDatabase(
  databaseUrl: string,
  options: DatabaseOptions = {},
): { prisma: PrismaClient; pool: pg.Pool } {
  const pool = dropDeadClients(
    new pg.Pool({
      connectionString: databaseUrl,
      max: options.poolSize ?? 10,
      connectionTimeoutMillis: options.connectTimeoutMs,
      idleTimeoutMillis: options.idleMs,
    }),
  );
  const adapter = new PrismaPg(pool, { disposeExternalPool: true });
  // Waiting for a pooled connection is not a failure until well past Prisma's 2 s default: a burst
  // (six activations racing for one agent's row lock, measured failing at load 16) queues for the
  // pool; a transaction still ends within its own timeout.
  const base = new PrismaClient({ adapter, transactionOptions: { maxWait: 10_000, timeout: 15_000 } });
  // Every model read and raw query answers sealed content opened (docs/adr/0067); the extended
  // client is a PrismaClient to its callers (same methods, transactions included).
  const prisma = options.openSealed
    ? (base.$extends({
        query: {
          $allOperations: async ({ args, query }): Promise<unknown> => openStored<unknown>(await query(args)),
        },
      }) as unknown as PrismaClient)
    : base;
  pools.set(prisma, pool);
  return { prisma, pool };
}

const pools = new WeakMap<PrismaClient, pg.Pool>();

/** The pg pool under a client made by `createPrisma`/`createDatabase`, for typed SQL on the same connections. */
export function poolOf(db: PrismaClient): pg.Pool {
  const pool = pools.get(db);
  if (!pool) throw new Error('this PrismaClient was not made by createPrisma: it has no pg pool to share');
  return pool;
}

/**
 * A connection that dies inside an interactive transaction (a Postgres restart) is never handed
 * back by the adapter: its ROLLBACK fails, so it never releases the client, and the pool slot is
 * lost for good; enough restarts and every query waits forever. A checked-out client whose
 * connection errors is released here as broken, so the pool drops it and opens a new one; the
 * adapter's own later release of it, if any, does nothing.
 */
function dropDeadClients(pool: pg.Pool): pg.Pool {
  const listeners = new WeakMap<pg.PoolClient, (err: Error) => void>();
  pool.on('acquire', (client) => {
    const onError = (err: Error) => {
      const release = client.release.bind(client);
      client.release = () => undefined;
      release(err);
    };
    listeners.set(client, onError);
    client.once('error', onError);
  });
  pool.on('release', (_err: Error | undefined, client: pg.PoolClient) => {
    const onError = listeners.get(client);
    if (onError) client.removeListener('error', onError);
    listeners.delete(client);
  });
  // Idle clients that die are the pool's and the adapter's to handle; this keeps them from crashing the process.
  pool.on('error', () => undefined);
  return pool;
}

/** Postgres unique violation surfaced by Prisma. */
export function isUniqueViolation(err: unknown): boolean {
  if (!(err instanceof Prisma.PrismaClientKnownRequestError)) return false;
  if (err.code === 'P2002') return true;
  // Raw statements report the driver's error instead (P2010).
  const cause = (
    err.meta?.driverAdapterError as { cause?: { kind?: string; originalCode?: string } } | undefined
  )?.cause;
  return (
    err.code === 'P2010' && (cause?.kind === 'UniqueConstraintViolation' || cause?.originalCode === '23505')
  );
}

/** Prisma's own codes for a database it cannot reach or a connection or transaction it lost. */
const TRANSIENT_PRISMA_CODES = new Set(['P1001', 'P1002', 'P1008', 'P1017', 'P2024', 'P2028']);
/** What @prisma/adapter-pg reports for socket errors (its `DriverAdapterError` cause kinds). */
const TRANSIENT_ADAPTER_KINDS = new Set([
  'DatabaseNotReachable',
  'ConnectionClosed',
  'SocketTimeout',
  'TooManyConnections',
  'TransactionWriteConflict',
]);
/** SQLSTATEs of a server going away or a transaction to run again: class 08, 57P01-57P03, 53300, 40001, 40P01. */
const TRANSIENT_SQLSTATE = /^(08...|57P0[123]|53300|40001|40P01)$/;
const TRANSIENT_NODE_CODES = new Set(['ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'EPIPE', 'EAI_AGAIN']);
/** node-postgres' own errors for a dropped connection carry no code. */
const TRANSIENT_MESSAGE =
  /Connection terminated|connection error and is not queryable|Can't reach database server|Server has closed the connection|timeout exceeded when trying to connect/i;

/**
 * A database error worth retrying: the server restarted, a connection dropped, the pool could not
 * connect, or a serialisation conflict. Looks through Prisma's wrappers (P1xxx/P2010/P2028), the
 * pg adapter's `driverAdapterError` causes and node-postgres errors.
 */
export function isTransientDbError(err: unknown): boolean {
  const seen = new Set<unknown>();
  const queue: unknown[] = [err];
  while (queue.length > 0) {
    const e = queue.shift();
    if (!e || typeof e !== 'object' || seen.has(e)) continue;
    seen.add(e);
    const o = e as {
      code?: unknown;
      errorCode?: unknown;
      originalCode?: unknown;
      kind?: unknown;
      message?: unknown;
      cause?: unknown;
      meta?: { driverAdapterError?: unknown };
    };
    for (const code of [o.code, o.errorCode, o.originalCode]) {
      if (typeof code !== 'string') continue;
      if (TRANSIENT_PRISMA_CODES.has(code) || TRANSIENT_NODE_CODES.has(code) || TRANSIENT_SQLSTATE.test(code))
        return true;
    }
    if (typeof o.kind === 'string' && TRANSIENT_ADAPTER_KINDS.has(o.kind)) return true;
    if (typeof o.message === 'string' && TRANSIENT_MESSAGE.test(o.message)) return true;
    queue.push(o.cause, o.meta?.driverAdapterError);
  }
  return false;
}

/** One round trip to Postgres (`SELECT 1`): readiness probes. */
export async function pingDatabase(db: PrismaClient): Promise<void> {
  await db.$queryRaw`SELECT 1`;
}

export { Prisma, PrismaClient };
export type Db = PrismaClient;
export type Tx = Prisma.TransactionClient;
