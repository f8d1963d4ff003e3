import type pg from 'pg';

/**
 * Counts what a pg pool sends Postgres from now on, below every library (Prisma's adapter, the
 * store): a statement outside BEGIN..COMMIT is one transaction, a BEGIN..COMMIT block is one. Only
 * connections the pool opens after the call are counted, so call it before the pool's first query.
 */
export function countPoolTransactions(pool: pg.Pool): { transactions: number; statements: string[] } {
  const counts = { transactions: 0, statements: [] as string[] };
  pool.on('connect', (client) => {
    let open = false;
    const query = client.query.bind(client) as (...args: unknown[]) => unknown;
    (client as unknown as { query: (...args: unknown[]) => unknown }).query = (...args: unknown[]) => {
      const first = args[0] as string | { text?: string };
      const text = (typeof first === 'string' ? first : (first?.text ?? '')).trim();
      const verb = text.split(/\s+/)[0]?.toUpperCase() ?? '';
      if (verb === 'BEGIN') open = true;
      else if (verb === 'COMMIT' || verb === 'ROLLBACK') {
        open = false;
        if (verb === 'COMMIT') counts.transactions++;
      } else {
        counts.statements.push(text.slice(0, 60));
        if (!open) counts.transactions++;
      }
      return query(...args);
    };
  });
  return counts;
}
