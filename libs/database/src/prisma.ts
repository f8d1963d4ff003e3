import { PrismaPg } from '@prisma/adapter-pg';
import { Prisma, PrismaClient } from '@prisma/client';

/** Prisma through the pg driver adapter: no native query engine (docs/adr/0002-prisma-engine.md). */
export function createPrisma(databaseUrl: string, options: { poolSize?: number } = {}): PrismaClient {
  const adapter = new PrismaPg({ connectionString: databaseUrl, max: options.poolSize ?? 10 });
  return new PrismaClient({ adapter });
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

export { Prisma, PrismaClient };
export type Db = PrismaClient;
export type Tx = Prisma.TransactionClient;
