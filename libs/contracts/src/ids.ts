import { v7 } from 'uuid';

/** Time-ordered UUIDv7: index-friendly primary keys. */
export const newId = (): string => v7();

const UUID_RE = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
export const isUuid = (s: string): boolean => UUID_RE.test(s);

/**
 * The creation time of a UUIDv7 (its first 48 bits, milliseconds since the epoch); the epoch for any
 * other version. The same function as Postgres' sb_uuid7_time(uuid) (migration
 * 20261128000000_partition_by_time): `hook_runs` and `ledger_entries` are partitioned on it (docs/adr/0044).
 */
export const uuid7Time = (id: string): Date =>
  id.charAt(14) === '7' ? new Date(parseInt(id.slice(0, 8) + id.slice(9, 13), 16)) : new Date(0);
