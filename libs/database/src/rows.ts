import { Prisma } from '@prisma/client';
import type { Tx } from './prisma';

/**
 * The journal insert behind `appendEvents` (Prisma transactions). The turn's own statements,
 * admission's included, write through `libs/store` (ADR 0010); this stays for callers on Prisma.
 */

const json = (v: unknown) => (v === undefined || v === null ? null : JSON.stringify(v));

export interface EventRow {
  id: string;
  tenantId: string;
  sessionId: string;
  turnId: string | null;
  seq: number;
  type: string;
  data: unknown;
}

export async function insertEvents(tx: Tx, rows: EventRow[]): Promise<void> {
  if (rows.length === 0) return;
  const values = rows.map(
    (e) =>
      Prisma.sql`(${e.id}::uuid, ${e.tenantId}::uuid, ${e.sessionId}::uuid, ${e.turnId}::uuid, ${e.seq}, ${e.type}, ${json(e.data)}::jsonb)`,
  );
  await tx.$executeRaw`
    INSERT INTO events (id, tenant_id, session_id, turn_id, seq, type, data) VALUES ${Prisma.join(values)}`;
}
