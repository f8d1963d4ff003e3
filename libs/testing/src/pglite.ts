import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Sql, SqlRunner, SqlTransactor } from '@switchboard/store';

/**
 * What the store's statements need of a PGlite instance (`@electric-sql/pglite`): its `query` and
 * `transaction`. Typed here, not imported, so nothing loads PGlite but the tests and benchmarks that
 * make one (it bundles pgvector, which these machines' Postgres lacks: docs/adr/0050).
 */
export interface PgliteLike {
  query<R>(text: string, params?: unknown[]): Promise<{ rows: R[]; affectedRows?: number }>;
  transaction<T>(fn: (tx: Omit<PgliteLike, 'transaction'>) => Promise<T>): Promise<T>;
}

function runnerOf(db: Omit<PgliteLike, 'transaction'>): SqlRunner {
  const run = <R>(query: Sql) => {
    const q = query.toQuery();
    return db.query<R>(q.text, q.values);
  };
  return {
    rows: async <R>(query: Sql) => (await run<R>(query)).rows,
    first: async <R>(query: Sql) => (await run<R>(query)).rows[0],
    execute: async (query: Sql) => (await run(query)).affectedRows ?? 0,
  };
}

/** The store's `SqlTransactor` on a PGlite instance: the same `Sql` statements, PGlite's one connection. */
export function pgliteRunner(db: PgliteLike): SqlTransactor {
  return { ...runnerOf(db), transaction: (fn) => db.transaction((tx) => fn(runnerOf(tx))) };
}

/** The text of `prisma/migrations/<name>/migration.sql`, to apply a migration as it is. */
export function migrationSql(name: string): string {
  return readFileSync(join(__dirname, '../../../prisma/migrations', name, 'migration.sql'), 'utf8');
}
