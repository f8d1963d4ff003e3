import { sql, type SqlRunner } from './sql';

/** What one pass of partition upkeep did (sb_partition_maintenance, docs/adr/0044). */
export interface PartitionMaintenance {
  /** False when another process held the lock, or pg_partman is not installed (`reason`). */
  ran: boolean;
  reason?: 'locked' | 'no_partman';
  /** Leaf partitions of events, messages, ledger_entries and hook_runs after the pass. */
  partitions?: number;
  created?: number;
  /** Partitions detached by the retention: kept as tables, for an operator to archive and drop. */
  detached?: number;
  /** Per-partition unique keys made for partitions that lacked them. */
  keys: number;
}

/**
 * One pass of upkeep of the partitioned journal, transcript, ledger and hook runs: the retention set
 * (a Postgres interval; undefined keeps everything), pg_partman's maintenance run, missing
 * per-partition unique keys made. One statement (its own transaction, under a transaction-scoped
 * advisory lock, so it works through PgBouncer and one caller at a time does the work).
 */
export async function maintainPartitions(db: SqlRunner, retention?: string): Promise<PartitionMaintenance> {
  const row = await db.first<{ result: PartitionMaintenance }>(
    sql`SELECT sb_partition_maintenance(${retention ?? null}::text) AS result`,
  );
  if (!row) throw new Error('sb_partition_maintenance returned no row');
  return row.result;
}
