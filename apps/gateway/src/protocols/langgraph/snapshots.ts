import { Inject, Injectable } from '@nestjs/common';
import type { Turn } from '@prisma/client';
import { messagesOf, type ApprovalRow, type LangChainMessage } from '@switchboard/protocols';
import { LangGraphReads } from './reads';

/** A thread's state as the adapter shows it: its messages, pending approvals and status turns. */
export interface Snapshot {
  messages: LangChainMessage[];
  pending: ApprovalRow[];
  latest: Turn[];
  /** The turn of each message, by message id. */
  turnOf: Map<string, string | null>;
}

/** Reads a thread's state (docs/adr/0038): the transcript as LangChain messages, pending approvals as interrupts. */
@Injectable()
export class LangGraphSnapshots {
  constructor(@Inject(LangGraphReads) private readonly reads: LangGraphReads) {}

  async read(sessionId: string): Promise<Snapshot> {
    const [rows, pending, latest] = await Promise.all([
      this.reads.transcript(sessionId),
      this.reads.pending(sessionId),
      this.reads.statusTurns(sessionId),
    ]);
    return {
      messages: messagesOf(rows),
      pending,
      latest,
      turnOf: new Map(rows.map((r) => [r.id, r.turnId])),
    };
  }

  async turnStatus(tenantId: string, turnId: string): Promise<string | undefined> {
    return (await this.reads.turnById(tenantId, turnId))?.status;
  }

  /** Why a failed turn failed, for the `error` event and `__error__`. */
  async failureOf(tenantId: string, turnId: string): Promise<string> {
    const turn = await this.reads.turnById(tenantId, turnId);
    const f = turn?.failure as { kind?: string; brief?: string; message?: string } | null | undefined;
    return f
      ? `${f.kind ?? 'failed'}: ${f.brief || f.message || ''}`
      : `turn ${turnId} failed (${turn?.stopReason ?? 'failed'})`;
  }
}
