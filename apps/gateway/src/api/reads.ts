import type { Config } from '@switchboard/config';
import { poolOf, type Db } from '@switchboard/database';
import type { Metrics } from '@switchboard/observability';
import {
  currentWalLsn,
  primaryReads,
  ReadRouter,
  replayedWalLsn,
  SessionsRepository,
  sqlDbFor,
  type Reads,
  type SqlDb,
} from '@switchboard/store';

/** The API's routed reads (docs/adr/0042): turns, transcripts, journals, usage and the SSE streams' catch-up. */
export const GATEWAY_READS = Symbol('GATEWAY_READS');

/** What a routed read runs on: one side's typed-SQL handle, Prisma and the sessions' reads over it. */
export interface ReadClient {
  sql: SqlDb;
  db: Db;
  sessions: SessionsRepository;
}

export type GatewayReads = Reads<ReadClient>;

/**
 * The gateway's reads: on the primary (`sql`, `db`) without a replica; with one (`replica`, from
 * DATABASE_READ_URL) through a `ReadRouter`, counted in `switchboard_db_reads_total`. The replica's
 * statements count under the `gateway-replica` component, the routing's own WAL-position checks
 * under `read-routing`.
 */
export function gatewayReads(
  config: Config,
  primary: { sql: SqlDb; db: Db },
  replica: Db | null,
  metrics: Metrics,
): GatewayReads {
  const onPrimary: ReadClient = { ...primary, sessions: new SessionsRepository(primary.db) };
  if (!replica) return primaryReads(onPrimary);
  const replicaSql = sqlDbFor(poolOf(replica), 'gateway-replica', metrics);
  const checkPrimary = primary.sql.withOptions({ component: 'read-routing' });
  const checkReplica = replicaSql.withOptions({ component: 'read-routing' });
  return new ReadRouter<ReadClient>({
    primary: onPrimary,
    replica: { sql: replicaSql, db: replica, sessions: new SessionsRepository(replica) },
    primaryLsn: () => currentWalLsn(checkPrimary),
    replayedLsn: () => replayedWalLsn(checkReplica),
    maxWaitMs: config.READ_REPLICA_MAX_WAIT_MS,
    onRead: (target, reason) => metrics.dbReads.inc({ target, reason }),
    onLag: (bytes) => metrics.replicaLagBytes.set(bytes),
  });
}
